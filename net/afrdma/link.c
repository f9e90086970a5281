// SPDX-License-Identifier: GPL-2.0
/*
 * Links (Documentation/links.rst, step 3): setup and teardown by rdma_cm,
 * the control messages (link_msg.h), idle expiry, and the chunks of
 * registered memory that ring areas (link_area.c) are carved from.  Only
 * while net.afrdma.links is 1; the streams a link carries are stream.c's,
 * sockets do not use links yet, AFRDMA_CMD_LINK_TEST asks for one
 * (nl_link.c).
 *
 * rdma_cm's handler only records what happened, under the link's @lock,
 * and queues the link's work on afrdma's work queue, which does the rest
 * under the link's @mutex: it never takes a socket lock, nor waits on
 * anything a user or a peer controls.  Completions run in softirq and take
 * @lock only.  See struct afrdma_link for the rest of the locking.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "afrdma.h"

static unsigned int afrdma_link_port = AFRDMA_LINK_PORT;
module_param_named(link_port, afrdma_link_port, uint, 0444);
MODULE_PARM_DESC(link_port,
		 "rdma_cm port (RDMA_PS_TCP) links listen on while net.afrdma.links is 1 (default 18637)");

/* What the link's work has to do, recorded in link->events. */
enum {
	AFRDMA_LINK_EV_REQUEST,		/* passive: accept */
	AFRDMA_LINK_EV_ADDR,		/* active: address resolved */
	AFRDMA_LINK_EV_ROUTE,		/* active: route resolved */
	AFRDMA_LINK_EV_ESTABLISHED,
	AFRDMA_LINK_EV_HELLO,		/* the peer's HELLO came */
	AFRDMA_LINK_EV_USERS,		/* ours or the peer's count changed */
	AFRDMA_LINK_EV_TEST,		/* the test area's size changed */
	AFRDMA_LINK_EV_TIMER,
	AFRDMA_LINK_EV_CLOSE,		/* it failed or the peer closed it */
	AFRDMA_LINK_EV_STREAMS,		/* stream.c has work: messages, retries */
};

static void afrdma_link_work(struct work_struct *work);

/* Waiting for a REG_MR or LOCAL_INV of our own QP; a dead QP flushes it. */
#define AFRDMA_LINK_REG_MS	5000

static void afrdma_link_release(struct kref *ref)
{
	struct afrdma_link *link = container_of(ref, struct afrdma_link, ref);

	mutex_destroy(&link->mutex);
	kfree(link);
}

void afrdma_link_put(struct afrdma_link *link)
{
	kref_put(&link->ref, afrdma_link_release);
}

/*
 * Records @ev for the link's work and queues it, unless the link is
 * closed.  link->lock held; any context.  The queued work holds a
 * reference; the caller's keeps the link alive here, so this put is never
 * the last.
 */
static void afrdma_link_kick_locked(struct afrdma_link *link, int ev)
{
	if (link->state == AFRDMA_LINK_STATE_CLOSED)
		return;
	__set_bit(ev, &link->events);
	kref_get(&link->ref);
	if (!queue_work(afrdma_wq, &link->work))
		kref_put(&link->ref, afrdma_link_release);
}

void afrdma_link_kick_streams_locked(struct afrdma_link *link)
{
	afrdma_link_kick_locked(link, AFRDMA_LINK_EV_STREAMS);
}

/* Our user count changed by @delta: the peer is told, idleness checked. */
void afrdma_link_users_locked(struct afrdma_link *link, int delta)
{
	link->users += delta;
	link->want_use = true;
	afrdma_link_kick_locked(link, AFRDMA_LINK_EV_USERS);
}

bool afrdma_link_is_up(struct afrdma_link *link)
{
	bool up;

	spin_lock_bh(&link->lock);
	up = link->state == AFRDMA_LINK_STATE_UP;
	spin_unlock_bh(&link->lock);
	return up;
}

/* The link broke (a completion, a bad message): it goes.  Any context. */
void afrdma_link_fail(struct afrdma_link *link, int err)
{
	spin_lock_bh(&link->lock);
	if (!link->cm_status)
		link->cm_status = err;
	afrdma_link_kick_locked(link, AFRDMA_LINK_EV_CLOSE);
	spin_unlock_bh(&link->lock);
}

/* The timer runs the work at @deadline.  link->lock held. */
static void afrdma_link_arm_locked(struct afrdma_link *link,
				   unsigned long deadline)
{
	link->deadline = deadline;
	if (link->state != AFRDMA_LINK_STATE_CLOSED)
		mod_delayed_work(afrdma_wq, &link->timer,
				 time_after(deadline, jiffies) ?
				 deadline - jiffies : 0);
}

/* Never takes @mutex: teardown cancels it synchronously under that. */
static void afrdma_link_timer(struct work_struct *work)
{
	struct afrdma_link *link = container_of(to_delayed_work(work),
						struct afrdma_link, timer);

	spin_lock_bh(&link->lock);
	afrdma_link_kick_locked(link, AFRDMA_LINK_EV_TIMER);
	spin_unlock_bh(&link->lock);
}

static void *afrdma_link_msg_buf(struct afrdma_link *link, unsigned int i,
				 u64 *dma)
{
	*dma = link->dma + i * AFRDMA_LINK_MSG_SIZE;
	return link->buf + i * AFRDMA_LINK_MSG_SIZE;
}

static int afrdma_link_post_rx(struct afrdma_link *link, unsigned int i)
{
	struct ib_sge sge = {
		.length	= AFRDMA_LINK_MSG_SIZE,
		.lkey	= link->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe		= &link->rx[i].cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
	};

	afrdma_link_msg_buf(link, i, &sge.addr);
	ib_dma_sync_single_for_device(link->dev->ibdev, sge.addr,
				      AFRDMA_LINK_MSG_SIZE, DMA_FROM_DEVICE);
	return ib_post_recv(link->qp, &wr, NULL);
}

/*
 * Whether a message other than HELLO may use a credit: the last goes only
 * to a message that returns some, so two ends short of credits always
 * get them back.  link->lock held.
 */
static bool afrdma_link_may_send_locked(struct afrdma_link *link)
{
	return link->tx_credits > 1 || (link->tx_credits == 1 && link->rx_owed);
}

/*
 * Posts what is due: our HELLO once the connection is established, then
 * the streams' messages (stream.c), then USE when our user count changed
 * or when half our receives are owed to the peer.  link->lock held.
 */
void afrdma_link_flush_locked(struct afrdma_link *link)
{
	struct afrdma_link_msg hello = {}, sm;
	struct afrdma_link_tx *tx;
	struct ib_sge sge;
	struct ib_send_wr wr = {
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED,
		.sg_list	= &sge,
		.num_sge	= 1,
	};
	unsigned int slot;
	size_t len;
	void *buf;

	while (link->qp_ready && link->peer_up &&
	       link->state != AFRDMA_LINK_STATE_CLOSED &&
	       link->tx_head - link->tx_tail < AFRDMA_LINK_TX) {
		slot = link->tx_head % AFRDMA_LINK_TX;
		tx = &link->tx[slot];
		buf = afrdma_link_msg_buf(link, AFRDMA_LINK_RX + slot, &sge.addr);
		if (!link->hello_sent) {
			/* Every end posts its receives before it connects. */
			hello.hello.rx_credits = AFRDMA_LINK_RX;
			hello.hello.chunk_order = link->chunk_order;
			hello.hello.page_shift = PAGE_SHIFT;
			hello.hello.max_chunks = AFRDMA_LINK_CHUNKS;
			hello.hello.nonce = get_random_u64();
			len = afrdma_link_build_hello(buf, link->rx_owed,
						      link->seq, &hello);
			link->hello_sent = true;
		} else if (link->state == AFRDMA_LINK_STATE_UP &&
			   afrdma_link_may_send_locked(link) &&
			   afrdma_stream_tx_locked(link, &sm)) {
			len = afrdma_link_build_msg(buf, link->rx_owed, link->seq,
						    &sm);
		} else if (link->state == AFRDMA_LINK_STATE_UP &&
			   (link->want_use ||
			    link->rx_owed >= AFRDMA_LINK_RX / 2) &&
			   afrdma_link_may_send_locked(link)) {
			len = afrdma_link_build_use(buf, link->rx_owed,
						    link->seq, link->users);
			link->want_use = false;
		} else {
			break;
		}
		if (WARN_ON_ONCE(!link->tx_credits))
			break;
		link->tx_credits--;
		link->rx_owed = 0;
		sge.length = len;
		sge.lkey = link->pd->local_dma_lkey;
		wr.wr_cqe = &tx->cqe;
		ib_dma_sync_single_for_device(link->dev->ibdev, sge.addr, len,
					      DMA_TO_DEVICE);
		if (ib_post_send(link->qp, &wr, NULL)) {
			if (!link->cm_status)
				link->cm_status = -EIO;
			afrdma_link_kick_locked(link, AFRDMA_LINK_EV_CLOSE);
			break;
		}
		link->tx_head++;
		link->seq++;
		link->tx_msgs++;
		link->tx_bytes += len;
	}
}

/*
 * A message from the peer.  link->lock held; -EPROTO: the link goes.  1:
 * a stream message, queued for the link's work, whose receive is owed to
 * the peer only once the work handled it.
 */
static int afrdma_link_rx_msg_locked(struct afrdma_link *link,
				     const struct afrdma_link_msg *m)
{
	unsigned int credits = m->credits;
	int ret = 0;

	switch (m->type) {
	case AFRDMA_LINK_MSG_HELLO:
		if (link->hello_rcvd)
			return -EPROTO;
		link->hello_rcvd = true;
		/* our HELLO took one of them */
		credits += m->hello.rx_credits - 1;
		link->peer_chunk_order = m->hello.chunk_order;
		link->peer_max_chunks = m->hello.max_chunks;
		afrdma_link_kick_locked(link, AFRDMA_LINK_EV_HELLO);
		break;
	case AFRDMA_LINK_MSG_USE:
		if (!link->hello_rcvd)
			return -EPROTO;
		if (link->peer_users != m->use.users) {
			link->peer_users = m->use.users;
			afrdma_link_kick_locked(link, AFRDMA_LINK_EV_USERS);
		}
		break;
	default:
		ret = afrdma_stream_rx_locked(link, m);
		if (ret < 0)
			return ret;
		break;
	}
	/* More than we posted can never be owed to us. */
	if (link->tx_credits + credits > AFRDMA_LINK_MAX_CREDITS)
		return -EPROTO;
	link->tx_credits += credits;
	return ret;
}

static void afrdma_link_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_link_rx *rx = container_of(wc->wr_cqe,
						 struct afrdma_link_rx, cqe);
	struct afrdma_link *link = rx->link;
	struct afrdma_link_msg m;
	int err, queued = 0;
	void *buf;
	u64 dma;

	/* A flush outside teardown is a QP that broke: fail checks. */
	if (wc->status != IB_WC_SUCCESS) {
		afrdma_link_fail(link, -EIO);
		return;
	}
	buf = afrdma_link_msg_buf(link, rx->i, &dma);
	ib_dma_sync_single_for_cpu(link->dev->ibdev, dma, AFRDMA_LINK_MSG_SIZE,
				   DMA_FROM_DEVICE);
	err = afrdma_link_parse(buf, wc->byte_len, &m);

	spin_lock_bh(&link->lock);
	if (!err) {
		queued = afrdma_link_rx_msg_locked(link, &m);
		err = min(queued, 0);
	}
	if (!err && link->state != AFRDMA_LINK_STATE_CLOSED)
		err = afrdma_link_post_rx(link, rx->i);
	if (err) {
		if (!link->cm_status)
			link->cm_status = err;
		afrdma_link_kick_locked(link, AFRDMA_LINK_EV_CLOSE);
	} else {
		link->rx_msgs++;
		link->rx_bytes += wc->byte_len;
		if (!queued)
			link->rx_owed++;
		afrdma_link_flush_locked(link);
	}
	spin_unlock_bh(&link->lock);
}

static void afrdma_link_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_link_tx *tx = container_of(wc->wr_cqe,
						 struct afrdma_link_tx, cqe);
	struct afrdma_link *link = tx->link;

	if (wc->status != IB_WC_SUCCESS) {
		afrdma_link_fail(link, -EIO);
		return;
	}
	spin_lock_bh(&link->lock);
	link->tx_tail++;
	afrdma_link_flush_locked(link);
	spin_unlock_bh(&link->lock);
}

static void afrdma_link_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct afrdma_link *link = container_of(wc->wr_cqe, struct afrdma_link,
						reg_cqe);

	link->reg_status = wc->status;
	complete(&link->reg_done);
}

/* COMM_EST: the peer's first SEND came before rdma_cm's RTU (as conn.c). */
static void afrdma_link_qp_event(struct ib_event *ev, void *ctx)
{
	struct afrdma_link *link = ctx;

	if (ev->event == IB_EVENT_COMM_EST)
		rdma_notify(link->cm_id, ev->event);
}

static struct afrdma_link *afrdma_link_alloc(struct afrdma_link_net *ln,
					     bool passive)
{
	struct afrdma_link *link;
	unsigned int i;

	link = kzalloc(sizeof(*link), GFP_KERNEL);
	if (!link)
		return NULL;
	link->kind = AFRDMA_LINK_KIND_LINK;
	link->passive = passive;
	link->ln = ln;
	kref_init(&link->ref);
	INIT_LIST_HEAD(&link->node);
	INIT_LIST_HEAD(&link->dev_node);
	mutex_init(&link->mutex);
	spin_lock_init(&link->lock);
	init_completion(&link->reg_done);
	link->reg_cqe.done = afrdma_link_reg_done;
	for (i = 0; i < AFRDMA_LINK_RX; i++) {
		link->rx[i].cqe.done = afrdma_link_rx_done;
		link->rx[i].link = link;
		link->rx[i].i = i;
	}
	for (i = 0; i < AFRDMA_LINK_TX; i++) {
		link->tx[i].cqe.done = afrdma_link_tx_done;
		link->tx[i].link = link;
	}
	/* The receive every end keeps for the peer's HELLO */
	link->tx_credits = 1;
	WRITE_ONCE(link->state, passive ? AFRDMA_LINK_STATE_CONNECTING :
					  AFRDMA_LINK_STATE_RESOLVING);
	INIT_WORK(&link->work, afrdma_link_work);
	INIT_DELAYED_WORK(&link->timer, afrdma_link_timer);
	afrdma_streams_init(link);
	return link;
}

/* Frees a chunk whose MR no QP can use any more. */
static void afrdma_link_chunk_free(struct afrdma_link *link,
				   struct afrdma_link_chunk *chunk)
{
	unsigned int i;

	if (chunk->mr)
		ib_dereg_mr(chunk->mr);
	if (chunk->nents)
		ib_dma_unmap_sg(link->dev->ibdev, chunk->sgt.sgl,
				chunk->sgt.orig_nents, DMA_BIDIRECTIONAL);
	if (chunk->sgt.sgl)
		sg_free_table(&chunk->sgt);
	for (i = 0; i < chunk->npages; i++)
		__free_page(chunk->pages[i]);
	kfree(chunk);
}

/* Posts @wr (REG_MR or LOCAL_INV) and waits for it.  @mutex held. */
static int afrdma_link_reg_wait(struct afrdma_link *link, struct ib_send_wr *wr)
{
	int err;

	reinit_completion(&link->reg_done);
	wr->wr_cqe = &link->reg_cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	err = ib_post_send(link->qp, wr, NULL);
	if (err)
		return -EIO;
	/* Our own QP; a broken one flushes it, long before this. */
	if (!wait_for_completion_timeout(&link->reg_done,
					 msecs_to_jiffies(AFRDMA_LINK_REG_MS)))
		return -ETIMEDOUT;
	return link->reg_status == IB_WC_SUCCESS ? 0 : -EIO;
}

/*
 * One more chunk: 2^chunk_order order-0 pages, mapped, registered with a
 * fast-registration MR for the peer's writes.  Its index, or -ENOMEM
 * (nothing changed), or -EIO/-ETIMEDOUT: the QP failed, and the chunk
 * stays in @chunks for teardown to free after the drain.  @mutex held,
 * the link up.
 */
static int afrdma_link_chunk_add(struct afrdma_link *link)
{
	unsigned int npages = 1U << link->areas.chunk_order, i;
	struct ib_device *ibdev = link->dev->ibdev;
	struct afrdma_link_chunk *chunk;
	struct ib_reg_wr reg = {
		.wr.opcode	= IB_WR_REG_MR,
		.access		= IB_ACCESS_LOCAL_WRITE |
				  IB_ACCESS_REMOTE_WRITE,
	};
	int c, n;

	c = afrdma_area_add_chunk(&link->areas);
	if (c < 0)
		return c;
	chunk = kzalloc(struct_size(chunk, pages, npages), GFP_KERNEL);
	if (!chunk)
		goto nomem;
	for (i = 0; i < npages; i++) {
		/* order 0 only: no high-order allocation, whatever the size */
		chunk->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!chunk->pages[i])
			goto free;
		chunk->npages++;
	}
	if (sg_alloc_table_from_pages(&chunk->sgt, chunk->pages, npages, 0,
				      (size_t)npages << PAGE_SHIFT, GFP_KERNEL))
		goto free;
	chunk->nents = ib_dma_map_sg(ibdev, chunk->sgt.sgl,
				     chunk->sgt.orig_nents, DMA_BIDIRECTIONAL);
	if (!chunk->nents)
		goto free;
	chunk->mr = ib_alloc_mr(link->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(chunk->mr)) {
		chunk->mr = NULL;
		goto free;
	}
	n = ib_map_mr_sg(chunk->mr, chunk->sgt.sgl, chunk->nents, NULL,
			 PAGE_SIZE);
	if (n != chunk->nents)
		goto free;
	/* A fresh key: a chunk's old rkey, if its MR is reused, stays dead. */
	ib_update_fast_reg_key(chunk->mr, ib_inc_rkey(chunk->mr->rkey));
	reg.mr = chunk->mr;
	reg.key = chunk->mr->rkey;
	link->chunks[c] = chunk;
	n = afrdma_link_reg_wait(link, &reg.wr);
	if (n)
		return n;
	/* The peer hears of it before any area in it is offered. */
	spin_lock_bh(&link->lock);
	afrdma_stream_chunk_added_locked(link, c, chunk->mr->rkey,
					 chunk->mr->iova);
	spin_unlock_bh(&link->lock);
	return c;

free:
	afrdma_link_chunk_free(link, chunk);
nomem:
	afrdma_area_remove_chunk(&link->areas, c);
	return -ENOMEM;
}

/*
 * Chunk @c holds no area: its rkey is invalidated, then its pages go.
 * @mutex held, the link up; an error is the QP's.
 */
static int afrdma_link_chunk_remove(struct afrdma_link *link, unsigned int c)
{
	struct afrdma_link_chunk *chunk = link->chunks[c];
	struct ib_send_wr inv = {
		.opcode			= IB_WR_LOCAL_INV,
		.ex.invalidate_rkey	= chunk->mr->rkey,
	};
	int err;

	spin_lock_bh(&link->lock);
	afrdma_stream_chunk_removed_locked(link, c);
	spin_unlock_bh(&link->lock);
	err = afrdma_link_reg_wait(link, &inv);
	if (err)
		return err;	/* teardown frees it after the drain */
	link->chunks[c] = NULL;
	afrdma_area_remove_chunk(&link->areas, c);
	afrdma_link_chunk_free(link, chunk);
	return 0;
}

/* A ring area of 2^@order pages, a chunk added if none has room.  @mutex held. */
int afrdma_link_area_get(struct afrdma_link *link, unsigned int order,
			 struct afrdma_area *area)
{
	int err, c;

	err = afrdma_area_alloc(&link->areas, order, area);
	if (err != -ENOSPC)
		return err;
	c = afrdma_link_chunk_add(link);
	if (c < 0)
		return c;
	return afrdma_area_alloc(&link->areas, order, area);
}

/* Returns an area; its chunk goes if it was the last.  @mutex held. */
int afrdma_link_area_put(struct afrdma_link *link,
			 const struct afrdma_area *area)
{
	int ret = afrdma_area_free(&link->areas, area);

	if (ret == AFRDMA_AREA_CHUNK_EMPTY)
		return afrdma_link_chunk_remove(link, area->chunk);
	return ret;
}

/*
 * AFRDMA_CMD_LINK_TEST's area: held, of the size asked, while it asks.
 * Memory short is no error of the link's.  @mutex held, the link up.
 */
static int afrdma_link_test_area(struct afrdma_link *link)
{
	unsigned int want;
	int err;

	spin_lock_bh(&link->lock);
	want = link->test_pages;
	spin_unlock_bh(&link->lock);
	if (link->test_area_held &&
	    (!want || order_base_2(want) != link->test_area.order)) {
		link->test_area_held = false;
		err = afrdma_link_area_put(link, &link->test_area);
		if (err)
			return err;
	}
	if (!want || link->test_area_held)
		return 0;
	err = afrdma_link_area_get(link, order_base_2(want), &link->test_area);
	if (err == -ENOMEM || err == -ENOSPC || err == -EINVAL) {
		pr_debug("link %u: no test area of %u pages: %d\n", link->id,
			 want, err);
		return 0;
	}
	link->test_area_held = !err;
	return err;
}

/* The chunks' bookkeeping, once the handshake is done: nothing before. */
static int afrdma_link_areas_init(struct afrdma_link *link)
{
	link->max_chunks = AFRDMA_LINK_CHUNKS;
	link->chunks = kcalloc(link->max_chunks, sizeof(*link->chunks),
			       GFP_KERNEL);
	if (!link->chunks)
		return -ENOMEM;
	return afrdma_area_init(&link->areas, link->chunk_order,
				link->max_chunks);
}

static void afrdma_link_areas_free(struct afrdma_link *link)
{
	unsigned int c;

	if (!link->chunks)
		return;
	for (c = 0; c < link->max_chunks; c++)
		if (link->chunks[c])
			afrdma_link_chunk_free(link, link->chunks[c]);
	kfree(link->chunks);
	link->chunks = NULL;
	link->test_area_held = false;
	afrdma_area_destroy(&link->areas);
}

/*
 * The link goes: disconnected (the peer tears its end down too), drained,
 * every verbs object and chunk released, the cm id destroyed, and the
 * namespace's reference dropped.  @mutex held; the caller holds a
 * reference.  The rdma_cm handler takes only @lock, so destroying the id
 * here cannot wait on it.
 */
static void afrdma_link_teardown(struct afrdma_link *link)
{
	struct afrdma_link_net *ln = link->ln;
	struct afrdma_device *dev = link->dev;
	struct rdma_cm_id *id;
	bool connected;
	int why;

	spin_lock_bh(&link->lock);
	if (link->state == AFRDMA_LINK_STATE_CLOSED) {
		spin_unlock_bh(&link->lock);
		return;
	}
	connected = link->peer_up;
	WRITE_ONCE(link->state, AFRDMA_LINK_STATE_CLOSED);
	link->qp_ready = false;
	link->events = 0;
	why = link->cm_status;
	spin_unlock_bh(&link->lock);
	cancel_delayed_work_sync(&link->timer);
	pr_debug("link %u to %pISp down (%d)\n", link->id, &link->peer, why);

	if (link->qp) {
		if (connected)
			rdma_disconnect(link->cm_id);
		ib_drain_qp(link->qp);
	}
	/* The MRs before the PD, after the drain: no write lands any more. */
	afrdma_streams_destroy(link);
	afrdma_link_areas_free(link);
	if (link->qp) {
		rdma_destroy_qp(link->cm_id);
		link->qp = NULL;
	}
	if (link->cq)
		ib_cq_pool_put(link->cq, link->cq_size);
	link->cq = NULL;
	if (link->buf) {
		ib_dma_unmap_single(dev->ibdev, link->dma,
				    (AFRDMA_LINK_RX + AFRDMA_LINK_TX) *
				    AFRDMA_LINK_MSG_SIZE, DMA_BIDIRECTIONAL);
		kfree(link->buf);
		link->buf = NULL;
	}
	if (link->pd)
		ib_dealloc_pd(link->pd);
	link->pd = NULL;
	id = link->cm_id;
	link->cm_id = NULL;
	if (id)
		rdma_destroy_id(id);
	if (dev) {
		spin_lock_bh(&dev->lock);
		list_del_init(&link->dev_node);
		spin_unlock_bh(&dev->lock);
		link->dev = NULL;
		afrdma_device_put(dev);
	}

	spin_lock_bh(&ln->lock);
	if (link->half_open)
		ln->half_open--;
	link->half_open = false;
	list_del_init(&link->node);
	spin_unlock_bh(&ln->lock);
	afrdma_link_put(link);
}

/*
 * The device is known (a request came, or the route resolved): the link
 * joins it, and gets its PD, CQ, QP and message buffers, receives posted.
 * Small: the chunks wait for the handshake.  @mutex held.
 */
static int afrdma_link_build(struct afrdma_link *link)
{
	struct rdma_cm_id *id = link->cm_id;
	struct ib_qp_init_attr attr = {};
	struct afrdma_device *dev;
	size_t size;
	unsigned int i;
	int err;

	dev = afrdma_device_get(id->device);
	if (!dev)
		return -ENODEV;
	spin_lock_bh(&dev->lock);
	if (dev->removing) {
		spin_unlock_bh(&dev->lock);
		afrdma_device_put(dev);
		return -ENODEV;
	}
	list_add_tail(&link->dev_node, &dev->links);
	spin_unlock_bh(&dev->lock);
	link->dev = dev;
	/* Chunks no larger than one fast registration maps */
	i = dev->ibdev->attrs.max_fast_reg_page_list_len;
	link->chunk_order = min_t(unsigned int, AFRDMA_LINK_CHUNK_ORDER,
				  i ? ilog2(i) : 0);
	spin_lock_bh(&link->lock);
	strscpy(link->dev_name, dev_name(&id->device->dev),
		sizeof(link->dev_name));
	spin_unlock_bh(&link->lock);

	/* A PD of its own: its rkeys are good on this link's QP alone. */
	link->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(link->pd)) {
		err = PTR_ERR(link->pd);
		link->pd = NULL;
		return err;
	}
	size = (AFRDMA_LINK_RX + AFRDMA_LINK_TX) * AFRDMA_LINK_MSG_SIZE;
	link->buf = kzalloc(size, GFP_KERNEL);
	if (!link->buf)
		return -ENOMEM;
	link->dma = ib_dma_map_single(id->device, link->buf, size,
				      DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(id->device, link->dma)) {
		kfree(link->buf);
		link->buf = NULL;
		return -ENOMEM;
	}
	/* One REG_MR or LOCAL_INV at a time, and a drain entry each way. */
	link->cq_size = AFRDMA_LINK_RX + AFRDMA_LINK_TX + 4;
	link->cq = ib_cq_pool_get(id->device, link->cq_size, -1,
				  IB_POLL_SOFTIRQ);
	if (IS_ERR(link->cq)) {
		err = PTR_ERR(link->cq);
		link->cq = NULL;
		return err;
	}
	attr.event_handler = afrdma_link_qp_event;
	attr.qp_context = link;
	attr.send_cq = link->cq;
	attr.recv_cq = link->cq;
	attr.cap.max_send_wr = AFRDMA_LINK_TX + 2;
	attr.cap.max_recv_wr = AFRDMA_LINK_RX + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	err = rdma_create_qp(id, link->pd, &attr);
	if (err)
		return err;
	link->qp = id->qp;
	for (i = 0; i < AFRDMA_LINK_RX; i++) {
		err = afrdma_link_post_rx(link, i);
		if (err)
			return err;
	}
	spin_lock_bh(&link->lock);
	link->qpn = link->qp->qp_num;
	link->qp_ready = true;
	spin_unlock_bh(&link->lock);
	return 0;
}

static void afrdma_link_conn_param(struct afrdma_link *link,
				   struct rdma_conn_param *param,
				   struct afrdma_link_cm_priv *priv)
{
	afrdma_link_build_cm_priv(priv);
	memset(param, 0, sizeof(*param));
	param->private_data = priv;
	param->private_data_len = sizeof(*priv);
	param->flow_control = 1;
	/* As a connection's QP (cm.c): a dead peer is noticed, RNR never ends it. */
	param->retry_count = AFRDMA_RC_RETRIES;
	param->rnr_retry_count = 7;
	rdma_set_ack_timeout(link->cm_id, AFRDMA_ACK_TIMEOUT);
}

/* Passive: the request's link gets its QP and is accepted.  @mutex held. */
static int afrdma_link_accept(struct afrdma_link *link)
{
	struct afrdma_link_cm_priv priv;
	struct rdma_conn_param param;
	int err;

	err = afrdma_link_build(link);
	if (err)
		return err;
	afrdma_link_conn_param(link, &param, &priv);
	/* Outside the handler rdma_accept() wants the id's handler lock. */
	rdma_lock_handler(link->cm_id);
	err = rdma_accept(link->cm_id, &param);
	rdma_unlock_handler(link->cm_id);
	return err;
}

/* Active: the route is known; the QP is made and the peer asked. */
static int afrdma_link_connect(struct afrdma_link *link)
{
	struct afrdma_link_cm_priv priv;
	struct rdma_conn_param param;
	int err;

	err = afrdma_link_build(link);
	if (err)
		return err;
	spin_lock_bh(&link->lock);
	WRITE_ONCE(link->state, AFRDMA_LINK_STATE_CONNECTING);
	spin_unlock_bh(&link->lock);
	afrdma_link_conn_param(link, &param, &priv);
	return rdma_connect(link->cm_id, &param);
}

/*
 * HELLOs, UP, USE and idleness, as the events left them.  A link is idle
 * when neither end has users; it expires links_idle_s after it became so.
 * @mutex held.
 */
static int afrdma_link_progress(struct afrdma_link *link)
{
	struct afrdma_link_net *ln = link->ln;
	unsigned int idle_s;
	bool up = false, idle;
	int err;

	spin_lock_bh(&link->lock);
	if (link->peer_up && link->state == AFRDMA_LINK_STATE_CONNECTING)
		WRITE_ONCE(link->state, AFRDMA_LINK_STATE_HELLO);
	/* our HELLO goes first: the peer's may have come already */
	afrdma_link_flush_locked(link);
	if (link->state == AFRDMA_LINK_STATE_HELLO && link->hello_sent &&
	    link->hello_rcvd)
		up = true;
	spin_unlock_bh(&link->lock);

	if (up) {
		err = afrdma_link_areas_init(link);
		if (err)
			return err;
		spin_lock_bh(&ln->lock);
		if (link->half_open)
			ln->half_open--;
		link->half_open = false;
		spin_unlock_bh(&ln->lock);
		spin_lock_bh(&link->lock);
		WRITE_ONCE(link->state, AFRDMA_LINK_STATE_UP);
		/* The peer believes we have none until told. */
		link->want_use = link->users;
		spin_unlock_bh(&link->lock);
		pr_debug("link %u to %pISp up on %s\n", link->id, &link->peer,
			 link->dev_name);
		err = afrdma_link_test_area(link);
		if (err)
			return err;
	}

	idle_s = READ_ONCE(container_of(ln, struct afrdma_net, lnk)->links_idle_s);
	spin_lock_bh(&link->lock);
	if (link->state == AFRDMA_LINK_STATE_UP) {
		afrdma_link_flush_locked(link);
		idle = !link->users && !link->peer_users;
		if (idle && !link->idle) {
			link->idle_start = jiffies;
			afrdma_link_arm_locked(link, jiffies + idle_s * HZ);
		} else if (!idle && link->idle) {
			cancel_delayed_work(&link->timer);
		}
		link->idle = idle;
	}
	spin_unlock_bh(&link->lock);
	return 0;
}

/* The timer: setup took too long, or the idle link expired. */
static int afrdma_link_timer_check(struct afrdma_link *link)
{
	int err = 0;

	spin_lock_bh(&link->lock);
	if (time_before(jiffies, link->deadline))
		err = 0;
	else if (link->state != AFRDMA_LINK_STATE_UP)
		err = -ETIMEDOUT;
	else if (link->idle)
		err = -ESHUTDOWN;	/* expired */
	if (err && !link->cm_status)
		link->cm_status = err;
	spin_unlock_bh(&link->lock);
	return err;
}

static void afrdma_link_work(struct work_struct *work)
{
	struct afrdma_link *link = container_of(work, struct afrdma_link, work);
	unsigned long ev;
	int err = 0;

	mutex_lock(&link->mutex);
	spin_lock_bh(&link->lock);
	ev = link->state == AFRDMA_LINK_STATE_CLOSED ? 0 : link->events;
	link->events = 0;
	spin_unlock_bh(&link->lock);

	if (ev & BIT(AFRDMA_LINK_EV_CLOSE))
		err = -ECONNRESET;
	if (!err && ev & BIT(AFRDMA_LINK_EV_REQUEST))
		err = afrdma_link_accept(link);
	if (!err && ev & BIT(AFRDMA_LINK_EV_ADDR))
		err = rdma_resolve_route(link->cm_id, AFRDMA_LINK_RESOLVE_MS);
	if (!err && ev & BIT(AFRDMA_LINK_EV_ROUTE))
		err = afrdma_link_connect(link);
	if (!err && ev & (BIT(AFRDMA_LINK_EV_ESTABLISHED) |
			  BIT(AFRDMA_LINK_EV_HELLO) |
			  BIT(AFRDMA_LINK_EV_USERS)))
		err = afrdma_link_progress(link);
	if (!err && ev & BIT(AFRDMA_LINK_EV_TEST) &&
	    READ_ONCE(link->state) == AFRDMA_LINK_STATE_UP)
		err = afrdma_link_test_area(link);
	if (!err && ev & BIT(AFRDMA_LINK_EV_TIMER))
		err = afrdma_link_timer_check(link);
	/* Any event may have brought the link up with stream messages queued. */
	if (!err && ev && afrdma_link_is_up(link))
		err = afrdma_stream_work(link);
	if (err) {
		spin_lock_bh(&link->lock);
		if (!link->cm_status)
			link->cm_status = err;
		spin_unlock_bh(&link->lock);
		afrdma_link_teardown(link);
	}
	mutex_unlock(&link->mutex);
	afrdma_link_put(link);
}

static bool afrdma_link_same_addr(const struct sockaddr_storage *a,
				  const struct sockaddr *b)
{
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;

	if (a->ss_family != b->sa_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr) &&
	       a6->sin6_scope_id == b6->sin6_scope_id;
}

/* Links to @peer's address not yet closed.  ln->lock held. */
static unsigned int afrdma_link_peer_count(struct afrdma_link_net *ln,
					   const struct sockaddr *peer)
{
	struct afrdma_link *l;
	unsigned int n = 0;

	list_for_each_entry(l, &ln->links, node)
		n += afrdma_link_same_addr(&l->peer, peer);
	return n;
}

/*
 * A peer's connect request on a listener.  Checked and bounded here, in
 * the handler, before anything but the small link structure exists: at
 * most AFRDMA_LINK_HALF_OPEN of them not yet up per namespace, and
 * AFRDMA_LINK_PEER_MAX links per peer address.  Non-zero: rdma_cm
 * destroys the new id, which refuses the peer.
 */
static int afrdma_link_request(struct afrdma_link_net *ln,
			       struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct sockaddr *peer = (struct sockaddr *)&id->route.addr.dst_addr;
	struct afrdma_link *link;
	bool ok;

	if (afrdma_link_parse_cm_priv(ev->param.conn.private_data,
				      ev->param.conn.private_data_len))
		return 1;
	link = afrdma_link_alloc(ln, true);
	if (!link)
		return 1;
	memcpy(&link->peer, &id->route.addr.dst_addr, sizeof(link->peer));
	memcpy(&link->local, &id->route.addr.src_addr, sizeof(link->local));
	link->peer_qpn = ev->param.conn.qp_num;
	link->cm_id = id;

	spin_lock_bh(&ln->lock);
	ok = ln->on && ln->half_open < AFRDMA_LINK_HALF_OPEN &&
	     afrdma_link_peer_count(ln, peer) < AFRDMA_LINK_PEER_MAX;
	if (ok) {
		link->id = ln->next_id++;
		link->half_open = true;
		ln->half_open++;
		list_add_tail(&link->node, &ln->links);
	}
	spin_unlock_bh(&ln->lock);
	if (!ok) {
		pr_debug("link request from %pISp refused\n", peer);
		afrdma_link_put(link);
		return 1;
	}

	id->context = link;
	spin_lock_bh(&link->lock);
	afrdma_link_arm_locked(link, jiffies +
			       msecs_to_jiffies(AFRDMA_LINK_SETUP_MS));
	afrdma_link_kick_locked(link, AFRDMA_LINK_EV_REQUEST);
	spin_unlock_bh(&link->lock);
	return 0;
}

/*
 * rdma_cm's handler, for the listeners and the links alike: it records
 * the event for the link's work and never blocks.  It never asks rdma_cm
 * to destroy a link's id (the link's teardown does), only a refused
 * request's.
 */
static int afrdma_link_cm_handler(struct rdma_cm_id *id,
				  struct rdma_cm_event *ev)
{
	const u8 *kind = id->context;
	struct afrdma_link *link;
	int bit;

	if (*kind == AFRDMA_LINK_KIND_LISTENER)
		return ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ?
		       afrdma_link_request(id->context, id, ev) : 0;
	link = id->context;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		bit = AFRDMA_LINK_EV_ADDR;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		bit = AFRDMA_LINK_EV_ROUTE;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		bit = AFRDMA_LINK_EV_ESTABLISHED;
		/* The accept's private data says the peer is a link too. */
		if (!link->passive &&
		    afrdma_link_parse_cm_priv(ev->param.conn.private_data,
					      ev->param.conn.private_data_len))
			bit = AFRDMA_LINK_EV_CLOSE;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		bit = AFRDMA_LINK_EV_CLOSE;
		break;
	default:
		return 0;
	}
	spin_lock_bh(&link->lock);
	if (bit == AFRDMA_LINK_EV_ESTABLISHED) {
		link->peer_up = true;
		if (!link->passive)
			link->peer_qpn = ev->param.conn.qp_num;
	} else if (bit == AFRDMA_LINK_EV_CLOSE && !link->cm_status) {
		link->cm_status = ev->status ?: -ECONNRESET;
	}
	afrdma_link_kick_locked(link, bit);
	spin_unlock_bh(&link->lock);
	return 0;
}

/* Tears @link down unless it is already; the caller holds a reference. */
static void afrdma_link_close(struct afrdma_link *link)
{
	mutex_lock(&link->mutex);
	afrdma_link_teardown(link);
	mutex_unlock(&link->mutex);
}

/*
 * An active link to @peer, set up as the first connection to that peer
 * would.  Returned held.  Its work runs only once rdma_cm answers.
 */
static struct afrdma_link *afrdma_link_open(struct afrdma_link_net *ln,
					    const struct sockaddr_storage *peer)
{
	struct afrdma_link *link;
	struct rdma_cm_id *id;
	bool ok;
	int err;

	link = afrdma_link_alloc(ln, false);
	if (!link)
		return ERR_PTR(-ENOMEM);
	memcpy(&link->peer, peer, sizeof(link->peer));
	/* sin_port and sin6_port are at the same place */
	((struct sockaddr_in *)&link->peer)->sin_port = htons(afrdma_link_port);
	id = rdma_create_id(ln->net, afrdma_link_cm_handler, link, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		afrdma_link_put(link);
		return ERR_CAST(id);
	}
	link->cm_id = id;

	mutex_lock(&link->mutex);
	spin_lock_bh(&ln->lock);
	ok = ln->on && afrdma_link_peer_count(ln, (struct sockaddr *)peer) <
		       AFRDMA_LINK_PEER_MAX;
	if (ok) {
		link->id = ln->next_id++;
		list_add_tail(&link->node, &ln->links);
	}
	spin_unlock_bh(&ln->lock);
	if (!ok) {
		mutex_unlock(&link->mutex);
		rdma_destroy_id(id);
		afrdma_link_put(link);
		return ERR_PTR(-EBUSY);
	}
	kref_get(&link->ref);	/* the caller's */
	spin_lock_bh(&link->lock);
	afrdma_link_arm_locked(link, jiffies +
			       msecs_to_jiffies(AFRDMA_LINK_SETUP_MS));
	spin_unlock_bh(&link->lock);
	err = rdma_resolve_addr(id, NULL, (struct sockaddr *)&link->peer,
				AFRDMA_LINK_RESOLVE_MS);
	if (err) {
		spin_lock_bh(&link->lock);
		link->cm_status = err;
		spin_unlock_bh(&link->lock);
		afrdma_link_teardown(link);
	}
	mutex_unlock(&link->mutex);
	return link;
}

/*
 * AFRDMA_CMD_LINK_TEST: the active link to @peer, set up unless there is
 * one, with @users test users and a test area of @pages pages (each < 0:
 * unchanged), and what @st asks of the namespace's test listeners and of
 * the link's streams (stream.c).
 */
int afrdma_link_test(struct net *net, const struct sockaddr_storage *peer,
		     int users, int pages, const struct afrdma_stream_test *st)
{
	struct afrdma_link_net *ln = &afrdma_net(net)->lnk;
	struct afrdma_link *link = NULL, *l;
	int err;

	spin_lock_bh(&ln->lock);
	if (!ln->on) {
		spin_unlock_bh(&ln->lock);
		return -EOPNOTSUPP;
	}
	list_for_each_entry(l, &ln->links, node) {
		if (!l->passive &&
		    afrdma_link_same_addr(&l->peer, (struct sockaddr *)peer)) {
			link = l;
			kref_get(&link->ref);
			break;
		}
	}
	spin_unlock_bh(&ln->lock);
	if (st->listen_port >= 0) {
		err = afrdma_stream_test_listen(ln, st);
		if (err)
			return err;
	}
	if (!link) {
		link = afrdma_link_open(ln, peer);
		if (IS_ERR(link))
			return PTR_ERR(link);
	}

	spin_lock_bh(&link->lock);
	if (users >= 0 && users != link->test_users) {
		link->users += users - link->test_users;
		link->test_users = users;
		link->want_use = true;
		afrdma_link_kick_locked(link, AFRDMA_LINK_EV_USERS);
	}
	if (pages >= 0 && pages != link->test_pages) {
		link->test_pages = pages;
		afrdma_link_kick_locked(link, AFRDMA_LINK_EV_TEST);
	}
	spin_unlock_bh(&link->lock);
	err = afrdma_stream_test(link, st);
	afrdma_link_put(link);
	return err;
}

/* The first link of @ln whose id is @id or more, held; NULL past the end. */
struct afrdma_link *afrdma_link_next(struct afrdma_link_net *ln, u32 id)
{
	struct afrdma_link *link;

	spin_lock_bh(&ln->lock);
	list_for_each_entry(link, &ln->links, node) {
		if (link->id >= id) {
			kref_get(&link->ref);
			spin_unlock_bh(&ln->lock);
			return link;
		}
	}
	spin_unlock_bh(&ln->lock);
	return NULL;
}

void afrdma_link_info(struct afrdma_link *link, struct afrdma_link_info *info)
{
	unsigned int shift;

	spin_lock_bh(&link->lock);
	info->state = link->state;
	info->qpn = link->qpn;
	info->peer_qpn = link->peer_qpn;
	info->users = link->users;
	info->peer_users = link->peer_users;
	info->tx_msgs = link->tx_msgs;
	info->rx_msgs = link->rx_msgs;
	info->tx_bytes = link->tx_bytes;
	info->rx_bytes = link->rx_bytes;
	info->idle_ms = link->state == AFRDMA_LINK_STATE_UP && link->idle ?
			jiffies_to_msecs(jiffies - link->idle_start) : 0;
	memcpy(info->dev_name, link->dev_name, sizeof(info->dev_name));
	afrdma_stream_info_locked(link, info);
	spin_unlock_bh(&link->lock);
	/* link_area.h: these two may be read without the link's mutex */
	info->chunks = READ_ONCE(link->areas.nr_chunks);
	info->area_pages = READ_ONCE(link->areas.pages_used);
	shift = READ_ONCE(link->areas.chunk_order) + PAGE_SHIFT;
	info->mem_bytes = (u64)info->chunks << shift;
}

/* Every link of @ln goes.  ln->on is false: no new ones come. */
static void afrdma_link_close_all(struct afrdma_link_net *ln)
{
	struct afrdma_link *link;

	for (;;) {
		spin_lock_bh(&ln->lock);
		link = list_first_entry_or_null(&ln->links, struct afrdma_link,
						node);
		if (link)
			kref_get(&link->ref);
		spin_unlock_bh(&ln->lock);
		if (!link)
			break;
		afrdma_link_close(link);
		afrdma_link_put(link);
	}
}

static void afrdma_link_stop(struct afrdma_link_net *ln)
{
	unsigned int i;

	spin_lock_bh(&ln->lock);
	ln->on = false;
	spin_unlock_bh(&ln->lock);
	/* waits for the handler: no request is being taken after this */
	for (i = 0; i < ARRAY_SIZE(ln->listen); i++) {
		if (ln->listen[i])
			rdma_destroy_id(ln->listen[i]);
		ln->listen[i] = NULL;
	}
	afrdma_link_close_all(ln);
	afrdma_stream_listeners_flush(ln);
}

/* The listeners on link_port, IPv4 and (where it can) IPv6.  ln->mutex held. */
static int afrdma_link_listen(struct afrdma_link_net *ln)
{
	static const sa_family_t families[] = { AF_INET, AF_INET6 };
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	unsigned int i;
	int err;

	if (!afrdma_link_port || afrdma_link_port > 65535)
		return -EINVAL;
	spin_lock_bh(&ln->lock);
	ln->on = true;
	spin_unlock_bh(&ln->lock);
	for (i = 0; i < ARRAY_SIZE(families); i++) {
		if (families[i] == AF_INET6 && !IS_ENABLED(CONFIG_IPV6))
			continue;
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = families[i];
		((struct sockaddr_in *)&ss)->sin_port = htons(afrdma_link_port);
		id = rdma_create_id(ln->net, afrdma_link_cm_handler, ln,
				    RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(id)) {
			err = PTR_ERR(id);
			goto fail;
		}
		if (families[i] == AF_INET6)
			rdma_set_afonly(id, 1);
		err = rdma_bind_addr(id, (struct sockaddr *)&ss) ?:
		      rdma_listen(id, 4 * AFRDMA_LINK_HALF_OPEN);
		if (err) {
			rdma_destroy_id(id);
			/* a kernel without IPv6 still has IPv4 links */
			if (families[i] == AF_INET6)
				continue;
			goto fail;
		}
		ln->listen[i] = id;
	}
	return 0;

fail:
	pr_info("links: no listener on port %u: %d\n", afrdma_link_port, err);
	afrdma_link_stop(ln);
	return err;
}

/* net.afrdma.links was written: listeners up, or everything down. */
int afrdma_link_switch(struct afrdma_link_net *ln, bool on)
{
	int err = 0;

	mutex_lock(&ln->mutex);
	if (on && !ln->on)
		err = afrdma_link_listen(ln);
	else if (!on && ln->on)
		afrdma_link_stop(ln);
	mutex_unlock(&ln->mutex);
	return err;
}

/* The device goes: its links first, as device.c does its connections. */
void afrdma_link_device_removed(struct afrdma_device *dev)
{
	struct afrdma_link *link;

	spin_lock_bh(&dev->lock);
	while (!list_empty(&dev->links)) {
		link = list_first_entry(&dev->links, struct afrdma_link,
					dev_node);
		list_del_init(&link->dev_node);
		kref_get(&link->ref);
		spin_unlock_bh(&dev->lock);

		spin_lock_bh(&link->lock);
		if (!link->cm_status)
			link->cm_status = -ENODEV;
		spin_unlock_bh(&link->lock);
		afrdma_link_close(link);
		afrdma_link_put(link);

		spin_lock_bh(&dev->lock);
	}
	spin_unlock_bh(&dev->lock);
}

void afrdma_link_net_init(struct afrdma_link_net *ln, struct net *net)
{
	ln->kind = AFRDMA_LINK_KIND_LISTENER;
	ln->net = net;
	mutex_init(&ln->mutex);
	spin_lock_init(&ln->lock);
	INIT_LIST_HEAD(&ln->links);
	INIT_LIST_HEAD(&ln->stream_listeners);
}

void afrdma_link_net_exit(struct afrdma_link_net *ln)
{
	afrdma_link_switch(ln, false);
	mutex_destroy(&ln->mutex);
}
