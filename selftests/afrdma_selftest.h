/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers the afrdma selftest programs share: the guest's addresses and a
 * bounded wait for poll events.
 */
#ifndef _AFRDMA_SELFTEST_H
#define _AFRDMA_SELFTEST_H

#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>

/* The address on rxe0's netdev, as vm-run sets it up (or the environment). */
static inline const char *test_addr(bool v6)
{
	const char *a = getenv(v6 ? "AFRDMA_ADDR6" : "AFRDMA_ADDR");

	return a ? a : v6 ? "fd99::1" : "10.99.0.1";
}

/* Waits for @events on @fd; returns revents, 0 on timeout. */
static inline int wait_for(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	if (poll(&p, 1, ms) <= 0)
		return 0;
	return p.revents;
}

#endif /* _AFRDMA_SELFTEST_H */
