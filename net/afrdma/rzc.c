// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma receive zero-copy: a large MSG_ZEROCOPY send crosses with no copy
 * at either end, as SDP's SrcAvail.
 *
 * The sender pins the caller's pages (as for a zero-copy SEND), registers
 * them with a fast-registration MR from the QP's ib_mr_pool, remotely
 * readable only, and sends AFRDMA_MSG_SRCAVAIL {len, addr, rkey} in the
 * stream in place of the bytes.  Nothing more of the stream goes until
 * the receiver answers with AFRDMA_MSG_RDDONE; then a LOCAL_INV kills the
 * rkey and its completion unpins the pages and queues the notification.
 *
 * The receiver queues the SRCAVAIL in stream order.  A recv that reaches
 * it with a buffer of at least net.afrdma.rx_zerocopy_min bytes (or one
 * that takes the rest of the region) pins the buffer and RDMA READs into
 * it under the PD's local DMA lkey; anything else (MSG_PEEK, a small
 * buffer, kernel iterators) READs into the receive buffer the SRCAVAIL
 * came in and copies, so the peer never has to resend.  Once the whole
 * region is read, the RDDONE goes like a FIN when credits allow.
 *
 * Why two mechanisms: the READ's target is only ever touched by our own
 * HCA, for which the local DMA lkey covers any DMA address at no cost;
 * the source must be reachable by the peer, so it needs an rkey, and a
 * fast-registered MR is the cheapest one that can be revoked on a
 * schedule we control (one MR per connection, registered per region,
 * invalidated before the pages are released), and the connection's own
 * PD (conn.c) keeps its rkey from working on any other QP.  An rkey thus never
 * outlives its region: pages stay pinned and mapped until the LOCAL_INV
 * completes, or until teardown has drained the QP and deregistered the
 * pool, so no peer can read memory that went back to the program.
 *
 * The reading recv waits for its READs with the socket locked, as
 * teardown waits for the drain: the pages must not go before the HCA is
 * done with them.  RC bounds that wait only against a silent peer (its
 * retries, then an error completion); one that answers each READ slowly,
 * every packet within the ack timeout, would hold the reader and the lock
 * for as long as it liked.  So the wait is killable, and bounded by
 * AFRDMA_RC_DEAD_MS without any READ of the round completing: either
 * resets the connection, whose QP goes to the error state, and the reader
 * still waits for the flushed completions (local, and quick) before it
 * returns.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <rdma/mr_pool.h>

#include "afrdma.h"

#define AFRDMA_HDR_LEN	sizeof(struct afrdma_msg_hdr)
/* READs of one round; AFRDMA_RZC_WRS has room for them. */
#define AFRDMA_RZC_RD_WRS	16

/*
 * One advertised region.  Owned by sendmsg() until posted, then by the
 * connection (conn->src) until released; see afrdma_conn's locking note.
 */
struct afrdma_rzc_src {
	struct ib_cqe		reg_cqe;
	struct ib_cqe		inv_cqe;
	struct afrdma_conn	*conn;
	struct ubuf_info	*uarg;		/* the call's notification */
	struct ib_mr		*mr;		/* while mapped */
	struct sg_table		sgt;
	struct page		**pages;
	unsigned int		nr_pages;
	unsigned int		len;
	bool			mapped;
	bool			inv_posted;	/* under conn->lock */
};

/* The pages and their table; the MR and the mapping are gone. */
static void afrdma_rzc_free(struct afrdma_rzc_src *src)
{
	sg_free_table(&src->sgt);
	unpin_user_pages(src->pages, src->nr_pages);
	if (src->uarg)
		net_zcopy_put(src->uarg);
	kfree(src->pages);
	kfree(src);
}

static void afrdma_rzc_unmap(struct afrdma_conn *conn,
			     struct afrdma_rzc_src *src)
{
	if (src->mr) {
		ib_mr_pool_put(conn->qp, &conn->qp->rdma_mrs, src->mr);
		src->mr = NULL;
	}
	if (src->mapped) {
		ib_dma_unmap_sg(conn->dev->ibdev, src->sgt.sgl,
				src->sgt.orig_nents, DMA_TO_DEVICE);
		src->mapped = false;
	}
}

/* Only an error, never a success, completes the unsignalled REG_MR. */
static void afrdma_rzc_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_rzc_src *src =
		container_of(wc->wr_cqe, struct afrdma_rzc_src, reg_cqe);

	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR) {
		pr_debug("REG_MR failed: %s\n", ib_wc_status_msg(wc->status));
		afrdma_inc_stats(src->conn->sk, AFRDMA_MIB_COMPLETION_ERRORS);
		afrdma_conn_fatal(src->conn, ECONNRESET);
	}
}

/*
 * The rkey is dead: the pages go back and the notification is queued.
 * A LOCAL_INV that failed or was flushed leaves the rkey valid, so the
 * region stays for teardown, which deregisters the MR first.
 */
static void afrdma_rzc_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_rzc_src *src =
		container_of(wc->wr_cqe, struct afrdma_rzc_src, inv_cqe);
	struct afrdma_conn *conn = src->conn;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			afrdma_inc_stats(conn->sk,
					 AFRDMA_MIB_COMPLETION_ERRORS);
			afrdma_conn_fatal(conn, ECONNRESET);
		}
		return;
	}
	trace_afrdma_rzc_inval(conn->sk, src->len, src->mr->rkey,
			       src->mr->iova, false);
	afrdma_rzc_unmap(conn, src);
	spin_lock(&conn->lock);
	WRITE_ONCE(conn->src, NULL);
	spin_unlock(&conn->lock);
	afrdma_rzc_free(src);
	afrdma_tx_fin(conn);
	conn->sk->sk_write_space(conn->sk);
}

/*
 * Pins up to @max bytes of @from's next segment (one segment: an MR maps
 * pages that are contiguous in between) and builds their table.
 */
static struct afrdma_rzc_src *afrdma_rzc_pin(struct afrdma_conn *conn,
					     struct iov_iter *from, size_t max)
{
	struct afrdma_rzc_src *src;
	ssize_t len;
	size_t off;
	int err;

	src = kzalloc(sizeof(*src), GFP_KERNEL);
	if (!src)
		return ERR_PTR(-ENOMEM);
	src->pages = kmalloc_array(conn->rzc_pages, sizeof(*src->pages),
				   GFP_KERNEL);
	if (!src->pages) {
		kfree(src);
		return ERR_PTR(-ENOMEM);
	}
	len = afrdma_zc_extract(from, src->pages, max, conn->rzc_pages, &off);
	if (len <= 0) {
		kfree(src->pages);
		kfree(src);
		return ERR_PTR(len ? len : -EFAULT);
	}
	src->len = len;
	src->nr_pages = DIV_ROUND_UP(off + len, PAGE_SIZE);
	err = sg_alloc_table_from_pages(&src->sgt, src->pages, src->nr_pages,
					off, len, GFP_KERNEL);
	if (err) {
		afrdma_rzc_drop(src, from);
		return ERR_PTR(err);
	}
	src->conn = conn;
	src->reg_cqe.done = afrdma_rzc_reg_done;
	src->inv_cqe.done = afrdma_rzc_inv_done;
	return src;
}

/* A region never posted: unpin it and give the bytes back. */
void afrdma_rzc_drop(struct afrdma_rzc_src *src, struct iov_iter *from)
{
	iov_iter_revert(from, src->len);
	afrdma_rzc_free(src);
}

/*
 * Maps @src, registers it and posts REG_MR and the SRCAVAIL as the next
 * SEND of the stream.  Called with conn->lock held and no region out, so
 * the pool's one MR is free.  -EOPNOTSUPP if the MR cannot take it.
 */
static int afrdma_rzc_post_locked(struct afrdma_conn *conn,
				  struct afrdma_rzc_src *src,
				  struct ubuf_info *uarg)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	const struct ib_send_wr *bad_wr;
	struct afrdma_tx_slot *slot;
	struct ib_send_wr send = {
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED,
		.num_sge	= 1,
	};
	struct ib_reg_wr reg = {
		.wr = {
			.opcode		= IB_WR_REG_MR,
			.wr_cqe		= &src->reg_cqe,
			.next		= &send,
		},
		.access		= IB_ACCESS_REMOTE_READ,
	};
	struct ib_sge sge;
	int nents, n;

	nents = ib_dma_map_sg(ibdev, src->sgt.sgl, src->sgt.orig_nents,
			      DMA_TO_DEVICE);
	if (!nents)
		return -ENOMEM;
	src->mapped = true;
	src->mr = ib_mr_pool_get(conn->qp, &conn->qp->rdma_mrs);
	if (WARN_ON_ONCE(!src->mr)) {
		afrdma_rzc_unmap(conn, src);
		return -ENOMEM;
	}
	n = ib_map_mr_sg(src->mr, src->sgt.sgl, nents, NULL, PAGE_SIZE);
	if (n != nents) {
		afrdma_rzc_unmap(conn, src);
		return -EOPNOTSUPP;
	}
	/* A fresh key each time: an old SRCAVAIL's rkey stays dead. */
	ib_update_fast_reg_key(src->mr, ib_inc_rkey(src->mr->rkey));
	reg.mr = src->mr;
	reg.key = src->mr->rkey;

	slot = afrdma_tx_head_slot(conn);
	afrdma_build_msg(slot->buf, AFRDMA_MSG_SRCAVAIL, conn->rx_owed,
			 sizeof(struct afrdma_srcavail));
	afrdma_build_srcavail(slot->buf + AFRDMA_HDR_LEN, src->len,
			      src->mr->rkey, src->mr->iova);
	sge.addr = slot->dma;
	sge.length = AFRDMA_HDR_LEN + sizeof(struct afrdma_srcavail);
	sge.lkey = conn->pd->local_dma_lkey;
	send.sg_list = &sge;
	send.wr_cqe = &slot->cqe;
	ib_dma_sync_single_for_device(ibdev, slot->dma, sge.length,
				      DMA_TO_DEVICE);
	if (ib_post_send(conn->qp, &reg.wr, &bad_wr)) {
		/*
		 * A REG_MR taken without its SEND still completes, on
		 * src->reg_cqe: the region is the connection's, released by
		 * teardown after the drain.
		 */
		if (bad_wr != &reg.wr)
			WRITE_ONCE(conn->src, src);
		else
			afrdma_rzc_unmap(conn, src);
		return -EPIPE;
	}
	src->uarg = uarg;
	net_zcopy_get(uarg);
	WRITE_ONCE(conn->src, src);
	slot->len = 0;
	afrdma_inc_stats(conn->sk, AFRDMA_MIB_SRCAVAIL_SENT);
	trace_afrdma_rzc_offer(conn->sk, src->len, src->mr->rkey,
			       src->mr->iova, false);
	afrdma_add_stats(conn->sk, AFRDMA_MIB_BYTES_SENT, src->len);
	afrdma_tx_posted_locked(conn);
	WRITE_ONCE(conn->tx_credits, conn->tx_credits - 1);
	afrdma_credits_sent_locked(conn);
	return 0;
}

/*
 * Offers the next bytes of @msg, up to @len, as a SRCAVAIL.  The owner,
 * with the socket locked.  Returns the bytes offered; -EAGAIN while a
 * region is out or room is short (*@srcp then keeps what was pinned for
 * the next try); -EOPNOTSUPP when this send should use plain SENDs; or
 * another error.  The caller drops *@srcp with afrdma_rzc_drop() if it
 * gives up.
 */
int afrdma_rzc_send(struct sock *sk, struct afrdma_conn *conn,
		    struct msghdr *msg, size_t len, struct ubuf_info *uarg,
		    struct afrdma_rzc_src **srcp)
{
	struct afrdma_rzc_src *src = *srcp;
	int err;

	if (READ_ONCE(conn->src))
		return -EAGAIN;
	if (!conn->mr_pool) {
		if (ib_mr_pool_init(conn->qp, &conn->qp->rdma_mrs, 1,
				    IB_MR_TYPE_MEM_REG, conn->rzc_pages, 0)) {
			conn->rzc_pages = 0;
			return -EOPNOTSUPP;
		}
		conn->mr_pool = true;
	}
	if (!src) {
		src = afrdma_rzc_pin(conn, &msg->msg_iter,
				     min_t(size_t, len, AFRDMA_MAX_SRCAVAIL));
		if (IS_ERR(src))
			return PTR_ERR(src);
		*srcp = src;
	}

	spin_lock_bh(&conn->lock);
	err = afrdma_tx_next_locked(conn);
	if (err)
		goto out;
	err = afrdma_rzc_post_locked(conn, src, uarg);
	if (err == -EPIPE) {
		WRITE_ONCE(conn->dead, true);
		if (conn->src == src)
			*srcp = NULL;
	}
	if (!err) {
		*srcp = NULL;
		err = src->len;
	}
out:
	spin_unlock_bh(&conn->lock);
	return err;
}

/*
 * The peer's RDDONE: it read all of our region, so the rkey goes.  In the
 * receive completion, with conn->lock held.  -EPROTO if nothing was out.
 */
int afrdma_rzc_rddone_locked(struct afrdma_conn *conn, unsigned int bytes)
{
	struct afrdma_rzc_src *src = conn->src;
	struct ib_send_wr wr = {
		.opcode		= IB_WR_LOCAL_INV,
		.send_flags	= IB_SEND_SIGNALED,
	};

	if (!src || src->inv_posted || bytes != src->len)
		return -EPROTO;
	/* A dying connection: teardown deregisters the MR after the drain. */
	if (conn->dead || !conn->qp)
		return 0;
	wr.wr_cqe = &src->inv_cqe;
	wr.ex.invalidate_rkey = src->mr->rkey;
	if (!ib_post_send(conn->qp, &wr, NULL))
		src->inv_posted = true;
	return 0;
}

/*
 * After the drain, before the QP goes: a region still out has its MR
 * deregistered with the pool before its pages are released.
 */
void afrdma_rzc_teardown(struct afrdma_conn *conn)
{
	struct afrdma_rzc_src *src = conn->src;

	WRITE_ONCE(conn->src, NULL);
	if (src && src->mr) {
		ib_mr_pool_put(conn->qp, &conn->qp->rdma_mrs, src->mr);
		src->mr = NULL;
	}
	if (conn->mr_pool) {
		ib_mr_pool_destroy(conn->qp, &conn->qp->rdma_mrs);
		conn->mr_pool = false;
	}
	if (src) {
		afrdma_rzc_unmap(conn, src);
		afrdma_rzc_free(src);
	}
}

/* Receive side */

struct afrdma_rzc_read {
	struct ib_cqe		cqe;
	struct afrdma_conn	*conn;
	struct completion	done;
	atomic_t		left;		/* READs in flight, plus one */
	bool			failed;
};

static void afrdma_rzc_read_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_rzc_read *rd =
		container_of(wc->wr_cqe, struct afrdma_rzc_read, cqe);

	if (wc->status != IB_WC_SUCCESS) {
		rd->failed = true;
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			pr_debug("READ failed: %s\n",
				 ib_wc_status_msg(wc->status));
			afrdma_inc_stats(rd->conn->sk,
					 AFRDMA_MIB_COMPLETION_ERRORS);
			afrdma_conn_fatal(rd->conn, ECONNRESET);
		}
	}
	if (atomic_dec_and_test(&rd->left))
		complete(&rd->done);
}

/*
 * Gives up on the READs in flight: the connection is reset, the peer told
 * (a disconnect, as afrdma_conn_abort() sends) and the QP moved to the
 * error state, which flushes them.  @killed: our reader got a fatal
 * signal, a local reset; otherwise none of its READs completed within
 * AFRDMA_RC_DEAD_MS, which counts as a dead peer.  Owner, socket locked.
 */
static void afrdma_rzc_abort(struct afrdma_conn *conn, bool killed)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct sock *sk = conn->sk;
	struct rdma_cm_id *id;
	bool was_dead;

	spin_lock_bh(&conn->lock);
	was_dead = conn->dead;
	WRITE_ONCE(conn->dead, true);
	spin_unlock_bh(&conn->lock);
	if (!was_dead) {
		if (!killed) {
			afrdma_inc_stats(sk, AFRDMA_MIB_RESETS);
			afrdma_inc_stats(sk, AFRDMA_MIB_RX_READ_STALLS);
		}
		afrdma_trace_reset(sk, ECONNRESET, killed ? AFRDMA_RST_LOCAL :
							    AFRDMA_RST_READ_STALL);
	}
	id = afrdma_sk(sk)->cm_id;
	if (id)
		afrdma_conn_disconnect(sk, id);
	/* rdma_disconnect() may have done it; a QP in error takes it again. */
	ib_modify_qp(conn->qp, &attr, IB_QP_STATE);
	WRITE_ONCE(sk->sk_err, ECONNRESET);
	sk_error_report(sk);
}

/*
 * Waits for @rd's READs, killably, as long as one completes at least every
 * AFRDMA_RC_DEAD_MS: a large region read at any healthy pace never trips
 * that.  Otherwise resets the connection and waits for the flushes.
 */
static int afrdma_rzc_wait(struct afrdma_conn *conn, struct afrdma_rzc_read *rd)
{
	unsigned long bound = msecs_to_jiffies(AFRDMA_RC_DEAD_MS);
	int left = atomic_read(&rd->left), now;
	long ret;

	for (;;) {
		ret = wait_for_completion_killable_timeout(&rd->done, bound);
		if (ret > 0)
			return 0;
		now = atomic_read(&rd->left);
		if (ret < 0 || now == left)
			break;
		left = now;
	}
	afrdma_rzc_abort(conn, ret < 0);
	wait_for_completion(&rd->done);
	return -ECONNRESET;
}

/*
 * READs @nsge local entries from @raddr on, at most conn->rd_sge per
 * READ, and waits for every one: the HCA must be done with the pages
 * before they go.  A failed READ (a bad rkey: the peer's fault) leaves
 * the QP in error, which resets the connection; so does a wait that
 * afrdma_rzc_wait() gives up.
 */
static int afrdma_rzc_read(struct afrdma_conn *conn, struct ib_sge *sge,
			   unsigned int nsge, u64 raddr, u32 rkey)
{
	struct afrdma_rzc_read rd = {
		.cqe.done	= afrdma_rzc_read_done,
		.conn		= conn,
	};
	unsigned int i, j, n;
	int err = 0;

	init_completion(&rd.done);
	atomic_set(&rd.left, 1);
	for (i = 0; i < nsge; i += n) {
		struct ib_rdma_wr wr = {
			.wr = {
				.wr_cqe		= &rd.cqe,
				.opcode		= IB_WR_RDMA_READ,
				.send_flags	= IB_SEND_SIGNALED,
				.sg_list	= sge + i,
			},
			.remote_addr	= raddr,
			.rkey		= rkey,
		};

		n = min(nsge - i, conn->rd_sge);
		wr.wr.num_sge = n;
		for (j = 0; j < n; j++)
			raddr += sge[i + j].length;
		if (READ_ONCE(conn->dead)) {
			err = -ECONNRESET;
			break;
		}
		atomic_inc(&rd.left);
		err = ib_post_send(conn->qp, &wr.wr, NULL);
		if (err) {
			atomic_dec(&rd.left);
			err = -ECONNRESET;
			break;
		}
	}
	if (!atomic_dec_and_test(&rd.left) && afrdma_rzc_wait(conn, &rd))
		return -ECONNRESET;
	return rd.failed ? -ECONNRESET : err;
}

/* Into the receive buffer the SRCAVAIL came in, then copied out. */
static int afrdma_rzc_bounce(struct afrdma_conn *conn,
			     struct afrdma_rx_slot *slot, struct iov_iter *to,
			     unsigned int chunk)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	struct ib_sge sge = {
		.addr	= slot->dma,
		.length	= min(chunk, conn->rx_slot_size),
		.lkey	= conn->pd->local_dma_lkey,
	};
	int err;

	ib_dma_sync_single_for_device(ibdev, slot->dma, sge.length,
				      DMA_FROM_DEVICE);
	err = afrdma_rzc_read(conn, &sge, 1, slot->src_addr + slot->off,
			      slot->src_rkey);
	if (err)
		return err;
	ib_dma_sync_single_for_cpu(ibdev, slot->dma, sge.length,
				   DMA_FROM_DEVICE);
	afrdma_inc_stats(conn->sk, AFRDMA_MIB_RX_BOUNCE_READS);
	trace_afrdma_rzc_read(conn->sk, sge.length, slot->src_rkey,
			      slot->src_addr + slot->off, false);
	if (copy_to_iter(slot->buf, sge.length, to) != sge.length)
		return -EFAULT;
	return sge.length;
}

/* Straight into the caller's pages, a round of READs at a time. */
static int afrdma_rzc_direct(struct afrdma_conn *conn,
			     struct afrdma_rx_slot *slot, struct iov_iter *to,
			     unsigned int chunk)
{
	unsigned int max_pages = min(AFRDMA_RZC_PAGES,
				     conn->rd_sge * AFRDMA_RZC_RD_WRS);
	struct ib_device *ibdev = conn->dev->ibdev;
	unsigned int n, i, done = 0;
	struct page **pages;
	struct ib_sge *sge;
	ssize_t bytes;
	int err = 0;
	u64 dma;

	pages = kmalloc_array(max_pages, sizeof(*pages), GFP_KERNEL);
	sge = kmalloc_array(max_pages, sizeof(*sge), GFP_KERNEL);
	if (!pages || !sge) {
		err = -ENOMEM;
		goto out;
	}
	while (done < chunk) {
		/* Writable pins: @to is a destination. */
		n = afrdma_zc_pin_pages(to, chunk - done, pages, sge, max_pages,
					&bytes);
		if (!n) {
			err = bytes;
			break;
		}
		for (i = 0; i < n; i++) {
			dma = ib_dma_map_page(ibdev, pages[i], sge[i].addr,
					      sge[i].length, DMA_FROM_DEVICE);
			if (ib_dma_mapping_error(ibdev, dma))
				break;
			sge[i].addr = dma;
			sge[i].lkey = conn->pd->local_dma_lkey;
		}
		err = i < n ? -ENOMEM :
		      afrdma_rzc_read(conn, sge, n,
				      slot->src_addr + slot->off + done,
				      slot->src_rkey);
		while (i--)
			ib_dma_unmap_page(ibdev, sge[i].addr, sge[i].length,
					  DMA_FROM_DEVICE);
		unpin_user_pages_dirty_lock(pages, n, !err);
		if (err) {
			iov_iter_revert(to, bytes);
			break;
		}
		done += bytes;
	}
	if (done) {
		afrdma_inc_stats(conn->sk, AFRDMA_MIB_RX_ZEROCOPY_READS);
		trace_afrdma_rzc_read(conn->sk, done, slot->src_rkey,
				      slot->src_addr + slot->off, true);
		afrdma_add_stats(conn->sk, AFRDMA_MIB_RX_ZEROCOPY_BYTES, done);
	}
out:
	kfree(pages);
	kfree(sge);
	return done ? done : err;
}

/*
 * recvmsg() reached the peer's SRCAVAIL in @slot: READs the next @chunk
 * bytes of it (fewer for a bounce) into @msg.  Owner, socket locked.
 * Returns the bytes read or an error.
 */
int afrdma_rzc_recv(struct sock *sk, struct afrdma_conn *conn,
		    struct afrdma_rx_slot *slot, struct msghdr *msg,
		    unsigned int chunk, int flags)
{
	int min = READ_ONCE(afrdma_net(sock_net(sk))->rx_zerocopy_min);
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;

	/*
	 * A peer that granted no READs in flight (responder resources) and
	 * offers a region anyway would leave our READ queued for good.
	 */
	if (!conn->rd_depth) {
		if (ib_query_qp(conn->qp, &attr, IB_QP_MAX_QP_RD_ATOMIC, &init) ||
		    !attr.max_rd_atomic) {
			afrdma_inc_stats(sk, AFRDMA_MIB_PROTOCOL_ERRORS);
			trace_afrdma_proto_error(sk, slot->buf, AFRDMA_TRACE_HDR);
			/* As a receive completion would, BHs off for its lock. */
			local_bh_disable();
			afrdma_conn_fatal(conn, ECONNRESET);
			local_bh_enable();
			return -ECONNRESET;
		}
		conn->rd_depth = attr.max_rd_atomic;
	}

	if (!(flags & MSG_PEEK) && min && user_backed_iter(&msg->msg_iter) &&
	    (chunk >= min || chunk == slot->len - slot->off))
		return afrdma_rzc_direct(conn, slot, &msg->msg_iter, chunk);
	return afrdma_rzc_bounce(conn, slot, &msg->msg_iter, chunk);
}
