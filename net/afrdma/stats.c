// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma counters, per network namespace, in /proc/net/afrdma_stat: one
 * "Name value" line per counter, so that shell tools read them easily.
 * Kept read-only for compatibility: nl_stats.c serves the same over
 * generic netlink, which `afrdma stats` reads now.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>

#include "afrdma.h"

static const char * const afrdma_mib_names[AFRDMA_MIB_MAX] = {
	[AFRDMA_MIB_ACTIVE_OPENS]	= "ActiveOpens",
	[AFRDMA_MIB_PASSIVE_OPENS]	= "PassiveOpens",
	[AFRDMA_MIB_FALLBACK_ACTIVE]	= "FallbackActive",
	[AFRDMA_MIB_FALLBACK_PASSIVE]	= "FallbackPassive",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_NO_DEVICE - 1] = "FallbackNoDevice",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_NO_ROUTE - 1] = "FallbackNoRoute",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_UNREACHABLE - 1] = "FallbackUnreachable",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_REJECTED - 1] = "FallbackRejected",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_RESOURCES - 1] = "FallbackResources",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_PROTOCOL - 1] = "FallbackProtocol",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_TIMEOUT - 1] = "FallbackTimeout",
	[AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_PEER_TCP - 1] = "FallbackPeerTcp",
	[AFRDMA_MIB_CONNECT_FAILED]	= "ConnectFailed",
	[AFRDMA_MIB_RESETS]		= "Resets",
	[AFRDMA_MIB_KEEPALIVE_PROBES]	= "KeepaliveProbes",
	[AFRDMA_MIB_KEEPALIVE_TIMEOUTS]	= "KeepaliveTimeouts",
	[AFRDMA_MIB_DATA_SENDS]		= "DataSends",
	[AFRDMA_MIB_CTRL_SENDS]		= "CtrlSends",
	[AFRDMA_MIB_BYTES_SENT]		= "BytesSent",
	[AFRDMA_MIB_RECVS]		= "Recvs",
	[AFRDMA_MIB_BYTES_RECEIVED]	= "BytesReceived",
	[AFRDMA_MIB_COMPLETION_ERRORS]	= "CompletionErrors",
	[AFRDMA_MIB_PROTOCOL_ERRORS]	= "ProtocolErrors",
	[AFRDMA_MIB_BUSY_POLL_HITS]	= "BusyPollHits",
	[AFRDMA_MIB_BUSY_POLL_MISSES]	= "BusyPollMisses",
	[AFRDMA_MIB_ZEROCOPY_SENDS]	= "ZeroCopySends",
	[AFRDMA_MIB_ZEROCOPY_COPIED]	= "ZeroCopyCopied",
	[AFRDMA_MIB_SRCAVAIL_SENT]	= "SrcAvailSent",
	[AFRDMA_MIB_RX_ZEROCOPY_READS]	= "RxZeroCopyReads",
	[AFRDMA_MIB_RX_ZEROCOPY_BYTES]	= "RxZeroCopyBytes",
	[AFRDMA_MIB_RX_BOUNCE_READS]	= "RxBounceReads",
	[AFRDMA_MIB_ORPHAN_DROPS]	= "OrphanDrops",
	[AFRDMA_MIB_ORPHAN_TIMEOUTS]	= "OrphanTimeouts",
	[AFRDMA_MIB_STALE_RETRIES]	= "ConnectStaleRetries",
	[AFRDMA_MIB_HALF_OPEN_DROPS]	= "HalfOpenDrops",
	[AFRDMA_MIB_HALF_OPEN_TIMEOUTS]	= "HalfOpenTimeouts",
	[AFRDMA_MIB_MEMORY_DROPS]	= "MemoryDrops",
	[AFRDMA_MIB_GROWTHS_DECLINED]	= "GrowthsDeclined",
	[AFRDMA_MIB_RX_READ_STALLS]	= "RxReadStalls",
};

const char *afrdma_stats_name(unsigned int i)
{
	return afrdma_mib_names[i];
}

/* Counter @i of @an, summed over the CPUs. */
u64 afrdma_stats_read(const struct afrdma_net *an, unsigned int i)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(an->mib, cpu)->mibs[i]);
	return sum;
}

static int afrdma_stat_show(struct seq_file *seq, void *v)
{
	const struct afrdma_net *an = afrdma_net(seq_file_single_net(seq));
	unsigned int i;

	for (i = 0; i < AFRDMA_MIB_MAX; i++)
		seq_printf(seq, "%s %llu\n", afrdma_mib_names[i],
			   afrdma_stats_read(an, i));
	/* A gauge, not a counter: RDMA connections holding resources now. */
	seq_printf(seq, "CurrConnections %d\n", atomic_read(&an->conns));
	/* Closed sockets whose data is still being delivered. */
	seq_printf(seq, "CurrOrphans %d\n", atomic_read(&an->orphans));
	/* Accepted connections whose handshake is still going on. */
	seq_printf(seq, "CurrHalfOpen %d\n", atomic_read(&an->half_open));
	/* Pages of the namespace's rings, its share of net.afrdma.mem. */
	seq_printf(seq, "MemoryPages %ld\n", atomic_long_read(&an->mem_pages));
	return 0;
}

int afrdma_stats_net_init(struct net *net, struct afrdma_net *an)
{
	an->mib = alloc_percpu(struct afrdma_mib);
	if (!an->mib)
		return -ENOMEM;
	if (!proc_create_net_single("afrdma_stat", 0444, net->proc_net,
				    afrdma_stat_show, NULL)) {
		free_percpu(an->mib);
		an->mib = NULL;
		return -ENOMEM;
	}
	return 0;
}

void afrdma_stats_net_exit(struct net *net, struct afrdma_net *an)
{
	remove_proc_entry("afrdma_stat", net->proc_net);
	free_percpu(an->mib);
	an->mib = NULL;
}
