# SPDX-License-Identifier: GPL-2.0
#
# What the host tests under tools/testing share; each test's Makefile sets
#
#   TEST   the program, built from TEST.c (host-test.h has its checks)
#   SRCS   more sources built into it, if any
#   DEPS   what else it is built from: the module's code under test
#   NAIVE  the flags that run the wrong versions, if any
#
# and includes this file, which gives it
#
#   make run          the test, with ASan and UBSan where the compiler has them
#   make check-naive  each wrong version (TEST FLAG for each of NAIVE),
#                     which the test must fail

HOST_TEST := $(dir $(lastword $(MAKEFILE_LIST)))
AFRDMA := $(HOST_TEST)../../net/afrdma

CC ?= cc
FLAGS := -g -O2 -Wall -Wextra -I$(AFRDMA) -I$(HOST_TEST)../../include/uapi \
	-I$(HOST_TEST) $(EXTRA_FLAGS)
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
HAVE_SAN := $(shell printf 'int main(void) { return 0; }\n' | \
	$(CC) -x c - -o /dev/null $(SAN) >/dev/null 2>&1 && echo y)

.PHONY: all run check-naive clean

all: $(TEST)

$(TEST): $(TEST).c $(SRCS) $(DEPS) $(HOST_TEST)host-test.h $(HOST_TEST)host-test.mk
	$(CC) $(FLAGS) $(if $(HAVE_SAN),$(SAN)) -o $@ $(TEST).c $(SRCS)

run: $(TEST)
	./$(TEST)

# Each wrong version must make the test fail.
check-naive: $(TEST)
	@test -n "$(NAIVE)" || { echo "$(TEST): no wrong versions to run" >&2; exit 1; }
	@for n in $(NAIVE); do \
		echo "! ./$(TEST) $$n"; \
		! ./$(TEST) $$n || exit 1; \
	done

clean:
	rm -f $(TEST)
