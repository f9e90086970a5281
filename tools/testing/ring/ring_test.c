// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of the send ring's index arithmetic (net/afrdma/ring.h) across
 * the 2^32 wrap of its counters, for every ring size the module allows up
 * to a bound, grown by doubling and partly.  A model of tx.c's and
 * conn.c's use of it: buffers opened, posted, completed in order, and the
 * ring grown with SENDs in flight, the counters starting just below 2^32.
 * After every step the SENDs in flight must be exactly the buffers before
 * tx_slot, in order, and the next buffer must be free.
 *
 * With -o it runs the arithmetic the module used before (counter % size),
 * which must fail: the test can tell.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define MAX	1024	/* AFRDMA_MAX_SLOTS_LOCAL */

struct afrdma_tx_slot {
	unsigned int	id;
	bool		busy;	/* in flight or open */
};

static struct afrdma_tx_slot bufs[MAX];
static struct afrdma_tx_slot *ring[MAX], *fifo[MAX];
static unsigned int n, head, tail, slot, nbufs, fifo_first;
static bool pending, old_way;
static unsigned long long failures;

static unsigned int idx(void)
{
	return old_way ? head % n : slot;
}

static bool fail(const char *what, unsigned int start, unsigned int step)
{
	if (!failures++)
		fprintf(stderr, "ring_test: %s: size %u, start %u, step %u, head %u tail %u\n",
			what, n, start, step, head, tail);
	return false;
}

/* What tx.c relies on: in flight, in order, just before the next one. */
static bool check(unsigned int start, unsigned int step)
{
	unsigned int busy = head - tail, i, j;
	bool seen[MAX] = { false };

	if (busy > n)
		return fail("more in flight than buffers", start, step);
	for (i = 0; i < n; i++) {
		if (!ring[i] || seen[ring[i]->id])
			return fail("ring lost or doubled a buffer", start, step);
		seen[ring[i]->id] = true;
	}
	j = old_way ? (tail % n) : afrdma_ring_back(slot, busy, n);
	for (i = 0; i < busy; i++) {
		if (ring[j] != fifo[(fifo_first + i) % MAX])
			return fail("a SEND in flight left its place", start, step);
		j = old_way ? (tail + i + 1) % n : afrdma_ring_next(j, n);
	}
	if (!pending && busy < n && ring[idx()]->busy)
		return fail("next buffer still in flight", start, step);
	return true;
}

static void grow(unsigned int add)
{
	struct afrdma_tx_slot *next[MAX], *extra[MAX];
	unsigned int m = n + add, i, end, busy, h;

	for (i = 0; i < add; i++) {
		bufs[nbufs].id = nbufs;
		bufs[nbufs].busy = false;
		extra[i] = &bufs[nbufs++];
	}
	memset(next, 0, sizeof(next));
	busy = head - tail + pending;
	if (old_way) {
		/* conn.c before: keep each buffer's place modulo the size */
		h = head + pending;
		for (i = tail; i != h; i++)
			next[i % m] = ring[i % n];
		for (i = 0; i < m - busy; i++)
			next[(h + i) % m] = i < n - busy ? ring[(h + i) % n] :
							   extra[i - (n - busy)];
	} else {
		end = pending ? afrdma_ring_next(slot, n) : slot;
		slot = afrdma_ring_regrow(next, ring, n, end, busy, extra,
					  add) - pending;
	}
	memcpy(ring, next, sizeof(ring));
	n = m;
}

/* One connection: @size buffers growing to @max, counters from @start. */
static bool run(unsigned int size, unsigned int max, unsigned int start,
		unsigned int steps, unsigned int seed)
{
	struct afrdma_tx_slot *b, *open = NULL;
	unsigned int i, step;

	srandom(seed);
	n = size;
	nbufs = n;
	for (i = 0; i < n; i++) {
		bufs[i].id = i;
		bufs[i].busy = false;
		ring[i] = &bufs[i];
	}
	head = tail = start;
	slot = 0;
	fifo_first = 0;
	pending = false;
	for (step = 0; step < steps; step++) {
		switch (random() % 4) {
		case 0:		/* a send opens the slot, or fills it and posts */
		case 1:
			if (!pending && head - tail < n) {
				open = ring[idx()];
				if (open->busy)
					return fail("opened a buffer in flight",
						    start, step);
				open->busy = true;
				pending = true;
				break;
			}
			if (!pending)
				break;
			b = ring[idx()];
			if (b != open)
				return fail("the open slot moved", start, step);
			fifo[(fifo_first + head - tail) % MAX] = b;
			pending = false;
			head++;
			slot = afrdma_ring_next(slot, n);
			break;
		case 2:		/* the oldest SEND completes */
			if (head == tail)
				break;
			fifo[fifo_first]->busy = false;
			fifo_first = (fifo_first + 1) % MAX;
			tail++;
			break;
		default:	/* the ring grows, with SENDs in flight */
			if (n < max && !(random() % 8))
				grow(1 + random() % (n < max - n ? n : max - n));
			break;
		}
		if (!check(start, step))
			return false;
	}
	/* Else the test proved nothing about the wrap. */
	if (head >= start)
		return fail("never crossed 2^32", start, step);
	return true;
}

int main(int argc, char **argv)
{
	unsigned int size, max, back, runs = 0;
	static const unsigned int maxes[] = { 4, 5, 6, 7, 12, 24, 33, 100, MAX };

	old_way = argc > 1 && !strcmp(argv[1], "-o");
	for (size = 4; size <= 24; size++) {
		for (max = 0; max < sizeof(maxes) / sizeof(maxes[0]); max++) {
			if (maxes[max] < size)
				continue;
			for (back = 1; back <= 3 * size; back++, runs++)
				run(size, maxes[max], 0U - back, 600 + 8 * back,
				    size * 7919 + back);
		}
	}
	printf("ring_test: %u connections%s, %llu failed\n", runs,
	       old_way ? " (the old arithmetic)" : "", failures);
	return failures ? 1 : 0;
}
