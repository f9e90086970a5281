// SPDX-License-Identifier: GPL-2.0
/*
 * Buddy bookkeeping of a link's ring areas in its chunks (link_area.h).
 * Each chunk keeps a complete binary tree over its pages: the root is
 * node 1, node i's children are 2i and 2i + 1, and a node of order o
 * covers 2^o pages and holds one more than the order of the largest free
 * block under it, 0 if there is none.  A node handed out as an area is
 * set to 0 and the nodes under it are left as they were, fully free: that
 * tells an area from a node whose pages went to smaller areas, so a free
 * of anything but a live area is refused.  Builds in user space too.
 */
#ifdef __KERNEL__
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#endif

#include "link_area.h"

struct afrdma_area_chunk {
	unsigned int	used;		/* pages in areas */
	u8		tree[];		/* 2^(chunk_order + 1) nodes, [0] unused */
};

/* Node @i, of order @o >= 1, from its children. */
static u8 area_merge(const u8 *tree, unsigned int i, unsigned int o)
{
	u8 l = tree[2 * i], r = tree[2 * i + 1];

	/* Both children wholly free: so is this node, as one block. */
	if (l == o && r == o)
		return o + 1;
	return max(l, r);
}

/* Files chunk @c under its largest free block, which was @old before. */
static void area_refile(struct afrdma_area_map *map, unsigned int c, u8 old)
{
	u8 now = map->chunks[c]->tree[1];

	if (now == old)
		return;
	if (old)
		__clear_bit(c, map->by_free[old - 1]);
	if (now)
		__set_bit(c, map->by_free[now - 1]);
}

int afrdma_area_init(struct afrdma_area_map *map, unsigned int chunk_order,
		     unsigned int max_chunks)
{
	unsigned int o;

	memset(map, 0, sizeof(*map));
	if (chunk_order > AFRDMA_AREA_MAX_CHUNK_ORDER || !max_chunks ||
	    max_chunks > AFRDMA_AREA_MAX_CHUNKS)
		return -EINVAL;
	map->chunk_order = chunk_order;
	map->max_chunks = max_chunks;
	map->chunks = kvcalloc(max_chunks, sizeof(*map->chunks), GFP_KERNEL_ACCOUNT);
	if (!map->chunks)
		goto nomem;
	for (o = 0; o <= chunk_order; o++) {
		map->by_free[o] = kvcalloc(BITS_TO_LONGS(max_chunks), sizeof(long),
					   GFP_KERNEL_ACCOUNT);
		if (!map->by_free[o])
			goto nomem;
	}
	return 0;
nomem:
	afrdma_area_destroy(map);
	return -ENOMEM;
}

/* Forgets every chunk and area; the caller has released their pages. */
void afrdma_area_destroy(struct afrdma_area_map *map)
{
	unsigned int i;

	for (i = 0; map->chunks && i < map->max_chunks; i++)
		kfree(map->chunks[i]);
	kvfree(map->chunks);
	for (i = 0; i <= AFRDMA_AREA_MAX_CHUNK_ORDER; i++)
		kvfree(map->by_free[i]);
	memset(map, 0, sizeof(*map));
}

/*
 * Room for one more chunk, all free: returns its index, the lowest unused,
 * or -ENOMEM at max_chunks or without memory.  May sleep.
 */
int afrdma_area_add_chunk(struct afrdma_area_map *map)
{
	unsigned int k = map->chunk_order, c, d;
	struct afrdma_area_chunk *chunk;

	if (map->nr_chunks >= map->max_chunks)
		return -ENOMEM;
	for (c = 0; map->chunks[c]; c++)
		;
	chunk = kzalloc(struct_size(chunk, tree, 2U << k), GFP_KERNEL_ACCOUNT);
	if (!chunk)
		return -ENOMEM;
	for (d = 0; d <= k; d++)
		memset(&chunk->tree[1U << d], k - d + 1, 1U << d);
	map->chunks[c] = chunk;
	__set_bit(c, map->by_free[k]);
	WRITE_ONCE(map->nr_chunks, map->nr_chunks + 1);
	return c;
}

/* Drops chunk @c, which must hold no area (-EBUSY) and exist (-EINVAL). */
int afrdma_area_remove_chunk(struct afrdma_area_map *map, unsigned int c)
{
	struct afrdma_area_chunk *chunk;

	if (c >= map->max_chunks || !map->chunks[c])
		return -EINVAL;
	chunk = map->chunks[c];
	if (chunk->used)
		return -EBUSY;
	__clear_bit(c, map->by_free[chunk->tree[1] - 1]);
	kfree(chunk);
	map->chunks[c] = NULL;
	WRITE_ONCE(map->nr_chunks, map->nr_chunks - 1);
	return 0;
}

/* Pages of chunk @c in areas; 0 if there is no such chunk. */
unsigned int afrdma_area_chunk_used(const struct afrdma_area_map *map,
				    unsigned int c)
{
	if (c >= map->max_chunks || !map->chunks[c])
		return 0;
	return map->chunks[c]->used;
}

/*
 * An area of 2^@order pages in @area, from the chunk whose largest free
 * block is the smallest that fits, and the lowest such, so that large
 * blocks stay whole and the last chunks empty out.  -ENOSPC when no chunk
 * has room: the caller may add one and try again.
 */
int afrdma_area_alloc(struct afrdma_area_map *map, unsigned int order,
		      struct afrdma_area *area)
{
	unsigned int k = map->chunk_order, o, c = map->max_chunks, i;
	u8 *tree, old;

	if (order > k)
		return -EINVAL;
	for (o = order; o <= k; o++) {
		c = find_first_bit(map->by_free[o], map->max_chunks);
		if (c < map->max_chunks)
			break;
	}
	if (c >= map->max_chunks)
		return -ENOSPC;
	tree = map->chunks[c]->tree;
	old = tree[1];
	/* Down to the order, into the child whose free block fits best. */
	for (i = 1, o = k; o > order; o--) {
		u8 l = tree[2 * i], r = tree[2 * i + 1];

		i = 2 * i + (l <= order || (r > order && r < l));
	}
	tree[i] = 0;
	area->chunk = c;
	area->order = order;
	area->page = (i - (1U << (k - order))) << order;
	for (o = order + 1; i > 1; o++) {
		i /= 2;
		tree[i] = area_merge(tree, i, o);
	}
	map->chunks[c]->used += 1U << order;
	WRITE_ONCE(map->pages_used, map->pages_used + (1U << order));
	area_refile(map, c, old);
	return 0;
}

/*
 * Returns @area, merging it with its free buddies.  AFRDMA_AREA_CHUNK_EMPTY
 * if its chunk now holds no area (the caller may remove it), else 0;
 * -EINVAL, changing nothing, if @area is not an area handed out.
 */
int afrdma_area_free(struct afrdma_area_map *map,
		     const struct afrdma_area *area)
{
	unsigned int k = map->chunk_order, order = area->order, o, i;
	struct afrdma_area_chunk *chunk;
	u8 *tree, old;

	if (area->chunk >= map->max_chunks || !map->chunks[area->chunk] ||
	    order > k || area->page >= 1U << k ||
	    area->page & ((1U << order) - 1))
		return -EINVAL;
	chunk = map->chunks[area->chunk];
	tree = chunk->tree;
	i = (1U << (k - order)) + (area->page >> order);
	if (tree[i] || (order && (tree[2 * i] != order || tree[2 * i + 1] != order)))
		return -EINVAL;
	old = tree[1];
	tree[i] = order + 1;
	for (o = order + 1; i > 1; o++) {
		i /= 2;
		tree[i] = area_merge(tree, i, o);
	}
	chunk->used -= 1U << order;
	WRITE_ONCE(map->pages_used, map->pages_used - (1U << order));
	area_refile(map, area->chunk, old);
	return chunk->used ? 0 : AFRDMA_AREA_CHUNK_EMPTY;
}
