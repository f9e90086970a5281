// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma's generic netlink family: the counters of the requester's network
 * namespace, what /proc/net/afrdma_stat shows, each as a name and a value
 * so that a reader needs no table of them (<linux/afrdma.h>).  Its device
 * dump is nl_dev.c's, its link dump and test command nl_link.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/genetlink.h>

#include "afrdma.h"

static int afrdma_nls_put(struct sk_buff *msg, const char *name, u64 val,
			  bool gauge)
{
	struct nlattr *stat;

	stat = nla_nest_start(msg, AFRDMA_A_STATS_STAT);
	if (!stat)
		return -EMSGSIZE;
	if (nla_put_string(msg, AFRDMA_A_STAT_NAME, name) ||
	    nla_put_u64_64bit(msg, AFRDMA_A_STAT_VALUE, val, AFRDMA_A_STAT_PAD) ||
	    (gauge && nla_put_flag(msg, AFRDMA_A_STAT_GAUGE))) {
		nla_nest_cancel(msg, stat);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, stat);
	return 0;
}

static int afrdma_nls_get_stats(struct sk_buff *skb, struct genl_info *info)
{
	const struct afrdma_net *an = afrdma_net(genl_info_net(info));
	struct nlattr *stats;
	struct sk_buff *msg;
	unsigned int i;
	void *hdr;

	msg = nlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &afrdma_nls_family, 0,
				AFRDMA_CMD_GET_STATS);
	if (!hdr)
		goto nospace;
	stats = nla_nest_start(msg, AFRDMA_A_STATS);
	if (!stats)
		goto nospace;
	for (i = 0; i < AFRDMA_MIB_MAX; i++)
		if (afrdma_nls_put(msg, afrdma_stats_name(i),
				   afrdma_stats_read(an, i), false))
			goto nospace;
	/* As in /proc/net/afrdma_stat: RDMA connections holding resources */
	if (afrdma_nls_put(msg, "CurrConnections", atomic_read(&an->conns), true))
		goto nospace;
	/* Closed sockets whose data is still being delivered. */
	if (afrdma_nls_put(msg, "CurrOrphans", atomic_read(&an->orphans), true))
		goto nospace;
	/* Accepted connections whose handshake is still going on. */
	if (afrdma_nls_put(msg, "CurrHalfOpen", atomic_read(&an->half_open), true))
		goto nospace;
	/* Pages of the namespace's rings, its share of net.afrdma.mem. */
	if (afrdma_nls_put(msg, "MemoryPages", atomic_long_read(&an->mem_pages),
			   true))
		goto nospace;
	nla_nest_end(msg, stats);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

static const struct genl_small_ops afrdma_nls_ops[] = {
	{
		.cmd	= AFRDMA_CMD_GET_STATS,
		.doit	= afrdma_nls_get_stats,
	},
	{
		.cmd	= AFRDMA_CMD_GET_DEVICES,
		.dumpit	= afrdma_nldev_dump,
	},
	{
		.cmd	= AFRDMA_CMD_GET_LINKS,
		.dumpit	= afrdma_link_dump,
	},
	{
		.cmd	= AFRDMA_CMD_LINK_TEST,
		.doit	= afrdma_link_nl_test,
		.flags	= GENL_ADMIN_PERM,
	},
};

/* Only AFRDMA_CMD_LINK_TEST takes attributes: a nest nl_link.c parses. */
static const struct nla_policy afrdma_nls_policy[AFRDMA_A_MAX + 1] = {
	[AFRDMA_A_LINK]	= { .type = NLA_NESTED },
};

struct genl_family afrdma_nls_family __ro_after_init = {
	.name		= AFRDMA_GENL_NAME,
	.version	= AFRDMA_GENL_VERSION,
	.netnsok	= true,
	.module		= THIS_MODULE,
	.maxattr	= AFRDMA_A_MAX,
	.policy		= afrdma_nls_policy,
	.small_ops	= afrdma_nls_ops,
	.n_small_ops	= ARRAY_SIZE(afrdma_nls_ops),
};

int __init afrdma_nls_init(void)
{
	return genl_register_family(&afrdma_nls_family);
}

void afrdma_nls_exit(void)
{
	genl_unregister_family(&afrdma_nls_family);
}
