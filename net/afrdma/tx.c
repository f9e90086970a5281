// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma send path: sendmsg() copying into the connection's send buffers,
 * SENDs gated by the peer's credits, and the control messages (credit
 * returns and FIN) that keep the flow going.
 *
 * Credits: each SEND consumes one of the peer's posted receive buffers.
 * Data and FIN leave the last credit alone, so a credit return can always
 * be sent and the two sides can never both wait for each other.
 *
 * Coalescing follows TCP, with one SEND standing for one segment: a partly
 * filled buffer (the open slot) is held while TCP_CORK is set or the last
 * send had MSG_MORE, for at most TCP's 200 ms, and with Nagle while earlier
 * SENDs are in flight.  A full slot always goes.  Holding saves the peer's
 * receive buffers (credits) and SENDs, which cost more here than small
 * segments do in TCP: every SEND takes a whole receive buffer.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/uio.h>
#include <net/tcp_states.h>

#include "afrdma.h"

#define AFRDMA_HDR_LEN	sizeof(struct afrdma_msg_hdr)
#define AFRDMA_CORK_MAX	(HZ / 5)	/* TCP's TCP_CORK ceiling */

/*
 * A SEND of @len bytes from @slot.  Small ones go inline: the post copies
 * them from the buffer's kernel address (as SMC-R does), so the HCA reads
 * no memory and nothing needs syncing for it.  The slot is still held
 * until the completion, as for any SEND: the ring's order and Nagle's
 * "in flight" (not yet acknowledged by the peer) stay as they were.
 */
static int afrdma_post_send(struct afrdma_conn *conn,
			    struct afrdma_tx_slot *slot, unsigned int len)
{
	bool inl = len <= AFRDMA_HDR_LEN + conn->tx_inline && conn->tx_inline;
	struct ib_sge sge = {
		.addr	= inl ? (uintptr_t)slot->buf : slot->dma,
		.length	= len,
		.lkey	= conn->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe		= &slot->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED | (inl ? IB_SEND_INLINE : 0),
	};

	if (!inl)
		ib_dma_sync_single_for_device(conn->dev->ibdev, slot->dma, len,
					      DMA_TO_DEVICE);
	return ib_post_send(conn->qp, &wr, NULL);
}

/*
 * Bytes a send may copy now: the room left in the open slot, or a fresh
 * slot.  A fresh one needs the credits to post it, as before coalescing,
 * so that poll and a full window behave the same either way.
 */
static unsigned int afrdma_tx_room_locked(const struct afrdma_conn *conn)
{
	if (conn->dead || conn->src)
		return 0;
	if (conn->tx_pending)
		return conn->tx_payload - conn->tx_pending;
	if (conn->tx_head - conn->tx_tail < conn->tx_slots &&
	    conn->tx_credits >= 2)
		return conn->tx_payload;
	return 0;
}

bool afrdma_tx_writable(const struct afrdma_conn *conn)
{
	unsigned int pending = READ_ONCE(conn->tx_pending);

	/* A SRCAVAIL out holds the rest of the stream back. */
	if (READ_ONCE(conn->dead) || READ_ONCE(conn->src))
		return false;
	if (pending)
		return pending < READ_ONCE(conn->tx_payload);
	return READ_ONCE(conn->tx_head) - READ_ONCE(conn->tx_tail) <
			READ_ONCE(conn->tx_slots) &&
	       READ_ONCE(conn->tx_credits) >= 2;
}

bool afrdma_tx_idle(const struct afrdma_conn *conn)
{
	return READ_ONCE(conn->tx_head) == READ_ONCE(conn->tx_tail) &&
	       READ_ONCE(conn->ctrl_head) == READ_ONCE(conn->ctrl_tail) &&
	       !READ_ONCE(conn->src);
}

/*
 * Called with conn->lock held.  A credit return may take the last credit,
 * and so may an RDDONE, which carries credits too: the reader that sends
 * it may have read everything and have nothing else to tell the peer,
 * whose stream waits for it.  The peer gives a credit straight back
 * (afrdma_credits_due_locked()).
 */
static int afrdma_ctrl_post_locked(struct afrdma_conn *conn, unsigned int type)
{
	unsigned int len = type == AFRDMA_MSG_RDDONE ? sizeof(__be32) : 0;
	unsigned int need = type == AFRDMA_MSG_FIN ? 2 : 1;
	struct afrdma_tx_slot *slot;
	int err;

	if (conn->dead || !conn->qp ||
	    conn->ctrl_head - conn->ctrl_tail >= AFRDMA_CTRL_SLOTS ||
	    conn->tx_credits < need)
		return -EAGAIN;

	/* A power of two divides 2^32: the index stays right at the wrap. */
	BUILD_BUG_ON_NOT_POWER_OF_2(AFRDMA_CTRL_SLOTS);
	slot = &conn->ctrl[conn->ctrl_head % AFRDMA_CTRL_SLOTS];
	afrdma_build_msg(slot->buf, type, conn->rx_owed, len);
	if (len)
		afrdma_build_rddone(slot->buf + AFRDMA_HDR_LEN, conn->rddone);
	err = afrdma_post_send(conn, slot, AFRDMA_HDR_LEN + len);
	if (err)
		return err;
	afrdma_inc_stats(conn->sk, AFRDMA_MIB_CTRL_SENDS);
	WRITE_ONCE(conn->ctrl_head, conn->ctrl_head + 1);
	WRITE_ONCE(conn->tx_credits, conn->tx_credits - 1);
	afrdma_credits_sent_locked(conn);
	return 0;
}

/* The message just posted carried every credit owed.  conn->lock held. */
void afrdma_credits_sent_locked(struct afrdma_conn *conn)
{
	WRITE_ONCE(conn->peer_credits, conn->peer_credits + conn->rx_owed);
	conn->rx_owed = 0;
}

/*
 * Whether owed credits should go in a message of their own rather than
 * wait for the next data to carry them: when the peer has too few left to
 * send data (fewer than 2), or, unless @read (the program just read and
 * may well answer), once half the receive buffers are owed.  Never fewer
 * than 2: a credit return takes a buffer of the peer's, which it owes back
 * in turn, so returns of one credit could bounce between two idle peers
 * forever; returns of two or more die out.  A reader that has drained its
 * buffers owes all but what the peer still holds, so a peer waiting for
 * credits always has them returned.
 */
static bool afrdma_credits_due_locked(const struct afrdma_conn *conn,
				      bool read)
{
	if (!conn->peer_rx_slots || !conn->rx_owed)
		return false;
	/*
	 * One credit, when it is what the peer lacks to send data (else a
	 * reader that does not read until the peer's send returns could
	 * wait for ever with a buffer free), or to send anything at all
	 * after its RDDONE took its last.  Never in answer to a lone return,
	 * so that lone returns cannot bounce between idle peers for ever.
	 */
	if (conn->rx_owed < 2)
		return !conn->rx_lone_last &&
		       (conn->peer_credits == 1 ||
			(!conn->peer_credits && conn->rx_rddone_last));
	return conn->peer_credits < 2 ||
	       (!read && conn->rx_owed >= conn->rx_slots / 2);
}

/* Returns credits if they are due; any context. */
void afrdma_tx_flush_credits(struct afrdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (afrdma_credits_due_locked(conn, false))
		afrdma_ctrl_post_locked(conn, AFRDMA_MSG_CREDIT);
	spin_unlock_bh(&conn->lock);
}

/*
 * After recvmsg() consumed data: only a peer that cannot send gets a
 * credit return now.  Otherwise the credits wait for our next message:
 * the answer a ping-pong or RPC is about to write, or a return once half
 * the ring is owed when the next message arrives or the reader sleeps.
 * Returning them here at half a ring of 4 cost a credit message per
 * message in a ping-pong, each one's buffer owed back in turn.
 */
void afrdma_tx_read_credits(struct afrdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (afrdma_credits_due_locked(conn, true))
		afrdma_ctrl_post_locked(conn, AFRDMA_MSG_CREDIT);
	spin_unlock_bh(&conn->lock);
}

/*
 * Whether the open slot should go now, by TCP's rules (tcp_nagle_test()):
 * a full slot or an explicit push always; otherwise not while corked, and
 * with Nagle only once nothing is in flight, so a ping-pong never waits.
 */
static bool afrdma_tx_due_locked(const struct afrdma_conn *conn)
{
	if (!conn->tx_pending || conn->tx_filling)
		return false;
	if (conn->tx_pending >= conn->tx_payload || conn->tx_push)
		return true;
	if (conn->tx_cork || conn->tx_more)
		return false;
	return conn->tx_nodelay || conn->tx_head == conn->tx_tail;
}

/* Posts the open slot if it is due and a spare credit allows. */
static int afrdma_tx_push_locked(struct afrdma_conn *conn)
{
	struct afrdma_tx_slot *slot;
	int err;

	if (!afrdma_tx_due_locked(conn) || conn->dead || !conn->qp ||
	    conn->tx_credits < 2)
		return 0;

	slot = afrdma_tx_head_slot(conn);
	afrdma_build_msg(slot->buf, AFRDMA_MSG_DATA, conn->rx_owed,
			 conn->tx_pending);
	err = afrdma_post_send(conn, slot, AFRDMA_HDR_LEN + conn->tx_pending);
	if (err) {
		/* Only an errored QP refuses: the data would never go. */
		WRITE_ONCE(conn->dead, true);
		return err;
	}
	slot->len = conn->tx_pending;
	afrdma_inc_stats(conn->sk, AFRDMA_MIB_DATA_SENDS);
	afrdma_add_stats(conn->sk, AFRDMA_MIB_BYTES_SENT, slot->len);
	WRITE_ONCE(conn->tx_pending, 0);
	conn->tx_push = false;
	afrdma_tx_posted_locked(conn);
	WRITE_ONCE(conn->tx_credits, conn->tx_credits - 1);
	afrdma_credits_sent_locked(conn);
	return 0;
}

/* Held data must not wait longer than TCP would let it. */
static void afrdma_tx_arm_locked(struct afrdma_conn *conn)
{
	if (conn->tx_pending && (conn->tx_cork || conn->tx_more) &&
	    !timer_pending(&conn->cork_timer))
		mod_timer(&conn->cork_timer, conn->tx_opened + AFRDMA_CORK_MAX);
}

/*
 * The open slot first, then a pending FIN, which must follow the data.
 * An RDDONE owed (the other direction's) goes whenever credits allow.
 */
static int afrdma_tx_kick_locked(struct afrdma_conn *conn)
{
	int err;

	if (conn->rddone && !afrdma_ctrl_post_locked(conn, AFRDMA_MSG_RDDONE))
		conn->rddone = 0;
	if (conn->fin_pending && conn->tx_pending)
		conn->tx_push = true;
	err = afrdma_tx_push_locked(conn);
	if (!err && conn->fin_pending && !conn->fin_sent &&
	    !conn->tx_pending && !afrdma_ctrl_post_locked(conn, AFRDMA_MSG_FIN)) {
		conn->fin_pending = false;
		WRITE_ONCE(conn->fin_sent, true);
	}
	return err;
}

/* A push failed on a live socket: reset it, as a failed SEND does. */
static void afrdma_tx_failed(struct afrdma_conn *conn)
{
	WRITE_ONCE(conn->sk->sk_err, ECONNRESET);
	sk_error_report(conn->sk);
}

/*
 * Posts what waited for credits, a completion or a push: the open slot,
 * then a pending FIN.  Any context; shutdown and close call it after
 * setting fin_pending, receive completions when credits come back.
 */
void afrdma_tx_fin(struct afrdma_conn *conn)
{
	int err;

	spin_lock_bh(&conn->lock);
	err = afrdma_tx_kick_locked(conn);
	spin_unlock_bh(&conn->lock);
	if (err)
		afrdma_tx_failed(conn);
}

static void afrdma_tx_cork_expired(struct timer_list *t)
{
	struct afrdma_conn *conn = from_timer(conn, t, cork_timer);
	unsigned long due;
	int err = 0;

	spin_lock(&conn->lock);
	due = conn->tx_opened + AFRDMA_CORK_MAX;
	if (!conn->tx_pending || conn->dead) {
		/* Pushed meanwhile, or torn down. */
	} else if (time_before(jiffies, due)) {
		/* Armed for an earlier slot: this one has time left. */
		mod_timer(&conn->cork_timer, due);
	} else {
		conn->tx_push = true;
		err = afrdma_tx_kick_locked(conn);
	}
	spin_unlock(&conn->lock);
	if (err)
		afrdma_tx_failed(conn);
}

/* Called before the connection can send; @sk's options are settled. */
void afrdma_tx_init(struct afrdma_conn *conn)
{
	timer_setup(&conn->cork_timer, afrdma_tx_cork_expired, 0);
	conn->tx_cork = afrdma_sockopt_tcp(conn->sk, TCP_CORK);
	conn->tx_nodelay = afrdma_sockopt_tcp(conn->sk, TCP_NODELAY);
}

/*
 * Nothing may be posted from here on: teardown is about to drain the QP,
 * and a SEND posted after the drain could complete after the CQ is gone.
 */
void afrdma_tx_stop(struct afrdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	WRITE_ONCE(conn->dead, true);
	spin_unlock_bh(&conn->lock);
	timer_shutdown_sync(&conn->cork_timer);
}

/*
 * TCP_CORK or TCP_NODELAY changed; the caller holds the socket lock.  As
 * in TCP, removing the cork or turning Nagle off pushes what is held (the
 * TCP_NAGLE_PUSH of tcp_push_pending_frames()); a new cork starts the
 * ceiling for data already waiting.
 */
void afrdma_tx_set_opt(struct afrdma_conn *conn, int optname, bool on)
{
	int err;

	spin_lock_bh(&conn->lock);
	if (optname == TCP_CORK)
		conn->tx_cork = on;
	else
		conn->tx_nodelay = on;
	if (conn->tx_pending && (optname == TCP_CORK ? !on : on))
		conn->tx_push = true;
	err = afrdma_tx_kick_locked(conn);
	afrdma_tx_arm_locked(conn);
	spin_unlock_bh(&conn->lock);
	if (err)
		afrdma_tx_failed(conn);
}

/* Counts a completed SEND of either kind; false if it failed. */
static bool afrdma_send_done(struct ib_wc *wc, unsigned int *tail)
{
	struct afrdma_tx_slot *slot =
		container_of(wc->wr_cqe, struct afrdma_tx_slot, cqe);
	struct afrdma_conn *conn = slot->conn;

	if (unlikely(wc->status != IB_WC_SUCCESS &&
		     wc->status != IB_WC_WR_FLUSH_ERR)) {
		pr_debug("send failed: %s\n", ib_wc_status_msg(wc->status));
		afrdma_inc_stats(conn->sk, AFRDMA_MIB_COMPLETION_ERRORS);
		afrdma_conn_fatal(conn, ECONNRESET);
	}

	spin_lock(&conn->lock);
	WRITE_ONCE(*tail, *tail + 1);
	spin_unlock(&conn->lock);
	return wc->status == IB_WC_SUCCESS;
}

void afrdma_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_tx_slot *slot =
		container_of(wc->wr_cqe, struct afrdma_tx_slot, cqe);
	struct afrdma_conn *conn = slot->conn;

	/* The pages go before the slot is reused, and before the notice. */
	if (slot->zc) {
		afrdma_zc_done(conn, slot->zc);
		slot->zc = NULL;
	}
	spin_lock(&conn->lock);
	WRITE_ONCE(conn->tx_unacked, conn->tx_unacked - slot->len);
	spin_unlock(&conn->lock);
	/* Nagle's wait ends when the last SEND in flight completes. */
	if (afrdma_send_done(wc, &conn->tx_tail))
		afrdma_tx_fin(conn);
	conn->sk->sk_write_space(conn->sk);
}

void afrdma_ctrl_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_conn *conn =
		container_of(wc->wr_cqe, struct afrdma_tx_slot, cqe)->conn;

	if (afrdma_send_done(wc, &conn->ctrl_tail)) {
		afrdma_tx_fin(conn);
		afrdma_tx_flush_credits(conn);
	}
	conn->sk->sk_write_space(conn->sk);
}

/*
 * Whether a SEND of the user's pages (zerocopy.c, rzc.c) may go as the
 * next of the stream: the copied bytes held in the open slot go first, to
 * keep the stream in order.  0, -EAGAIN while they or the lack of room
 * (or a SRCAVAIL out) hold it back, -EPIPE on a dead connection.  Called
 * with conn->lock held.
 */
int afrdma_tx_next_locked(struct afrdma_conn *conn)
{
	if (conn->tx_pending) {
		conn->tx_push = true;
		if (afrdma_tx_push_locked(conn))
			return -EPIPE;
	}
	if (conn->dead || !conn->qp)
		return -EPIPE;
	if (conn->tx_pending || conn->src ||
	    conn->tx_head - conn->tx_tail >= conn->tx_slots ||
	    conn->tx_credits < 2)
		return -EAGAIN;
	return 0;
}

/*
 * Posts @zs as the next SEND, behind any data held in the open slot.
 * Returns -EAGAIN while that data or the lack of room holds it back,
 * -EPIPE if the QP refused, -ENOMEM if the pages could not be mapped.
 * On success the slot owns @zs; otherwise the caller still does.
 */
static int afrdma_tx_zc(struct afrdma_conn *conn, struct afrdma_zc_send *zs,
			struct ubuf_info *uarg)
{
	unsigned int len = afrdma_zc_len(zs);
	struct afrdma_tx_slot *slot;
	int err;

	spin_lock_bh(&conn->lock);
	err = afrdma_tx_next_locked(conn);
	if (err)
		goto out;

	slot = afrdma_tx_head_slot(conn);
	afrdma_build_msg(slot->buf, AFRDMA_MSG_DATA, conn->rx_owed, len);
	err = afrdma_zc_post(conn, slot, zs, uarg, AFRDMA_HDR_LEN);
	if (err) {
		/* As for a copied SEND: only an errored QP refuses. */
		if (err == -EPIPE)
			WRITE_ONCE(conn->dead, true);
		goto out;
	}
	slot->len = len;
	afrdma_inc_stats(conn->sk, AFRDMA_MIB_DATA_SENDS);
	afrdma_add_stats(conn->sk, AFRDMA_MIB_BYTES_SENT, len);
	WRITE_ONCE(conn->tx_unacked, conn->tx_unacked + len);
	afrdma_tx_posted_locked(conn);
	WRITE_ONCE(conn->tx_credits, conn->tx_credits - 1);
	afrdma_credits_sent_locked(conn);
out:
	spin_unlock_bh(&conn->lock);
	return err;
}

/*
 * A zero-copy SEND needs a free slot, two credits, no copied bytes held in
 * the open slot (room in that slot is no room for it) and no SRCAVAIL out:
 * afrdma_tx_next_locked()'s conditions.
 */
static bool afrdma_tx_zc_writable(const struct afrdma_conn *conn)
{
	return !READ_ONCE(conn->tx_pending) && afrdma_tx_writable(conn);
}

static bool afrdma_send_ready(struct sock *sk, struct afrdma_conn *conn,
			      bool zc)
{
	return READ_ONCE(sk->sk_err) || (sk->sk_shutdown & SEND_SHUTDOWN) ||
	       afrdma_sk(sk)->conn != conn ||
	       (zc ? afrdma_tx_zc_writable(conn) : afrdma_tx_writable(conn));
}

/* The ring, not the peer, holds the sender back, so the ring may grow. */
static bool afrdma_tx_may_grow_locked(const struct afrdma_conn *conn)
{
	return !conn->src && conn->tx_slots < conn->tx_max &&
	       conn->tx_head - conn->tx_tail >= conn->tx_slots &&
	       conn->tx_credits >= 2;
}

int afrdma_sendmsg(struct socket *sock, struct msghdr *msg, size_t len)
{
	struct afrdma_rzc_src *src = NULL;
	struct afrdma_zc_send *zs = NULL;
	struct ubuf_info *uarg = NULL;
	int flags = msg->msg_flags;
	struct sock *sk = sock->sk;
	struct afrdma_conn *conn;
	size_t sent = 0;
	bool zc = false;
	int rzc_min;
	long timeo;
	int err = 0;

	/* Like TCP, ignore flags with no meaning here (splice's among them). */
	if (flags & MSG_OOB)
		return -EOPNOTSUPP;

	/* A connecting socket's caller, afrdma_sock_sendmsg(), waited. */
	lock_sock(sk);
	timeo = sock_sndtimeo(sk, flags & MSG_DONTWAIT);
	err = afrdma_zc_begin(sk, afrdma_sk(sk)->conn, msg, len, &uarg);
	if (err < 0)
		goto out;
	zc = err;
	err = 0;
	/* Large enough for the peer to READ: see rzc.c. */
	rzc_min = zc ? READ_ONCE(afrdma_net(sock_net(sk))->rx_zerocopy_min) : 0;

	while (sent < len) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);
		unsigned int room, off, chunk, copied;
		struct afrdma_tx_slot *slot;
		bool grow = false;

		conn = afrdma_sk(sk)->conn;
		/*
		 * As TCP: the error is reported, and cleared, only by a send
		 * that moved nothing (sk_stream_error() below), so a partial
		 * send does not swallow why the connection ended.
		 */
		if (sk->sk_err || (sk->sk_shutdown & SEND_SHUTDOWN)) {
			err = -EPIPE;
			break;
		}
		if (!conn) {
			err = sock->state == SS_CONNECTED ? -EPIPE : -ENOTCONN;
			break;
		}
		if (READ_ONCE(conn->dead)) {
			/*
			 * As TCP in CLOSE_WAIT: the peer closed, and only its
			 * reset to this data would tell; the data is lost,
			 * later sends fail with EPIPE.
			 */
			if (sk->sk_state == TCP_CLOSE_WAIT) {
				sent = len;
				sk->sk_shutdown |= SEND_SHUTDOWN;
				afrdma_set_state(sk, TCP_CLOSE);
				sk->sk_state_change(sk);
				break;
			}
			err = -EPIPE;
			break;
		}

		if (rzc_min && !zs && conn->rzc && conn->rzc_pages &&
		    (src || len - sent >= rzc_min)) {
			/* Pinned once, kept across waits, as below. */
			err = afrdma_rzc_send(sk, conn, msg, len - sent, uarg,
					      &src);
			if (err > 0) {
				sent += err;
				err = 0;
				continue;
			}
			if (err == -EAGAIN) {
				err = 0;
				goto block;
			}
			if (err != -EOPNOTSUPP)
				break;
			/* The MR cannot map these pages: plain SENDs. */
			if (src)
				afrdma_rzc_drop(src, &msg->msg_iter);
			src = NULL;
			rzc_min = 0;
			err = 0;
		}
		if (zc) {
			/* Pinned once, kept across waits for room. */
			if (!zs) {
				zs = afrdma_zc_pin(&msg->msg_iter,
						   min_t(size_t, len - sent,
							 conn->tx_payload),
						   conn->zc_pages);
				if (IS_ERR(zs)) {
					err = PTR_ERR(zs);
					zs = NULL;
					break;
				}
			}
			/* Once posted, @zs is the completion's to free. */
			chunk = afrdma_zc_len(zs);
			err = afrdma_tx_zc(conn, zs, uarg);
			if (!err) {
				sent += chunk;
				zs = NULL;
				continue;
			}
			if (err != -EAGAIN)
				break;
			err = 0;
			spin_lock_bh(&conn->lock);
			grow = afrdma_tx_may_grow_locked(conn);
			spin_unlock_bh(&conn->lock);
			goto block;
		}

		spin_lock_bh(&conn->lock);
		room = afrdma_tx_room_locked(conn);
		off = conn->tx_pending;
		/* With tx_filling set the slot, and so tx_head, stays put. */
		slot = room ? afrdma_tx_head_slot(conn) : NULL;
		grow = !room && afrdma_tx_may_grow_locked(conn);
		if (room) {
			conn->tx_filling = true;
			if (!off)
				conn->tx_opened = jiffies;
		}
		spin_unlock_bh(&conn->lock);

		if (room) {
			chunk = min_t(size_t, len - sent, room);
			copied = copy_from_iter(slot->buf + AFRDMA_HDR_LEN + off,
						chunk, &msg->msg_iter);

			spin_lock_bh(&conn->lock);
			conn->tx_filling = false;
			WRITE_ONCE(conn->tx_pending, conn->tx_pending + copied);
			WRITE_ONCE(conn->tx_unacked, conn->tx_unacked + copied);
			conn->tx_more = !!(flags & MSG_MORE);
			err = afrdma_tx_push_locked(conn);
			afrdma_tx_arm_locked(conn);
			spin_unlock_bh(&conn->lock);

			sent += copied;
			if (err) {
				err = -EPIPE;
				break;
			}
			if (copied != chunk) {
				err = -EFAULT;
				break;
			}
			continue;
		}
block:
		if (grow && !afrdma_conn_grow_tx(conn))
			continue;
		afrdma_trace_stall(conn);
		if (!timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			break;
		}
		/* Nothing may be in flight to tell us the peer died. */
		afrdma_ka_persist(conn);
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_send_ready(sk, conn, zc), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}
	if (zs)
		afrdma_zc_drop(zs, &msg->msg_iter);
	if (src)
		afrdma_rzc_drop(src, &msg->msg_iter);
	afrdma_zc_end(uarg, sent);
out:
	release_sock(sk);
	if (sent)
		return sent;
	if (err == -EPIPE)
		err = sk_stream_error(sk, flags, err);
	return err;
}
