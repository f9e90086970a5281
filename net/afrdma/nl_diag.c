// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma's sock_diag handler: NETLINK_SOCK_DIAG dumps of afrdma sockets,
 * registered for AF_RDMA's family number as smc_diag is for AF_SMC.  One
 * handler serves both ways in: IPPROTO_RDMA sockets are afrdma's too, on
 * the same list, and a dump filters on the family they were made with.
 * The request, message and attributes are in <linux/afrdma.h>; what they
 * show is what /proc/net/afrdma shows (diag.c), QP numbers hidden alike.
 *
 * A dump walks the requester's namespace's socket index (diag.c) up the
 * socket ids, one chunk per skb.  Between chunks it keeps only the id the
 * next chunk starts at, no socket: the next chunk goes on from that id
 * whatever came or went meanwhile, so a chunk costs the sockets it
 * returns, not a rescan from the start.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <net/netlink.h>

#include "afrdma.h"

/* cb->args[] of a dump */
enum {
	AFRDMA_NLD_NEXT,	/* socket id the next chunk starts at */
	AFRDMA_NLD_END,		/* the walk reached the end of the index */
	AFRDMA_NLD_ADMIN,	/* the requester sees every QP number */
	AFRDMA_NLD_FSUID,	/* ... or those of its own sockets */
};

static bool afrdma_nld_match(struct sock *sk, const struct afrdma_diag_req *req)
{
	const struct afrdma_sock *ars = afrdma_sk(sk);
	int state = READ_ONCE(sk->sk_state);

	if (req->adiag_family && req->adiag_family != sk->sk_family)
		return false;
	if (req->adiag_states && !(req->adiag_states & (1U << state)))
		return false;
	/* sin_port and sin6_port are at the same place; socks lock held */
	if (req->adiag_sport &&
	    req->adiag_sport != ((const struct sockaddr_in *)&ars->diag_src)->sin_port)
		return false;
	if (req->adiag_dport &&
	    req->adiag_dport != ((const struct sockaddr_in *)&ars->diag_dst)->sin_port)
		return false;
	return true;
}

static int afrdma_nld_put_addr(struct sk_buff *skb, int type,
			       const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return nla_put(skb, type, sizeof(struct sockaddr_in), ss);
	if (ss->ss_family == AF_INET6)
		return nla_put(skb, type, sizeof(struct sockaddr_in6), ss);
	return 0;
}

/* The RDMA side, while it has resources.  conn->lock for a consistent view. */
static int afrdma_nld_put_conn(struct sk_buff *skb, struct sock *sk,
			       struct afrdma_conn *conn)
{
	struct afrdma_diag_zerocopy zc = {};
	struct afrdma_diag_credits cr;
	struct afrdma_diag_rings rg;
	bool torn;

	spin_lock(&conn->lock);
	torn = conn->torn;
	rg.rx_slots = conn->rx_slots;
	rg.rx_max = conn->rx_max;
	rg.rx_slot_size = conn->rx_slot_size;
	rg.tx_slots = conn->tx_slots;
	rg.tx_max = conn->tx_max;
	rg.tx_slot_size = conn->tx_slot_size;
	rg.tx_inline = conn->tx_inline;
	cr.tx_credits = conn->tx_credits;
	cr.peer_credits = conn->peer_credits;
	cr.rx_owed = conn->rx_owed;
	zc.tx_pages = conn->zc_pages;
	zc.rx_pages = conn->rzc ? conn->rzc_pages : 0;
	if (conn->rzc)
		zc.flags |= AFRDMA_DIAG_ZC_RX;
	spin_unlock(&conn->lock);
	if (torn)
		return 0;
	if (sock_flag(sk, SOCK_ZEROCOPY))
		zc.flags |= AFRDMA_DIAG_ZC_ON;

	if (nla_put(skb, AFRDMA_DIAG_RINGS, sizeof(rg), &rg) ||
	    nla_put(skb, AFRDMA_DIAG_CREDITS, sizeof(cr), &cr) ||
	    nla_put(skb, AFRDMA_DIAG_ZEROCOPY, sizeof(zc), &zc))
		return -EMSGSIZE;
	return 0;
}

/* One socket's message.  The socks lock held: the names are stable. */
static int afrdma_nld_fill(struct sk_buff *skb, struct netlink_callback *cb,
			   struct sock *sk)
{
	struct user_namespace *user_ns = sk_user_ns(NETLINK_CB(cb->skb).sk);
	const struct afrdma_sock *ars = afrdma_sk(sk);
	kuid_t uid = sock_i_uid(sk);
	struct afrdma_diag_msg *r;
	struct afrdma_conn *conn;
	struct nlmsghdr *nlh;
	u32 rxq, txq, qpn = 0;

	nlh = nlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			SOCK_DIAG_BY_FAMILY, sizeof(*r), NLM_F_MULTI);
	if (!nlh)
		return -EMSGSIZE;
	r = nlmsg_data(nlh);
	memset(r, 0, sizeof(*r));
	r->adiag_family = sk->sk_family;
	r->adiag_state = READ_ONCE(sk->sk_state);
	r->adiag_transport = READ_ONCE(ars->transport);
	r->adiag_fb_reason = READ_ONCE(ars->fb_reason);
	r->adiag_sport = ((const struct sockaddr_in *)&ars->diag_src)->sin_port;
	r->adiag_dport = ((const struct sockaddr_in *)&ars->diag_dst)->sin_port;
	r->adiag_uid = from_kuid_munged(user_ns, uid);
	r->adiag_inode = sock_i_ino(sk);
	sock_diag_save_cookie(sk, r->adiag_cookie);

	/* Hidden as in diag.c: the owner and CAP_NET_ADMIN see it. */
	if (cb->args[AFRDMA_NLD_ADMIN] ||
	    uid_eq(uid, KUIDT_INIT((uid_t)cb->args[AFRDMA_NLD_FSUID])))
		qpn = ars->diag_qpn;
	afrdma_diag_queues(sk, &rxq, &txq);
	if (afrdma_nld_put_addr(skb, AFRDMA_DIAG_LOCAL, &ars->diag_src) ||
	    afrdma_nld_put_addr(skb, AFRDMA_DIAG_PEER, &ars->diag_dst) ||
	    nla_put_u32(skb, AFRDMA_DIAG_RQUEUE, rxq) ||
	    nla_put_u32(skb, AFRDMA_DIAG_WQUEUE, txq))
		goto cancel;
	/* Kept after the connection ends, as in /proc/net/afrdma */
	if ((ars->diag_dev[0] &&
	     nla_put_string(skb, AFRDMA_DIAG_DEVICE, ars->diag_dev)) ||
	    (ars->diag_qpn && nla_put_u32(skb, AFRDMA_DIAG_QPN, qpn)))
		goto cancel;
	/* Pairs with cm.c's release: the connection is set up */
	conn = smp_load_acquire(&afrdma_sk(sk)->conn);
	if (conn && afrdma_nld_put_conn(skb, sk, conn))
		goto cancel;
	nlmsg_end(skb, nlh);
	return 0;

cancel:
	nlmsg_cancel(skb, nlh);
	return -EMSGSIZE;
}

static int afrdma_nld_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct afrdma_diag_req *req = nlmsg_data(cb->nlh);
	struct net *net = sock_net(skb->sk);
	u32 id = cb->args[AFRDMA_NLD_NEXT];
	struct xarray *socks;
	struct sock *sk;
	int err;

	if (cb->args[AFRDMA_NLD_END])
		return 0;
	socks = &afrdma_net(net)->socks;
	while ((sk = afrdma_diag_find(net, &id))) {
		xa_lock_bh(socks);
		err = afrdma_nld_match(sk, req) ? afrdma_nld_fill(skb, cb, sk) : 0;
		xa_unlock_bh(socks);
		/* Outside the lock: the last reference frees, and that takes it. */
		sock_put(sk);
		if (err) {
			/* The skb is full: this socket starts the next chunk. */
			cb->args[AFRDMA_NLD_NEXT] = id;
			return skb->len;
		}
		/* Ids are 31 bits (diag.c): one more still fits. */
		id++;
	}
	cb->args[AFRDMA_NLD_END] = 1;
	return skb->len;
}

static int afrdma_nld_start(struct netlink_callback *cb)
{
	const struct file *file = NETLINK_CB(cb->skb).sk->sk_socket->file;

	if (nlmsg_len(cb->nlh) < sizeof(struct afrdma_diag_req))
		return -EINVAL;
	/* Judged by the netlink socket's opener, as diag.c by the file's. */
	cb->args[AFRDMA_NLD_ADMIN] = netlink_net_capable(cb->skb, CAP_NET_ADMIN);
	cb->args[AFRDMA_NLD_FSUID] = __kuid_val(file->f_cred->fsuid);
	return 0;
}

static int afrdma_nld_handler_dump(struct sk_buff *skb, struct nlmsghdr *nlh)
{
	struct netlink_dump_control c = {
		.start	= afrdma_nld_start,
		.dump	= afrdma_nld_dump,
		.module	= THIS_MODULE,
	};

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY || !(nlh->nlmsg_flags & NLM_F_DUMP))
		return -EOPNOTSUPP;
	return netlink_dump_start(sock_net(skb->sk)->diag_nlsk, skb, nlh, &c);
}

/* Not const: the family number is a module parameter. */
static struct sock_diag_handler afrdma_nld_handler = {
	.owner	= THIS_MODULE,
	.dump	= afrdma_nld_handler_dump,
};

int afrdma_nld_init(void)
{
	afrdma_nld_handler.family = afrdma_family;
	return sock_diag_register(&afrdma_nld_handler);
}

void afrdma_nld_exit(void)
{
	sock_diag_unregister(&afrdma_nld_handler);
}
