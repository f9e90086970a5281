// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for afrdma's wire format (net/afrdma/wire.c): every byte
 * a peer controls passes through these parsers before the kernel trusts it,
 * so they must never read past the buffer, and what they accept must hold
 * the invariants rx.c and cm.c rely on.  Also checks that build then parse
 * gives back exactly what was built.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* abort() rather than assert(): NDEBUG must not turn the checks off. */
#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			abort();					\
		}							\
	} while (0)

static unsigned int get(const uint8_t *data, size_t size, size_t off,
			size_t n)
{
	unsigned int v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v = v << 8 | (off + i < size ? data[off + i] : 0);
	return v;
}

static void fuzz_cm_priv(const uint8_t *data, size_t size)
{
	struct afrdma_cm_params p, q;
	struct afrdma_cm_priv priv;
	int ret;

	ret = afrdma_parse_cm_priv(data, size, &p);
	CHECK(ret == 0 || ret == -EPROTO);
	if (ret)
		return;
	/* cm.c sizes credits and SENDs from these without further checks. */
	CHECK(size >= sizeof(priv));
	CHECK(p.rx_slots >= AFRDMA_MIN_SLOTS && p.rx_slots <= AFRDMA_MAX_SLOTS);
	CHECK(p.rx_slot_size >= AFRDMA_MIN_SLOT_SIZE &&
	      p.rx_slot_size <= AFRDMA_MAX_SLOT_SIZE);
	/* Room for a header and at least one byte of data per SEND. */
	CHECK(p.rx_slot_size > sizeof(struct afrdma_msg_hdr));

	afrdma_build_cm_priv(&priv, &p);
	CHECK(afrdma_parse_cm_priv(&priv, sizeof(priv), &q) == 0);
	CHECK(q.rx_slots == p.rx_slots && q.rx_slot_size == p.rx_slot_size &&
	      q.flags == p.flags);
	/* Only the field the parser ignores (reserved) may differ. */
	CHECK(memcmp(&priv, data, 4) == 0 &&
	      memcmp(&priv.rx_slots, data + 4, 2) == 0 &&
	      memcmp(&priv.rx_slot_size, data + 8, 4) == 0);
}

static void fuzz_msg(const uint8_t *data, size_t size)
{
	struct afrdma_msg_hdr hdr;
	struct afrdma_msg m;
	int ret;

	ret = afrdma_parse_msg(data, size, &m);
	CHECK(ret == 0 || ret == -EPROTO);
	if (ret)
		return;
	/* rx.c copies m.len bytes after the header out of the buffer. */
	CHECK(size >= sizeof(hdr) && m.len == size - sizeof(hdr));
	CHECK(m.credits <= 0xffff);
	switch (m.type) {
	case AFRDMA_MSG_DATA:
		CHECK(m.len > 0);
		break;
	case AFRDMA_MSG_CREDIT:
	case AFRDMA_MSG_FIN:
		CHECK(m.len == 0);
		break;
	case AFRDMA_MSG_SRCAVAIL:
		CHECK(m.len == sizeof(struct afrdma_srcavail));
		CHECK(m.src_len > 0 && m.src_len <= AFRDMA_MAX_SRCAVAIL);
		break;
	case AFRDMA_MSG_RDDONE:
		CHECK(m.len == 4);
		CHECK(m.src_len > 0 && m.src_len <= AFRDMA_MAX_SRCAVAIL);
		break;
	default:
		CHECK(0);
	}
	/* A header the parser accepts is exactly what build writes. */
	afrdma_build_msg(&hdr, m.type, m.credits, m.len);
	CHECK(memcmp(&hdr, data, sizeof(hdr)) == 0);
}

/* Build from values taken from the input, then parse: same values back. */
static void fuzz_round_trip(const uint8_t *data, size_t size)
{
	struct afrdma_cm_params p = {
		.rx_slots = get(data, size, 0, 2),
		.rx_slot_size = get(data, size, 2, 4),
		.flags = get(data, size, 11, 1),
	}, q;
	unsigned int type = get(data, size, 6, 1);
	unsigned int credits = get(data, size, 7, 2);
	unsigned int len = get(data, size, 9, 2);	/* bounded allocation */
	bool in_range = p.rx_slots >= AFRDMA_MIN_SLOTS &&
			p.rx_slots <= AFRDMA_MAX_SLOTS &&
			p.rx_slot_size >= AFRDMA_MIN_SLOT_SIZE &&
			p.rx_slot_size <= AFRDMA_MAX_SLOT_SIZE;
	struct afrdma_cm_priv priv;
	struct afrdma_msg m;
	bool valid;
	uint8_t *buf;
	int ret;

	afrdma_build_cm_priv(&priv, &p);
	ret = afrdma_parse_cm_priv(&priv, sizeof(priv), &q);
	CHECK(in_range ? ret == 0 : ret == -EPROTO);
	if (!ret)
		CHECK(q.rx_slots == p.rx_slots &&
		      q.rx_slot_size == p.rx_slot_size && q.flags == p.flags);

	/* Exactly sized, so ASan sees any read past the message. */
	buf = malloc(sizeof(struct afrdma_msg_hdr) + len);
	CHECK(buf);
	afrdma_build_msg((struct afrdma_msg_hdr *)buf, type, credits, len);
	memset(buf + sizeof(struct afrdma_msg_hdr), 0x5a, len);
	ret = afrdma_parse_msg(buf, sizeof(struct afrdma_msg_hdr) + len, &m);
	valid = (type == AFRDMA_MSG_DATA && len) ||
		((type == AFRDMA_MSG_CREDIT || type == AFRDMA_MSG_FIN) && !len);
	/* The filler (0x5a...) is a length in range for neither. */
	CHECK(valid ? ret == 0 : ret == -EPROTO);
	if (!ret)
		CHECK(m.type == type && m.credits == credits && m.len == len);
	/* One byte short or long of what the header says: always rejected. */
	if (len)
		CHECK(afrdma_parse_msg(buf, sizeof(struct afrdma_msg_hdr) +
				       len - 1, &m) == -EPROTO);
	free(buf);

	/* A SRCAVAIL built from the input parses back, if its length fits. */
	{
		unsigned char sa[sizeof(struct afrdma_msg_hdr) +
				 sizeof(struct afrdma_srcavail)];
		unsigned int slen = get(data, size, 12, 4);

		afrdma_build_msg((struct afrdma_msg_hdr *)sa,
				 AFRDMA_MSG_SRCAVAIL, credits,
				 sizeof(struct afrdma_srcavail));
		afrdma_build_srcavail(sa + sizeof(struct afrdma_msg_hdr), slen,
				      get(data, size, 16, 4),
				      get(data, size, 20, 4));
		ret = afrdma_parse_msg(sa, sizeof(sa), &m);
		CHECK(slen && slen <= AFRDMA_MAX_SRCAVAIL ? ret == 0 :
		      ret == -EPROTO);
		if (!ret)
			CHECK(m.src_len == slen &&
			      m.src_rkey == get(data, size, 16, 4) &&
			      m.src_addr == get(data, size, 20, 4));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Own copy, exactly sized: ASan then catches any over-read. */
	uint8_t *copy = malloc(size ? size : 1);

	CHECK(copy);
	memcpy(copy, data, size);
	fuzz_cm_priv(copy, size);
	fuzz_msg(copy, size);
	fuzz_round_trip(copy, size);
	CHECK(afrdma_parse_cm_priv(NULL, size, &(struct afrdma_cm_params){}) ==
	      -EPROTO);
	free(copy);
	return 0;
}
