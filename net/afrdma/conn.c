// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma connection resources: the RC QP, its CQ from the device's CQ pool,
 * and the send and receive buffers, mapped once per connection.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <net/tcp_states.h>

#include "afrdma.h"

/*
 * Test knob, 0 but in tests: the SEND counters of new connections start
 * here, so that a test reaches their wrap at 2^32 in a few SENDs.
 */
static unsigned int afrdma_debug_counter_start;
module_param_named(debug_counter_start, afrdma_debug_counter_start, uint,
		   0644);
MODULE_PARM_DESC(debug_counter_start,
		 "test knob: SEND counters of new connections start here (default 0)");

/*
 * What a connection allocates is charged to @memcg, the memory cgroup of
 * the socket's owner (for an accepted connection, the listener's), in
 * whatever task allocates it: the owner, rdma_cm's worker or ours.  The
 * connection holds a reference.  The verbs objects (PD, QP, CQ) are
 * allocated by the RDMA core and the driver without __GFP_ACCOUNT, so they
 * stay uncharged whatever we do.
 */
static void afrdma_memcg_hold(struct mem_cgroup *memcg)
{
#ifdef CONFIG_MEMCG
	if (memcg)
		css_get(&memcg->css);
#endif
}

/*
 * Any context.  COMM_EST: the peer's first SEND reached the QP before the
 * RTU reached the CM.  rdma_cm learns it only from us (as NVMe-oF and SRP
 * targets tell it); without, a lost RTU ends a connection whose client
 * already sent data.  ib_cm queues the event, never sleeping here.
 */
static void afrdma_qp_event(struct ib_event *ev, void *ctx)
{
	struct afrdma_conn *conn = ctx;

	pr_debug("QP event %s on %p\n", ib_event_msg(ev->event), conn);
	if (ev->event == IB_EVENT_COMM_EST)
		rdma_notify(conn->cm_id, ev->event);
}

/* A ring or control buffer, within afrdma's share of memory (mem.c). */
static void *afrdma_map_buf(struct afrdma_conn *conn, size_t size,
			    enum dma_data_direction dir, u64 *dma)
{
	struct afrdma_net *an = afrdma_net(sock_net(conn->sk));
	struct ib_device *ibdev = conn->dev->ibdev;
	void *buf;

	if (!afrdma_mem_charge(an, size))
		return NULL;
	buf = kzalloc(size, GFP_KERNEL_ACCOUNT);
	if (!buf)
		goto uncharge;
	*dma = ib_dma_map_single(ibdev, buf, size, dir);
	if (ib_dma_mapping_error(ibdev, *dma)) {
		kfree(buf);
		goto uncharge;
	}
	return buf;

uncharge:
	afrdma_mem_uncharge(an, size);
	return NULL;
}

static void afrdma_unmap_buf(struct afrdma_conn *conn, void *buf, u64 dma,
			     size_t size, enum dma_data_direction dir)
{
	ib_dma_unmap_single(conn->dev->ibdev, dma, size, dir);
	kfree(buf);
	afrdma_mem_uncharge(afrdma_net(sock_net(conn->sk)), size);
}

static struct afrdma_rx_slot *afrdma_rx_slot_new(struct afrdma_conn *conn)
{
	struct afrdma_rx_slot *slot = kzalloc(sizeof(*slot), GFP_KERNEL_ACCOUNT);

	if (!slot)
		return NULL;
	slot->buf = afrdma_map_buf(conn, conn->rx_slot_size,
				   DMA_FROM_DEVICE, &slot->dma);
	if (!slot->buf) {
		kfree(slot);
		return NULL;
	}
	slot->conn = conn;
	slot->cqe.done = afrdma_rx_done;
	INIT_LIST_HEAD(&slot->node);
	return slot;
}

static struct afrdma_tx_slot *afrdma_tx_slot_new(struct afrdma_conn *conn)
{
	struct afrdma_tx_slot *slot = kzalloc(sizeof(*slot), GFP_KERNEL_ACCOUNT);

	if (!slot)
		return NULL;
	slot->buf = afrdma_map_buf(conn, conn->tx_slot_size,
				   DMA_TO_DEVICE, &slot->dma);
	if (!slot->buf) {
		kfree(slot);
		return NULL;
	}
	slot->conn = conn;
	slot->cqe.done = afrdma_tx_done;
	return slot;
}

static void afrdma_free_rx(struct afrdma_conn *conn)
{
	struct afrdma_rx_slot *slot;
	unsigned int i;

	if (!conn->rx)
		return;
	for (i = 0; i < conn->rx_slots; i++) {
		slot = conn->rx[i];
		afrdma_unmap_buf(conn, slot->buf, slot->dma,
				 conn->rx_slot_size, DMA_FROM_DEVICE);
		kfree(slot);
	}
	kfree(conn->rx);
	conn->rx = NULL;
}

static void afrdma_free_tx(struct afrdma_conn *conn)
{
	struct afrdma_tx_slot *slot;
	unsigned int i;

	if (conn->ctrl_buf) {
		afrdma_unmap_buf(conn, conn->ctrl_buf,
				 conn->ctrl_dma,
				 AFRDMA_CTRL_SLOTS * AFRDMA_CTRL_SIZE,
				 DMA_TO_DEVICE);
		conn->ctrl_buf = NULL;
	}
	if (!conn->tx)
		return;
	for (i = 0; i < conn->tx_slots; i++) {
		slot = conn->tx[i];
		afrdma_unmap_buf(conn, slot->buf, slot->dma,
				 conn->tx_slot_size, DMA_TO_DEVICE);
		kfree(slot);
	}
	kfree(conn->tx);
	conn->tx = NULL;
}

/*
 * Allocates and posts up to @n more receive buffers; returns how many were
 * posted.  @rx_slots counts them as soon as they are in @rx, so teardown
 * frees them whatever happens next.
 */
static unsigned int afrdma_rx_add(struct afrdma_conn *conn, unsigned int n)
{
	unsigned int first = conn->rx_slots, i;

	for (i = 0; i < n; i++) {
		conn->rx[first + i] = afrdma_rx_slot_new(conn);
		if (!conn->rx[first + i])
			break;
	}
	n = i;
	spin_lock_bh(&conn->lock);
	WRITE_ONCE(conn->rx_slots, first + n);
	spin_unlock_bh(&conn->lock);
	for (i = 0; i < n; i++)
		if (afrdma_rx_post(conn, conn->rx[first + i]))
			break;
	return i;
}

/* The receive array for the largest ring, and the first @tx send buffers. */
static int afrdma_alloc_bufs(struct afrdma_conn *conn, unsigned int tx)
{
	unsigned int i;

	conn->rx = kcalloc(conn->rx_max, sizeof(*conn->rx), GFP_KERNEL_ACCOUNT);
	conn->tx = kcalloc(tx, sizeof(*conn->tx), GFP_KERNEL_ACCOUNT);
	if (!conn->rx || !conn->tx)
		return -ENOMEM;
	for (i = 0; i < tx; i++) {
		conn->tx[i] = afrdma_tx_slot_new(conn);
		if (!conn->tx[i])
			return -ENOMEM;
		WRITE_ONCE(conn->tx_slots, i + 1);
	}

	conn->ctrl_buf = afrdma_map_buf(conn,
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

/*
 * SENDs of up to @want payload bytes go inline (net.afrdma.inline_threshold):
 * the post copies them into the work request, so the HCA fetches no buffer.
 * Devices cap inline data and say so only by failing the create, so a QP
 * the device refuses with it is created without; we then use what the
 * device reports it gives anyway, within @want.
 */
static int afrdma_create_qp(struct afrdma_conn *conn, unsigned int want)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	struct ib_qp_init_attr attr = {};
	u32 hdr = sizeof(struct afrdma_msg_hdr), got;
	int err;

	/*
	 * For the largest rings; one extra entry each for ib_drain_qp(), one
	 * for a keepalive probe, and the READs and registrations of receive
	 * zero-copy.
	 */
	conn->cq_size = conn->tx_max + AFRDMA_CTRL_SLOTS + conn->rx_max + 3 +
			AFRDMA_RZC_WRS;
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
	attr.cap.max_send_wr = conn->tx_max + AFRDMA_CTRL_SLOTS + 2 +
			       AFRDMA_RZC_WRS;
	attr.cap.max_recv_wr = conn->rx_max + 1;
	/* A header and user pages per zero-copy SEND, where the HCA can. */
	attr.cap.max_send_sge = clamp_t(u32, ibdev->attrs.max_send_sge, 1,
					AFRDMA_ZC_MAX_SGE);
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = want ? want + hdr : 0;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;

	err = rdma_create_qp(conn->cm_id, conn->pd, &attr);
	if (err && attr.cap.max_inline_data) {
		attr.cap.max_inline_data = 0;
		err = rdma_create_qp(conn->cm_id, conn->pd, &attr);
	}
	if (err)
		return err;
	conn->qp = conn->cm_id->qp;
	got = attr.cap.max_inline_data;
	WRITE_ONCE(conn->tx_inline, got > hdr ? min(want, got - hdr) : 0);
	WRITE_ONCE(conn->zc_pages,
		   min_t(u32, attr.cap.max_send_sge, AFRDMA_ZC_MAX_SGE) - 1);
	conn->rd_sge = clamp_t(u32, ibdev->attrs.max_sge_rd, 1,
			       attr.cap.max_send_sge);
	/*
	 * iWARP places READ responses as tagged writes, into memory the
	 * reader registered for remote write (rdma_rw_io_needs_mr()), not
	 * under the local DMA lkey that rzc.c reads into: no receive
	 * zero-copy there, either way.
	 */
	conn->rzc_read = !rdma_protocol_iwarp(ibdev, conn->cm_id->port_num);
	/* Regions to offer for READ need fast registration. */
	if (conn->rzc_read &&
	    ibdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)
		conn->rzc_pages = min_t(u32, AFRDMA_RZC_PAGES,
					ibdev->attrs.max_fast_reg_page_list_len);
	return 0;
}

/*
 * The largest rings: net.afrdma.rx_slots and tx_slots, or fewer where the
 * program set SO_RCVBUF/SO_SNDBUF (which the core already capped at
 * net.core.[rw]mem_max).
 */
static void afrdma_conn_size(struct afrdma_conn *conn, const struct sock *sk)
{
	const struct afrdma_net *an = afrdma_net(sock_net(sk));
	unsigned int rx_max = READ_ONCE(an->rx_slots);
	unsigned int tx_max = READ_ONCE(an->tx_slots);
	unsigned int size = READ_ONCE(an->slot_size);

	conn->rx_slot_size = size;
	conn->tx_slot_size = size;
	/* The core doubles what the program asked for; undo that. */
	if (sk->sk_userlocks & SOCK_RCVBUF_LOCK)
		rx_max = clamp_t(unsigned int, READ_ONCE(sk->sk_rcvbuf) / 2 / size,
				 AFRDMA_MIN_SLOTS, rx_max);
	if (sk->sk_userlocks & SOCK_SNDBUF_LOCK)
		tx_max = clamp_t(unsigned int, READ_ONCE(sk->sk_sndbuf) / 2 / size,
				 AFRDMA_MIN_SLOTS, tx_max);
	WRITE_ONCE(conn->rx_max, rx_max);
	WRITE_ONCE(conn->tx_max, tx_max);
}

/*
 * What getsockopt(SO_RCVBUF/SO_SNDBUF) reads, doubled as the core reports
 * a size the program set: that bound, capped as above, where it set one;
 * otherwise the rings as they are now, growing as TCP's autotuned buffers
 * do.  Only once the connection is up, so that a TCP fallback still
 * inherits what the program asked for.  Owner.
 */
static void afrdma_conn_show_bufs(struct afrdma_conn *conn)
{
	struct sock *sk = conn->sk;
	u64 rx, tx;

	rx = sk->sk_userlocks & SOCK_RCVBUF_LOCK ? conn->rx_max : conn->rx_slots;
	tx = sk->sk_userlocks & SOCK_SNDBUF_LOCK ? conn->tx_max : conn->tx_slots;
	WRITE_ONCE(sk->sk_rcvbuf, min_t(u64, 2 * rx * conn->rx_slot_size,
					INT_MAX));
	WRITE_ONCE(sk->sk_sndbuf, min_t(u64, 2 * tx * conn->tx_slot_size,
					INT_MAX));
}

/* Whether a ring may grow now: not under memory pressure (mem.c). */
static bool afrdma_conn_may_grow(struct afrdma_conn *conn)
{
	if (!afrdma_mem_under_pressure(conn->memcg))
		return true;
	afrdma_inc_stats(conn->sk, AFRDMA_MIB_GROWTHS_DECLINED);
	return false;
}

/*
 * The receive ring doubles, up to rx_max, once the peer ran out of credits
 * for data: the new buffers are posted and then offered as credits through
 * @rx_owed, as reposted ones are, so the receiver always knows exactly
 * what it granted.  Whether or not the program reads, as TCP's receive
 * buffer fills: a peer that writes a burst before it reads must not wait
 * for a reader that waits for it.  If memory is short, or under pressure
 * (mem.c), the ring stays.
 */
static void afrdma_conn_grow_work(struct work_struct *work)
{
	struct afrdma_conn *conn = container_of(work, struct afrdma_conn,
						grow_work);
	struct sock *sk = conn->sk;
	struct mem_cgroup *old;
	unsigned int added;

	lock_sock(sk);
	/* Not before afrdma_conn_start(): the peer may not take the credits. */
	if (afrdma_sk(sk)->conn == conn && !conn->torn) {
		added = 0;
		if (afrdma_conn_may_grow(conn) && READ_ONCE(conn->peer_rx_slots)) {
			old = set_active_memcg(conn->memcg);
			added = afrdma_rx_add(conn, min(conn->rx_slots,
							conn->rx_max - conn->rx_slots));
			set_active_memcg(old);
		}
		spin_lock_bh(&conn->lock);
		conn->rx_grow = false;
		conn->rx_owed += added;
		spin_unlock_bh(&conn->lock);
		trace_afrdma_ring_grow(sk, true, conn->rx_slots - added,
				       conn->rx_slots, conn->rx_max);
		afrdma_conn_show_bufs(conn);
		afrdma_tx_flush_credits(conn);
	}
	release_sock(sk);
	sock_put(sk);
}

/* The receive ring should grow; any context.  The work holds the socket. */
void afrdma_conn_want_rx(struct afrdma_conn *conn)
{
	sock_hold(conn->sk);
	if (!queue_work(afrdma_wq, &conn->grow_work))
		sock_put(conn->sk);
}

static struct afrdma_conn *afrdma_conn_build(struct sock *sk,
					     struct rdma_cm_id *id, bool grow,
					     bool passive,
					     struct mem_cgroup *memcg)
{
	struct afrdma_net *an = afrdma_net(sock_net(sk));
	unsigned int rx, tx, initial, start;
	struct afrdma_conn *conn;
	int err;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL_ACCOUNT);
	if (!conn) {
		atomic_dec(&an->conns);
		return ERR_PTR(-ENOMEM);
	}
	afrdma_memcg_hold(memcg);
	conn->memcg = memcg;
	conn->sk = sk;
	conn->cm_id = id;
	start = READ_ONCE(afrdma_debug_counter_start);
	WRITE_ONCE(conn->tx_head, start);
	WRITE_ONCE(conn->tx_tail, start);
	WRITE_ONCE(conn->ctrl_head, start);
	WRITE_ONCE(conn->ctrl_tail, start);
	afrdma_ka_init(conn);
	afrdma_conn_size(conn, sk);
	initial = READ_ONCE(an->initial_slots);
	rx = grow ? min(initial, conn->rx_max) : conn->rx_max;
	/* Nothing is sent before accept(): see afrdma_conn_alloc_tx(). */
	tx = passive ? 0 : min(initial, conn->tx_max);
	/* What our private data offers; set before any receive is posted. */
	WRITE_ONCE(conn->peer_credits, rx);
	spin_lock_init(&conn->lock);
	INIT_LIST_HEAD(&conn->rx_ready);
	INIT_LIST_HEAD(&conn->dev_node);
	INIT_WORK(&conn->grow_work, afrdma_conn_grow_work);
	afrdma_tx_init(conn);

	conn->dev = afrdma_device_get(id->device);
	if (!conn->dev) {
		atomic_dec(&an->conns);
		mem_cgroup_put(conn->memcg);
		kfree(conn);
		return ERR_PTR(-ENODEV);
	}

	/*
	 * A PD of its own: an rkey is only good on QPs of its MR's PD, so
	 * the regions we offer for READ (rzc.c) are out of reach of every
	 * other connection, even one that guesses the key.
	 */
	conn->pd = ib_alloc_pd(conn->dev->ibdev, 0);
	if (IS_ERR(conn->pd)) {
		err = PTR_ERR(conn->pd);
		conn->pd = NULL;
		goto fail;
	}
	err = afrdma_alloc_bufs(conn, tx);
	if (err)
		goto fail;
	err = afrdma_create_qp(conn, READ_ONCE(an->inline_threshold));
	if (err)
		goto fail;
	if (afrdma_rx_add(conn, rx) != rx) {
		err = -ENOMEM;
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

/*
 * Sets up everything a connection needs before rdma_connect() or
 * rdma_accept(), receive buffers posted.  The rings start small when the
 * peer may take credits for more buffers later (@grow: the passive side
 * knows from the request; the active side assumes so); otherwise the
 * receive ring starts at its largest.  A @passive one, set up for a peer
 * that may never complete the handshake, has no send buffers until
 * afrdma_conn_alloc_tx().  What it allocates is charged to @memcg (NULL:
 * the allocating task's).  Called with the socket locked.
 */
struct afrdma_conn *afrdma_conn_create(struct sock *sk, struct rdma_cm_id *id,
				       bool grow, bool passive,
				       struct mem_cgroup *memcg)
{
	struct afrdma_net *an = afrdma_net(sock_net(sk));
	struct afrdma_conn *conn;
	struct mem_cgroup *old;

	/*
	 * Past net.afrdma.max_connections, or with afrdma's memory at its
	 * max (mem.c), TCP takes the connection.
	 */
	if (afrdma_mem_full())
		return ERR_PTR(-ENOBUFS);
	if (atomic_inc_return(&an->conns) > READ_ONCE(an->max_conns)) {
		atomic_dec(&an->conns);
		return ERR_PTR(-ENOBUFS);
	}
	old = set_active_memcg(memcg);
	conn = afrdma_conn_build(sk, id, grow, passive, memcg);
	set_active_memcg(old);
	return conn;
}

/*
 * The first send buffers of a passive connection, once it is established
 * and before anyone can send on it.  Owner; 0, or -ENOMEM with none.
 */
int afrdma_conn_alloc_tx(struct afrdma_conn *conn)
{
	unsigned int n = min_t(unsigned int, conn->tx_max,
			       READ_ONCE(afrdma_net(sock_net(conn->sk))->initial_slots));
	struct afrdma_tx_slot **ring, **old;
	struct mem_cgroup *memcg;
	unsigned int i = 0;

	if (conn->tx_slots || conn->torn)
		return 0;
	memcg = set_active_memcg(conn->memcg);
	ring = kcalloc(n, sizeof(*ring), GFP_KERNEL_ACCOUNT);
	for (; ring && i < n; i++) {
		ring[i] = afrdma_tx_slot_new(conn);
		if (!ring[i])
			break;
	}
	set_active_memcg(memcg);
	if (i < n) {
		while (i--) {
			afrdma_unmap_buf(conn, ring[i]->buf,
					 ring[i]->dma, conn->tx_slot_size,
					 DMA_TO_DEVICE);
			kfree(ring[i]);
		}
		kfree(ring);
		return -ENOMEM;
	}

	spin_lock_bh(&conn->lock);
	old = conn->tx;
	conn->tx = ring;
	WRITE_ONCE(conn->tx_slots, n);
	spin_unlock_bh(&conn->lock);
	kfree(old);
	afrdma_conn_show_bufs(conn);
	return 0;
}

void afrdma_conn_params(const struct afrdma_conn *conn,
			struct afrdma_cm_params *own)
{
	own->rx_slots = conn->rx_slots;
	own->rx_slot_size = conn->rx_slot_size;
	own->flags = AFRDMA_CM_GROW | (conn->rzc_read ? AFRDMA_CM_RZC : 0);
}

/*
 * The peer's parameters are known: the connection may send.  A peer that
 * grows its ring may return credits up to the protocol's limit; one that
 * does not checks ours against our announcement, so ours stays as it is.
 */
int afrdma_conn_start(struct afrdma_conn *conn,
		      const struct afrdma_cm_params *peer)
{
	bool grows = peer->flags & AFRDMA_CM_GROW;

	spin_lock_bh(&conn->lock);
	WRITE_ONCE(conn->peer_rx_slots, grows ? AFRDMA_MAX_SLOTS : peer->rx_slots);
	conn->rzc = peer->flags & AFRDMA_CM_RZC;
	WRITE_ONCE(conn->tx_credits, peer->rx_slots);
	WRITE_ONCE(conn->tx_payload,
		   min_t(unsigned int, conn->tx_slot_size, peer->rx_slot_size) -
		   sizeof(struct afrdma_msg_hdr));
	if (!grows)
		WRITE_ONCE(conn->rx_max, conn->rx_slots);
	spin_unlock_bh(&conn->lock);
	afrdma_conn_show_bufs(conn);
	return 0;
}

/*
 * Doubles the send ring, up to tx_max, when sendmsg() finds it full with
 * credits to spare.  The buffers of the SENDs in flight (tx_tail..tx_head)
 * and the open slot move to the front in their order, the free ones and
 * the new ones follow, and @tx_slot moves with its buffer, so the ring's
 * users see no change.  Owner, not filling the open slot; 0, or -ENOMEM
 * with the ring as it was.
 */
int afrdma_conn_grow_tx(struct afrdma_conn *conn)
{
	unsigned int n = conn->tx_slots, m, add, busy, end;
	struct afrdma_tx_slot **ring, **old, **extra;
	struct mem_cgroup *memcg;

	m = min(2 * n, conn->tx_max);
	if (m <= n || conn->torn)
		return -ENOMEM;
	if (!afrdma_conn_may_grow(conn))
		return -ENOMEM;
	/* The caller may be any task the socket was passed to. */
	memcg = set_active_memcg(conn->memcg);
	ring = kcalloc(m, sizeof(*ring), GFP_KERNEL_ACCOUNT);
	extra = kcalloc(m - n, sizeof(*extra), GFP_KERNEL_ACCOUNT);
	for (add = 0; ring && extra && add < m - n; add++) {
		extra[add] = afrdma_tx_slot_new(conn);
		if (!extra[add])
			break;
	}
	set_active_memcg(memcg);
	if (!add) {
		kfree(ring);
		kfree(extra);
		return -ENOMEM;
	}
	m = n + add;

	spin_lock_bh(&conn->lock);
	old = conn->tx;
	busy = conn->tx_head - conn->tx_tail + !!conn->tx_pending;
	end = conn->tx_pending ? afrdma_ring_next(conn->tx_slot, n) :
				 conn->tx_slot;
	conn->tx_slot = afrdma_ring_regrow(ring, old, n, end, busy, extra,
					   add) - !!conn->tx_pending;
	conn->tx = ring;
	WRITE_ONCE(conn->tx_slots, m);
	spin_unlock_bh(&conn->lock);
	trace_afrdma_ring_grow(conn->sk, false, n, m, conn->tx_max);
	kfree(old);
	kfree(extra);
	afrdma_conn_show_bufs(conn);
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
		/* The MRs go before the QP, and before the pages they map. */
		afrdma_rzc_teardown(conn);
		rdma_destroy_qp(conn->cm_id);
		conn->qp = NULL;
	}
	if (conn->cq)
		ib_cq_pool_put(conn->cq, conn->cq_size);
	conn->cq = NULL;
	if (conn->pd)
		ib_dealloc_pd(conn->pd);
	conn->pd = NULL;

	spin_lock_bh(&conn->lock);
	WRITE_ONCE(conn->dead, true);
	INIT_LIST_HEAD(&conn->rx_ready);
	WRITE_ONCE(conn->rx_bytes, 0);
	spin_unlock_bh(&conn->lock);

	afrdma_free_rx(conn);
	afrdma_free_tx(conn);
	afrdma_device_detach(conn);
	afrdma_device_put(conn->dev);
	atomic_dec(&afrdma_net(sock_net(conn->sk))->conns);
	WRITE_ONCE(conn->torn, true);
}

void afrdma_conn_free(struct afrdma_conn *conn)
{
	afrdma_conn_teardown(conn);
	mem_cgroup_put(conn->memcg);
	kfree(conn);
}

/*
 * Our own disconnect of @sk (a reset, or a child never accepted): the
 * connection stops first, so that the receives the disconnect flushes are
 * not taken for the peer breaking it (a second reset and a completion
 * error).  The socket is locked; @id is alive.
 */
void afrdma_conn_disconnect(struct sock *sk, struct rdma_cm_id *id)
{
	struct afrdma_conn *conn = afrdma_sk(sk)->conn;

	if (conn && !conn->torn)
		afrdma_tx_stop(conn);
	rdma_disconnect(id);
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
			afrdma_conn_disconnect(sk, ars->cm_id);
		afrdma_inc_stats(sk, AFRDMA_MIB_RESETS);
		afrdma_trace_reset(sk, err, AFRDMA_RST_DEVICE);
		afrdma_conn_teardown(conn);
		WRITE_ONCE(sk->sk_err, err);
		sk->sk_shutdown = SHUTDOWN_MASK;
		afrdma_set_state(sk, TCP_CLOSE);
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
	WRITE_ONCE(conn->dead, true);
	spin_unlock(&conn->lock);
	if (!was_dead) {
		afrdma_inc_stats(sk, AFRDMA_MIB_RESETS);
		afrdma_trace_reset(sk, err, AFRDMA_RST_ERROR);
	}
	WRITE_ONCE(sk->sk_err, err);
	sk_error_report(sk);
}
