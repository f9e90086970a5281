/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a link's receive ring areas lie in the chunks of memory the link
 * registers once (Documentation/links.rst).  A chunk is 2^chunk_order
 * order-0 pages, one MR; an area is 2^order pages of one chunk, aligned
 * to its size, so areas never straddle two chunks and a freed area merges
 * with its free buddy in O(chunk_order).  Bookkeeping only: no pages, no
 * verbs.  The caller serializes all calls on a map (the link's lock);
 * pages_used and nr_chunks may be read without it.  Builds in user space
 * too, for tools/testing/link_area.
 */
#ifndef _AFRDMA_LINK_AREA_H
#define _AFRDMA_LINK_AREA_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include "link_area_shim.h"	/* tools/testing/link_area */
#endif

/*
 * Bounds of what a map accepts: a chunk of 2^12 pages is 16 MiB of 4 KiB
 * pages, and 2^16 such chunks 1 TiB; the map's own arrays stay within
 * what kvcalloc() gives.
 */
#define AFRDMA_AREA_MAX_CHUNK_ORDER	12
#define AFRDMA_AREA_MAX_CHUNKS		(1U << 16)

/* afrdma_area_free()'s answer when it left the chunk with no area. */
#define AFRDMA_AREA_CHUNK_EMPTY		1

struct afrdma_area_chunk;

struct afrdma_area_map {
	struct afrdma_area_chunk	**chunks;	/* [max_chunks], NULL: no chunk */
	/* by_free[o]: chunks whose largest free block is 2^o pages */
	unsigned long			*by_free[AFRDMA_AREA_MAX_CHUNK_ORDER + 1];
	unsigned int			chunk_order;
	unsigned int			max_chunks;
	unsigned int			nr_chunks;
	unsigned long			pages_used;
};

/* An area: pages [page, page + 2^order) of chunk @chunk. */
struct afrdma_area {
	u32	chunk;
	u32	page;
	u32	order;
};

int afrdma_area_init(struct afrdma_area_map *map, unsigned int chunk_order,
		     unsigned int max_chunks);
void afrdma_area_destroy(struct afrdma_area_map *map);
int afrdma_area_add_chunk(struct afrdma_area_map *map);
int afrdma_area_remove_chunk(struct afrdma_area_map *map, unsigned int chunk);
unsigned int afrdma_area_chunk_used(const struct afrdma_area_map *map,
				    unsigned int chunk);
int afrdma_area_alloc(struct afrdma_area_map *map, unsigned int order,
		      struct afrdma_area *area);
int afrdma_area_free(struct afrdma_area_map *map,
		     const struct afrdma_area *area);

/* The area's first byte in its chunk, and its length, for pages of 2^@shift. */
static inline u64 afrdma_area_start(const struct afrdma_area *area,
				    unsigned int shift)
{
	return (u64)area->page << shift;
}

static inline u64 afrdma_area_len(const struct afrdma_area *area,
				  unsigned int shift)
{
	return 1ULL << (area->order + shift);
}

/*
 * Whether the @len bytes at byte @off of chunk @chunk, as a peer names
 * them, lie wholly inside @area (pages of 2^@shift bytes): what keeps a
 * peer inside its own ring area.  Never computes off + len, which a peer
 * could wrap; an empty range passes if it starts inside or at the end.
 */
static inline bool afrdma_area_contains(const struct afrdma_area *area,
					unsigned int shift, u32 chunk,
					u64 off, u64 len)
{
	u64 start = afrdma_area_start(area, shift);
	u64 size = afrdma_area_len(area, shift);

	return chunk == area->chunk && off >= start && len <= size &&
	       off - start <= size - len;
}

#endif /* _AFRDMA_LINK_AREA_H */
