// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma tracepoints (trace.h): their one instance, and the helpers behind
 * the hooks that need more than a trace_*() call.
 */
#include <net/tcp_states.h>

#include "afrdma.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

/* Where @sk's connection runs, for afrdma_connect and afrdma_accept. */
static void afrdma_trace_names(struct sock *sk, struct sockaddr_in6 *src,
			       struct sockaddr_in6 *dst)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct sockaddr_in *src4 = (struct sockaddr_in *)src;
	struct sockaddr_in *dst4 = (struct sockaddr_in *)dst;
	struct sock *tsk;

	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (afrdma_on_tcp(sk) && ars->tcp) {
		tsk = ars->tcp->sk;
		src->sin6_family = tsk->sk_family;
		dst->sin6_family = tsk->sk_family;
		src->sin6_port = htons(tsk->sk_num);
		dst->sin6_port = tsk->sk_dport;
#if IS_ENABLED(CONFIG_IPV6)
		if (tsk->sk_family == AF_INET6) {
			src->sin6_addr = tsk->sk_v6_rcv_saddr;
			dst->sin6_addr = tsk->sk_v6_daddr;
			return;
		}
#endif
		src4->sin_addr.s_addr = tsk->sk_rcv_saddr;
		dst4->sin_addr.s_addr = tsk->sk_daddr;
	} else if (ars->cm_id) {
		memcpy(src, &ars->cm_id->route.addr.src_addr, sizeof(*src));
		memcpy(dst, &ars->cm_id->route.addr.dst_addr, sizeof(*dst));
	} else {
		memcpy(dst, &ars->daddr, sizeof(*dst));
	}
}

/*
 * Sets @sk's state, traced, with the end of a connect or an accept as its
 * own event.  The socket is locked, or not yet reachable.
 */
void afrdma_set_state(struct sock *sk, int state)
{
	int old = sk->sk_state;
	struct sockaddr_in6 src, dst;

	WRITE_ONCE(sk->sk_state, state);
	if (old == state)
		return;
	trace_afrdma_state(sk, old, state);
	if (old == TCP_SYN_SENT) {
		if ((state == TCP_ESTABLISHED || state == TCP_CLOSE) &&
		    trace_afrdma_connect_enabled()) {
			afrdma_trace_names(sk, &src, &dst);
			trace_afrdma_connect(sk, &src, &dst,
					     state == TCP_CLOSE ?
					     READ_ONCE(sk->sk_err) : 0);
		}
	} else if (state == TCP_ESTABLISHED && trace_afrdma_accept_enabled()) {
		afrdma_trace_names(sk, &src, &dst);
		trace_afrdma_accept(sk, &src, &dst, 0);
	}
}

/* close() of an established connection: a reset if it drops data. */
void afrdma_trace_close(struct sock *sk, const struct afrdma_conn *conn)
{
	if (READ_ONCE(conn->rx_bytes) ||
	    (sock_flag(sk, SOCK_LINGER) && !sk->sk_lingertime))
		trace_afrdma_reset(sk, ECONNRESET, AFRDMA_RST_LOCAL, _RET_IP_);
}

/* A sender is about to wait, or return EAGAIN: traced if for credits. */
void afrdma_trace_stall(struct afrdma_conn *conn)
{
	unsigned int credits, inflight, slots, unacked, peer;

	if (!trace_afrdma_credit_stall_enabled())
		return;
	spin_lock_bh(&conn->lock);
	credits = conn->tx_credits;
	inflight = conn->tx_head - conn->tx_tail;
	slots = conn->tx_slots;
	unacked = conn->tx_unacked;
	peer = conn->peer_rx_slots;
	spin_unlock_bh(&conn->lock);
	/* A SEND of data needs two: see afrdma_tx_room_locked(). */
	if (credits < 2)
		trace_afrdma_credit_stall(conn->sk, credits, inflight, slots,
					  unacked, peer);
}
