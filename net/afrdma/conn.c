// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma connection resources: the RC QP, its CQ from the device's CQ pool,
 * and the send and receive buffers, mapped once per connection.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <net/tcp_states.h>

#include "afrdma.h"

static void afrdma_qp_event(struct ib_event *ev, void *ctx)
{
	struct afrdma_conn *conn = ctx;

	pr_debug("QP event %s on %p\n", ib_event_msg(ev->event), conn);
}

static void afrdma_free_rx(struct afrdma_conn *conn)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	unsigned int i;

	if (!conn->rx)
		return;
	for (i = 0; i < conn->rx_slots; i++) {
		struct afrdma_rx_slot *slot = &conn->rx[i];

		if (!slot->buf)
			break;
		ib_dma_unmap_single(ibdev, slot->dma, conn->rx_slot_size,
				    DMA_FROM_DEVICE);
		kfree(slot->buf);
	}
	kfree(conn->rx);
	conn->rx = NULL;
}

static void afrdma_free_tx(struct afrdma_conn *conn)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	unsigned int i;

	if (conn->ctrl_buf) {
		ib_dma_unmap_single(ibdev, conn->ctrl_dma,
				    AFRDMA_CTRL_SLOTS * AFRDMA_CTRL_SIZE,
				    DMA_TO_DEVICE);
		kfree(conn->ctrl_buf);
		conn->ctrl_buf = NULL;
	}
	if (!conn->tx)
		return;
	for (i = 0; i < conn->tx_slots; i++) {
		struct afrdma_tx_slot *slot = &conn->tx[i];

		if (!slot->buf)
			break;
		ib_dma_unmap_single(ibdev, slot->dma, conn->tx_slot_size,
				    DMA_TO_DEVICE);
		kfree(slot->buf);
	}
	kfree(conn->tx);
	conn->tx = NULL;
}

static void *afrdma_map_buf(struct ib_device *ibdev, size_t size,
			    enum dma_data_direction dir, u64 *dma)
{
	void *buf = kzalloc(size, GFP_KERNEL);

	if (!buf)
		return NULL;
	*dma = ib_dma_map_single(ibdev, buf, size, dir);
	if (ib_dma_mapping_error(ibdev, *dma)) {
		kfree(buf);
		return NULL;
	}
	return buf;
}

static int afrdma_alloc_bufs(struct afrdma_conn *conn)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	unsigned int i;

	conn->rx = kcalloc(conn->rx_slots, sizeof(*conn->rx), GFP_KERNEL);
	conn->tx = kcalloc(conn->tx_slots, sizeof(*conn->tx), GFP_KERNEL);
	if (!conn->rx || !conn->tx)
		return -ENOMEM;

	for (i = 0; i < conn->rx_slots; i++) {
		struct afrdma_rx_slot *slot = &conn->rx[i];

		slot->buf = afrdma_map_buf(ibdev, conn->rx_slot_size,
					   DMA_FROM_DEVICE, &slot->dma);
		if (!slot->buf)
			return -ENOMEM;
		slot->conn = conn;
		slot->cqe.done = afrdma_rx_done;
		INIT_LIST_HEAD(&slot->node);
	}
	for (i = 0; i < conn->tx_slots; i++) {
		struct afrdma_tx_slot *slot = &conn->tx[i];

		slot->buf = afrdma_map_buf(ibdev, conn->tx_slot_size,
					   DMA_TO_DEVICE, &slot->dma);
		if (!slot->buf)
			return -ENOMEM;
		slot->conn = conn;
		slot->cqe.done = afrdma_tx_done;
	}

	conn->ctrl_buf = afrdma_map_buf(ibdev,
					AFRDMA_CTRL_SLOTS * AFRDMA_CTRL_SIZE,
					DMA_TO_DEVICE, &conn->ctrl_dma);
	if (!conn->ctrl_buf)
		return -ENOMEM;
	for (i = 0; i < AFRDMA_CTRL_SLOTS; i++) {
		struct afrdma_tx_slot *slot = &conn->ctrl[i];

		slot->buf = conn->ctrl_buf + i * AFRDMA_CTRL_SIZE;
		slot->dma = conn->ctrl_dma + i * AFRDMA_CTRL_SIZE;
		slot->conn = conn;
		slot->cqe.done = afrdma_ctrl_done;
	}
	return 0;
}

static int afrdma_create_qp(struct afrdma_conn *conn)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	struct ib_qp_init_attr attr = {};
	int err;

	/* One extra entry each for ib_drain_qp(), one for a keepalive probe. */
	conn->cq_size = conn->tx_slots + AFRDMA_CTRL_SLOTS + conn->rx_slots + 3;
	conn->cq = ib_cq_pool_get(ibdev, conn->cq_size, -1, IB_POLL_SOFTIRQ);
	if (IS_ERR(conn->cq)) {
		err = PTR_ERR(conn->cq);
		conn->cq = NULL;
		return err;
	}

	attr.event_handler = afrdma_qp_event;
	attr.qp_context = conn;
	attr.send_cq = conn->cq;
	attr.recv_cq = conn->cq;
	attr.cap.max_send_wr = conn->tx_slots + AFRDMA_CTRL_SLOTS + 2;
	attr.cap.max_recv_wr = conn->rx_slots + 1;
	/* A header and user pages per zero-copy SEND, where the HCA can. */
	attr.cap.max_send_sge = clamp_t(u32, ibdev->attrs.max_send_sge, 1,
					AFRDMA_ZC_MAX_SGE);
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;

	err = rdma_create_qp(conn->cm_id, conn->dev->pd, &attr);
	if (err)
		return err;
	conn->qp = conn->cm_id->qp;
	conn->zc_pages = min_t(u32, attr.cap.max_send_sge,
			       AFRDMA_ZC_MAX_SGE) - 1;
	return 0;
}

/*
 * Buffers from net.afrdma.*, or from SO_RCVBUF/SO_SNDBUF where the program
 * set them (the core already capped those at net.core.[rw]mem_max).
 */
static void afrdma_conn_size(struct afrdma_conn *conn, const struct sock *sk)
{
	const struct afrdma_net *an = afrdma_net(sock_net(sk));
	unsigned int size = READ_ONCE(an->slot_size);

	conn->rx_slot_size = size;
	conn->tx_slot_size = size;
	conn->rx_slots = READ_ONCE(an->rx_slots);
	conn->tx_slots = READ_ONCE(an->tx_slots);
	/* The core doubles what the program asked for; undo that. */
	if (sk->sk_userlocks & SOCK_RCVBUF_LOCK)
		conn->rx_slots = clamp_t(unsigned int,
					 READ_ONCE(sk->sk_rcvbuf) / 2 / size,
					 AFRDMA_MIN_SLOTS, AFRDMA_MAX_SLOTS_LOCAL);
	if (sk->sk_userlocks & SOCK_SNDBUF_LOCK)
		conn->tx_slots = clamp_t(unsigned int,
					 READ_ONCE(sk->sk_sndbuf) / 2 / size,
					 AFRDMA_MIN_SLOTS, AFRDMA_MAX_SLOTS_LOCAL);
}

/*
 * Sets up everything a connection needs before rdma_connect() or
 * rdma_accept(), receive buffers posted.  Called with the socket locked.
 */
struct afrdma_conn *afrdma_conn_create(struct sock *sk, struct rdma_cm_id *id)
{
	struct afrdma_net *an = afrdma_net(sock_net(sk));
	struct afrdma_conn *conn;
	unsigned int i;
	int err;

	/* Past net.afrdma.max_connections, TCP takes the connection. */
	if (atomic_inc_return(&an->conns) > READ_ONCE(an->max_conns)) {
		atomic_dec(&an->conns);
		return ERR_PTR(-ENOBUFS);
	}
	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn) {
		atomic_dec(&an->conns);
		return ERR_PTR(-ENOMEM);
	}
	conn->sk = sk;
	conn->cm_id = id;
	afrdma_ka_init(conn);
	afrdma_conn_size(conn, sk);
	/* What our private data offers; set before any receive is posted. */
	conn->peer_credits = conn->rx_slots;
	spin_lock_init(&conn->lock);
	INIT_LIST_HEAD(&conn->rx_ready);
	INIT_LIST_HEAD(&conn->dev_node);
	afrdma_tx_init(conn);

	conn->dev = afrdma_device_get(id->device);
	if (!conn->dev) {
		atomic_dec(&an->conns);
		kfree(conn);
		return ERR_PTR(-ENODEV);
	}

	err = afrdma_alloc_bufs(conn);
	if (err)
		goto fail;
	err = afrdma_create_qp(conn);
	if (err)
		goto fail;
	for (i = 0; i < conn->rx_slots; i++) {
		err = afrdma_rx_post(conn, &conn->rx[i]);
		if (err)
			goto fail;
	}
	if (!afrdma_device_attach(conn->dev, conn)) {
		err = -ENODEV;
		goto fail;
	}
	return conn;

fail:
	afrdma_conn_free(conn);
	return ERR_PTR(err);
}

void afrdma_conn_params(const struct afrdma_conn *conn,
			struct afrdma_cm_params *own)
{
	own->rx_slots = conn->rx_slots;
	own->rx_slot_size = conn->rx_slot_size;
}

/* The peer's parameters are known: the connection may send. */
int afrdma_conn_start(struct afrdma_conn *conn,
		      const struct afrdma_cm_params *peer)
{
	spin_lock_bh(&conn->lock);
	conn->peer_rx_slots = peer->rx_slots;
	conn->tx_credits = peer->rx_slots;
	conn->tx_payload = min_t(unsigned int, conn->tx_slot_size,
				 peer->rx_slot_size) -
			   sizeof(struct afrdma_msg_hdr);
	spin_unlock_bh(&conn->lock);
	return 0;
}

/*
 * Releases the RDMA resources of a connection; the structure itself stays
 * until the socket goes, so that lockless wait conditions may read it.
 * Draining the QP first guarantees that no completion handler still runs.
 * Called with the socket locked (or unreachable); the cm id must be alive.
 */
void afrdma_conn_teardown(struct afrdma_conn *conn)
{
	if (conn->torn)
		return;
	afrdma_ka_stop(conn);
	afrdma_tx_stop(conn);
	if (conn->qp) {
		ib_drain_qp(conn->qp);
		rdma_destroy_qp(conn->cm_id);
		conn->qp = NULL;
	}
	if (conn->cq)
		ib_cq_pool_put(conn->cq, conn->cq_size);
	conn->cq = NULL;

	spin_lock_bh(&conn->lock);
	conn->dead = true;
	INIT_LIST_HEAD(&conn->rx_ready);
	conn->rx_bytes = 0;
	spin_unlock_bh(&conn->lock);

	afrdma_free_rx(conn);
	afrdma_free_tx(conn);
	afrdma_device_detach(conn);
	afrdma_device_put(conn->dev);
	atomic_dec(&afrdma_net(sock_net(conn->sk))->conns);
	conn->torn = true;
}

void afrdma_conn_free(struct afrdma_conn *conn)
{
	afrdma_conn_teardown(conn);
	kfree(conn);
}

/*
 * Resets @sk's connection from outside the socket calls (device removal):
 * blocked callers wake with @err.  Process context.
 */
void afrdma_conn_abort(struct sock *sk, int err)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_conn *conn;

	lock_sock(sk);
	conn = ars->conn;
	if (conn && !conn->torn) {
		if (ars->cm_id && sk->sk_state == TCP_ESTABLISHED)
			rdma_disconnect(ars->cm_id);
		afrdma_inc_stats(sk, AFRDMA_MIB_RESETS);
		afrdma_conn_teardown(conn);
		WRITE_ONCE(sk->sk_err, err);
		sk->sk_shutdown = SHUTDOWN_MASK;
		sk->sk_state = TCP_CLOSE;
		sk_error_report(sk);
	}
	release_sock(sk);
}

/* A completion saw the connection break.  Softirq context. */
void afrdma_conn_fatal(struct afrdma_conn *conn, int err)
{
	struct sock *sk = conn->sk;
	bool was_dead;

	spin_lock(&conn->lock);
	was_dead = conn->dead;
	conn->dead = true;
	spin_unlock(&conn->lock);
	if (!was_dead)
		afrdma_inc_stats(sk, AFRDMA_MIB_RESETS);
	WRITE_ONCE(sk->sk_err, err);
	sk_error_report(sk);
}
