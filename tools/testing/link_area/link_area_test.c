// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of a link's ring-area bookkeeping (net/afrdma/link_area.c).
 *
 * Random alloc, free, add and remove sequences, for several chunk orders
 * and chunk limits, against a model that records the owner of every page:
 * areas never overlap, are aligned to their size and lie in a chunk that
 * exists; -ENOSPC comes exactly when no chunk has an aligned free run of
 * the size asked; a free of anything but a live area is refused and
 * changes nothing; an area comes from the lowest of the chunks whose
 * largest free block is the smallest that fits (so that the last chunks
 * empty out); a chunk is reported empty exactly when it is; the
 * counters match; and once everything is freed, every chunk is one whole
 * free block again (full coalescing).
 *
 * Then afrdma_area_contains() against a 128-bit reference over offsets
 * and lengths around the area's edges, 2^32 and 2^64.  With -n1 or -n2 it
 * checks two wrong bounds checks instead (a sum that wraps, an off-by-one),
 * which must fail: the test can tell.
 */
#include <stdio.h>
#include <stdlib.h>

#include "link_area.h"

#define MAX_CHUNKS	8
#define MAX_ORDER	7
#define MAX_PAGES	(1U << MAX_ORDER)
#define MAX_LIVE	(MAX_CHUNKS * MAX_PAGES)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct live {
	struct afrdma_area	a;
	int			id;
};

static struct afrdma_area_map map;
static bool present[MAX_CHUNKS + 2];
static int owner[MAX_CHUNKS][MAX_PAGES];	/* -1: free */
static unsigned int used[MAX_CHUNKS];
static struct live live[MAX_LIVE];
static unsigned int nlive, k, maxc, nchunks;
static unsigned long long failures, ops, enospc, refused;
static const char *what = "";
static int naive;

static bool fail(const char *why, unsigned long step)
{
	if (!failures++)
		fprintf(stderr, "link_area_test: %s%s: chunk_order %u, max_chunks %u, step %lu\n",
			what, why, k, maxc, step);
	return false;
}

static unsigned long long model_used(void)
{
	unsigned long long n = 0;
	unsigned int c;

	for (c = 0; c < maxc; c++)
		n += used[c];
	return n;
}

/* Whether chunk @c has an aligned free run of 2^@o pages. */
static bool model_room_in(unsigned int c, unsigned int o)
{
	unsigned int p, q;

	if (!present[c])
		return false;
	for (p = 0; p < 1U << k; p += 1U << o) {
		for (q = p; q < p + (1U << o) && owner[c][q] < 0; q++)
			;
		if (q == p + (1U << o))
			return true;
	}
	return false;
}

/*
 * The chunk an area of 2^@o pages should come from: the lowest of those
 * whose largest free block is the smallest that fits; maxc if none.
 */
static unsigned int model_pick(unsigned int o)
{
	unsigned int c, best = maxc, best_free = k + 1, f;

	for (c = 0; c < maxc; c++) {
		if (!model_room_in(c, o))
			continue;
		for (f = o; f < k && model_room_in(c, f + 1); f++)
			;
		if (f < best_free) {
			best = c;
			best_free = f;
		}
	}
	return best;
}

static bool counters(unsigned long step)
{
	unsigned int c;

	if (READ_ONCE(map.pages_used) != model_used())
		return fail("pages_used is not the model's", step);
	if (READ_ONCE(map.nr_chunks) != nchunks)
		return fail("nr_chunks is not the model's", step);
	for (c = 0; c < maxc + 2; c++)
		if (afrdma_area_chunk_used(&map, c) != (c < maxc ? used[c] : 0))
			return fail("a chunk's pages in use are not the model's", step);
	return true;
}

static bool add(unsigned long step)
{
	unsigned int c;
	int ret = afrdma_area_add_chunk(&map);

	for (c = 0; c < maxc && present[c]; c++)
		;
	if (c == maxc)
		return ret == -ENOMEM ? true : fail("added a chunk past max_chunks", step);
	if (ret != (int)c)
		return fail("added chunk is not the lowest free index", step);
	present[c] = true;
	nchunks++;
	return true;
}

static bool alloc(unsigned int o, int id, unsigned long step)
{
	struct afrdma_area a = { 0 };
	unsigned int p;
	int ret;

	ret = afrdma_area_alloc(&map, o, &a);
	if (o > k)
		return ret == -EINVAL ? true : fail("allocated past the chunk order", step);
	if (ret == -ENOSPC) {
		enospc++;
		return model_pick(o) < maxc ? fail("-ENOSPC with room", step) : true;
	}
	if (ret)
		return fail("alloc failed otherwise", step);
	if (a.chunk != model_pick(o))
		return fail("area not from the chunk that fits best", step);
	if (a.chunk >= maxc || !present[a.chunk] || a.order != o ||
	    a.page & ((1U << o) - 1) || a.page + (1U << o) > 1U << k)
		return fail("area outside a chunk, or misaligned", step);
	for (p = a.page; p < a.page + (1U << o); p++) {
		if (owner[a.chunk][p] >= 0)
			return fail("areas overlap", step);
		owner[a.chunk][p] = id;
	}
	used[a.chunk] += 1U << o;
	live[nlive].a = a;
	live[nlive++].id = id;
	return true;
}

static bool release(unsigned int i, unsigned long step)
{
	struct afrdma_area a = live[i].a;
	unsigned int p;
	int ret;

	live[i] = live[--nlive];
	for (p = a.page; p < a.page + (1U << a.order); p++)
		owner[a.chunk][p] = -1;
	used[a.chunk] -= 1U << a.order;
	ret = afrdma_area_free(&map, &a);
	if (ret != (used[a.chunk] ? 0 : AFRDMA_AREA_CHUNK_EMPTY))
		return fail("free's answer is not the model's", step);
	/* Released twice: refused. */
	if (afrdma_area_free(&map, &a) != -EINVAL)
		return fail("freed an area twice", step);
	if (ret == AFRDMA_AREA_CHUNK_EMPTY && random() % 2) {
		if (afrdma_area_remove_chunk(&map, a.chunk))
			return fail("could not remove an empty chunk", step);
		present[a.chunk] = false;
		nchunks--;
	}
	return true;
}

/* A free of something that is not a live area, near one if there is one. */
static bool bogus_free(unsigned long step)
{
	struct afrdma_area a;
	unsigned int i, o;

	if (nlive && random() % 4) {
		a = live[random() % nlive].a;
		o = a.order;
		switch (random() % 4) {
		case 0:		/* a piece of it */
			if (!a.order)
				return true;
			a.order -= 1 + random() % a.order;
			a.page += (random() % (2U << (o - a.order))) << a.order;
			break;
		case 1:		/* the block around it */
			a.order += 1 + random() % (k - a.order + 2);
			a.page &= ~((1U << (a.order < 31 ? a.order : 31)) - 1);
			break;
		case 2:		/* its buddy */
			a.page ^= 1U << a.order;
			break;
		default:	/* misaligned */
			a.page += 1 + random() % 3;
			break;
		}
	} else {
		a.chunk = random() % (maxc + 2);
		a.page = random() % (2U << k);
		a.order = random() % (k + 2);
	}
	if (random() % 16 == 0)
		a.chunk = 0U - 1 - random() % 2;
	for (i = 0; i < nlive; i++)
		if (live[i].a.chunk == a.chunk && live[i].a.page == a.page &&
		    live[i].a.order == a.order)
			return true;	/* happens to be real */
	refused++;
	if (afrdma_area_free(&map, &a) != -EINVAL)
		return fail("freed what is not an area", step);
	return true;
}

static bool remove_any(unsigned long step)
{
	unsigned int c = random() % (maxc + 2);
	int ret = afrdma_area_remove_chunk(&map, c);

	if (c >= maxc || !present[c])
		return ret == -EINVAL ? true : fail("removed a chunk that is not there", step);
	if (used[c])
		return ret == -EBUSY ? true : fail("removed a chunk in use", step);
	if (ret)
		return fail("could not remove an empty chunk", step);
	present[c] = false;
	nchunks--;
	return true;
}

static bool run(unsigned int order, unsigned int max, unsigned long steps)
{
	unsigned long step;
	unsigned int c, o;
	int id = 0;

	k = order;
	maxc = max;
	nlive = 0;
	nchunks = 0;
	memset(present, 0, sizeof(present));
	memset(owner, 0xff, sizeof(owner));
	memset(used, 0, sizeof(used));
	if (afrdma_area_init(&map, k, maxc))
		return fail("init", 0);
	for (step = 0; step < steps; step++, ops++) {
		switch (random() % 20) {
		case 0 ... 8:
			/* Mostly small areas, as idle connections hold. */
			o = random() % 4 ? random() % (k / 2 + 1) : random() % (k + 2);
			if (!alloc(o, id++, step))
				return false;
			break;
		case 9:
			if (!add(step))
				return false;
			break;
		case 10 ... 16:
			/* Free more than allocate in bursts, to empty chunks. */
			if (nlive && !release(random() % nlive, step))
				return false;
			break;
		case 17 ... 18:
			if (!bogus_free(step))
				return false;
			break;
		default:
			if (!remove_any(step))
				return false;
			break;
		}
		if (!counters(step))
			return false;
	}
	while (nlive)
		if (!release(random() % nlive, step) || !counters(step))
			return false;
	/* Every chunk one whole block again: exactly nchunks areas of 2^k. */
	for (c = 0; c < nchunks; c++)
		if (!alloc(k, id++, step) || nlive != c + 1)
			return fail("a chunk did not coalesce back to one block", step);
	if (afrdma_area_alloc(&map, 0, &live[MAX_LIVE - 1].a) != -ENOSPC)
		return fail("room left after filling every chunk", step);
	while (nlive)
		if (!release(0, step))
			return false;
	for (c = 0; c < maxc; c++)
		if (present[c] && afrdma_area_remove_chunk(&map, c))
			return fail("could not remove an empty chunk at the end", step);
	if (READ_ONCE(map.nr_chunks) || READ_ONCE(map.pages_used))
		return fail("counters not back to zero", step);
	afrdma_area_destroy(&map);
	return true;
}

static bool contains(const struct afrdma_area *a, unsigned int shift, u32 c,
		     u64 off, u64 len)
{
	u64 start = afrdma_area_start(a, shift), end = start + afrdma_area_len(a, shift);

	switch (naive) {
	case 1:
		return c == a->chunk && off >= start && off + len <= end;
	case 2:
		return c == a->chunk && off >= start && len <= end - start &&
		       off - start < end - start - len;
	default:
		return afrdma_area_contains(a, shift, c, off, len);
	}
}

/* One peer-named range against the 128-bit truth, in chunk @c and beside it. */
static void bounds_one(const struct afrdma_area *a, unsigned int shift, u64 off, u64 len)
{
	u64 start = afrdma_area_start(a, shift), size = afrdma_area_len(a, shift);
	const u32 cs[] = { a->chunk, a->chunk + 1, a->chunk - 1 };
	unsigned int i;
	bool want;

	for (i = 0; i < 3; i++) {
		want = cs[i] == a->chunk && off >= start &&
		       (unsigned __int128)off + len <= (unsigned __int128)start + size;
		ops++;
		if (contains(a, shift, cs[i], off, len) == want || failures++)
			continue;
		fprintf(stderr, "link_area_test: bounds: area %u/%u order %u, shift %u:",
			a->chunk, a->page, a->order, shift);
		fprintf(stderr, " chunk %u off %#llx len %#llx %s\n", cs[i],
			(unsigned long long)off, (unsigned long long)len,
			want ? "refused" : "accepted");
	}
}

/* Offsets and lengths around the area's edges, 2^32 and 2^64. */
static void bounds_area(const struct afrdma_area *a, unsigned int shift)
{
	u64 start = afrdma_area_start(a, shift), size = afrdma_area_len(a, shift);
	const u64 offs[] = {
		0, 1, start - 1, start, start + 1, start + size / 2,
		start + size - 1, start + size, start + size + 1,
		(1ULL << 32) - 1, 1ULL << 32, (1ULL << 32) + 1,
		(1ULL << 32) + start, (1ULL << 32) + start + size - 1,
		0ULL - 1, 0ULL - start, 0ULL - size,
	};
	const u64 lens[] = {
		0, 1, size - 1, size, size + 1, size / 2, size / 2 + 1,
		0xffffffffULL, 1ULL << 32, (1ULL << 32) - start,
		(1ULL << 32) - start + 1, 0ULL - 1, 0ULL - start,
		0ULL - start + 1, 0ULL - size,
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		for (j = 0; j < ARRAY_SIZE(lens); j++)
			bounds_one(a, shift, offs[i], lens[j]);
		/* Lengths that wrap the offset back into the area. */
		bounds_one(a, shift, offs[i], 0ULL - offs[i] + start);
		bounds_one(a, shift, offs[i], 0ULL - offs[i] + start + 1);
	}
}

static void bounds(void)
{
	static const u32 chunks[] = { 0, 1, 0xfffffffe, 0xffffffff };
	static const unsigned int shifts[] = { 12, 16 };
	struct afrdma_area a;
	unsigned int s, c;

	what = "bounds: ";
	for (s = 0; s < ARRAY_SIZE(shifts); s++) {
		for (c = 0; c < ARRAY_SIZE(chunks); c++) {
			a.chunk = chunks[c];
			for (a.order = 0; a.order <= AFRDMA_AREA_MAX_CHUNK_ORDER; a.order += 3)
				for (a.page = 0; a.page < 1U << AFRDMA_AREA_MAX_CHUNK_ORDER;
				     a.page += 6U << a.order)
					bounds_area(&a, shifts[s]);
		}
	}
}

int main(int argc, char **argv)
{
	static const unsigned int orders[] = { 0, 1, 2, 3, 6, MAX_ORDER };
	static const unsigned int maxes[] = { 1, 2, 3, MAX_CHUNKS };
	struct afrdma_area_map m;
	unsigned int o, x, seed;

	if (argc > 1 && !strcmp(argv[1], "-n1"))
		naive = 1;
	else if (argc > 1 && !strcmp(argv[1], "-n2"))
		naive = 2;
	if (!naive) {
		if (afrdma_area_init(&m, AFRDMA_AREA_MAX_CHUNK_ORDER + 1, 1) != -EINVAL ||
		    afrdma_area_init(&m, 0, 0) != -EINVAL ||
		    afrdma_area_init(&m, 0, AFRDMA_AREA_MAX_CHUNKS + 1) != -EINVAL)
			fail("init took impossible sizes", 0);
		for (o = 0; o < ARRAY_SIZE(orders); o++)
			for (x = 0; x < ARRAY_SIZE(maxes); x++)
				for (seed = 1; seed <= 4; seed++) {
					srandom(seed * 7919 + o * 31 + x);
					if (!run(orders[o], maxes[x], 6000))
						goto out;
				}
	}
	bounds();
out:
	printf("link_area_test: %llu operations, %llu -ENOSPC, %llu bad frees refused%s",
	       ops, enospc, refused, naive ? " (a wrong bounds check)" : "");
	printf(", %llu failed\n", failures);
	return failures ? 1 : 0;
}
