/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Streams (Documentation/links.rst, step 4b): connections multiplexed on
 * a link, their ids, areas and lifecycle (connect, accept, refuse, FIN,
 * reset) in the link's stream messages (link_msg.h).  The socket layer
 * does not use them yet; AFRDMA_CMD_LINK_TEST does (nl_link.c).
 */
#ifndef _AFRDMA_STREAM_H
#define _AFRDMA_STREAM_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "link_area.h"
#include "link_msg.h"
#include "stream_state.h"

/*
 * CONNECTs a connector has unanswered on a link; more wait their turn.
 * An acceptor that holds more than this unanswered (received, answer not
 * yet sent) has a peer that broke the rule: the link goes.  This also
 * sizes the acceptor's queue of refusals, which therefore never fills.
 */
#define AFRDMA_STREAM_SYN_MAX		32
/* After BUSY, a CONNECT goes again after 1 s, doubling, 6 times (as SYNs) */
#define AFRDMA_STREAM_SYN_RTO_MS	1000
#define AFRDMA_STREAM_SYN_RETRIES	6
/*
 * Stream messages received, not yet handled by the link's work: their
 * credits go back only once handled, so never more than the receives a
 * link posts (AFRDMA_LINK_RX; stream.c checks).
 */
#define AFRDMA_STREAM_RXQ		16
/* Chunks of our own a link may have to announce (AFRDMA_LINK_CHUNKS) */
#define AFRDMA_STREAM_CHUNKS		64
/* An idle stream's receive area: 2^0 pages */
#define AFRDMA_STREAM_AREA_ORDER	0

struct afrdma_link;
struct afrdma_link_net;
struct afrdma_link_info;

/* What the link's flush has to send for a stream: bits of tx_pending, in order. */
enum {
	AFRDMA_STREAM_SEND_CONNECT,
	AFRDMA_STREAM_SEND_ACCEPT,
	AFRDMA_STREAM_SEND_CURSOR,
	AFRDMA_STREAM_SEND_FIN,
	AFRDMA_STREAM_SEND_RESET,
};

/*
 * A listening port (step 4b: only the test interface's).  Listed in its
 * namespace's ln->stream_listeners while it listens; each stream it took
 * holds a reference.  @backlog and @queued are under ln->lock; @queued
 * counts its streams not yet taken by their owner (the half-open ones:
 * the test listener never takes them), bounded by @backlog and by
 * net.afrdma.max_half_open.
 */
struct afrdma_stream_listener {
	struct list_head	node;
	struct kref		ref;
	u16			port;
	unsigned int		backlog;
	unsigned int		queued;
};

/*
 * One stream at one end of a link.
 *
 * Locking: the link's @mutex covers the stream's life and every field but
 * the last group: the link's work (handling the peer's messages) and the
 * test interface change streams under it only.  The link's @lock (BH)
 * covers @tx_pending and @tx_node, which the flush takes in softirq; the
 * fields the flush reads to build a message (@id, @peer_id, @sport,
 * @dport, @area, @reset_reason, @cursor, @tx_bytes) are set before their
 * bit is, under @lock too.  A stream is freed under @mutex once closed
 * and with nothing left to send.
 */
struct afrdma_stream {
	u32			id;		/* ours, in streams->xa; never 0 */
	u32			peer_id;	/* 0 until ACCEPT, at the connector */
	u8			state;		/* AFRDMA_STREAM_* */
	bool			passive;	/* the peer connected */
	bool			area_held;
	bool			abort;		/* reset while SYN_SENT */
	bool			half_open;	/* in listener->queued */
	bool			syn_out;	/* in streams->syn_out */
	u16			sport;
	u16			dport;
	u16			retries;	/* CONNECTs sent again after BUSY */
	int			error;		/* why it closed */
	struct afrdma_area	area;		/* ours: the peer writes here */
	struct afrdma_link_area	peer_area;	/* the peer's: we write there */
	u32			tx_bytes;	/* written, mod 2^32 (step 4c) */
	u32			tx_acked;	/* the peer's last CURSOR */
	u32			rx_bytes;	/* received, mod 2^32 (step 4c) */
	unsigned long		retry_at;	/* jiffies, on @retry_node */
	struct list_head	node;		/* syn_wait, retry or reap */
	struct afrdma_stream_listener *listener; /* the acceptor's, held */

	/* under the link's @lock */
	unsigned long		tx_pending;	/* AFRDMA_STREAM_SEND_* */
	struct list_head	tx_node;	/* streams->tx, if pending */
	u32			reset_reason;
	u32			cursor;		/* CURSOR's value */
};

/* A chunk, as a CHUNK message tells it. */
struct afrdma_stream_chunk {
	u32			rkey;
	u64			iova;
};

/* A REFUSE to send for a CONNECT that got no stream. */
struct afrdma_stream_refusal {
	u32			peer_id;
	u32			reason;
};

/*
 * A link's streams, in struct afrdma_link.
 *
 * Locking: @xa (allocating ids from 1, cyclically: an id comes back only
 * after 2^32 - 1 others) and the lists @syn_wait, @retry and @reap,
 * @syn_out, @next_id and @peer_chunks are under the link's @mutex.  The
 * rest is under the link's @lock: the queue of the peer's messages for
 * the work (@rxq, filled in softirq), what the flush sends (@tx,
 * @refusals, @chunk_new), @syn_unanswered and the counters the listing
 * reads.
 */
struct afrdma_link_streams {
	struct xarray		xa;		/* id -> struct afrdma_stream */
	u32			next_id;	/* xa_alloc_cyclic()'s */
	struct xarray		peer_chunks;	/* chunk -> struct afrdma_stream_chunk */
	unsigned int		syn_out;	/* our CONNECTs unanswered */
	struct list_head	syn_wait;	/* CONNECTs past AFRDMA_STREAM_SYN_MAX */
	struct list_head	retry;		/* after BUSY, by retry_at */
	struct list_head	reap;		/* closed, maybe still sending */
	struct delayed_work	retry_work;

	/* under the link's @lock */
	struct afrdma_link_msg	rxq[AFRDMA_STREAM_RXQ];
	unsigned int		rxq_head;
	unsigned int		rxq_tail;
	struct list_head	tx;		/* streams with tx_pending */
	struct afrdma_stream_refusal refusals[AFRDMA_STREAM_SYN_MAX];
	unsigned int		ref_head;
	unsigned int		ref_tail;
	unsigned int		syn_unanswered;	/* the peer's CONNECTs */
	DECLARE_BITMAP(chunk_new, AFRDMA_STREAM_CHUNKS); /* CHUNK to send */
	struct afrdma_stream_chunk own[AFRDMA_STREAM_CHUNKS]; /* what it says */
	unsigned int		count;		/* streams, any state */
	unsigned int		established;	/* ESTABLISHED, FIN_WAIT, CLOSE_WAIT */
	unsigned int		connecting;	/* SYN_SENT */
	unsigned int		half_open;	/* not taken by their listener */
	u64			opened;		/* became established */
	u64			refused;	/* our CONNECTs refused */
	u64			busy;		/* BUSY answers to ours */
	u64			resets;		/* ended by a RESET, either way */
	u64			fins;		/* ended by FINs both ways */
	u64			errors;		/* reset for the peer's protocol error */
};

/* The AFRDMA_CMD_LINK_TEST requests on streams, each < 0 if not asked. */
struct afrdma_stream_test {
	int			listen_port;	/* with backlog; backlog 0 stops */
	int			backlog;
	int			connect_port;	/* with count */
	int			count;
	s64			first_id;	/* ids of the next streams from */
	s64			reset_id;
	s64			fin_id;		/* 0: every stream */
	s64			cursor_id;	/* with cursor_value */
	s64			cursor_value;
};

void afrdma_streams_init(struct afrdma_link *link);
void afrdma_streams_destroy(struct afrdma_link *link);
int afrdma_stream_rx_locked(struct afrdma_link *link,
			    const struct afrdma_link_msg *m);
bool afrdma_stream_tx_locked(struct afrdma_link *link,
			     struct afrdma_link_msg *m);
void afrdma_stream_chunk_added_locked(struct afrdma_link *link,
				      unsigned int c, u32 rkey, u64 iova);
void afrdma_stream_chunk_removed_locked(struct afrdma_link *link,
					unsigned int c);
int afrdma_stream_work(struct afrdma_link *link);
void afrdma_stream_info_locked(struct afrdma_link *link,
			       struct afrdma_link_info *info);
void afrdma_stream_listeners_flush(struct afrdma_link_net *ln);
int afrdma_stream_test_listen(struct afrdma_link_net *ln,
			      const struct afrdma_stream_test *t);
int afrdma_stream_test(struct afrdma_link *link,
		       const struct afrdma_stream_test *t);

#endif /* _AFRDMA_STREAM_H */
