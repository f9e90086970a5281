// SPDX-License-Identifier: GPL-2.0
/*
 * Streams on a link (Documentation/links.rst, step 4b): the ids each end
 * gives its streams, their receive areas carved from the link's chunks,
 * and their lifecycle in the link's stream messages: CHUNK, CONNECT as a
 * SYN, ACCEPT, REFUSE (BUSY: sent again later, as a dropped SYN), FIN and
 * RESET.  A stream that breaks the protocol is reset alone; the link and
 * its other streams go on.  No data yet, and no socket uses a stream:
 * AFRDMA_CMD_LINK_TEST opens, resets and closes them (nl_link.c).
 *
 * Nothing here runs in an rdma_cm or CQ callback but the two *_locked
 * entry points the link's completions call, which only queue: the
 * peer's messages are handled by the link's work, under the link's
 * mutex, where an area (and with it a chunk) may be allocated and
 * registered.  stream.h says what each lock covers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/slab.h>

#include "afrdma.h"

static struct afrdma_net *afrdma_stream_an(struct afrdma_link *link)
{
	return container_of(link->ln, struct afrdma_net, lnk);
}

/* Fires for the earliest BUSY wait; the link's work does the rest. */
static void afrdma_stream_retry_fn(struct work_struct *work)
{
	struct afrdma_link *link = container_of(to_delayed_work(work),
						struct afrdma_link,
						streams.retry_work);

	spin_lock_bh(&link->lock);
	afrdma_link_kick_streams_locked(link);
	spin_unlock_bh(&link->lock);
}

void afrdma_streams_init(struct afrdma_link *link)
{
	struct afrdma_link_streams *ss = &link->streams;

	/* Their credits come back only once handled: see AFRDMA_STREAM_RXQ. */
	BUILD_BUG_ON(AFRDMA_STREAM_RXQ < AFRDMA_LINK_RX);
	BUILD_BUG_ON(AFRDMA_STREAM_CHUNKS < AFRDMA_LINK_CHUNKS);
	xa_init_flags(&ss->xa, XA_FLAGS_ALLOC1);
	xa_init(&ss->peer_chunks);
	ss->next_id = 1;
	INIT_LIST_HEAD(&ss->syn_wait);
	INIT_LIST_HEAD(&ss->retry);
	INIT_LIST_HEAD(&ss->reap);
	INIT_LIST_HEAD(&ss->tx);
	INIT_DELAYED_WORK(&ss->retry_work, afrdma_stream_retry_fn);
}

/*
 * A stream message from the peer, in softirq: queued for the link's work,
 * which allocates what it needs.  Never more than the receives we posted
 * are unhandled, since their credits wait for the work; more is the
 * peer's protocol error, and so is a stream message before its HELLO.
 */
int afrdma_stream_rx_locked(struct afrdma_link *link,
			    const struct afrdma_link_msg *m)
{
	struct afrdma_link_streams *ss = &link->streams;

	if (!link->hello_rcvd ||
	    ss->rxq_head - ss->rxq_tail >= AFRDMA_STREAM_RXQ)
		return -EPROTO;
	ss->rxq[ss->rxq_head++ % AFRDMA_STREAM_RXQ] = *m;
	afrdma_link_kick_streams_locked(link);
	return 1;
}

/* Our chunk @c is registered: a CHUNK tells the peer, before any area. */
void afrdma_stream_chunk_added_locked(struct afrdma_link *link,
				      unsigned int c, u32 rkey, u64 iova)
{
	struct afrdma_link_streams *ss = &link->streams;

	if (WARN_ON_ONCE(c >= AFRDMA_STREAM_CHUNKS))
		return;
	ss->own[c].rkey = rkey;
	ss->own[c].iova = iova;
	__set_bit(c, ss->chunk_new);
}

/* Our chunk @c goes: a CHUNK not yet sent need not be. */
void afrdma_stream_chunk_removed_locked(struct afrdma_link *link,
					unsigned int c)
{
	if (c < AFRDMA_STREAM_CHUNKS)
		__clear_bit(c, link->streams.chunk_new);
}

/* Queues @bit of @s for the flush.  The link's lock held. */
static void afrdma_stream_queue_locked(struct afrdma_link_streams *ss,
				       struct afrdma_stream *s, unsigned int bit)
{
	__set_bit(bit, &s->tx_pending);
	if (list_empty(&s->tx_node))
		list_add_tail(&s->tx_node, &ss->tx);
}

static void afrdma_stream_wire_area(struct afrdma_link_area *w,
				    const struct afrdma_area *a)
{
	w->chunk = a->chunk;
	w->page = a->page;
	w->order = a->order;
}

/*
 * The next stream message to send, in the link's flush (softirq, the
 * link's lock held): our new chunks first, then refusals, then the
 * streams' messages, a stream at a time, round-robin.  A closed stream
 * whose last message went is left to the work to free.
 */
bool afrdma_stream_tx_locked(struct afrdma_link *link, struct afrdma_link_msg *m)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream_refusal *r;
	struct afrdma_stream *s;
	unsigned int c, bit;

	memset(m, 0, sizeof(*m));
	c = find_first_bit(ss->chunk_new, AFRDMA_STREAM_CHUNKS);
	if (c < AFRDMA_STREAM_CHUNKS) {
		__clear_bit(c, ss->chunk_new);
		m->type = AFRDMA_LINK_MSG_CHUNK;
		m->chunk.chunk = c;
		m->chunk.rkey = ss->own[c].rkey;
		m->chunk.iova = ss->own[c].iova;
		return true;
	}
	if (ss->ref_tail != ss->ref_head) {
		r = &ss->refusals[ss->ref_tail++ % AFRDMA_STREAM_SYN_MAX];
		m->type = AFRDMA_LINK_MSG_REFUSE;
		m->stream.stream = r->peer_id;
		m->stream.value = r->reason;
		ss->syn_unanswered--;
		return true;
	}
	s = list_first_entry_or_null(&ss->tx, struct afrdma_stream, tx_node);
	if (!s)
		return false;
	bit = __ffs(s->tx_pending);
	__clear_bit(bit, &s->tx_pending);
	switch (bit) {
	case AFRDMA_STREAM_SEND_CONNECT:
		m->type = AFRDMA_LINK_MSG_CONNECT;
		m->connect.stream = s->id;
		m->connect.sport = s->sport;
		m->connect.dport = s->dport;
		afrdma_stream_wire_area(&m->connect.area, &s->area);
		break;
	case AFRDMA_STREAM_SEND_ACCEPT:
		m->type = AFRDMA_LINK_MSG_ACCEPT;
		m->accept.stream = s->peer_id;
		m->accept.peer_stream = s->id;
		afrdma_stream_wire_area(&m->accept.area, &s->area);
		ss->syn_unanswered--;
		break;
	case AFRDMA_STREAM_SEND_CURSOR:
		m->type = AFRDMA_LINK_MSG_CURSOR;
		m->stream.stream = s->peer_id;
		m->stream.value = s->cursor;
		break;
	case AFRDMA_STREAM_SEND_FIN:
		m->type = AFRDMA_LINK_MSG_FIN;
		m->stream.stream = s->peer_id;
		m->stream.value = s->tx_bytes;
		break;
	default:
		m->type = AFRDMA_LINK_MSG_RESET;
		m->stream.stream = s->peer_id;
		m->stream.value = s->reset_reason;
		break;
	}
	if (!s->tx_pending) {
		list_del_init(&s->tx_node);
		if (s->state == AFRDMA_STREAM_CLOSED)
			afrdma_link_kick_streams_locked(link);
	} else {
		list_move_tail(&s->tx_node, &ss->tx);
	}
	return true;
}

/* @state's share of the counts the listing shows.  The link's lock held. */
static void afrdma_stream_count_locked(struct afrdma_link_streams *ss,
				       unsigned int state, int d)
{
	if (state == AFRDMA_STREAM_CLOSED)
		return;
	ss->count += d;
	if (state == AFRDMA_STREAM_SYN_SENT)
		ss->connecting += d;
	else
		ss->established += d;
}

/* @s goes to @state, not CLOSED.  The link's mutex held. */
static void afrdma_stream_set_state(struct afrdma_link *link,
				    struct afrdma_stream *s, unsigned int state)
{
	struct afrdma_link_streams *ss = &link->streams;

	spin_lock_bh(&link->lock);
	afrdma_stream_count_locked(ss, s->state, -1);
	afrdma_stream_count_locked(ss, state, 1);
	if (s->state == AFRDMA_STREAM_SYN_SENT)
		ss->opened++;
	s->state = state;
	spin_unlock_bh(&link->lock);
}

/*
 * @s is closed (@err why) and counted in @counter, if any: it leaves its
 * listener's queue and the link's users, and is freed by the reap once its
 * last message went.  The link's mutex held.
 */
static void afrdma_stream_close(struct afrdma_link *link,
				struct afrdma_stream *s, int err, u64 *counter)
{
	struct afrdma_link_streams *ss = &link->streams;
	bool half_open = s->half_open;

	if (s->state == AFRDMA_STREAM_CLOSED)
		return;
	spin_lock_bh(&link->lock);
	afrdma_stream_count_locked(ss, s->state, -1);
	s->state = AFRDMA_STREAM_CLOSED;
	s->error = err;
	if (counter)
		(*counter)++;
	if (half_open)
		ss->half_open--;
	s->half_open = false;
	afrdma_link_users_locked(link, -1);
	spin_unlock_bh(&link->lock);
	if (half_open) {
		spin_lock_bh(&link->ln->lock);
		s->listener->queued--;
		spin_unlock_bh(&link->ln->lock);
	}
	list_move_tail(&s->node, &ss->reap);
}

static void afrdma_stream_listener_release(struct kref *ref)
{
	kfree(container_of(ref, struct afrdma_stream_listener, ref));
}

static void afrdma_stream_listener_put(struct afrdma_stream_listener *l)
{
	kref_put(&l->ref, afrdma_stream_listener_release);
}

/*
 * Frees closed streams with nothing left to send, their ids and areas
 * with them.  The link's mutex held; an error is the link's (an area's
 * chunk could not be invalidated).
 */
static int afrdma_stream_reap(struct afrdma_link *link)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream *s, *n;
	unsigned long pending;
	int err = 0;

	list_for_each_entry_safe(s, n, &ss->reap, node) {
		spin_lock_bh(&link->lock);
		pending = s->tx_pending;
		spin_unlock_bh(&link->lock);
		if (pending)
			continue;
		list_del(&s->node);
		xa_erase(&ss->xa, s->id);
		if (s->area_held && !err)
			err = afrdma_link_area_put(link, &s->area);
		if (s->listener)
			afrdma_stream_listener_put(s->listener);
		kfree(s);
	}
	return err;
}

/* Our CONNECT of @s is answered (or taken back): the next may go. */
static void afrdma_stream_send_connect(struct afrdma_link *link,
				       struct afrdma_stream *s);

static void afrdma_stream_syn_done(struct afrdma_link *link,
				   struct afrdma_stream *s)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream *next;

	if (!s->syn_out)
		return;
	s->syn_out = false;
	ss->syn_out--;
	next = list_first_entry_or_null(&ss->syn_wait, struct afrdma_stream,
					node);
	if (next) {
		list_del_init(&next->node);
		afrdma_stream_send_connect(link, next);
	}
}

/*
 * @s's CONNECT goes, or waits while AFRDMA_STREAM_SYN_MAX of ours are
 * unanswered.  The link's mutex held.
 */
static void afrdma_stream_send_connect(struct afrdma_link *link,
				       struct afrdma_stream *s)
{
	struct afrdma_link_streams *ss = &link->streams;

	if (ss->syn_out >= AFRDMA_STREAM_SYN_MAX) {
		list_move_tail(&s->node, &ss->syn_wait);
		return;
	}
	ss->syn_out++;
	s->syn_out = true;
	spin_lock_bh(&link->lock);
	afrdma_stream_queue_locked(ss, s, AFRDMA_STREAM_SEND_CONNECT);
	afrdma_link_flush_locked(link);
	spin_unlock_bh(&link->lock);
}

/*
 * We end @s at once with a RESET of @reason.  A CONNECT not yet sent is
 * taken back; one unanswered makes the answer reset the stream (an
 * ACCEPT) or end it (a REFUSE).  The link's mutex held.
 */
static void afrdma_stream_reset(struct afrdma_link *link,
				struct afrdma_stream *s, u32 reason)
{
	struct afrdma_link_streams *ss = &link->streams;
	bool unsent = false;

	if (s->state == AFRDMA_STREAM_CLOSED)
		return;
	if (s->state == AFRDMA_STREAM_SYN_SENT) {
		spin_lock_bh(&link->lock);
		if (test_bit(AFRDMA_STREAM_SEND_CONNECT, &s->tx_pending)) {
			__clear_bit(AFRDMA_STREAM_SEND_CONNECT, &s->tx_pending);
			if (!s->tx_pending)
				list_del_init(&s->tx_node);
			unsent = true;
		}
		spin_unlock_bh(&link->lock);
		if (s->syn_out && !unsent) {
			s->abort = true;
			return;
		}
		afrdma_stream_syn_done(link, s);
		afrdma_stream_close(link, s, -ECONNRESET, NULL);
		return;
	}
	spin_lock_bh(&link->lock);
	s->tx_pending &= ~(BIT(AFRDMA_STREAM_SEND_CURSOR) |
			   BIT(AFRDMA_STREAM_SEND_FIN));
	s->reset_reason = reason;
	afrdma_stream_queue_locked(ss, s, AFRDMA_STREAM_SEND_RESET);
	afrdma_link_flush_locked(link);
	spin_unlock_bh(&link->lock);
	afrdma_stream_close(link, s, -ECONNRESET, &ss->resets);
}

/* The peer broke the protocol on @s: it is reset, and nothing else. */
static void afrdma_stream_protocol(struct afrdma_link *link,
				   struct afrdma_stream *s)
{
	struct afrdma_link_streams *ss = &link->streams;

	pr_debug("link %u: stream %u: protocol error, reset\n", link->id,
		 s->id);
	spin_lock_bh(&link->lock);
	ss->errors++;
	spin_unlock_bh(&link->lock);
	afrdma_stream_reset(link, s, AFRDMA_LINK_PROTOCOL);
}

/*
 * We stop writing on @s: FIN, with all we wrote.  -EINVAL if we had
 * already, or it is not established.  The link's mutex held.
 */
static int afrdma_stream_fin(struct afrdma_link *link, struct afrdma_stream *s)
{
	struct afrdma_link_streams *ss = &link->streams;
	int next = afrdma_stream_next(s->state, AFRDMA_STREAM_TX_FIN);

	if (next < 0)
		return next;
	spin_lock_bh(&link->lock);
	afrdma_stream_queue_locked(ss, s, AFRDMA_STREAM_SEND_FIN);
	afrdma_link_flush_locked(link);
	spin_unlock_bh(&link->lock);
	if (next == AFRDMA_STREAM_CLOSED)
		afrdma_stream_close(link, s, 0, &ss->fins);
	else
		afrdma_stream_set_state(link, s, next);
	return 0;
}

/* Whether the peer's @a lies in a chunk it told us of, of its geometry. */
static bool afrdma_stream_peer_area_ok(struct afrdma_link *link,
				       const struct afrdma_link_area *a)
{
	unsigned int order;

	spin_lock_bh(&link->lock);
	order = link->peer_chunk_order;
	spin_unlock_bh(&link->lock);
	return xa_load(&link->streams.peer_chunks, a->chunk) &&
	       afrdma_stream_area_fits(a->page, a->order, order);
}

/* A new stream with an area of ours, its id allocated.  The link's mutex held. */
static struct afrdma_stream *afrdma_stream_new(struct afrdma_link *link,
					       int *err)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	INIT_LIST_HEAD(&s->node);
	INIT_LIST_HEAD(&s->tx_node);
	*err = afrdma_link_area_get(link, AFRDMA_STREAM_AREA_ORDER, &s->area);
	if (*err)
		goto free;
	s->area_held = true;
	/* From 1, cyclically: an id comes back only after 2^32 - 2 others. */
	*err = xa_alloc_cyclic(&ss->xa, &s->id, s, XA_LIMIT(1, U32_MAX),
			       &ss->next_id, GFP_KERNEL_ACCOUNT);
	if (*err >= 0) {
		*err = 0;
		return s;
	}
	if (afrdma_link_area_put(link, &s->area))
		*err = -EIO;
free:
	kfree(s);
	return NULL;
}

/* A stream joins the counts and the link's users.  The link's mutex held. */
static void afrdma_stream_start(struct afrdma_link *link,
				struct afrdma_stream *s, unsigned int state)
{
	struct afrdma_link_streams *ss = &link->streams;

	spin_lock_bh(&link->lock);
	s->state = state;
	afrdma_stream_count_locked(ss, state, 1);
	if (state == AFRDMA_STREAM_ESTABLISHED)
		ss->opened++;
	if (s->half_open)
		ss->half_open++;
	afrdma_link_users_locked(link, 1);
	if (s->passive)
		afrdma_stream_queue_locked(ss, s, AFRDMA_STREAM_SEND_ACCEPT);
	afrdma_link_flush_locked(link);
	spin_unlock_bh(&link->lock);
}

/*
 * The listener of @port takes one more stream, if its queue and the
 * link's half-open streams have room: 0, or the reason to refuse.
 */
static u32 afrdma_stream_admit(struct afrdma_link *link, u16 port,
			       struct afrdma_stream_listener **lp)
{
	struct afrdma_net *an = afrdma_stream_an(link);
	unsigned int per_link = READ_ONCE(an->half_open_per_peer);
	unsigned int per_port = READ_ONCE(an->max_half_open);
	struct afrdma_link_net *ln = link->ln;
	struct afrdma_stream_listener *l;
	u32 reason = AFRDMA_LINK_NO_LISTENER;

	spin_lock_bh(&ln->lock);
	list_for_each_entry(l, &ln->stream_listeners, node) {
		if (l->port != port)
			continue;
		/* half_open changes under the mutex we hold */
		if (l->queued >= min(l->backlog, per_port) ||
		    link->streams.half_open >= per_link) {
			reason = AFRDMA_LINK_BUSY;
			break;
		}
		l->queued++;
		kref_get(&l->ref);
		*lp = l;
		reason = 0;
		break;
	}
	spin_unlock_bh(&ln->lock);
	return reason;
}

/* Undoes afrdma_stream_admit(). */
static void afrdma_stream_unadmit(struct afrdma_link *link,
				  struct afrdma_stream_listener *l)
{
	spin_lock_bh(&link->ln->lock);
	l->queued--;
	spin_unlock_bh(&link->ln->lock);
	afrdma_stream_listener_put(l);
}

/*
 * The peer's CONNECT: a stream and its area, allocated only now (over an
 * established link, for a listener with room), answered by ACCEPT, or a
 * REFUSE.  Negative: the link goes (the peer had more CONNECTs
 * unanswered than it may, or a chunk could not be registered).
 */
static int afrdma_stream_rx_connect(struct afrdma_link *link,
				    const struct afrdma_link_msg *m)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream_listener *l = NULL;
	struct afrdma_stream *s = NULL;
	u32 reason;
	int err = 0;

	spin_lock_bh(&link->lock);
	if (ss->syn_unanswered >= AFRDMA_STREAM_SYN_MAX)
		err = -EPROTO;
	else
		ss->syn_unanswered++;	/* until its answer is posted */
	spin_unlock_bh(&link->lock);
	if (err)
		return err;

	if (!afrdma_stream_peer_area_ok(link, &m->connect.area)) {
		reason = AFRDMA_LINK_PROTOCOL;
		spin_lock_bh(&link->lock);
		ss->errors++;
		spin_unlock_bh(&link->lock);
	} else {
		reason = afrdma_stream_admit(link, m->connect.dport, &l);
	}
	if (!reason) {
		s = afrdma_stream_new(link, &err);
		if (!s) {
			afrdma_stream_unadmit(link, l);
			if (err != -ENOMEM && err != -ENOSPC && err != -EBUSY)
				return err;
			reason = AFRDMA_LINK_RESOURCES;
		}
	}
	if (reason) {
		spin_lock_bh(&link->lock);
		ss->refusals[ss->ref_head++ % AFRDMA_STREAM_SYN_MAX] =
			(struct afrdma_stream_refusal){ m->connect.stream, reason };
		afrdma_link_flush_locked(link);
		spin_unlock_bh(&link->lock);
		return 0;
	}
	s->passive = true;
	s->peer_id = m->connect.stream;
	s->sport = m->connect.dport;
	s->dport = m->connect.sport;
	s->peer_area = m->connect.area;
	s->listener = l;
	s->half_open = true;	/* the test listener never takes it */
	afrdma_stream_start(link, s, AFRDMA_STREAM_ESTABLISHED);
	return 0;
}

/* The peer's CHUNK: where its areas in chunk @c are.  Negative: the link goes. */
static int afrdma_stream_rx_chunk(struct afrdma_link *link,
				  const struct afrdma_link_msg *m)
{
	struct afrdma_stream_chunk *ch, *old;
	unsigned int max;

	spin_lock_bh(&link->lock);
	max = link->peer_max_chunks;
	spin_unlock_bh(&link->lock);
	if (m->chunk.chunk >= max)
		return -EPROTO;
	ch = kmalloc(sizeof(*ch), GFP_KERNEL_ACCOUNT);
	if (!ch)
		return -ENOMEM;
	ch->rkey = m->chunk.rkey;
	ch->iova = m->chunk.iova;
	/* a chunk the peer registered again replaces the old */
	old = xa_store(&link->streams.peer_chunks, m->chunk.chunk, ch,
		       GFP_KERNEL_ACCOUNT);
	if (xa_is_err(old)) {
		kfree(ch);
		return xa_err(old);
	}
	kfree(old);
	return 0;
}

/* BUSY: @s's CONNECT goes again later, as a dropped SYN would. */
static void afrdma_stream_retry_later(struct afrdma_link *link,
				      struct afrdma_stream *s)
{
	struct afrdma_link_streams *ss = &link->streams;

	s->retry_at = jiffies +
		      msecs_to_jiffies(AFRDMA_STREAM_SYN_RTO_MS << s->retries);
	s->retries++;
	list_move_tail(&s->node, &ss->retry);
}

/* The answer to our CONNECT of @s. */
static void afrdma_stream_rx_answer(struct afrdma_link *link,
				    struct afrdma_stream *s,
				    const struct afrdma_link_msg *m)
{
	struct afrdma_link_streams *ss = &link->streams;
	u32 reason = m->stream.value;

	afrdma_stream_syn_done(link, s);
	if (m->type == AFRDMA_LINK_MSG_ACCEPT) {
		s->peer_id = m->accept.peer_stream;
		s->peer_area = m->accept.area;
		if (!afrdma_stream_peer_area_ok(link, &m->accept.area)) {
			afrdma_stream_set_state(link, s,
						AFRDMA_STREAM_ESTABLISHED);
			afrdma_stream_protocol(link, s);
		} else if (s->abort) {
			afrdma_stream_set_state(link, s,
						AFRDMA_STREAM_ESTABLISHED);
			afrdma_stream_reset(link, s, AFRDMA_LINK_ABORT);
		} else {
			afrdma_stream_set_state(link, s,
						AFRDMA_STREAM_ESTABLISHED);
		}
		return;
	}
	if (reason == AFRDMA_LINK_BUSY) {
		spin_lock_bh(&link->lock);
		ss->busy++;
		spin_unlock_bh(&link->lock);
		if (!s->abort && s->retries < AFRDMA_STREAM_SYN_RETRIES) {
			afrdma_stream_retry_later(link, s);
			return;
		}
		afrdma_stream_close(link, s, -ETIMEDOUT, NULL);
		return;
	}
	afrdma_stream_close(link, s, reason == AFRDMA_LINK_NO_LISTENER ?
			    -ECONNREFUSED : -ECONNRESET, &ss->refused);
}

/* A message of the peer's naming our stream @s.  The link's mutex held. */
static void afrdma_stream_rx_on(struct afrdma_link *link,
				struct afrdma_stream *s,
				const struct afrdma_link_msg *m)
{
	static const u8 events[AFRDMA_LINK_MSG_MAX] = {
		[AFRDMA_LINK_MSG_ACCEPT]	= AFRDMA_STREAM_RX_ACCEPT,
		[AFRDMA_LINK_MSG_REFUSE]	= AFRDMA_STREAM_RX_REFUSE,
		[AFRDMA_LINK_MSG_CURSOR]	= AFRDMA_STREAM_RX_CURSOR,
		[AFRDMA_LINK_MSG_FIN]		= AFRDMA_STREAM_RX_FIN,
		[AFRDMA_LINK_MSG_RESET]		= AFRDMA_STREAM_RX_RESET,
	};
	struct afrdma_link_streams *ss = &link->streams;
	int next = afrdma_stream_next(s->state, events[m->type]);

	if (next < 0) {
		afrdma_stream_protocol(link, s);
		return;
	}
	switch (m->type) {
	case AFRDMA_LINK_MSG_ACCEPT:
	case AFRDMA_LINK_MSG_REFUSE:
		afrdma_stream_rx_answer(link, s, m);
		break;
	case AFRDMA_LINK_MSG_CURSOR:
		if (!afrdma_stream_cursor_ok(s->tx_acked, s->tx_bytes,
					     m->stream.value)) {
			afrdma_stream_protocol(link, s);
			break;
		}
		s->tx_acked = m->stream.value;
		break;
	case AFRDMA_LINK_MSG_FIN:
		if (!afrdma_stream_fin_ok(s->rx_bytes, m->stream.value)) {
			afrdma_stream_protocol(link, s);
			break;
		}
		if (next == AFRDMA_STREAM_CLOSED) {
			afrdma_stream_close(link, s, 0, &ss->fins);
			break;
		}
		afrdma_stream_set_state(link, s, next);
		/* The test's streams close as soon as their peer does. */
		afrdma_stream_fin(link, s);
		break;
	case AFRDMA_LINK_MSG_RESET:
		afrdma_stream_syn_done(link, s);
		afrdma_stream_close(link, s, -ECONNRESET, &ss->resets);
		break;
	}
}

/*
 * One message of the peer's.  Those naming a stream we no longer have
 * (or have closed) crossed our RESET or FIN, or our CONNECT was taken
 * back: they are dropped.  Negative: the link goes.
 */
static int afrdma_stream_rx_msg(struct afrdma_link *link,
				const struct afrdma_link_msg *m)
{
	struct afrdma_stream *s;

	switch (m->type) {
	case AFRDMA_LINK_MSG_CHUNK:
		return afrdma_stream_rx_chunk(link, m);
	case AFRDMA_LINK_MSG_CONNECT:
		return afrdma_stream_rx_connect(link, m);
	case AFRDMA_LINK_MSG_ACCEPT:
		s = xa_load(&link->streams.xa, m->accept.stream);
		break;
	default:
		s = xa_load(&link->streams.xa, m->stream.stream);
		break;
	}
	if (s && s->state != AFRDMA_STREAM_CLOSED)
		afrdma_stream_rx_on(link, s, m);
	return 0;
}

/* Sends again the CONNECTs whose BUSY wait is over; arms for the next. */
static void afrdma_stream_retries(struct afrdma_link *link)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream *s, *n;
	unsigned long next = 0;
	bool armed = false;

	list_for_each_entry_safe(s, n, &ss->retry, node) {
		if (time_after_eq(jiffies, s->retry_at)) {
			list_del_init(&s->node);
			afrdma_stream_send_connect(link, s);
		} else if (!armed || time_before(s->retry_at, next)) {
			next = s->retry_at;
			armed = true;
		}
	}
	if (armed)
		mod_delayed_work(afrdma_wq, &ss->retry_work,
				 time_after(next, jiffies) ? next - jiffies : 0);
}

/*
 * The link's work, the link up and its mutex held: the peer's stream
 * messages in order, each receive owed back to the peer once handled;
 * CONNECTs due again; closed streams freed.  Negative: the link goes.
 */
int afrdma_stream_work(struct afrdma_link *link)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_link_msg m;
	int err;

	for (;;) {
		spin_lock_bh(&link->lock);
		if (ss->rxq_tail == ss->rxq_head) {
			spin_unlock_bh(&link->lock);
			break;
		}
		m = ss->rxq[ss->rxq_tail % AFRDMA_STREAM_RXQ];
		spin_unlock_bh(&link->lock);
		err = afrdma_stream_rx_msg(link, &m);
		if (err)
			return err;
		spin_lock_bh(&link->lock);
		ss->rxq_tail++;
		link->rx_owed++;
		afrdma_link_flush_locked(link);
		spin_unlock_bh(&link->lock);
	}
	afrdma_stream_retries(link);
	return afrdma_stream_reap(link);
}

/*
 * The link is torn down (closed, its QP drained): every stream goes, with
 * what it held of its listener; the areas go with the link's chunks.  The
 * link's mutex held.
 */
void afrdma_streams_destroy(struct afrdma_link *link)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream_chunk *ch;
	struct afrdma_stream *s;
	unsigned long i;

	cancel_delayed_work_sync(&ss->retry_work);
	xa_for_each(&ss->xa, i, s) {
		xa_erase(&ss->xa, i);
		if (s->half_open) {
			spin_lock_bh(&link->ln->lock);
			s->listener->queued--;
			spin_unlock_bh(&link->ln->lock);
		}
		if (s->listener)
			afrdma_stream_listener_put(s->listener);
		kfree(s);
	}
	xa_destroy(&ss->xa);
	xa_for_each(&ss->peer_chunks, i, ch)
		kfree(ch);
	xa_destroy(&ss->peer_chunks);
	INIT_LIST_HEAD(&ss->syn_wait);
	INIT_LIST_HEAD(&ss->retry);
	INIT_LIST_HEAD(&ss->reap);
	ss->syn_out = 0;
	spin_lock_bh(&link->lock);
	INIT_LIST_HEAD(&ss->tx);
	ss->rxq_tail = ss->rxq_head;
	ss->ref_tail = ss->ref_head;
	bitmap_zero(ss->chunk_new, AFRDMA_STREAM_CHUNKS);
	ss->syn_unanswered = 0;
	ss->count = 0;
	ss->established = 0;
	ss->connecting = 0;
	ss->half_open = 0;
	spin_unlock_bh(&link->lock);
}

void afrdma_stream_info_locked(struct afrdma_link *link,
			       struct afrdma_link_info *info)
{
	struct afrdma_link_streams *ss = &link->streams;

	info->streams = ss->count;
	info->streams_est = ss->established;
	info->streams_syn = ss->connecting;
	info->streams_half_open = ss->half_open;
	info->streams_opened = ss->opened;
	info->streams_refused = ss->refused;
	info->streams_busy = ss->busy;
	info->streams_resets = ss->resets;
	info->streams_fins = ss->fins;
	info->streams_errors = ss->errors;
}

/* The switch went to 0, its links are gone: so are the test listeners. */
void afrdma_stream_listeners_flush(struct afrdma_link_net *ln)
{
	struct afrdma_stream_listener *l;

	for (;;) {
		spin_lock_bh(&ln->lock);
		l = list_first_entry_or_null(&ln->stream_listeners,
					     struct afrdma_stream_listener, node);
		if (l)
			list_del_init(&l->node);
		spin_unlock_bh(&ln->lock);
		if (!l)
			break;
		afrdma_stream_listener_put(l);
	}
}

/*
 * AFRDMA_CMD_LINK_TEST's listeners: a test listener on @t->listen_port
 * with a queue of @t->backlog streams, which it never takes; 0 stops it
 * (its streams keep what they hold of it until they close).
 */
int afrdma_stream_test_listen(struct afrdma_link_net *ln,
			      const struct afrdma_stream_test *t)
{
	struct afrdma_stream_listener *l, *found = NULL, *old = NULL;
	struct afrdma_stream_listener *fresh;
	int err = 0;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	if (!fresh)
		return -ENOMEM;
	kref_init(&fresh->ref);
	fresh->port = t->listen_port;
	fresh->backlog = t->backlog;

	spin_lock_bh(&ln->lock);
	list_for_each_entry(l, &ln->stream_listeners, node) {
		if (l->port == t->listen_port) {
			found = l;
			break;
		}
	}
	if (!ln->on) {
		err = -EOPNOTSUPP;
	} else if (found && !t->backlog) {
		list_del_init(&found->node);
		old = found;
	} else if (found) {
		found->backlog = t->backlog;
	} else if (t->backlog) {
		list_add_tail(&fresh->node, &ln->stream_listeners);
		fresh = NULL;
	}
	spin_unlock_bh(&ln->lock);
	kfree(fresh);
	if (old)
		afrdma_stream_listener_put(old);
	return err;
}

/* @count streams of ours to the peer's @port. */
static int afrdma_stream_test_connect(struct afrdma_link *link, u16 port,
				      unsigned int count)
{
	struct afrdma_stream *s;
	int err = 0;

	while (count--) {
		s = afrdma_stream_new(link, &err);
		if (!s)
			return err;
		s->dport = port;
		afrdma_stream_start(link, s, AFRDMA_STREAM_SYN_SENT);
		afrdma_stream_send_connect(link, s);
	}
	return 0;
}

/*
 * AFRDMA_CMD_LINK_TEST's requests on the link's streams, the link up:
 * open @t->count to @t->connect_port (the ids from @t->first_id, if
 * given), reset one, send FIN on one or all, or a CURSOR of any value
 * (which the peer must refuse when it is not one).  Ids are ours.
 */
int afrdma_stream_test(struct afrdma_link *link,
		       const struct afrdma_stream_test *t)
{
	struct afrdma_link_streams *ss = &link->streams;
	struct afrdma_stream *s;
	unsigned long i;
	int err = 0;

	if (t->connect_port < 0 && t->first_id < 0 && t->reset_id < 0 &&
	    t->fin_id < 0 && t->cursor_id < 0)
		return 0;
	mutex_lock(&link->mutex);
	if (!afrdma_link_is_up(link)) {
		err = -ENOTCONN;
		goto out;
	}
	if (t->first_id > 0)
		ss->next_id = t->first_id;
	if (t->connect_port > 0)
		err = afrdma_stream_test_connect(link, t->connect_port,
						 t->count);
	if (!err && t->reset_id > 0) {
		s = xa_load(&ss->xa, t->reset_id);
		if (s && s->state != AFRDMA_STREAM_CLOSED)
			afrdma_stream_reset(link, s, AFRDMA_LINK_ABORT);
		else
			err = -ENOENT;
	}
	if (!err && t->fin_id > 0) {
		s = xa_load(&ss->xa, t->fin_id);
		err = s ? afrdma_stream_fin(link, s) : -ENOENT;
	} else if (!err && !t->fin_id) {
		xa_for_each(&ss->xa, i, s)
			afrdma_stream_fin(link, s);
	}
	if (!err && t->cursor_id > 0) {
		s = xa_load(&ss->xa, t->cursor_id);
		if (s && s->peer_id && s->state != AFRDMA_STREAM_CLOSED) {
			spin_lock_bh(&link->lock);
			s->cursor = t->cursor_value;
			afrdma_stream_queue_locked(ss, s,
						   AFRDMA_STREAM_SEND_CURSOR);
			afrdma_link_flush_locked(link);
			spin_unlock_bh(&link->lock);
		} else {
			err = -ENOENT;
		}
	}
	if (afrdma_stream_reap(link))
		err = -EIO;
	/* Our QP failed a registration: the link goes, as its work would. */
	if (err == -EIO || err == -ETIMEDOUT)
		afrdma_link_fail(link, err);
out:
	mutex_unlock(&link->mutex);
	return err;
}
