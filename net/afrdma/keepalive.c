// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma keepalive: SO_KEEPALIVE with TCP_KEEPIDLE, TCP_KEEPINTVL and
 * TCP_KEEPCNT on RDMA connections.  After TCP_KEEPIDLE seconds without a
 * sign of life from the peer, a zero-length RDMA WRITE goes out: it needs
 * no rkey (IBTA C9-88), no receive buffer and no credit, and the peer's
 * RC hardware acknowledges it without waking anyone.  RC retransmits it by
 * itself, so one probe is in flight at a time; the peer is declared dead
 * (ETIMEDOUT, as TCP) when it stays unanswered for KEEPINTVL x KEEPCNT
 * seconds, or when RC gives up retrying first.
 *
 * The same probe is TCP's persist timer: a sender blocked for credits may
 * have nothing of its own in flight, so no retransmission would ever tell
 * it that the peer died.  While it waits, a probe goes out every second,
 * and RC's retries (afrdma asks for 6) fail it against a dead peer.
 *
 * A probe RC has not settled long after its retries would have ended
 * (twice their span) sits on a wedged QP: rxe on 6.1, after its netdev
 * went down mid-transfer, stops its requester but leaves the QP in RTS,
 * and nothing will ever complete.  That peer counts as dead too.
 *
 * Locking: conn->lock guards ka_on, ka_persist, ka_probing, ka_probe_sent and the
 * probe's place on the send queue; ka_last is written locklessly by
 * completions.  The timer runs in softirq and never takes the socket lock,
 * so teardown may wait for it with the socket locked.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/tcp.h>

#include "afrdma.h"

static int afrdma_ka_opt(const struct sock *sk, int name)
{
	return READ_ONCE(afrdma_sk(sk)->tcp_opt[afrdma_tcp_opt_index(name)]);
}

static void afrdma_ka_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_conn *conn =
		container_of(wc->wr_cqe, struct afrdma_conn, ka_cqe);

	if (wc->status == IB_WC_SUCCESS) {
		spin_lock(&conn->lock);
		conn->ka_probing = false;
		spin_unlock(&conn->lock);
		WRITE_ONCE(conn->ka_last, jiffies);
		return;
	}
	if (wc->status == IB_WC_WR_FLUSH_ERR)
		return;
	pr_debug("keepalive probe failed: %s\n", ib_wc_status_msg(wc->status));
	afrdma_inc_stats(conn->sk, AFRDMA_MIB_KEEPALIVE_TIMEOUTS);
	afrdma_conn_fatal(conn, wc->status == IB_WC_RETRY_EXC_ERR ? ETIMEDOUT :
								    ECONNRESET);
}

/* Called with conn->lock held. */
static int afrdma_ka_probe(struct afrdma_conn *conn)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe		= &conn->ka_cqe,
			.opcode		= IB_WR_RDMA_WRITE,
			.send_flags	= IB_SEND_SIGNALED,
		},
	};

	return ib_post_send(conn->qp, &wr.wr, NULL);
}

static void afrdma_ka_timer(struct timer_list *t)
{
	struct afrdma_conn *conn = from_timer(conn, t, ka_timer);
	unsigned long idle, intvl, u_intvl, now = jiffies, next;
	struct sock *sk = conn->sk;
	bool dead = false;
	int cnt;

	idle = afrdma_ka_opt(sk, TCP_KEEPIDLE) * HZ;
	u_intvl = afrdma_ka_opt(sk, TCP_KEEPINTVL) * HZ;
	intvl = u_intvl;
	cnt = afrdma_ka_opt(sk, TCP_KEEPCNT);

	spin_lock(&conn->lock);
	if (conn->ka_persist && afrdma_tx_writable(conn))
		conn->ka_persist = false;
	if ((!conn->ka_on && !conn->ka_persist) || conn->dead)
		goto out;
	if (conn->ka_persist) {
		idle = min_t(unsigned long, idle, HZ);
		intvl = min_t(unsigned long, intvl, HZ);
	}
	if (conn->ka_probing) {
		/* Without SO_KEEPALIVE, RC's own retries decide. */
		dead = (conn->ka_on &&
			time_after_eq(now, conn->ka_probe_sent + cnt * u_intvl)) ||
		       time_after_eq(now, conn->ka_probe_sent +
				     msecs_to_jiffies(AFRDMA_RC_DEAD_MS));
		next = now + intvl;
	} else if (time_before(now, READ_ONCE(conn->ka_last) + idle)) {
		next = READ_ONCE(conn->ka_last) + idle;
	} else {
		if (!afrdma_ka_probe(conn)) {
			conn->ka_probing = true;
			conn->ka_probe_sent = now;
			afrdma_inc_stats(sk, AFRDMA_MIB_KEEPALIVE_PROBES);
		}
		next = now + intvl;
	}
	if (!dead)
		mod_timer(&conn->ka_timer, next);
out:
	spin_unlock(&conn->lock);
	if (dead) {
		afrdma_inc_stats(sk, AFRDMA_MIB_KEEPALIVE_TIMEOUTS);
		afrdma_conn_fatal(conn, ETIMEDOUT);
	}
}

void afrdma_ka_init(struct afrdma_conn *conn)
{
	timer_setup(&conn->ka_timer, afrdma_ka_timer, 0);
	conn->ka_cqe.done = afrdma_ka_done;
	WRITE_ONCE(conn->ka_last, jiffies);
}

/*
 * SO_KEEPALIVE on an established RDMA connection, or a connection that
 * came up with it set.  The socket is locked.
 */
void afrdma_ka_set(struct afrdma_conn *conn, bool on)
{
	unsigned long idle = afrdma_ka_opt(conn->sk, TCP_KEEPIDLE) * HZ;

	spin_lock_bh(&conn->lock);
	if (conn->dead || !conn->qp) {
		spin_unlock_bh(&conn->lock);
		return;
	}
	conn->ka_on = on;
	spin_unlock_bh(&conn->lock);
	if (on)
		mod_timer(&conn->ka_timer, jiffies + idle);
	else
		del_timer(&conn->ka_timer);
}

/* The owner is about to wait for credits.  The socket is locked. */
void afrdma_ka_persist(struct afrdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (!conn->dead && conn->qp && !conn->ka_persist) {
		conn->ka_persist = true;
		timer_reduce(&conn->ka_timer, jiffies + HZ);
	}
	spin_unlock_bh(&conn->lock);
}

/* Before the QP goes: after this, no probe is posted. */
void afrdma_ka_stop(struct afrdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	conn->ka_on = false;
	conn->ka_persist = false;
	spin_unlock_bh(&conn->lock);
	del_timer_sync(&conn->ka_timer);
}
