// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma's share of socket memory, as tcp_mem is TCP's: the pages that
 * every connection's ring and control buffers take, host-wide, against
 * net.afrdma.mem = "min pressure max" (pages, the initial namespace only).
 * Each namespace also counts its own share, which its MemoryPages shows.
 *
 * Above max, a buffer is not allocated: a connection that cannot get its
 * first ring is not set up (a listener drops the request, and the peer's
 * CM sends it again; a connect goes to TCP, or fails with ENOBUFS), and a
 * ring does not grow.  Above pressure, until the pages fall below min
 * again, and while the owner's memory cgroup is under socket pressure, no
 * ring grows: connections keep working on the rings they have, as TCP
 * stops growing its buffers.  What is allocated is also charged to the
 * owner's memory cgroup (conn.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/swap.h>
#include <linux/sysctl.h>
#include <net/net_namespace.h>

#include "afrdma.h"

/* Lockless: every reader takes a snapshot. */
static atomic_long_t afrdma_mem_pages;
/* min, pressure, max: the sysctl handler writes, readers READ_ONCE (tcp_mem) */
static unsigned long afrdma_mem_limits[3];
/* Set above pressure, cleared below min: racy by design, as TCP's flag */
static bool afrdma_mem_pressure;
static struct ctl_table_header *afrdma_mem_sysctl;

static struct ctl_table afrdma_mem_table[] = {
	{
		.procname	= "mem",
		.data		= &afrdma_mem_limits,
		.maxlen		= sizeof(afrdma_mem_limits),
		.mode		= 0644,
		.proc_handler	= proc_doulongvec_minmax,
	},
#ifndef AFRDMA_HAVE_REGISTER_NET_SYSCTL_SZ
	{ }
#endif
};

/*
 * Takes @size bytes' pages from afrdma's share; false, with nothing taken,
 * if that would pass net.afrdma.mem's max.  Any context.
 */
bool afrdma_mem_charge(struct afrdma_net *an, size_t size)
{
	long pages = DIV_ROUND_UP(size, PAGE_SIZE);

	if (atomic_long_add_return(pages, &afrdma_mem_pages) >
	    (long)READ_ONCE(afrdma_mem_limits[2])) {
		atomic_long_sub(pages, &afrdma_mem_pages);
		return false;
	}
	atomic_long_add(pages, &an->mem_pages);
	return true;
}

void afrdma_mem_uncharge(struct afrdma_net *an, size_t size)
{
	long pages = DIV_ROUND_UP(size, PAGE_SIZE);

	atomic_long_sub(pages, &an->mem_pages);
	atomic_long_sub(pages, &afrdma_mem_pages);
}

/*
 * Whether a connection charged to @memcg should grow no ring: afrdma's
 * share is under pressure, or the cgroup (or an ancestor) is under socket
 * pressure, as TCP asks sk_under_memory_pressure().
 */
bool afrdma_mem_under_pressure(struct mem_cgroup *memcg)
{
	long pages = atomic_long_read(&afrdma_mem_pages);

	/* Entered above pressure, left below min, as tcp_mem's */
	if (pages > (long)READ_ONCE(afrdma_mem_limits[1])) {
		if (!READ_ONCE(afrdma_mem_pressure))
			WRITE_ONCE(afrdma_mem_pressure, true);
		return true;
	}
	if (READ_ONCE(afrdma_mem_pressure)) {
		if (pages >= (long)READ_ONCE(afrdma_mem_limits[0]))
			return true;
		WRITE_ONCE(afrdma_mem_pressure, false);
	}
	return memcg && mem_cgroup_under_socket_pressure(memcg);
}

/* Whether afrdma's share is at its max: no new connection fits. */
bool afrdma_mem_full(void)
{
	return atomic_long_read(&afrdma_mem_pages) >=
	       (long)READ_ONCE(afrdma_mem_limits[2]);
}

/*
 * The defaults scale with the memory the kernel can use for buffers, as
 * tcp_mem's do, but four times TCP's: afrdma's rings are allocated up
 * front, TCP's buffers only as data waits in them.  About 1/4 of it for
 * pressure, 3/8 for max.
 */
int afrdma_mem_init(void)
{
	unsigned long limit = nr_free_buffer_pages() / 4;

	afrdma_mem_limits[0] = limit / 4 * 3;
	afrdma_mem_limits[1] = limit;
	afrdma_mem_limits[2] = afrdma_mem_limits[0] * 2;
#ifdef AFRDMA_HAVE_REGISTER_NET_SYSCTL_SZ
	afrdma_mem_sysctl = register_net_sysctl_sz(&init_net, "net/afrdma",
						   afrdma_mem_table,
						   ARRAY_SIZE(afrdma_mem_table));
#else
	afrdma_mem_sysctl = register_net_sysctl(&init_net, "net/afrdma",
						afrdma_mem_table);
#endif
	return afrdma_mem_sysctl ? 0 : -ENOMEM;
}

void afrdma_mem_exit(void)
{
	unregister_net_sysctl_table(afrdma_mem_sysctl);
	WARN_ON_ONCE(atomic_long_read(&afrdma_mem_pages));
}
