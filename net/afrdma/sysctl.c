// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma per-network-namespace settings under net.afrdma.*.  Values are
 * read when a connection is set up, so a change applies to new
 * connections and never touches live ones.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/sysctl.h>
#include <linux/user_namespace.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/tcp.h>

#include "afrdma.h"

static unsigned int afrdma_net_id __read_mostly;

static int afrdma_slots_min = AFRDMA_MIN_SLOTS;
static int afrdma_slots_max = AFRDMA_MAX_SLOTS_LOCAL;
static int afrdma_slot_size_min = AFRDMA_MIN_SLOT_SIZE;
static int afrdma_slot_size_max = AFRDMA_MAX_SLOT_SIZE;
static int afrdma_fb_timeout_min = 100;
static int afrdma_fb_timeout_max = 60000;
static int afrdma_max_conns_max = 1 << 20;
static int afrdma_ka_time_max = MAX_TCP_KEEPIDLE;
static int afrdma_ka_intvl_max = MAX_TCP_KEEPINTVL;
static int afrdma_ka_probes_max = MAX_TCP_KEEPCNT;
static int afrdma_busy_poll_max = USEC_PER_SEC;
static int afrdma_inline_max = AFRDMA_INLINE_MAX;
static int afrdma_rzc_min_max = AFRDMA_MAX_SRCAVAIL;
static int afrdma_half_open_timeout_min = 1000;
static int afrdma_half_open_timeout_max = 600000;
static int afrdma_links_idle_max = 7 * 24 * 3600;

/*
 * The settings that size the memory a connection, or all of them, may
 * take.  In a namespace owned by a user namespace other than the initial
 * one they start, and may be set, no higher than the initial namespace's
 * values, so that whoever owns a container cannot raise its kernel memory
 * past what the host allows.
 */
static const char * const afrdma_sysctl_limited[] = {
	"rx_slots", "tx_slots", "initial_slots", "slot_size",
	"max_connections", "max_orphans", "inline_threshold",
	"max_half_open", "half_open_per_peer", "half_open_timeout_ms",
};

/* The template's .data point in here; each netns moves them to its copy. */
static struct afrdma_net afrdma_net_defaults = {
	.rx_slots	= AFRDMA_RX_SLOTS,
	.tx_slots	= AFRDMA_TX_SLOTS,
	.slot_size	= AFRDMA_SLOT_SIZE,
	.initial_slots	= AFRDMA_INITIAL_SLOTS,
	.fallback	= 1,
	.fallback_timeout_ms = AFRDMA_FALLBACK_TIMEOUT_MS,
	.max_conns	= AFRDMA_MAX_CONNS,
	.keepalive_time	= AFRDMA_KEEPALIVE_TIME,
	.keepalive_intvl = AFRDMA_KEEPALIVE_INTVL,
	.keepalive_probes = AFRDMA_KEEPALIVE_PROBES,
	.zerocopy_min	= AFRDMA_ZC_MIN,
	.inline_threshold = AFRDMA_INLINE,
	.rx_zerocopy_min = AFRDMA_RZC_MIN,
	.max_orphans	= AFRDMA_MAX_ORPHANS,
	.max_half_open	= AFRDMA_MAX_HALF_OPEN,
	.half_open_per_peer = AFRDMA_HALF_OPEN_PER_PEER,
	.half_open_timeout_ms = AFRDMA_HALF_OPEN_TIMEOUT_MS,
	.links_idle_s	= AFRDMA_LINK_IDLE_S,
};

/*
 * net.afrdma.links: 1 starts the namespace's link listeners (link.c),
 * 0 stops them and tears every link of the namespace down.  A listener
 * that cannot start (the port taken) leaves it 0, and the write fails.
 */
static int afrdma_sysctl_links(AFRDMA_CTL_TABLE *table, int write,
			       void *buffer, size_t *lenp, loff_t *ppos)
{
	struct afrdma_net *an = container_of((int *)table->data,
					     struct afrdma_net, links);
	int err;

	err = proc_dointvec_minmax(table, write, buffer, lenp, ppos);
	if (err || !write)
		return err;
	err = afrdma_link_switch(&an->lnk, READ_ONCE(an->links));
	if (err)
		WRITE_ONCE(an->links, 0);
	return err;
}

static struct ctl_table afrdma_sysctl_template[] = {
	{
		.procname	= "rx_slots",
		.data		= &afrdma_net_defaults.rx_slots,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &afrdma_slots_min,
		.extra2		= &afrdma_slots_max,
	},
	{
		.procname	= "tx_slots",
		.data		= &afrdma_net_defaults.tx_slots,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &afrdma_slots_min,
		.extra2		= &afrdma_slots_max,
	},
	{
		.procname	= "slot_size",
		.data		= &afrdma_net_defaults.slot_size,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &afrdma_slot_size_min,
		.extra2		= &afrdma_slot_size_max,
	},
	{
		.procname	= "fallback",
		.data		= &afrdma_net_defaults.fallback,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "fallback_timeout_ms",
		.data		= &afrdma_net_defaults.fallback_timeout_ms,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &afrdma_fb_timeout_min,
		.extra2		= &afrdma_fb_timeout_max,
	},
	{
		.procname	= "max_connections",
		.data		= &afrdma_net_defaults.max_conns,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &afrdma_max_conns_max,
	},
	{
		.procname	= "zerocopy",
		.data		= &afrdma_net_defaults.zerocopy,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	/* TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT of new sockets. */
	{
		.procname	= "keepalive_time",
		.data		= &afrdma_net_defaults.keepalive_time,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &afrdma_ka_time_max,
	},
	{
		.procname	= "keepalive_intvl",
		.data		= &afrdma_net_defaults.keepalive_intvl,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &afrdma_ka_intvl_max,
	},
	{
		.procname	= "keepalive_probes",
		.data		= &afrdma_net_defaults.keepalive_probes,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &afrdma_ka_probes_max,
	},
	{
		.procname	= "busy_poll",
		.data		= &afrdma_net_defaults.busy_poll,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &afrdma_busy_poll_max,
	},
	{
		.procname	= "zerocopy_min",
		.data		= &afrdma_net_defaults.zerocopy_min,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_INT_MAX,
	},
	{
		.procname	= "rx_zerocopy_min",
		.data		= &afrdma_net_defaults.rx_zerocopy_min,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &afrdma_rzc_min_max,
	},
	{
		.procname	= "initial_slots",
		.data		= &afrdma_net_defaults.initial_slots,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &afrdma_slots_min,
		.extra2		= &afrdma_slots_max,
	},
	{
		.procname	= "inline_threshold",
		.data		= &afrdma_net_defaults.inline_threshold,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &afrdma_inline_max,
	},
	{
		.procname	= "max_orphans",
		.data		= &afrdma_net_defaults.max_orphans,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &afrdma_max_conns_max,
	},
	/* Half-open connections (cm.c): per listener, per peer, how long. */
	{
		.procname	= "max_half_open",
		.data		= &afrdma_net_defaults.max_half_open,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &afrdma_max_conns_max,
	},
	{
		.procname	= "half_open_per_peer",
		.data		= &afrdma_net_defaults.half_open_per_peer,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &afrdma_max_conns_max,
	},
	{
		.procname	= "half_open_timeout_ms",
		.data		= &afrdma_net_defaults.half_open_timeout_ms,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &afrdma_half_open_timeout_min,
		.extra2		= &afrdma_half_open_timeout_max,
	},
	{
		.procname	= "links",
		.data		= &afrdma_net_defaults.links,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= afrdma_sysctl_links,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "links_idle_s",
		.data		= &afrdma_net_defaults.links_idle_s,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &afrdma_links_idle_max,
	},
	{ }	/* sentinel, for kernels that still want one */
};

#define AFRDMA_SYSCTLS	(ARRAY_SIZE(afrdma_sysctl_template) - 1)

struct afrdma_net *afrdma_net(const struct net *net)
{
	return net_generic(net, afrdma_net_id);
}

static bool afrdma_sysctl_is_limited(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(afrdma_sysctl_limited); i++)
		if (!strcmp(name, afrdma_sysctl_limited[i]))
			return true;
	return false;
}

/*
 * In a namespace of a non-initial user namespace, cap each limited entry
 * at the initial namespace's live value: proc_dointvec_minmax() refuses
 * more with -EINVAL, as it does any value out of range.  The initial
 * namespace's own range keeps its value within the absolute bound.
 */
static void afrdma_sysctl_limit(struct net *net, struct ctl_table *table)
{
	struct afrdma_net *init = afrdma_net(&init_net);
	struct afrdma_net *an = afrdma_net(net);
	unsigned int i;

	if (net->user_ns == &init_user_ns)
		return;
	for (i = 0; i < AFRDMA_SYSCTLS; i++) {
		size_t off = table[i].data - (void *)an;
		int *cap = (void *)init + off;
		int *val = table[i].data;

		if (!afrdma_sysctl_is_limited(table[i].procname))
			continue;
		*val = min(*val, READ_ONCE(*cap));
		table[i].extra2 = cap;
	}
}

static int __net_init afrdma_net_init(struct net *net)
{
	struct afrdma_net *an = afrdma_net(net);
	struct ctl_table *table;
	unsigned int i;
	int err;

	*an = afrdma_net_defaults;
	afrdma_link_net_init(&an->lnk, net);
	err = afrdma_stats_net_init(net, an);
	if (err)
		return err;
	err = afrdma_diag_net_init(net);
	if (err) {
		afrdma_stats_net_exit(net, an);
		return err;
	}
	table = kmemdup(afrdma_sysctl_template, sizeof(afrdma_sysctl_template),
			GFP_KERNEL);
	if (!table)
		goto fail;
	for (i = 0; i < AFRDMA_SYSCTLS; i++)
		table[i].data += (void *)an - (void *)&afrdma_net_defaults;
	afrdma_sysctl_limit(net, table);
#ifdef AFRDMA_HAVE_REGISTER_NET_SYSCTL_SZ
	an->sysctl = register_net_sysctl_sz(net, "net/afrdma", table,
					    AFRDMA_SYSCTLS);
#else
	an->sysctl = register_net_sysctl(net, "net/afrdma", table);
#endif
	if (!an->sysctl) {
		kfree(table);
		goto fail;
	}
	return 0;

fail:
	afrdma_diag_net_exit(net);
	afrdma_stats_net_exit(net, an);
	return -ENOMEM;
}

static void __net_exit afrdma_net_exit(struct net *net)
{
	struct afrdma_net *an = afrdma_net(net);
	const struct ctl_table *table = an->sysctl->ctl_table_arg;

	unregister_net_sysctl_table(an->sysctl);
	kfree(table);
	/* a namespace with links=1 gets here only at module unload: see link.c */
	afrdma_link_net_exit(&an->lnk);
	afrdma_diag_net_exit(net);
	afrdma_stats_net_exit(net, an);
}

static struct pernet_operations afrdma_net_ops = {
	.init	= afrdma_net_init,
	.exit	= afrdma_net_exit,
	.id	= &afrdma_net_id,
	.size	= sizeof(struct afrdma_net),
};

int afrdma_sysctl_init(void)
{
	int err = register_pernet_subsys(&afrdma_net_ops);

	if (err)
		return err;
	/* net.afrdma.mem, in the initial namespace's directory */
	err = afrdma_mem_init();
	if (err)
		unregister_pernet_subsys(&afrdma_net_ops);
	return err;
}

void afrdma_sysctl_exit(void)
{
	afrdma_mem_exit();
	unregister_pernet_subsys(&afrdma_net_ops);
}
