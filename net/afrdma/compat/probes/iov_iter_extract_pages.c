// SPDX-License-Identifier: GPL-2.0
/* iov_iter_extract_pages() pins user pages and advances the iterator (6.3+). */
#include <linux/uio.h>

ssize_t probe(struct iov_iter *i, struct page **pages, size_t *off);
ssize_t probe(struct iov_iter *i, struct page **pages, size_t *off)
{
	return iov_iter_extract_pages(i, &pages, PAGE_SIZE, 1, 0, off);
}
