/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Index arithmetic of the send ring, whose size need not be a power of
 * two (the sysctls, SO_SNDBUF and a growth that stops short all allow
 * any).  The free-running 32-bit counters (tx_head, tx_tail) only ever
 * count, and their differences stay right across 2^32; the buffer a
 * counter names is kept as an index of its own that wraps at the ring's
 * size, since counter % size jumps at 2^32 unless the size divides it.
 * Builds in user space too, for tools/testing/ring.
 */
#ifndef _AFRDMA_RING_H
#define _AFRDMA_RING_H

struct afrdma_tx_slot;

/* The index after @i in a ring of @n. */
static inline unsigned int afrdma_ring_next(unsigned int i, unsigned int n)
{
	return i + 1 < n ? i + 1 : 0;
}

/* The index @k before @i in a ring of @n, for @k <= @n. */
static inline unsigned int afrdma_ring_back(unsigned int i, unsigned int k,
					    unsigned int n)
{
	return i >= k ? i - k : i + n - k;
}

/*
 * Fills @ring, @n + @add entries, from the ring @old of @n and @add new
 * buffers from @extra: the @busy buffers in use, which end before index
 * @end of @old, first and in order, then @old's free ones, then the new.
 * Returns the index in @ring that follows the busy ones.
 */
static inline unsigned int
afrdma_ring_regrow(struct afrdma_tx_slot **ring,
		   struct afrdma_tx_slot *const *old, unsigned int n,
		   unsigned int end, unsigned int busy,
		   struct afrdma_tx_slot *const *extra, unsigned int add)
{
	unsigned int i, j = afrdma_ring_back(end, busy, n);

	for (i = 0; i < n; i++) {
		ring[i] = old[j];
		j = afrdma_ring_next(j, n);
	}
	for (i = 0; i < add; i++)
		ring[n + i] = extra[i];
	return busy;
}

#endif /* _AFRDMA_RING_H */
