// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma socket listing: /proc/net/afrdma, one line per socket of the
 * reader's network namespace, with what /proc/net/tcp shows for TCP (state,
 * addresses, queues, uid, inode) plus the transport, QP number, RDMA
 * device and the receive and send rings (buffers now/at most).
 *
 * Kept read-only for compatibility: nl_diag.c serves the same over
 * NETLINK_SOCK_DIAG, which `afrdma ss` reads now.
 *
 * The QP number is a handle on the RDMA side of a connection, which TCP
 * has no counterpart of in /proc/net/tcp; like the socket mark in
 * inet_diag, it is shown only to the socket's owner and to CAP_NET_ADMIN
 * (as the file's opener), and reads 0 for everyone else.  The device name
 * is in /sys/class/infiniband for all to see anyway.
 *
 * Every afrdma socket is in its namespace's index (afrdma_net's socks, an
 * xarray) from init to destruct, under an id of its own, handed out
 * cyclically: ids grow with creation until they wrap.  A walk goes up the
 * ids and remembers the next id to look at, not a socket, so it resumes
 * where it stopped whatever came or went meanwhile, at the cost of the
 * sockets it returns: each socket present all along is returned once, one
 * made or closed during the walk may or may not be.  The index's lock also
 * guards the names and device snapshot in struct afrdma_sock, the fallback
 * TCP socket pointer and the connection pointer, so that a reader never
 * follows a pointer that release is freeing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/tcp.h>

#include "afrdma.h"

/* In the index: -ENOMEM (or -EBUSY with 2^31 sockets) if it cannot be. */
int afrdma_diag_add(struct sock *sk)
{
	struct afrdma_net *an = afrdma_net(sock_net(sk));
	int err;

	/* 31 bits: one past the last id, a walk's next, still fits a u32. */
	err = xa_alloc_cyclic_bh(&an->socks, &afrdma_sk(sk)->diag_id, sk,
				 xa_limit_31b, &an->socks_next, GFP_KERNEL);
	return err < 0 ? err : 0;
}

void afrdma_diag_del(struct sock *sk)
{
	xa_erase_bh(afrdma_diag_socks(sk), afrdma_sk(sk)->diag_id);
}

/*
 * The socket of @net with the lowest id at or above *@id, held, its id in
 * *@id; NULL if none.  The lock keeps each entry from being freed while
 * we look (destruct takes it out under the lock first); one whose last
 * reference is gone is passed over, as destruct is on its way.
 */
struct sock *afrdma_diag_find(const struct net *net, u32 *id)
{
	struct xarray *socks = &afrdma_net(net)->socks;
	unsigned long index;
	struct sock *sk;

	xa_lock_bh(socks);
	xa_for_each_start(socks, index, sk, *id)
		if (refcount_inc_not_zero(&sk->sk_refcnt))
			break;
	xa_unlock_bh(socks);
	if (sk)
		*id = index;
	return sk;
}

/* Sets the fallback TCP socket that readers may follow. */
void afrdma_diag_set_tcp(struct sock *sk, struct socket *tcp)
{
	struct xarray *socks = afrdma_diag_socks(sk);

	xa_lock_bh(socks);
	afrdma_sk(sk)->tcp = tcp;
	xa_unlock_bh(socks);
}

/* Records @sk's addresses (either may be NULL: unchanged) for the listing. */
void afrdma_diag_set_names(struct sock *sk, const struct sockaddr *src,
			   const struct sockaddr *dst)
{
	struct xarray *socks = afrdma_diag_socks(sk);
	struct afrdma_sock *ars = afrdma_sk(sk);

	xa_lock_bh(socks);
	if (src)
		memcpy(&ars->diag_src, src, src->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	if (dst)
		memcpy(&ars->diag_dst, dst, dst->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	xa_unlock_bh(socks);
}

/* Copies out what afrdma_diag_set_names() recorded (either may be NULL). */
void afrdma_diag_get_names(struct sock *sk, struct sockaddr_storage *src,
			   struct sockaddr_storage *dst)
{
	struct xarray *socks = afrdma_diag_socks(sk);
	struct afrdma_sock *ars = afrdma_sk(sk);

	xa_lock_bh(socks);
	if (src)
		*src = ars->diag_src;
	if (dst)
		*dst = ars->diag_dst;
	xa_unlock_bh(socks);
}

/* The RDMA side of an established connection, for the listing. */
void afrdma_diag_set_conn(struct sock *sk, const struct afrdma_conn *conn)
{
	struct xarray *socks = afrdma_diag_socks(sk);
	struct afrdma_sock *ars = afrdma_sk(sk);

	xa_lock_bh(socks);
	ars->diag_qpn = conn->qp ? conn->qp->qp_num : 0;
	strscpy(ars->diag_dev, dev_name(&conn->dev->ibdev->dev),
		sizeof(ars->diag_dev));
	xa_unlock_bh(socks);
}

/* An RDMA connection's names and QP, from its cm id. */
void afrdma_diag_set_cm(struct sock *sk, struct rdma_cm_id *id)
{
	afrdma_diag_set_names(sk, (struct sockaddr *)&id->route.addr.src_addr,
			      (struct sockaddr *)&id->route.addr.dst_addr);
	if (afrdma_sk(sk)->conn)
		afrdma_diag_set_conn(sk, afrdma_sk(sk)->conn);
}

static const char *const afrdma_state_names[] = {
	[TCP_ESTABLISHED]	= "ESTAB",
	[TCP_SYN_SENT]		= "SYN-SENT",
	[TCP_SYN_RECV]		= "SYN-RECV",
	[TCP_CLOSE]		= "CLOSE",
	[TCP_CLOSE_WAIT]	= "CLOSE-WAIT",
	[TCP_LISTEN]		= "LISTEN",
};

static const char *const afrdma_transport_names[] = {
	[AFRDMA_TRANSPORT_NONE]	= "-",
	[AFRDMA_TRANSPORT_RDMA]	= "rdma",
	[AFRDMA_TRANSPORT_TCP]	= "tcp",
};

static const struct sockaddr_in afrdma_no_addr = { .sin_family = AF_INET };

static const struct sockaddr *afrdma_diag_addr(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6)
		return (const struct sockaddr *)ss;
	return (const struct sockaddr *)&afrdma_no_addr;
}

/* Bytes queued each way; the socks lock keeps ars->tcp and ars->conn alive. */
void afrdma_diag_queues(struct sock *sk, u32 *rxq, u32 *txq)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_conn *conn = ars->conn;
	const struct tcp_sock *tp;

	*rxq = 0;
	*txq = 0;
	if (ars->transport == AFRDMA_TRANSPORT_TCP && ars->tcp) {
		tp = tcp_sk(ars->tcp->sk);
		*rxq = max_t(int, READ_ONCE(tp->rcv_nxt) -
				  READ_ONCE(tp->copied_seq), 0);
		*txq = READ_ONCE(tp->write_seq) - READ_ONCE(tp->snd_una);
	} else if (conn && !READ_ONCE(conn->torn)) {
		*rxq = READ_ONCE(conn->rx_bytes);
		*txq = READ_ONCE(conn->tx_unacked);
	} else if (sk->sk_state == TCP_LISTEN) {
		*rxq = READ_ONCE(ars->accept_len);
		*txq = READ_ONCE(sk->sk_max_ack_backlog);
	}
}

/* See the top of this file: judged by who opened it, as TCP's diag does. */
static bool afrdma_diag_shows_qpn(struct seq_file *seq, kuid_t uid)
{
	const struct file *file = seq->file;

	return uid_eq(uid, file->f_cred->fsuid) ||
	       file_ns_capable(file, seq_file_net(seq)->user_ns, CAP_NET_ADMIN);
}

/* seq_file's private state; resumes the walk by id (see the top) */
struct afrdma_seq_state {
	struct seq_net_private	p;	/* first: seq_file_net() */
	u32			next;	/* id the walk goes on from */
};

/* The socket the walk is at, held; st->next becomes its id. */
static void *afrdma_seq_find(struct seq_file *seq)
{
	struct afrdma_seq_state *st = seq->private;

	return afrdma_diag_find(seq_file_net(seq), &st->next);
}

static void *afrdma_seq_start(struct seq_file *seq, loff_t *pos)
{
	struct afrdma_seq_state *st = seq->private;

	/* Position 0 (re)starts: the header, then the sockets from id 0. */
	if (!*pos) {
		st->next = 0;
		return SEQ_START_TOKEN;
	}
	return afrdma_seq_find(seq);
}

static void *afrdma_seq_next(struct seq_file *seq, void *v, loff_t *pos)
{
	struct afrdma_seq_state *st = seq->private;

	++*pos;
	if (v != SEQ_START_TOKEN) {
		st->next = afrdma_sk(v)->diag_id + 1;
		sock_put(v);
	}
	return afrdma_seq_find(seq);
}

static void afrdma_seq_stop(struct seq_file *seq, void *v)
{
	/* Not shown yet, or cut off: the next read finds it again by id. */
	if (v && v != SEQ_START_TOKEN)
		sock_put(v);
}

static int afrdma_seq_show(struct seq_file *seq, void *v)
{
	unsigned int rx = 0, rx_max = 0, tx = 0, tx_max = 0, inl = 0;
	struct afrdma_conn *conn;
	struct afrdma_sock *ars;
	struct xarray *socks;
	u32 rxq, txq, qpn;
	unsigned long ino;
	struct sock *sk;
	bool show_qpn;
	kuid_t uid;
	int state;

	if (v == SEQ_START_TOKEN) {
		seq_puts(seq, "state local remote transport rx_queue tx_queue uid inode qpn device fallback_reason rx_slots tx_slots inline\n");
		return 0;
	}
	sk = v;
	ars = afrdma_sk(sk);
	socks = afrdma_diag_socks(sk);
	state = READ_ONCE(sk->sk_state);
	uid = sock_i_uid(sk);
	ino = sock_i_ino(sk);
	show_qpn = afrdma_diag_shows_qpn(seq, uid);

	/* Held, but release may be freeing what the snapshot points at */
	xa_lock_bh(socks);
	afrdma_diag_queues(sk, &rxq, &txq);
	qpn = show_qpn ? ars->diag_qpn : 0;
	conn = ars->conn;
	if (conn && !READ_ONCE(conn->torn)) {
		rx = READ_ONCE(conn->rx_slots);
		rx_max = READ_ONCE(conn->rx_max);
		tx = READ_ONCE(conn->tx_slots);
		tx_max = READ_ONCE(conn->tx_max);
		inl = READ_ONCE(conn->tx_inline);
	}
	seq_printf(seq, "%s %pISpc %pISpc %s %u %u %u %lu %u %s %u %u/%u %u/%u %u\n",
		   state < ARRAY_SIZE(afrdma_state_names) &&
		   afrdma_state_names[state] ? afrdma_state_names[state] : "?",
		   afrdma_diag_addr(&ars->diag_src),
		   afrdma_diag_addr(&ars->diag_dst),
		   afrdma_transport_names[READ_ONCE(ars->transport)], rxq, txq,
		   from_kuid_munged(seq_user_ns(seq), uid), ino, qpn,
		   ars->diag_dev[0] ? ars->diag_dev : "-",
		   READ_ONCE(ars->fb_reason), rx, rx_max, tx, tx_max, inl);
	xa_unlock_bh(socks);
	return 0;
}

static const struct seq_operations afrdma_seq_ops = {
	.start	= afrdma_seq_start,
	.next	= afrdma_seq_next,
	.stop	= afrdma_seq_stop,
	.show	= afrdma_seq_show,
};

int afrdma_diag_net_init(struct net *net)
{
	struct afrdma_net *an = afrdma_net(net);

	xa_init_flags(&an->socks, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
	an->socks_next = 0;
	if (!proc_create_net("afrdma", 0444, net->proc_net, &afrdma_seq_ops,
			     sizeof(struct afrdma_seq_state)))
		return -ENOMEM;
	return 0;
}

void afrdma_diag_net_exit(struct net *net)
{
	struct afrdma_net *an = afrdma_net(net);

	remove_proc_entry("afrdma", net->proc_net);
	/* Every socket holds its namespace; a kernel one must be closed. */
	WARN_ON_ONCE(!xa_empty(&an->socks));
	xa_destroy(&an->socks);
}
