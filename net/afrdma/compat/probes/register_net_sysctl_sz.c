// SPDX-License-Identifier: GPL-2.0
/* register_net_sysctl_sz() takes the table size; sentinels are gone (6.5+). */
#include <net/net_namespace.h>

struct ctl_table_header *probe(struct net *net, struct ctl_table *t);
struct ctl_table_header *probe(struct net *net, struct ctl_table *t)
{
	return register_net_sysctl_sz(net, "net/probe", t, 1);
}
