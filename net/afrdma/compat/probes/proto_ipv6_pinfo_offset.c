// SPDX-License-Identifier: GPL-2.0
/* struct proto locates ipv6_pinfo by offset instead of at the end (6.9+). */
#include <net/sock.h>

unsigned int probe(void);
unsigned int probe(void)
{
	struct proto p = { .ipv6_pinfo_offset = 8 };

	return p.ipv6_pinfo_offset;
}
