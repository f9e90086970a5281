// SPDX-License-Identifier: GPL-2.0
/*
 * AFRDMA_CMD_GET_LINKS and AFRDMA_CMD_LINK_TEST of afrdma's generic
 * netlink family (nl_stats.c): a dump of the requester's namespace's links
 * (link.c), and the test interface that asks for one (<linux/afrdma.h>).
 *
 * A message per link.  As nl_dev.c does with devices, no lock is held
 * across links: link.c hands out the next one held, and the dump goes on
 * from its id in the next chunk.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/genetlink.h>

#include "afrdma.h"

/* cb->args[] of a dump */
enum {
	AFRDMA_NLLINK_NEXT,	/* the id of the link the next chunk starts at */
};

static int afrdma_nllink_fill_streams(struct sk_buff *skb,
				      const struct afrdma_link_info *info)
{
	return nla_put_u32(skb, AFRDMA_A_LINK_STREAMS, info->streams) ||
	       nla_put_u32(skb, AFRDMA_A_LINK_STREAMS_EST, info->streams_est) ||
	       nla_put_u32(skb, AFRDMA_A_LINK_STREAMS_SYN, info->streams_syn) ||
	       nla_put_u32(skb, AFRDMA_A_LINK_STREAMS_HALF_OPEN,
			   info->streams_half_open) ||
	       nla_put_u64_64bit(skb, AFRDMA_A_LINK_STREAMS_OPENED,
				 info->streams_opened, AFRDMA_A_LINK_PAD) ||
	       nla_put_u64_64bit(skb, AFRDMA_A_LINK_STREAMS_REFUSED,
				 info->streams_refused, AFRDMA_A_LINK_PAD) ||
	       nla_put_u64_64bit(skb, AFRDMA_A_LINK_STREAMS_BUSY,
				 info->streams_busy, AFRDMA_A_LINK_PAD) ||
	       nla_put_u64_64bit(skb, AFRDMA_A_LINK_STREAMS_RESETS,
				 info->streams_resets, AFRDMA_A_LINK_PAD) ||
	       nla_put_u64_64bit(skb, AFRDMA_A_LINK_STREAMS_FINS,
				 info->streams_fins, AFRDMA_A_LINK_PAD) ||
	       nla_put_u64_64bit(skb, AFRDMA_A_LINK_STREAMS_ERRORS,
				 info->streams_errors, AFRDMA_A_LINK_PAD) ?
	       -EMSGSIZE : 0;
}

static int afrdma_nllink_fill(struct sk_buff *skb, struct netlink_callback *cb,
			      struct afrdma_link *link, bool admin)
{
	struct afrdma_link_info info;
	struct nlattr *nest;
	size_t alen;
	void *hdr;

	afrdma_link_info(link, &info);
	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &afrdma_nls_family, NLM_F_MULTI, AFRDMA_CMD_GET_LINKS);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, AFRDMA_A_LINK);
	if (!nest)
		goto cancel;
	alen = link->peer.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						  sizeof(struct sockaddr_in);
	if (nla_put_u32(skb, AFRDMA_A_LINK_ID, link->id) ||
	    nla_put_u8(skb, AFRDMA_A_LINK_STATE, info.state) ||
	    nla_put_u8(skb, AFRDMA_A_LINK_PASSIVE, link->passive) ||
	    nla_put(skb, AFRDMA_A_LINK_PEER, alen, &link->peer) ||
	    (link->passive &&
	     nla_put(skb, AFRDMA_A_LINK_LOCAL, alen, &link->local)) ||
	    (info.dev_name[0] &&
	     nla_put_string(skb, AFRDMA_A_LINK_DEVICE, info.dev_name)) ||
	    nla_put_u32(skb, AFRDMA_A_LINK_QPN, admin ? info.qpn : 0) ||
	    nla_put_u32(skb, AFRDMA_A_LINK_PEER_QPN, admin ? info.peer_qpn : 0) ||
	    nla_put_u32(skb, AFRDMA_A_LINK_USERS, info.users) ||
	    nla_put_u32(skb, AFRDMA_A_LINK_PEER_USERS, info.peer_users) ||
	    nla_put_u64_64bit(skb, AFRDMA_A_LINK_TX_MSGS, info.tx_msgs,
			      AFRDMA_A_LINK_PAD) ||
	    nla_put_u64_64bit(skb, AFRDMA_A_LINK_RX_MSGS, info.rx_msgs,
			      AFRDMA_A_LINK_PAD) ||
	    nla_put_u64_64bit(skb, AFRDMA_A_LINK_TX_BYTES, info.tx_bytes,
			      AFRDMA_A_LINK_PAD) ||
	    nla_put_u64_64bit(skb, AFRDMA_A_LINK_RX_BYTES, info.rx_bytes,
			      AFRDMA_A_LINK_PAD) ||
	    nla_put_u32(skb, AFRDMA_A_LINK_CHUNKS, info.chunks) ||
	    nla_put_u64_64bit(skb, AFRDMA_A_LINK_MEM_BYTES, info.mem_bytes,
			      AFRDMA_A_LINK_PAD) ||
	    nla_put_u32(skb, AFRDMA_A_LINK_AREA_PAGES, info.area_pages) ||
	    nla_put_u32(skb, AFRDMA_A_LINK_IDLE_MS, info.idle_ms) ||
	    afrdma_nllink_fill_streams(skb, &info))
		goto cancel;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

int afrdma_link_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct afrdma_link_net *ln = &afrdma_net(sock_net(skb->sk))->lnk;
	bool admin = netlink_net_capable(cb->skb, CAP_NET_ADMIN);
	struct afrdma_link *link;
	int err = 0;
	u32 id;

	while ((link = afrdma_link_next(ln, cb->args[AFRDMA_NLLINK_NEXT]))) {
		id = link->id;
		err = afrdma_nllink_fill(skb, cb, link, admin);
		afrdma_link_put(link);
		if (err)
			break;
		cb->args[AFRDMA_NLLINK_NEXT] = id + 1;
	}
	return err && !skb->len ? err : skb->len;
}

/*
 * A policy's own min and max are s16: a port's range needs these.  Not
 * const: 6.1's nla_policy points at them without it.
 */
static struct netlink_range_validation afrdma_nllink_port_range = {
	.min = 1,
	.max = U16_MAX,
};

static struct netlink_range_validation afrdma_nllink_backlog_range = {
	.max = U16_MAX,
};

static const struct nla_policy afrdma_nllink_policy[AFRDMA_A_LINK_MAX + 1] = {
	[AFRDMA_A_LINK_PEER]		= { .type = NLA_BINARY,
					    .len = sizeof(struct sockaddr_in6) },
	[AFRDMA_A_LINK_USERS]		= { .type = NLA_U32 },
	[AFRDMA_A_LINK_AREA_PAGES]	= { .type = NLA_U32 },
	[AFRDMA_A_LINK_TEST_LISTEN]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &afrdma_nllink_port_range),
	[AFRDMA_A_LINK_TEST_BACKLOG]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &afrdma_nllink_backlog_range),
	[AFRDMA_A_LINK_TEST_PORT]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &afrdma_nllink_port_range),
	[AFRDMA_A_LINK_TEST_STREAMS]	= NLA_POLICY_RANGE(NLA_U32, 1, 1024),
	[AFRDMA_A_LINK_TEST_FIRST_ID]	= NLA_POLICY_MIN(NLA_U32, 1),
	[AFRDMA_A_LINK_TEST_RESET]	= NLA_POLICY_MIN(NLA_U32, 1),
	[AFRDMA_A_LINK_TEST_FIN]	= { .type = NLA_U32 },
	[AFRDMA_A_LINK_TEST_CURSOR]	= NLA_POLICY_MIN(NLA_U32, 1),
	[AFRDMA_A_LINK_TEST_VALUE]	= { .type = NLA_U32 },
};

/* An attribute of AFRDMA_CMD_LINK_TEST, or @none if not given. */
static s64 afrdma_nllink_u32(struct nlattr **tb, int type, s64 none)
{
	return tb[type] ? nla_get_u32(tb[type]) : none;
}

static void afrdma_nllink_stream_test(struct nlattr **tb,
				      struct afrdma_stream_test *t)
{
	t->listen_port = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_LISTEN, -1);
	t->backlog = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_BACKLOG, 16);
	t->connect_port = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_PORT, -1);
	t->count = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_STREAMS, 1);
	t->first_id = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_FIRST_ID, -1);
	t->reset_id = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_RESET, -1);
	t->fin_id = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_FIN, -1);
	t->cursor_id = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_CURSOR, -1);
	t->cursor_value = afrdma_nllink_u32(tb, AFRDMA_A_LINK_TEST_VALUE, 0);
}

int afrdma_link_nl_test(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[AFRDMA_A_LINK_MAX + 1];
	struct sockaddr_storage peer = {};
	int users = -1, pages = -1, err;
	struct afrdma_stream_test st;
	struct nlattr *a;
	size_t len;

	if (!info->attrs[AFRDMA_A_LINK]) {
		NL_SET_ERR_MSG(info->extack, "AFRDMA_A_LINK missing");
		return -EINVAL;
	}
	err = nla_parse_nested(tb, AFRDMA_A_LINK_MAX, info->attrs[AFRDMA_A_LINK],
			       afrdma_nllink_policy, info->extack);
	if (err)
		return err;
	a = tb[AFRDMA_A_LINK_PEER];
	if (!a) {
		NL_SET_ERR_MSG(info->extack, "AFRDMA_A_LINK_PEER missing");
		return -EINVAL;
	}
	len = nla_len(a);
	memcpy(&peer, nla_data(a), min(len, sizeof(peer)));
	if (!((peer.ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) ||
	      (IS_ENABLED(CONFIG_IPV6) && peer.ss_family == AF_INET6 &&
	       len >= sizeof(struct sockaddr_in6)))) {
		NL_SET_ERR_MSG(info->extack, "AFRDMA_A_LINK_PEER: not an IPv4 or IPv6 sockaddr");
		return -EINVAL;
	}
	if (tb[AFRDMA_A_LINK_USERS]) {
		users = nla_get_u32(tb[AFRDMA_A_LINK_USERS]);
		if (users < 0 || users > 1024)
			return -ERANGE;
	}
	if (tb[AFRDMA_A_LINK_AREA_PAGES]) {
		pages = nla_get_u32(tb[AFRDMA_A_LINK_AREA_PAGES]);
		/* an area lies in one chunk */
		if (pages < 0 || pages > 1 << AFRDMA_LINK_CHUNK_ORDER)
			return -ERANGE;
	}
	afrdma_nllink_stream_test(tb, &st);
	err = afrdma_link_test(genl_info_net(info), &peer, users, pages, &st);
	if (err == -EOPNOTSUPP)
		NL_SET_ERR_MSG(info->extack, "net.afrdma.links is 0");
	else if (err == -ENOTCONN)
		NL_SET_ERR_MSG(info->extack, "the link is not up yet");
	else if (err == -ENOENT)
		NL_SET_ERR_MSG(info->extack, "no such stream");
	return err;
}
