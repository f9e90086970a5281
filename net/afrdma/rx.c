// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma receive path: receive completions, credit accounting, and
 * recvmsg() copying out of the connection's receive buffers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched/clock.h>
#include <linux/uio.h>

#include "afrdma.h"

#define AFRDMA_HDR_LEN	sizeof(struct afrdma_msg_hdr)

int afrdma_rx_post(struct afrdma_conn *conn, struct afrdma_rx_slot *slot)
{
	struct ib_sge sge = {
		.addr	= slot->dma,
		.length	= conn->rx_slot_size,
		.lkey	= conn->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe		= &slot->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
	};

	ib_dma_sync_single_for_device(conn->dev->ibdev, slot->dma,
				      conn->rx_slot_size, DMA_FROM_DEVICE);
	return ib_post_recv(conn->qp, &wr, NULL);
}

/* A buffer goes back to the peer: repost it and owe the peer a credit. */
static void afrdma_rx_recycle(struct afrdma_conn *conn,
			      struct afrdma_rx_slot *slot)
{
	if (afrdma_rx_post(conn, slot)) {
		/* Only fails once the QP is in error: the connection is over. */
		return;
	}
	spin_lock_bh(&conn->lock);
	conn->rx_owed++;
	spin_unlock_bh(&conn->lock);
}

void afrdma_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_rx_slot *slot =
		container_of(wc->wr_cqe, struct afrdma_rx_slot, cqe);
	struct afrdma_conn *conn = slot->conn;
	bool readable = false, grow = false;
	struct sock *sk = conn->sk;
	struct afrdma_msg msg;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		/*
		 * A flush is all we see when the peer breaks the QP, with an
		 * RDMA WRITE it had no right to for one (rxe raises no QP
		 * event); on an established connection without FIN that is
		 * a reset.  Our own drains of established connections end
		 * the same way, but for a graceful close or our own reset
		 * (dead by then: the flushes are no error) and the peer's
		 * disconnect (peer_gone: afrdma_cm_disconnected() counts
		 * it); a failed connect's drain must leave its own error
		 * (ECONNREFUSED, ...) alone.
		 */
		if (wc->status != IB_WC_WR_FLUSH_ERR ||
		    (READ_ONCE(sk->sk_state) == TCP_ESTABLISHED &&
		     !READ_ONCE(conn->fin_rcvd) && !READ_ONCE(conn->dead) &&
		     !READ_ONCE(conn->peer_gone))) {
			pr_debug("receive failed: %s\n",
				 ib_wc_status_msg(wc->status));
			afrdma_inc_stats(sk, AFRDMA_MIB_COMPLETION_ERRORS);
			afrdma_conn_fatal(conn, ECONNRESET);
		}
		return;
	}
	/* Reset already: nothing more from this peer reaches the program. */
	if (READ_ONCE(conn->dead))
		return;

	WRITE_ONCE(conn->ka_last, jiffies);
	afrdma_inc_stats(sk, AFRDMA_MIB_RECVS);
	ib_dma_sync_single_for_cpu(conn->dev->ibdev, slot->dma, wc->byte_len,
				   DMA_FROM_DEVICE);
	if (afrdma_parse_msg(slot->buf, wc->byte_len, &msg))
		goto proto_err;

	spin_lock(&conn->lock);
	/* A SEND into a buffer we never offered: the peer ignores credits. */
	if (!conn->peer_credits ||
	    msg.credits > conn->peer_rx_slots - conn->tx_credits ||
	    (conn->fin_rcvd && msg.type != AFRDMA_MSG_CREDIT &&
	     msg.type != AFRDMA_MSG_RDDONE) ||
	    (msg.type == AFRDMA_MSG_SRCAVAIL && conn->src_rcvd) ||
	    (msg.type == AFRDMA_MSG_RDDONE &&
	     afrdma_rzc_rddone_locked(conn, msg.src_len))) {
		spin_unlock(&conn->lock);
		goto proto_err;
	}
	WRITE_ONCE(conn->peer_credits, conn->peer_credits - 1);
	/* Out of credits for data: our ring holds the peer back. */
	if (conn->peer_credits <= 1 && conn->rx_slots < conn->rx_max &&
	    !conn->rx_grow) {
		conn->rx_grow = true;
		grow = true;
	}
	WRITE_ONCE(conn->tx_credits, conn->tx_credits + msg.credits);
	conn->rx_lone_last = msg.type == AFRDMA_MSG_CREDIT && msg.credits < 2;
	conn->rx_rddone_last = msg.type == AFRDMA_MSG_RDDONE;
	if (msg.type == AFRDMA_MSG_SRCAVAIL) {
		/* Its bytes wait in the peer's memory, in stream order. */
		conn->src_rcvd = true;
		slot->src_addr = msg.src_addr;
		slot->src_rkey = msg.src_rkey;
		msg.len = msg.src_len;
	}
	if (msg.type == AFRDMA_MSG_DATA || msg.type == AFRDMA_MSG_SRCAVAIL) {
		WRITE_ONCE(slot->src, msg.type == AFRDMA_MSG_SRCAVAIL);
		slot->len = msg.len;
		slot->off = 0;
		list_add_tail(&slot->node, &conn->rx_ready);
		WRITE_ONCE(conn->rx_bytes, conn->rx_bytes + msg.len);
		afrdma_add_stats(sk, AFRDMA_MIB_BYTES_RECEIVED, msg.len);
		readable = true;
	} else if (msg.type == AFRDMA_MSG_FIN) {
		WRITE_ONCE(conn->fin_rcvd, true);
		readable = true;
	}
	spin_unlock(&conn->lock);

	if (grow)
		afrdma_conn_want_rx(conn);
	if (msg.type != AFRDMA_MSG_DATA && msg.type != AFRDMA_MSG_SRCAVAIL)
		afrdma_rx_recycle(conn, slot);
	if (msg.credits) {
		afrdma_tx_fin(conn);
		sk->sk_write_space(sk);
	}
	afrdma_tx_flush_credits(conn);
	if (readable)
		sk->sk_data_ready(sk);
	return;

proto_err:
	pr_debug("protocol error from peer, resetting\n");
	trace_afrdma_proto_error(sk, slot->buf, wc->byte_len);
	afrdma_inc_stats(sk, AFRDMA_MIB_PROTOCOL_ERRORS);
	afrdma_conn_fatal(conn, ECONNRESET);
}

/* Caller holds the socket lock; only it unlinks slots, so @prev stays. */
static struct afrdma_rx_slot *afrdma_rx_next(struct afrdma_conn *conn,
					     struct afrdma_rx_slot *prev)
{
	struct list_head *next;

	spin_lock_bh(&conn->lock);
	next = prev ? prev->node.next : conn->rx_ready.next;
	spin_unlock_bh(&conn->lock);
	if (next == &conn->rx_ready)
		return NULL;
	return list_entry(next, struct afrdma_rx_slot, node);
}

/* More to read than the @seen bytes a peek has been through, or an end. */
static bool afrdma_rx_more(const struct sock *sk, unsigned int seen)
{
	struct afrdma_conn *conn = afrdma_sk(sk)->conn;

	if (READ_ONCE(sk->sk_err) || (sk->sk_shutdown & RCV_SHUTDOWN))
		return true;
	return !conn || READ_ONCE(conn->rx_bytes) != seen ||
	       READ_ONCE(conn->fin_rcvd) || READ_ONCE(conn->dead);
}

bool afrdma_rx_readable(const struct sock *sk)
{
	return afrdma_rx_more(sk, 0);
}

static int afrdma_recv_wait_err(struct sock *sk, long *timeo)
{
	int err = sock_error(sk);

	if (err)
		return err;
	if (!*timeo)
		return -EAGAIN;
	if (signal_pending(current))
		return sock_intr_errno(*timeo);
	return 0;
}

/*
 * A short spin before sleeping.  Under a ping-pong the completion that
 * makes us readable lands within microseconds, and a sleep and wakeup
 * cost more than that; we cannot poll the CQ from here (it belongs to
 * the pool, polled in softirq), so we watch for what its handler leaves.
 * SO_BUSY_POLL sets the budget per socket, net.afrdma.busy_poll the rest.
 * Any other task that wants this CPU ends the spin.
 */
static bool afrdma_rx_busy_wait(struct sock *sk, unsigned int seen)
{
	unsigned int usecs = 0;
	u64 end;

#ifdef CONFIG_NET_RX_BUSY_POLL
	usecs = READ_ONCE(sk->sk_ll_usec);
#endif
	if (!usecs)
		usecs = READ_ONCE(afrdma_net(sock_net(sk))->busy_poll);
	if (!usecs)
		return false;
	end = local_clock() + (u64)usecs * NSEC_PER_USEC;
	while (!afrdma_rx_more(sk, seen)) {
		if (need_resched() || signal_pending(current) ||
		    local_clock() > end) {
			afrdma_inc_stats(sk, AFRDMA_MIB_BUSY_POLL_MISSES);
			return false;
		}
		cpu_relax();
	}
	afrdma_inc_stats(sk, AFRDMA_MIB_BUSY_POLL_HITS);
	return true;
}

int afrdma_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
		   int flags)
{
	struct afrdma_rx_slot *slot, *peeked = NULL;
	unsigned int seen, taken;
	struct sock *sk = sock->sk;
	struct afrdma_conn *conn;
	int target, ret, err = 0;
	size_t copied = 0;
	long timeo;

	/* As TCP with no urgent data and an empty error queue. */
	if (flags & MSG_OOB)
		return -EINVAL;
	if (flags & MSG_ERRQUEUE)
		return -EAGAIN;

	lock_sock(sk);
	if (sk->sk_state == TCP_LISTEN) {
		err = -ENOTCONN;
		goto out;
	}
	timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	target = sock_rcvlowat(sk, flags & MSG_WAITALL, len);

	while (copied < len) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);
		unsigned int chunk, avail;

		conn = afrdma_sk(sk)->conn;
		/* A peek goes on after the last slot it copied, if any. */
		slot = conn ? afrdma_rx_next(conn, peeked) : NULL;
		if (slot) {
			avail = slot->len - slot->off;
			chunk = min_t(size_t, len - copied, avail);
			/* MSG_TRUNC: TCP's way to drop bytes unread. */
			if (slot->src && !(flags & MSG_TRUNC)) {
				ret = afrdma_rzc_recv(sk, conn, slot, msg, chunk,
						      flags);
				if (ret < 0) {
					err = ret;
					break;
				}
				chunk = ret;
			} else if (!(flags & MSG_TRUNC) &&
				   copy_to_iter(slot->buf + AFRDMA_HDR_LEN +
						slot->off, chunk,
						&msg->msg_iter) != chunk) {
				err = -EFAULT;
				break;
			}
			copied += chunk;
			if (flags & MSG_PEEK) {
				/* Peeked through a bounce: no further. */
				if (slot->src)
					break;
				peeked = slot;
				continue;
			}

			spin_lock_bh(&conn->lock);
			slot->off += chunk;
			WRITE_ONCE(conn->rx_bytes, conn->rx_bytes - chunk);
			conn->rx_taken += chunk;
			if (slot->off == slot->len) {
				list_del_init(&slot->node);
				if (slot->src) {
					/* All read: the peer may drop the rkey. */
					conn->src_rcvd = false;
					conn->rddone = slot->len;
					slot->src = false;
				}
			} else {
				slot = NULL;
			}
			spin_unlock_bh(&conn->lock);
			if (slot) {
				afrdma_rx_recycle(conn, slot);
				afrdma_tx_fin(conn);
			}
			continue;
		}

		if (copied >= target)
			break;
		if (!conn || (sk->sk_shutdown & RCV_SHUTDOWN) ||
		    READ_ONCE(conn->fin_rcvd)) {
			/* EOF, or a reset that left nothing to read. */
			if (!copied && sk->sk_err)
				err = sock_error(sk);
			else if (!copied && !conn && sock->state != SS_CONNECTED)
				err = -ENOTCONN;
			break;
		}
		err = afrdma_recv_wait_err(sk, &timeo);
		if (err)
			break;
		if (READ_ONCE(conn->dead)) {
			err = -ECONNRESET;
			break;
		}
		/* The peer may be waiting for exactly these credits. */
		afrdma_tx_flush_credits(conn);
		/* A peek has seen all that is queued: it waits for more. */
		seen = peeked ? copied : 0;
		if (afrdma_rx_busy_wait(sk, seen))
			continue;
		taken = conn->rx_taken;
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_rx_more(sk, seen), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
		/*
		 * Another reader took bytes, or teardown freed the slots,
		 * while we slept: the peek's place is lost; return what it has.
		 */
		if (peeked && (conn->torn || conn->rx_taken != taken))
			break;
	}

	conn = afrdma_sk(sk)->conn;
	if (conn)
		afrdma_tx_read_credits(conn);
out:
	release_sock(sk);
	return copied ? copied : err;
}
