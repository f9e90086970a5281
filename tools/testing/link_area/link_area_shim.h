/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel interfaces net/afrdma/link_area.c uses, in user space,
 * for link_area_test.
 */
#ifndef _AFRDMA_LINK_AREA_SHIM_H
#define _AFRDMA_LINK_AREA_SHIM_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;

#define GFP_KERNEL_ACCOUNT	0
#define kcalloc(n, size, gfp)	calloc(n, size)
#define kzalloc(size, gfp)	calloc(1, size)
#define kfree(p)		free(p)
#define kvcalloc(n, size, gfp)	calloc(n, size)
#define kvfree(p)		free(p)
#define struct_size(p, member, n) \
	(sizeof(*(p)) + (size_t)(n) * sizeof((p)->member[0]))
#define max(a, b)		((a) > (b) ? (a) : (b))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))
#define READ_ONCE(x)		(*(volatile __typeof__(x) *)&(x))

#define BITS_PER_LONG		((unsigned int)(sizeof(long) * CHAR_BIT))
#define BITS_TO_LONGS(n)	(((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)

static inline void __set_bit(unsigned int nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG);
}

static inline void __clear_bit(unsigned int nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] &= ~(1UL << (nr % BITS_PER_LONG));
}

static inline unsigned int find_first_bit(const unsigned long *map,
					  unsigned int size)
{
	unsigned int i;

	for (i = 0; i < BITS_TO_LONGS(size); i++)
		if (map[i]) {
			unsigned int nr = i * BITS_PER_LONG + __builtin_ctzl(map[i]);

			return nr < size ? nr : size;
		}
	return size;
}

#endif /* _AFRDMA_LINK_AREA_SHIM_H */
