// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma send path: sendmsg() copying into the connection's send buffers,
 * SENDs gated by the peer's credits, and the control messages (credit
 * returns and FIN) that keep the flow going.
 *
 * Credits: each SEND consumes one of the peer's posted receive buffers.
 * Data and FIN leave the last credit alone, so a credit return can always
 * be sent and the two sides can never both wait for each other.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/uio.h>
#include <net/tcp_states.h>

#include "afrdma.h"

#define AFRDMA_HDR_LEN	sizeof(struct afrdma_msg_hdr)

static int afrdma_post_send(struct afrdma_conn *conn,
			    struct afrdma_tx_slot *slot, unsigned int len)
{
	struct ib_sge sge = {
		.addr	= slot->dma,
		.length	= len,
		.lkey	= conn->dev->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe		= &slot->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED,
	};

	ib_dma_sync_single_for_device(conn->dev->ibdev, slot->dma, len,
				      DMA_TO_DEVICE);
	return ib_post_send(conn->qp, &wr, NULL);
}

static bool afrdma_tx_writable_locked(const struct afrdma_conn *conn)
{
	return !conn->dead && conn->tx_head - conn->tx_tail < conn->tx_slots &&
	       conn->tx_credits >= 2;
}

bool afrdma_tx_writable(const struct afrdma_conn *conn)
{
	return !READ_ONCE(conn->dead) &&
	       READ_ONCE(conn->tx_head) - READ_ONCE(conn->tx_tail) <
			conn->tx_slots &&
	       READ_ONCE(conn->tx_credits) >= 2;
}

bool afrdma_tx_idle(const struct afrdma_conn *conn)
{
	return READ_ONCE(conn->tx_head) == READ_ONCE(conn->tx_tail) &&
	       READ_ONCE(conn->ctrl_head) == READ_ONCE(conn->ctrl_tail);
}

/* Called with conn->lock held. */
static int afrdma_ctrl_post_locked(struct afrdma_conn *conn, unsigned int type)
{
	unsigned int need = type == AFRDMA_MSG_CREDIT ? 1 : 2;
	struct afrdma_tx_slot *slot;
	int err;

	if (conn->dead || !conn->qp ||
	    conn->ctrl_head - conn->ctrl_tail >= AFRDMA_CTRL_SLOTS ||
	    conn->tx_credits < need)
		return -EAGAIN;

	slot = &conn->ctrl[conn->ctrl_head % AFRDMA_CTRL_SLOTS];
	afrdma_build_msg(slot->buf, type, conn->rx_owed, 0);
	err = afrdma_post_send(conn, slot, AFRDMA_HDR_LEN);
	if (err)
		return err;
	conn->ctrl_head++;
	conn->tx_credits--;
	conn->peer_credits += conn->rx_owed;
	conn->rx_owed = 0;
	return 0;
}

/* Returns credits once half the receive buffers wait to be reported. */
void afrdma_tx_flush_credits(struct afrdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (conn->peer_rx_slots && conn->rx_owed >= conn->rx_slots / 2)
		afrdma_ctrl_post_locked(conn, AFRDMA_MSG_CREDIT);
	spin_unlock_bh(&conn->lock);
}

/* Sends a pending FIN once credits allow. */
void afrdma_tx_fin(struct afrdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (conn->fin_pending && !conn->fin_sent &&
	    !afrdma_ctrl_post_locked(conn, AFRDMA_MSG_FIN)) {
		conn->fin_pending = false;
		conn->fin_sent = true;
	}
	spin_unlock_bh(&conn->lock);
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
		afrdma_conn_fatal(conn, ECONNRESET);
	}

	spin_lock(&conn->lock);
	(*tail)++;
	spin_unlock(&conn->lock);
	return wc->status == IB_WC_SUCCESS;
}

void afrdma_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_tx_slot *slot =
		container_of(wc->wr_cqe, struct afrdma_tx_slot, cqe);
	struct afrdma_conn *conn = slot->conn;

	spin_lock(&conn->lock);
	conn->tx_unacked -= slot->len;
	spin_unlock(&conn->lock);
	afrdma_send_done(wc, &conn->tx_tail);
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

static bool afrdma_send_ready(struct sock *sk, struct afrdma_conn *conn)
{
	return READ_ONCE(sk->sk_err) || (sk->sk_shutdown & SEND_SHUTDOWN) ||
	       afrdma_sk(sk)->conn != conn || afrdma_tx_writable(conn);
}

static bool afrdma_connect_done(struct sock *sk)
{
	return READ_ONCE(sk->sk_state) != TCP_SYN_SENT;
}

int afrdma_sendmsg(struct socket *sock, struct msghdr *msg, size_t len)
{
	int flags = msg->msg_flags;
	struct sock *sk = sock->sk;
	struct afrdma_conn *conn;
	size_t sent = 0;
	long timeo;
	int err = 0;

	/* Like TCP, ignore flags with no meaning here (splice's among them). */
	if (flags & MSG_OOB)
		return -EOPNOTSUPP;

	lock_sock(sk);
	timeo = sock_sndtimeo(sk, flags & MSG_DONTWAIT);

	while (sk->sk_state == TCP_SYN_SENT) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);

		if (!timeo) {
			err = -EAGAIN;
			goto out;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			goto out;
		}
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_connect_done(sk), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}

	while (sent < len) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);
		struct afrdma_tx_slot *slot = NULL;
		unsigned int chunk;

		conn = afrdma_sk(sk)->conn;
		if (sk->sk_err) {
			err = sock_error(sk);
			break;
		}
		if (sk->sk_shutdown & SEND_SHUTDOWN) {
			err = -EPIPE;
			break;
		}
		if (!conn) {
			err = sock->state == SS_CONNECTED ? -EPIPE : -ENOTCONN;
			break;
		}
		if (READ_ONCE(conn->dead)) {
			err = -EPIPE;
			break;
		}

		spin_lock_bh(&conn->lock);
		if (afrdma_tx_writable_locked(conn))
			slot = &conn->tx[conn->tx_head % conn->tx_slots];
		spin_unlock_bh(&conn->lock);

		if (slot) {
			chunk = min_t(size_t, len - sent, conn->tx_payload);
			if (copy_from_iter(slot->buf + AFRDMA_HDR_LEN, chunk,
					   &msg->msg_iter) != chunk) {
				err = -EFAULT;
				break;
			}
			spin_lock_bh(&conn->lock);
			if (afrdma_tx_writable_locked(conn)) {
				afrdma_build_msg(slot->buf, AFRDMA_MSG_DATA,
						 conn->rx_owed, chunk);
				err = afrdma_post_send(conn, slot,
						       AFRDMA_HDR_LEN + chunk);
				if (!err) {
					slot->len = chunk;
					conn->tx_unacked += chunk;
					conn->tx_head++;
					conn->tx_credits--;
					conn->peer_credits += conn->rx_owed;
					conn->rx_owed = 0;
				}
			} else {
				/* A credit return took the last spare credit. */
				iov_iter_revert(&msg->msg_iter, chunk);
				slot = NULL;
			}
			spin_unlock_bh(&conn->lock);
			if (err) {
				err = -EPIPE;
				break;
			}
			if (slot) {
				sent += chunk;
				continue;
			}
		}

		if (!timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			break;
		}
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_send_ready(sk, conn), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}
out:
	release_sock(sk);
	if (sent)
		return sent;
	if (err == -EPIPE)
		err = sk_stream_error(sk, flags, err);
	return err;
}
