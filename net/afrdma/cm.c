// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma connection management: the rdma_cm event state machine for
 * connecting sockets, listeners and the connections they accept.
 *
 * Every cm id holds a reference on its socket.  The handler runs in process
 * context, but on work queues every RDMA user shares (ib_cm's runs one item
 * at a time, ib_addr's is ordered): it must never wait for anything a
 * program or a peer controls, and a program may hold its socket's lock
 * across a fault on its own memory (userfaultfd, FUSE) for as long as it
 * likes.  So the handler owns the socket only if nobody does, as a trylock;
 * otherwise it queues a copy of the event, and afrdma_cm_work() handles it
 * from afrdma_wq with the socket locked.  The events that fail a connect
 * always go to cm_work, which destroys their id before it releases the
 * socket (afrdma_cm_refusal()).  A socket whose cm_id no longer matches the
 * event's id has let go of it and ignores the event.
 *
 * A listener's CONNECT_REQUEST, and a child's events that end its
 * handshake, never take the listener's lock at all, as TCP's lockless
 * listener takes none for a SYN: its owner may hold it across a user copy
 * the core makes (6.1's SOL_SOCKET options, SO_ATTACH_FILTER's program).
 * They take the listener's accept_lock, a spinlock over its queues that
 * is held across nothing that sleeps, read its state and backlog with
 * READ_ONCE(), and clone the child from it without its lock, as sk_clone_lock()
 * does (afrdma_sk_clone()).  A listener that stops leaves TCP_LISTEN
 * before it takes its queues under accept_lock: a REQ that still found it
 * listening there has queued its child, which the stop reaps; one after
 * refuses the peer with a REJ.
 *
 * Deferring the REQ instead is allowed (rdma_cm sends an MRA when the
 * handler returns 0 unanswered, and rdma_accept() may come later under
 * rdma_lock_handler()), but is no smaller and not as good: the peer would
 * still wait for as long as the listener's owner; the new id's events (a
 * REJ, device removal) would come before any socket is theirs, and device
 * removal would wait for the listener's lock; the half-open bounds would
 * have to count queued requests without the lock all the same.
 *
 * Lock order: the socket, then the handler mutex of its id (afrdma_cm_work()
 * for ROUTE_RESOLVED, and rdma_destroy_id()); the handler mutexes rdma_cm
 * holds for a REQ, then the new child (subclass 1: lockdep cannot tell it
 * from a connecting socket, and it never gets ROUTE_RESOLVED); a
 * listener's accept_lock after everything else.  The handler's own
 * trylocks add no order.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/lockdep.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <net/tcp_states.h>
#include <rdma/ib.h>
#include <rdma/ib_cm.h>

#include "afrdma.h"

/* A REQ's new child, locked under the handler mutexes rdma_cm holds */
#define AFRDMA_NEST_NEW_CHILD	SINGLE_DEPTH_NESTING

/*
 * A copy of a deferred event: what the handling reads from it.  Our
 * private data (ESTABLISHED's) is all afrdma_parse_cm_priv() reads.
 */
struct afrdma_cm_ev {
	struct list_head	node;
	struct rdma_cm_id	*id;
	enum rdma_cm_event_type	event;
	int			status;
	u8			priv_len;
	u8			priv[sizeof(struct afrdma_cm_priv)];
};

static void afrdma_cm_free_events(struct list_head *events)
{
	struct afrdma_cm_ev *e, *tmp;

	list_for_each_entry_safe(e, tmp, events, node)
		kfree(e);
}

/*
 * Every change of ars->cm_id.  The caller owns @sk; the spinlock orders it
 * against the handler, which compares an event's id with cm_id under it.
 * An id let go of takes its queued events with it: nobody may destroy it
 * while a deferred event still names it, and once the handler sees it is
 * not cm_id it queues none for it.
 */
static void afrdma_cm_set_id(struct sock *sk, struct rdma_cm_id *id)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	LIST_HEAD(drop);

	spin_lock_bh(&sk->sk_lock.slock);
	if (ars->cm_id != id) {
		list_splice_init(&ars->cm_events, &drop);
		ars->cm_nr_events = 0;
		ars->cm_lost = false;
	}
	ars->cm_id = id;
	spin_unlock_bh(&sk->sk_lock.slock);
	afrdma_cm_free_events(&drop);
}

int afrdma_cm_create_id(struct sock *sk)
{
	struct rdma_cm_id *id;

	id = rdma_create_id(sock_net(sk), afrdma_cm_handler, sk, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	if (sk->sk_reuse)
		rdma_set_reuseaddr(id, 1);
	if (sk->sk_family == AF_INET6 && sk->sk_ipv6only)
		rdma_set_afonly(id, 1);
	sock_hold(sk);
	afrdma_cm_set_id(sk, id);
	return 0;
}

/*
 * Sets the QP's ack timeout too: call it before rdma_connect or rdma_accept
 * (with the request's parameters, @req).
 */
static void afrdma_cm_conn_param(struct rdma_conn_param *param,
				 struct afrdma_cm_priv *priv,
				 const struct afrdma_conn *conn,
				 const struct rdma_conn_param *req)
{
	const struct ib_device_attr *attrs = &conn->dev->ibdev->attrs;
	struct afrdma_cm_params own;
	u8 depth;

	afrdma_conn_params(conn, &own);
	afrdma_build_cm_priv(priv, &own);
	memset(param, 0, sizeof(*param));
	param->private_data = priv;
	param->private_data_len = sizeof(*priv);
	param->flow_control = 1;
	/* RDMA READs in flight each way, for receive zero-copy (rzc.c). */
	depth = min3(AFRDMA_RZC_RD_DEPTH, attrs->max_qp_rd_atom,
		     attrs->max_qp_init_rd_atom);
	param->responder_resources = depth;
	param->initiator_depth = depth;
	if (req) {
		param->responder_resources = min(depth, req->initiator_depth);
		param->initiator_depth = min(depth, req->responder_resources);
	}
	/*
	 * 6, not 7: soft-RoCE (rxe_comp.c) treats a retry count of 7 as
	 * "retry forever", so a peer that died (powered off, cable pulled)
	 * was never noticed and a blocked send hung for good.  With 6 every
	 * device gives up after 6 retries of the ack timeout and the
	 * connection ends with an error.  7 RNR retries is infinite by the
	 * spec, and wanted: the credits keep receives posted.
	 */
	param->retry_count = AFRDMA_RC_RETRIES;
	param->rnr_retry_count = 7;
	/*
	 * The ack timeout, on both ends, sets how long a path may be dead
	 * before the QP gives up: 7 sends, each 4.096 us << timeout apart.
	 * rdma_cm's RoCE default (about 17, 0.54 s) gave up after about 4 s,
	 * and 18 (1.07 s) still lost a 5 s link outage on rxe at times (the
	 * neighbour is resolved again after the link comes back); 19
	 * (2.15 s) survives about 13 s and notices a dead peer within 15 s.
	 */
	rdma_set_ack_timeout(conn->cm_id, AFRDMA_ACK_TIMEOUT);
}

/*
 * The connection attempt is over; the cm id stays until close, or until a
 * connect, bind or listen after it starts afresh (afrdma_renew()).
 */
static void afrdma_cm_fail(struct sock *sk, int err)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	if (ars->conn)
		afrdma_conn_teardown(ars->conn);
	WRITE_ONCE(sk->sk_err, err);
	afrdma_set_state(sk, TCP_CLOSE);
	sk_error_report(sk);
}

/*
 * RDMA cannot carry a connecting socket: fail it with @err, or hand it to
 * TCP, from afrdma_wq (afrdma_fb_defer(): not in rdma_cm's handler).
 * Returns 1 when the cm id is no longer wanted, for the handler to
 * destroy.
 */
static int afrdma_cm_connect_failed(struct sock *sk, int err, int reason)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	if (sk->sk_state != TCP_SYN_SENT || !ars->fallback ||
	    ars->transport != AFRDMA_TRANSPORT_NONE) {
		afrdma_cm_fail(sk, err);
		afrdma_inc_stats(sk, AFRDMA_MIB_CONNECT_FAILED);
		return 0;
	}
	if (ars->conn)
		afrdma_conn_teardown(ars->conn);
	afrdma_cm_set_id(sk, NULL);
	afrdma_fb_defer(sk, reason);
	return 1;
}

/*
 * connect()'s address resolution, in steps of AFRDMA_RESOLVE_STEP_MS.
 * rdma_cm keeps a request that found no valid neighbour until its timeout,
 * and a neighbour update wakes it early; but an ARP or ND reply handled
 * before the request is queued (in the softirq of the solicitation's own
 * send, on a fast wire) wakes nothing, and the whole timeout passes: as
 * long as the fallback timeout, so such a connect went to TCP.  A step that
 * times out with the neighbour valid resolves; one that finds none is
 * started again until AFRDMA_RESOLVE_MS.  The socket is locked.
 */
int afrdma_cm_resolve(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	ars->resolve_end = jiffies + msecs_to_jiffies(AFRDMA_RESOLVE_MS);
	return rdma_resolve_addr(ars->cm_id, NULL,
				 (struct sockaddr *)&ars->daddr,
				 AFRDMA_RESOLVE_STEP_MS);
}

/*
 * The next step, from afrdma's work queue.  rdma_resolve_addr() cancels
 * the id's last request synchronously, waiting for its work, in which the
 * ADDR_ERROR handler runs: so that handler cannot call it.  This work calls
 * it without the socket lock, so that no wait for rdma_cm's work is made
 * under a lock a program may hold.  resolve_id keeps the id alive
 * meanwhile: see afrdma_cm_take_id().
 */
static void afrdma_cm_resolve_work(struct work_struct *work)
{
	struct afrdma_sock *ars = container_of(work, struct afrdma_sock,
					       resolve_work);
	struct sock *sk = &ars->inet.sk;
	struct rdma_cm_id *id, *drop = NULL;
	struct sockaddr_storage daddr;
	int err;

	lock_sock(sk);
	id = ars->cm_id;
	if (!id || sk->sk_state != TCP_SYN_SENT || ars->conn ||
	    ars->transport != AFRDMA_TRANSPORT_NONE) {
		release_sock(sk);
		goto out;
	}
	memcpy(&daddr, &ars->daddr, sizeof(daddr));
	ars->resolve_id = id;
	release_sock(sk);

	err = rdma_resolve_addr(id, NULL, (struct sockaddr *)&daddr,
				AFRDMA_RESOLVE_STEP_MS);

	lock_sock(sk);
	ars->resolve_id = NULL;
	if (ars->resolve_drop) {
		/* Let go of while we used it: ours to destroy. */
		ars->resolve_drop = false;
		drop = id;
	} else if (err && ars->cm_id == id &&
		   afrdma_cm_connect_failed(sk, EHOSTUNREACH,
					    AFRDMA_FB_NO_DEVICE)) {
		drop = id;
	}
	release_sock(sk);
	afrdma_cm_put_id(sk, drop);
out:
	sock_put(sk);
}

/*
 * Lets go of the socket's cm id, and of its deferred events.  Returns it
 * for the caller to destroy once the socket is unlocked (see
 * afrdma_cm_put_id()), with the socket reference it holds; or NULL if there
 * is none, or afrdma_cm_resolve_work() is using it and destroys it when
 * done.  @sk is locked.
 */
struct rdma_cm_id *afrdma_cm_take_id(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct rdma_cm_id *id = ars->cm_id;

	afrdma_cm_set_id(sk, NULL);
	if (id && id == ars->resolve_id) {
		ars->resolve_drop = true;
		return NULL;
	}
	return id;
}

/*
 * Destroys an id that afrdma_cm_take_id() returned (or NULL), and drops
 * the socket reference it held, perhaps the last.  rdma_destroy_id()
 * waits for the id's handler, which waits for no socket lock.
 */
void afrdma_cm_put_id(struct sock *sk, struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_id(id);
	sock_put(sk);
}

/*
 * A connect again after the peer's CM refused the last one as stale: the
 * refused attempt's cm id goes (a cm id connects once), and a new one
 * resolves, binds where bind() said, and connects.  Whatever else ended
 * the connect meanwhile (close, the fallback timer, device removal) wins.
 */
static void afrdma_cm_retry_work(struct work_struct *work)
{
	struct afrdma_sock *ars = container_of(work, struct afrdma_sock,
					       retry_work);
	struct sock *sk = &ars->inet.sk;
	struct afrdma_conn *conn;
	struct rdma_cm_id *id;
	int err = 0;

	lock_sock(sk);
	id = ars->retry_id;
	ars->retry_id = NULL;
	release_sock(sk);
	afrdma_cm_put_id(sk, id);
	id = NULL;

	lock_sock(sk);
	if (sk->sk_state != TCP_SYN_SENT || ars->cm_id || ars->retry_id ||
	    ars->transport != AFRDMA_TRANSPORT_NONE)
		goto out;
	conn = ars->conn;
	if (conn) {
		/* /proc/net/afrdma reads it under this lock alone. */
		xa_lock_bh(afrdma_diag_socks(sk));
		ars->conn = NULL;
		xa_unlock_bh(afrdma_diag_socks(sk));
		afrdma_conn_free(conn);
	}
	err = afrdma_cm_create_id(sk);
	if (!err && ars->bound)
		err = rdma_bind_addr(ars->cm_id, (struct sockaddr *)&ars->saddr);
	if (!err)
		err = afrdma_cm_resolve(sk);
	if (err) {
		id = ars->cm_id;
		/* Failed, not moved to TCP: the id stays (afrdma_cm_fail()). */
		if (!afrdma_cm_connect_failed(sk, EHOSTUNREACH,
					      AFRDMA_FB_NO_DEVICE))
			id = NULL;
	}
out:
	release_sock(sk);
	afrdma_cm_put_id(sk, id);
	sock_put(sk);
}

static void afrdma_cm_syn_timeout(struct work_struct *work);
static void afrdma_cm_work(struct work_struct *work);

void afrdma_cm_resolve_init(struct sock *sk)
{
	INIT_LIST_HEAD(&afrdma_sk(sk)->cm_events);
	INIT_WORK(&afrdma_sk(sk)->cm_work, afrdma_cm_work);
	INIT_WORK(&afrdma_sk(sk)->resolve_work, afrdma_cm_resolve_work);
	INIT_WORK(&afrdma_sk(sk)->retry_work, afrdma_cm_retry_work);
	INIT_DELAYED_WORK(&afrdma_sk(sk)->syn_timer, afrdma_cm_syn_timeout);
}

/*
 * The peer's CM refused our REQ as stale: it still had a connection from
 * our address whose remote QP number is the one ours has now (ours was
 * lost without a disconnect reaching it: our device was recreated, or we
 * rebooted).  It drops that connection as it refuses (ib_cm's
 * cm_match_req()), so a new REQ is taken, as TCP's SYN is after the RST
 * that ends a half-open connection.  True if the retry is queued.
 */
static bool afrdma_cm_retry_stale(struct sock *sk, struct rdma_cm_id *id,
				  int status)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	if (!rdma_ib_or_roce(id->device, id->port_num) ||
	    status != IB_CM_REJ_STALE_CONN || ars->resolve_id || ars->retry_id ||
	    ars->stale_retries >= AFRDMA_STALE_RETRIES)
		return false;
	ars->stale_retries++;
	afrdma_inc_stats(sk, AFRDMA_MIB_STALE_RETRIES);
	if (ars->conn)
		afrdma_conn_teardown(ars->conn);
	/* The handler ignores the refused id's events from now on. */
	ars->retry_id = id;
	afrdma_cm_set_id(sk, NULL);
	sock_hold(sk);
	if (!queue_work(afrdma_wq, &ars->retry_work))
		sock_put(sk);
	return true;
}

/* A step timed out: true if another is queued. */
static bool afrdma_cm_resolve_again(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	if (sk->sk_state != TCP_SYN_SENT || ars->conn ||
	    time_after_eq(jiffies, ars->resolve_end))
		return false;
	sock_hold(sk);
	if (!queue_work(afrdma_wq, &ars->resolve_work))
		sock_put(sk);
	return true;
}

static int afrdma_cm_route_resolved(struct sock *sk, struct rdma_cm_id *id)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct rdma_conn_param param;
	struct afrdma_cm_priv priv;
	struct afrdma_conn *conn;
	int err;

	/* Small rings: a peer that cannot take more credits tells us later. */
	conn = afrdma_conn_create(sk, id, true, false, sk->sk_memcg);
	if (IS_ERR(conn)) {
		err = PTR_ERR(conn);
		return afrdma_cm_connect_failed(sk, err == -ENODEV ?
						EHOSTUNREACH : -err,
						AFRDMA_FB_RESOURCES);
	}
	/* Published to the lockless diag readers fully set up */
	smp_store_release(&ars->conn, conn);
	afrdma_cm_conn_param(&param, &priv, conn, NULL);
	err = rdma_connect_locked(id, &param);
	if (err)
		return afrdma_cm_connect_failed(sk, -err, AFRDMA_FB_RESOURCES);
	return 0;
}

static int afrdma_cm_established(struct sock *sk, struct rdma_cm_event *ev)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_cm_params peer;

	if (!ars->conn ||
	    afrdma_parse_cm_priv(ev->param.conn.private_data,
				 ev->param.conn.private_data_len, &peer)) {
		rdma_disconnect(ars->cm_id);
		return afrdma_cm_connect_failed(sk, ECONNREFUSED,
						AFRDMA_FB_PROTOCOL);
	}
	afrdma_fb_timer_stop(sk);
	afrdma_fb_rdma_up(sk);
	afrdma_conn_start(ars->conn, &peer);
	if (sock_flag(sk, SOCK_KEEPOPEN))
		afrdma_ka_set(ars->conn, true);
	WRITE_ONCE(ars->transport, AFRDMA_TRANSPORT_RDMA);
	afrdma_diag_set_cm(sk, ars->cm_id);
	afrdma_inc_stats(sk, AFRDMA_MIB_ACTIVE_OPENS);
	afrdma_set_state(sk, TCP_ESTABLISHED);
	sk->sk_state_change(sk);
	return 0;
}

/*
 * The peer is gone.  Drain first, so that a FIN that raced the disconnect
 * is seen: only a disconnect without FIN is a reset, and only if nothing
 * reset the connection before (an error, or our own giving up on a READ:
 * the peer's disconnect then answers ours).  Unread data stays readable.
 * After its FIN the socket is in CLOSE_WAIT, as TCP's: the peer's address
 * stays readable until we close.
 */
static void afrdma_cm_disconnected(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_conn *conn = ars->conn;
	bool fin = false, was_dead = false;

	/* The receives our disconnect flushes are this reset, counted below. */
	if (conn) {
		spin_lock_bh(&conn->lock);
		was_dead = conn->dead;
		WRITE_ONCE(conn->peer_gone, true);
		spin_unlock_bh(&conn->lock);
	}
	rdma_disconnect(ars->cm_id);
	if (conn && !conn->torn && conn->qp) {
		ib_drain_qp(conn->qp);
		spin_lock_bh(&conn->lock);
		WRITE_ONCE(conn->dead, true);
		spin_unlock_bh(&conn->lock);
		fin = conn->fin_rcvd;
		if (!fin && !was_dead) {
			afrdma_trace_reset(sk, ECONNRESET, AFRDMA_RST_PEER);
			WRITE_ONCE(sk->sk_err, ECONNRESET);
			afrdma_inc_stats(sk, AFRDMA_MIB_RESETS);
		}
	}
	/* Both ends closed: TCP would be done with it too. */
	if (sk->sk_shutdown & SEND_SHUTDOWN)
		fin = false;
	/* In CLOSE_WAIT one more send is taken: see afrdma_sendmsg(). */
	if (!fin)
		sk->sk_shutdown |= SEND_SHUTDOWN;
	afrdma_set_state(sk, fin ? TCP_CLOSE_WAIT : TCP_CLOSE);
	sk_error_report(sk);
}

/* The device is going: release everything and let rdma_cm destroy the id. */
static int afrdma_cm_device_removal(struct sock *sk)
{
	afrdma_trace_reset(sk, ECONNRESET, AFRDMA_RST_DEVICE);
	afrdma_cm_fail(sk, ECONNRESET);
	afrdma_cm_set_id(sk, NULL);
	return 1;
}

static int afrdma_cm_event(struct sock *sk, struct rdma_cm_id *id,
			   struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(id, AFRDMA_RESOLVE_MS))
			return afrdma_cm_connect_failed(sk, EHOSTUNREACH,
							AFRDMA_FB_NO_ROUTE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return afrdma_cm_route_resolved(sk, id);
	case RDMA_CM_EVENT_ADDR_ERROR:
		if (ev->status == -ETIMEDOUT && afrdma_cm_resolve_again(sk))
			break;
		return afrdma_cm_connect_failed(sk, EHOSTUNREACH,
						AFRDMA_FB_NO_DEVICE);
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return afrdma_cm_connect_failed(sk, ENETUNREACH,
						AFRDMA_FB_NO_ROUTE);
	case RDMA_CM_EVENT_UNREACHABLE:
		return afrdma_cm_connect_failed(sk, ev->status == -ETIMEDOUT ?
						ETIMEDOUT : EHOSTUNREACH,
						AFRDMA_FB_UNREACHABLE);
	case RDMA_CM_EVENT_REJECTED:
		if (sk->sk_state == TCP_SYN_SENT &&
		    afrdma_cm_retry_stale(sk, id, ev->status))
			break;
		fallthrough;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (sk->sk_state == TCP_SYN_SENT)
			return afrdma_cm_connect_failed(sk, ECONNREFUSED,
							AFRDMA_FB_REJECTED);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (sk->sk_state == TCP_SYN_SENT)
			return afrdma_cm_established(sk, ev);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (sk->sk_state == TCP_ESTABLISHED)
			afrdma_cm_disconnected(sk);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return afrdma_cm_device_removal(sk);
	case RDMA_CM_EVENT_ADDR_CHANGE:
		/* The route moved off this device: like a reset. */
		if (sk->sk_state == TCP_ESTABLISHED)
			afrdma_cm_disconnected(sk);
		break;
	default:
		/* TIMEWAIT_EXIT and events for other id kinds need nothing. */
		break;
	}
	return 0;
}

/*
 * Half-open connections, as TCP's SYN queue.  A listener's children from
 * the REQ until their handshake ends are on its syn_q: at most
 * net.afrdma.max_half_open of them, and half_open_per_peer from one peer
 * address (as rdma_cm reports it: a host that forges addresses meets the
 * listener's bound only).  Past either, or with the accept queue full, the
 * REQ is dropped, and the peer's CM sends it again.  A child that is not
 * established within half_open_timeout_ms is dropped: a peer that never
 * sends its RTU (or sets its REP retries to hours in its REQ) would
 * otherwise hold a QP and its receive buffers until ib_cm gives up.
 * Until then a child has its receive ring, which the peer may fill as
 * soon as it has our REP, but no send buffers.
 */

/* The peer's address, IPv4 mapped, or an AF_IB one's GID. */
static void afrdma_cm_peer_key(const struct rdma_cm_id *id,
			       struct in6_addr *key)
{
	const struct sockaddr_storage *ss = &id->route.addr.dst_addr;

	switch (ss->ss_family) {
	case AF_INET:
		ipv6_addr_set_v4mapped(((const struct sockaddr_in *)ss)->sin_addr.s_addr,
				       key);
		break;
	case AF_INET6:
		*key = ((const struct sockaddr_in6 *)ss)->sin6_addr;
		break;
	case AF_IB:
		memcpy(key, &((const struct sockaddr_ib *)ss)->sib_addr,
		       sizeof(*key));
		break;
	default:
		memset(key, 0, sizeof(*key));
		break;
	}
}

/* Whether @lsk may take one more half-open child from @key: accept_lock */
static bool afrdma_cm_syn_room(struct sock *lsk, const struct in6_addr *key)
{
	const struct afrdma_net *an = afrdma_net(sock_net(lsk));
	struct afrdma_sock *lars = afrdma_sk(lsk);
	unsigned int per_peer = READ_ONCE(an->half_open_per_peer), n = 0;
	struct afrdma_sock *child;

	if (lars->pending_len >= READ_ONCE(an->max_half_open))
		return false;
	list_for_each_entry(child, &lars->syn_q, accept_node)
		if (ipv6_addr_equal(&child->syn_peer, key) && ++n >= per_peer)
			return false;
	return true;
}

/*
 * Queues @sk, locked, on @lsk's syn_q, if @lsk still listens: false if it
 * stopped since the REQ came (afrdma_listen_stop()).
 */
static bool afrdma_cm_syn_add(struct sock *lsk, struct sock *sk)
{
	struct afrdma_sock *lars = afrdma_sk(lsk);
	struct afrdma_sock *ars = afrdma_sk(sk);
	unsigned int ms;

	spin_lock(&lars->accept_lock);
	if (READ_ONCE(lsk->sk_state) != TCP_LISTEN) {
		spin_unlock(&lars->accept_lock);
		return false;
	}
	list_add_tail(&ars->accept_node, &lars->syn_q);
	lars->pending_len++;
	atomic_inc(&afrdma_net(sock_net(lsk))->half_open);
	ms = READ_ONCE(afrdma_net(sock_net(lsk))->half_open_timeout_ms);
	sock_hold(sk);
	if (!queue_delayed_work(afrdma_wq, &ars->syn_timer,
				msecs_to_jiffies(ms)))
		sock_put(sk);
	spin_unlock(&lars->accept_lock);
	return true;
}

/*
 * @sk's handshake is over.  @sk is locked, @lsk's accept_lock held; the
 * caller stops syn_timer.
 */
static void afrdma_cm_syn_del(struct sock *lsk, struct sock *sk)
{
	list_del_init(&afrdma_sk(sk)->accept_node);
	afrdma_sk(lsk)->pending_len--;
	atomic_dec(&afrdma_net(sock_net(lsk))->half_open);
}

/*
 * The bound: a child still half-open goes, its QP and buffers with it.
 * Destroying its id in REP_SENT makes ib_cm send the peer a REJ; that
 * waits for the id's handler, so it happens once the locks are released,
 * as every rdma_destroy_id() here.
 */
static void afrdma_cm_syn_timeout(struct work_struct *work)
{
	struct afrdma_sock *ars = container_of(to_delayed_work(work),
					       struct afrdma_sock, syn_timer);
	struct sock *sk = &ars->inet.sk;
	struct rdma_cm_id *id = NULL;
	struct sock *parent;

	lock_sock(sk);
	parent = ars->parent;
	if (parent && sk->sk_state == TCP_SYN_RECV) {
		spin_lock(&afrdma_sk(parent)->accept_lock);
		afrdma_cm_syn_del(parent, sk);
		spin_unlock(&afrdma_sk(parent)->accept_lock);
		ars->parent = NULL;
		sock_put(parent);
		id = afrdma_cm_take_id(sk);
		if (ars->conn)
			afrdma_conn_teardown(ars->conn);
		afrdma_set_state(sk, TCP_CLOSE);
		sock_set_flag(sk, SOCK_DEAD);
		afrdma_inc_stats(sk, AFRDMA_MIB_HALF_OPEN_TIMEOUTS);
	}
	release_sock(sk);
	if (id) {
		afrdma_cm_put_id(sk, id);
		/* Nobody will accept it: the child's own reference. */
		sock_put(sk);
	}
	sock_put(sk);
}

/*
 * A listener stops: its half-open children go now rather than at their
 * bound.  Each queued run of syn_timer holds its own reference.  Locked,
 * and out of TCP_LISTEN: no REQ queues a child after this.
 */
void afrdma_cm_syn_flush(struct sock *lsk)
{
	struct afrdma_sock *lars = afrdma_sk(lsk);
	struct afrdma_sock *child;

	spin_lock(&lars->accept_lock);
	list_for_each_entry(child, &lars->syn_q, accept_node) {
		sock_hold(&child->inet.sk);
		if (mod_delayed_work(afrdma_wq, &child->syn_timer, 0))
			sock_put(&child->inet.sk);
	}
	spin_unlock(&lars->accept_lock);
}

/* The events that end a child's handshake, which need its listener */
static bool afrdma_cm_child_wants(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		return true;
	default:
		return false;
	}
}

/*
 * An accepted connection before it is established: @sk is the child, which
 * the caller owns.  Of its listener, @parent, only accept_lock is taken.
 */
static int afrdma_cm_child_event(struct sock *sk, struct sock *parent,
				 struct rdma_cm_event *ev)
{
	struct afrdma_sock *pars = afrdma_sk(parent);
	struct afrdma_sock *ars = afrdma_sk(sk);
	bool queued = false, closed, up;

	/*
	 * A client that sent and closed before our ESTABLISHED came (its RTU
	 * late or lost) was connected all the same: as in TCP, accept() gets
	 * the connection, its data and then EOF.
	 */
	closed = ev->event == RDMA_CM_EVENT_DISCONNECTED;
	up = ev->event == RDMA_CM_EVENT_ESTABLISHED || closed;
	/* Its send buffers, left out while it was half-open. */
	if (up && ars->conn && afrdma_conn_alloc_tx(ars->conn))
		up = false;
	/*
	 * A stopping listener leaves TCP_LISTEN before it takes accept_q.
	 * Whoever takes @sk off it locks @sk first: we finish it meanwhile.
	 */
	spin_lock(&pars->accept_lock);
	afrdma_cm_syn_del(parent, sk);
	if (up && READ_ONCE(parent->sk_state) == TCP_LISTEN) {
		list_add_tail(&ars->accept_node, &pars->accept_q);
		WRITE_ONCE(pars->accept_len, pars->accept_len + 1);
		queued = true;
	}
	spin_unlock(&pars->accept_lock);
	if (queued) {
		WRITE_ONCE(ars->transport, AFRDMA_TRANSPORT_RDMA);
		afrdma_set_state(sk, TCP_ESTABLISHED);
		if (ars->conn && !closed && sock_flag(sk, SOCK_KEEPOPEN))
			afrdma_ka_set(ars->conn, true);
		afrdma_inc_stats(sk, AFRDMA_MIB_PASSIVE_OPENS);
		parent->sk_data_ready(parent);
	}
	ars->parent = NULL;
	sock_put(parent);
	/* The id still holds the socket: this is not the last reference. */
	if (cancel_delayed_work(&ars->syn_timer))
		sock_put(sk);
	if (queued) {
		if (closed)
			afrdma_cm_disconnected(sk);
		return 0;
	}

	/* Nobody will accept it: drop it, and let rdma_cm destroy the id. */
	if (ars->conn)
		afrdma_conn_teardown(ars->conn);
	afrdma_cm_set_id(sk, NULL);
	afrdma_set_state(sk, TCP_CLOSE);
	sock_set_flag(sk, SOCK_DEAD);
	return 2;
}

static int afrdma_cm_request(struct sock *lsk, struct rdma_cm_id *id,
			     struct rdma_cm_event *ev)
{
	struct afrdma_sock *lars = afrdma_sk(lsk);
	struct rdma_conn_param param;
	struct afrdma_cm_params peer;
	struct afrdma_cm_priv priv;
	struct afrdma_conn *conn;
	struct afrdma_sock *ars;
	struct in6_addr key;
	struct sock *sk;
	int err = 0;

	/* Not the listener's lock: see the top of this file. */
	if (READ_ONCE(lsk->sk_state) != TCP_LISTEN ||
	    afrdma_parse_cm_priv(ev->param.conn.private_data,
				 ev->param.conn.private_data_len, &peer))
		return 1;
	/*
	 * A full queue drops the request, as TCP drops the SYN, where a REJ
	 * would refuse a connect to a live listener: for -ENOMEM ib_cm sends
	 * no REJ, and the client's CM sends the REQ again.  Half-open
	 * children have bounds of their own (afrdma_cm_syn_room()), so that
	 * requests never completed do not fill the accept queue.  The child
	 * is queued later: ib_cm and iw_cm each handle one REQ at a time, so
	 * only the other kind's can pass the same room meanwhile.
	 */
	afrdma_cm_peer_key(id, &key);
	spin_lock(&lars->accept_lock);
	if (lars->accept_len >= max_t(u32, READ_ONCE(lsk->sk_max_ack_backlog), 1)) {
		err = -ENOMEM;
	} else if (!afrdma_cm_syn_room(lsk, &key)) {
		afrdma_inc_stats(lsk, AFRDMA_MIB_HALF_OPEN_DROPS);
		err = -ENOMEM;
	}
	spin_unlock(&lars->accept_lock);
	if (err)
		return err;
	/* As TCP drops a SYN it has no memory for: the peer tries again. */
	if (afrdma_mem_full()) {
		afrdma_inc_stats(lsk, AFRDMA_MIB_MEMORY_DROPS);
		return -ENOMEM;
	}

	sk = afrdma_sk_clone(lsk);
	if (!sk)
		return 1;
	ars = afrdma_sk(sk);
	/*
	 * Once attached to its device the connection can be reset by the
	 * device's removal (afrdma_conn_abort() locks the child), and once
	 * on syn_q by the listener's stop: hold the child until it is
	 * queued or dropped.
	 */
	lock_sock_nested(sk, AFRDMA_NEST_NEW_CHILD);
	ars->syn_peer = key;
	afrdma_set_state(sk, TCP_SYN_RECV);
	/* In rdma_cm's worker: charge the listener's owner. */
	conn = afrdma_conn_create(sk, id, peer.flags & AFRDMA_CM_GROW, true,
				  sk->sk_memcg ?: lsk->sk_memcg);
	if (IS_ERR(conn))
		goto drop;
	/* Published to the lockless diag readers fully set up */
	smp_store_release(&ars->conn, conn);
	afrdma_conn_start(conn, &peer);

	afrdma_cm_conn_param(&param, &priv, conn, &ev->param.conn);
	err = rdma_accept(id, &param);
	if (err)
		goto teardown;

	ars->parent = lsk;
	sock_hold(lsk);
	if (!afrdma_cm_syn_add(lsk, sk)) {
		/*
		 * The listener stopped since the REQ came, and will not reap
		 * this child: as rdma_cm destroys the id, ib_cm answers our
		 * REP with a REJ.  The listener's id still holds it.
		 */
		ars->parent = NULL;
		sock_put(lsk);
		goto teardown;
	}
	/* From here on the child's own events drive it. */
	afrdma_diag_set_cm(sk, id);
	id->context = sk;
	afrdma_cm_set_id(sk, id);
	sock_hold(sk);
	release_sock(sk);
	return 0;

teardown:
	afrdma_conn_teardown(conn);
drop:
	afrdma_set_state(sk, TCP_CLOSE);
	sock_set_flag(sk, SOCK_DEAD);
	release_sock(sk);
	sock_put(sk);
	/* Non-zero: rdma_cm destroys the new id, which rejects the peer. */
	return 1;
}

/* The id went (@ret from the handling): its reference, a dropped child's. */
static void afrdma_cm_put_refs(struct sock *sk, int ret)
{
	if (ret == 2)
		sock_put(sk);
	sock_put(sk);
}

/*
 * The handling of an event for a socket that is not a child, which the
 * caller owns: non-zero when the id is to be destroyed.
 */
static int afrdma_cm_sock_event(struct sock *sk, struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	int ret = afrdma_cm_event(sk, id, ev);

	/* Nobody may destroy an id the resolve work is using. */
	if (ret && afrdma_sk(sk)->resolve_id == id) {
		afrdma_sk(sk)->resolve_drop = true;
		ret = 0;
	}
	return ret;
}

/*
 * Events that fail a connect and end its id.  Returning nonzero here has
 * rdma_cm destroy the id only after the socket is released, and so after
 * connect() may have returned: a connect() again that binds the same port
 * (bind() named it) would find the old id still holding it.  So these go
 * to afrdma_cm_work(), which destroys the id before it releases the
 * socket.  A rarer local failure (a route not resolved, a QP not made)
 * still ends its id here.
 */
static bool afrdma_cm_refusal(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

/* Events that change nothing here need no socket at all. */
static bool afrdma_cm_wanted(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		return false;
	default:
		return true;
	}
}

/*
 * Queues a copy of an event for afrdma_cm_work(), with @sk's spinlock
 * held.  Takes @*ep, the copy made beforehand; without one, or past the
 * bound, the event is lost and cm_work resets the connection instead.
 */
static void afrdma_cm_queue_locked(struct sock *sk, struct afrdma_cm_ev **ep)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	if (*ep && ars->cm_nr_events < AFRDMA_CM_EVENTS_MAX && !ars->cm_lost) {
		list_add_tail(&(*ep)->node, &ars->cm_events);
		ars->cm_nr_events++;
		*ep = NULL;
	} else {
		ars->cm_lost = true;
	}
}

static struct afrdma_cm_ev *afrdma_cm_copy(struct rdma_cm_id *id,
					   const struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *conn = &ev->param.conn;
	struct afrdma_cm_ev *e;

	/* rdma_cm's handlers run in process context, holding no spinlock. */
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return NULL;
	e->id = id;
	e->event = ev->event;
	e->status = ev->status;
	if (conn->private_data) {
		e->priv_len = min_t(u8, conn->private_data_len, sizeof(e->priv));
		memcpy(e->priv, conn->private_data, e->priv_len);
	}
	return e;
}

/* The event again, as the handling reads it. */
static void afrdma_cm_uncopy(struct afrdma_cm_ev *e, struct rdma_cm_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->event = e->event;
	ev->status = e->status;
	if (e->priv_len) {
		ev->param.conn.private_data = e->priv;
		ev->param.conn.private_data_len = e->priv_len;
	}
}

static void afrdma_cm_kick(struct sock *sk)
{
	sock_hold(sk);
	if (!queue_work(afrdma_wq, &afrdma_sk(sk)->cm_work))
		sock_put(sk);
}

/* An event the handler owns @sk for, but leaves to afrdma_cm_work(). */
static void afrdma_cm_defer(struct sock *sk, struct rdma_cm_id *id,
			    const struct rdma_cm_event *ev)
{
	struct afrdma_cm_ev *e = afrdma_cm_copy(id, ev);

	spin_lock_bh(&sk->sk_lock.slock);
	afrdma_cm_queue_locked(sk, &e);
	spin_unlock_bh(&sk->sk_lock.slock);
	kfree(e);
	afrdma_cm_kick(sk);
}

enum {
	AFRDMA_CM_IGNORE,	/* not the socket's id (any more) */
	AFRDMA_CM_OWNED,	/* handle it now: the socket is ours */
	AFRDMA_CM_QUEUED,	/* afrdma_cm_work() will */
};

/*
 * The handler's way into @sk: never waits.  The event is handled at once
 * only if nobody owns the socket and nothing older waits for cm_work.  The
 * copy is made, outside the spinlock, only when it is needed.
 */
static int afrdma_cm_own(struct sock *sk, struct rdma_cm_id *id,
			 const struct rdma_cm_event *ev)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_cm_ev *e = NULL;
	bool copied = false;
	int ret;

	for (;;) {
		spin_lock_bh(&sk->sk_lock.slock);
		if (ars->cm_id != id) {
			ret = AFRDMA_CM_IGNORE;
		} else if (!sock_owned_by_user_nocheck(sk) &&
			   list_empty(&ars->cm_events) && !ars->cm_lost) {
			sk->sk_lock.owned = 1;
			ret = AFRDMA_CM_OWNED;
		} else if (copied) {
			afrdma_cm_queue_locked(sk, &e);
			ret = AFRDMA_CM_QUEUED;
		} else {
			spin_unlock_bh(&sk->sk_lock.slock);
			e = afrdma_cm_copy(id, ev);
			copied = true;
			continue;
		}
		break;
	}
	spin_unlock_bh(&sk->sk_lock.slock);
	kfree(e);
	if (ret == AFRDMA_CM_OWNED)
		mutex_acquire(&sk->sk_lock.dep_map, 0, 1, _RET_IP_);
	else if (ret == AFRDMA_CM_QUEUED)
		afrdma_cm_kick(sk);
	return ret;
}

/*
 * The oldest deferred event, taken off the queue, in @ev; its id, or NULL
 * when none waits.  An event that could not be kept (cm_lost) comes after
 * the others, as a DEVICE_REMOVAL: the connection resets, and its id goes,
 * which is also what a real removal (perhaps the event lost) waits for.
 * @sk is locked.
 */
static struct rdma_cm_id *afrdma_cm_next(struct sock *sk,
					 struct rdma_cm_event *ev)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct rdma_cm_id *id = NULL;
	struct afrdma_cm_ev *e;

	spin_lock_bh(&sk->sk_lock.slock);
	e = list_first_entry_or_null(&ars->cm_events, struct afrdma_cm_ev,
				     node);
	if (e) {
		list_del(&e->node);
		ars->cm_nr_events--;
	} else if (ars->cm_lost && ars->cm_id) {
		ars->cm_lost = false;
		id = ars->cm_id;
		memset(ev, 0, sizeof(*ev));
		ev->event = RDMA_CM_EVENT_DEVICE_REMOVAL;
		ev->status = -ENOMEM;
	}
	spin_unlock_bh(&sk->sk_lock.slock);
	if (e) {
		id = e->id;
		afrdma_cm_uncopy(e, ev);
	}
	kfree(e);
	return id;
}

/*
 * Handles one deferred event, with the same code as the handler, in order.
 * Socket first, then the handler mutex (rdma_connect_locked() needs it),
 * never the other way: this work must not wait for a lock a program holds
 * while it holds what rdma_cm's own work needs.  Where the handler would
 * have had rdma_cm destroy the id, this destroys it.  False once nothing
 * is left.
 */
static bool afrdma_cm_work_one(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct rdma_cm_event ev;
	struct rdma_cm_id *id;
	struct sock *parent;
	bool locked;
	int ret = 0;

	lock_sock(sk);
	id = afrdma_cm_next(sk, &ev);
	if (!id) {
		release_sock(sk);
		return false;
	}
	/* afrdma_cm_set_id() drops the events of an id let go of. */
	if (WARN_ON_ONCE(id != ars->cm_id)) {
		release_sock(sk);
		return true;
	}
	parent = ars->parent;
	if (parent) {
		if (afrdma_cm_child_wants(ev.event))
			ret = afrdma_cm_child_event(sk, parent, &ev);
	} else {
		locked = ev.event == RDMA_CM_EVENT_ROUTE_RESOLVED;
		if (locked)
			rdma_lock_handler(id);
		ret = afrdma_cm_sock_event(sk, id, &ev);
		if (locked)
			rdma_unlock_handler(id);
	}
	/*
	 * Let go of above: nothing else destroys it, or names it.  Before
	 * the socket is released: a connect() after a refused one binds the
	 * same port again, which the old id holds until it is destroyed.
	 * The id's handler never waits for this socket's lock, nor does a
	 * listening id's REQ handler.
	 */
	if (ret)
		rdma_destroy_id(id);
	release_sock(sk);
	if (ret)
		afrdma_cm_put_refs(sk, ret);
	return true;
}

static void afrdma_cm_work(struct work_struct *work)
{
	struct afrdma_sock *ars = container_of(work, struct afrdma_sock,
					       cm_work);
	struct sock *sk = &ars->inet.sk;

	while (afrdma_cm_work_one(sk))
		;
	sock_put(sk);
}

/* Whatever is left when the socket goes: nothing, by afrdma_cm_set_id(). */
void afrdma_cm_destruct(struct sock *sk)
{
	afrdma_cm_free_events(&afrdma_sk(sk)->cm_events);
}

int afrdma_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct sock *sk = id->context;
	struct sock *parent;
	int ret = 0;

	pr_debug("%s: %s (%d)\n", __func__, rdma_event_msg(ev->event),
		 ev->status);

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return afrdma_cm_request(sk, id, ev);
	if (!afrdma_cm_wanted(ev->event) ||
	    afrdma_cm_own(sk, id, ev) != AFRDMA_CM_OWNED)
		return 0;

	parent = afrdma_sk(sk)->parent;
	if (!parent && afrdma_cm_refusal(ev->event))
		/* cm_work ends the id before a connect() again may bind. */
		afrdma_cm_defer(sk, id, ev);
	else if (!parent)
		ret = afrdma_cm_sock_event(sk, id, ev);
	else if (afrdma_cm_child_wants(ev->event))
		ret = afrdma_cm_child_event(sk, parent, ev);
	release_sock(sk);

	if (!ret)
		return 0;
	/* The id is about to go: drop its reference, and a dropped child's. */
	afrdma_cm_put_refs(sk, ret);
	return 1;
}
