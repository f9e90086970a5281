// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma MSG_ZEROCOPY, the API half: the SO_ZEROCOPY opt-in and TCP's
 * completion notifications on the error queue, so that programs written
 * for TCP's MSG_ZEROCOPY (Documentation/networking/msg_zerocopy.rst) run
 * unchanged.  The data is still copied into the connection's registered
 * send buffers, so every notification carries SO_EE_CODE_ZEROCOPY_COPIED,
 * exactly as TCP reports a send it had to copy (over loopback, always):
 * the buffer may be reused at once.
 *
 * Opt-in: SO_ZEROCOPY at SOL_SOCKET where the kernel routes SOL_SOCKET to
 * the protocol (SOCK_CUSTOM_SOCKOPT, as vsock); elsewhere (6.1 refuses
 * SO_ZEROCOPY for a protocol that is not TCP, UDP or RDS) AFRDMA_ZEROCOPY
 * at SOL_RDMA, or net.afrdma.zerocopy for every new socket.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errqueue.h>
#include <linux/in6.h>
#include <net/sock.h>

#include "afrdma.h"

/* New sockets: net.afrdma.zerocopy, and SOL_SOCKET routed to us. */
void afrdma_zc_init(struct sock *sk)
{
	if (READ_ONCE(afrdma_net(sock_net(sk))->zerocopy))
		sock_set_flag(sk, SOCK_ZEROCOPY);
	afrdma_zc_own_sol_socket(sk->sk_socket);
}

void afrdma_zc_own_sol_socket(struct socket *sock)
{
#ifdef SOCK_CUSTOM_SOCKOPT
	if (sock)
		set_bit(SOCK_CUSTOM_SOCKOPT, &sock->flags);
#endif
}

/* SO_ZEROCOPY (or AFRDMA_ZEROCOPY): TCP's rules, 0 or 1, at any time. */
int afrdma_zc_set(struct sock *sk, int val)
{
	struct socket *tcp = NULL;

	if (val < 0 || val > 1)
		return -EINVAL;
	lock_sock(sk);
	sock_valbool_flag(sk, SOCK_ZEROCOPY, val);
	if (afrdma_on_tcp(sk))
		tcp = afrdma_sk(sk)->tcp;
	release_sock(sk);
	/* TCP carries the connection: its own MSG_ZEROCOPY takes over. */
	if (tcp) {
		lock_sock(tcp->sk);
		sock_valbool_flag(tcp->sk, SOCK_ZEROCOPY, val);
		release_sock(tcp->sk);
	}
	return 0;
}

/*
 * The send that used ids @lo..@hi is done with the caller's buffer.  A
 * notification that directly follows the last one queued extends it, as
 * TCP merges consecutive ranges.  Called with the socket locked, which
 * orders the sends.
 */
static void afrdma_zc_notify(struct sock *sk, u32 lo, u32 hi)
{
	struct sk_buff_head *q = &sk->sk_error_queue;
	struct sock_exterr_skb *serr;
	struct sk_buff *skb;
	unsigned long flags;
	bool merged = false;

	spin_lock_irqsave(&q->lock, flags);
	skb = skb_peek_tail(q);
	if (skb) {
		serr = SKB_EXT_ERR(skb);
		if (serr->ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY &&
		    serr->ee.ee_code == SO_EE_CODE_ZEROCOPY_COPIED &&
		    serr->ee.ee_data + 1 == lo) {
			serr->ee.ee_data = hi;
			merged = true;
		}
	}
	spin_unlock_irqrestore(&q->lock, flags);
	if (merged) {
		sk_error_report(sk);
		return;
	}

	skb = alloc_skb(0, GFP_KERNEL);
	if (!skb)
		return;
	serr = SKB_EXT_ERR(skb);
	memset(serr, 0, sizeof(*serr));
	serr->ee.ee_errno = 0;
	serr->ee.ee_origin = SO_EE_ORIGIN_ZEROCOPY;
	serr->ee.ee_code = SO_EE_CODE_ZEROCOPY_COPIED;
	serr->ee.ee_info = lo;
	serr->ee.ee_data = hi;
	if (sock_queue_err_skb(sk, skb))
		kfree_skb(skb);
}

/*
 * After a send of @sent bytes with MSG_ZEROCOPY: one id per call, as TCP
 * numbers them, when the socket opted in; otherwise the flag means nothing,
 * as on TCP.
 */
void afrdma_zc_sent(struct sock *sk, int flags, int sent)
{
	u32 id;

	if (!(flags & MSG_ZEROCOPY) || sent <= 0 ||
	    !sock_flag(sk, SOCK_ZEROCOPY))
		return;
	id = (u32)atomic_inc_return(&sk->sk_zckey) - 1;
	lock_sock(sk);
	afrdma_zc_notify(sk, id, id);
	release_sock(sk);
}

/* recvmsg(MSG_ERRQUEUE): the cmsg TCP would give for the peer's family. */
int afrdma_zc_recv(struct sock *sk, struct msghdr *msg, size_t len)
{
	bool v6 = sk->sk_family == AF_INET6 ||
		  afrdma_sk(sk)->daddr.ss_family == AF_INET6 ||
		  afrdma_sk(sk)->diag_dst.ss_family == AF_INET6;

	return sock_recv_errqueue(sk, msg, len, v6 ? SOL_IPV6 : SOL_IP,
				  v6 ? IPV6_RECVERR : IP_RECVERR);
}
