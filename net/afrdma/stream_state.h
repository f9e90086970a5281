/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The pure logic of a stream on a link (Documentation/links.rst, step 4):
 * its states and what each message does to them, the byte counts modulo
 * 2^32 that CURSOR and FIN carry, and whether an area a peer offers fits
 * its chunks.  No locks, no memory: stream.c keeps the rest.  Builds in
 * user space too, for tools/testing/stream.
 */
#ifndef _AFRDMA_STREAM_STATE_H
#define _AFRDMA_STREAM_STATE_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <linux/types.h>
#endif

/*
 * A stream's states, at one end.  The connector's begins in SYN_SENT (its
 * CONNECT queued or sent, or waiting to be sent again after BUSY), the
 * acceptor's in ESTABLISHED (it exists only once its ACCEPT is queued).
 * FIN_WAIT: this end stopped writing; CLOSE_WAIT: the peer did.  CLOSED:
 * both did, or a RESET went either way, or the CONNECT was refused; a
 * closed stream is freed once its last message went.
 */
enum afrdma_stream_state {
	AFRDMA_STREAM_SYN_SENT,
	AFRDMA_STREAM_ESTABLISHED,
	AFRDMA_STREAM_FIN_WAIT,
	AFRDMA_STREAM_CLOSE_WAIT,
	AFRDMA_STREAM_CLOSED,
	AFRDMA_STREAM_STATE_MAX
};

/* What happens to a stream: RX_* the peer's messages, TX_* our own. */
enum afrdma_stream_event {
	AFRDMA_STREAM_RX_ACCEPT,
	AFRDMA_STREAM_RX_REFUSE,	/* any reason; BUSY: the caller retries */
	AFRDMA_STREAM_RX_CURSOR,
	AFRDMA_STREAM_RX_FIN,
	AFRDMA_STREAM_RX_RESET,
	AFRDMA_STREAM_TX_FIN,
	AFRDMA_STREAM_TX_RESET,
	AFRDMA_STREAM_EVENT_MAX
};

/*
 * The state after @ev in @state: -EPROTO if the peer's message is not
 * allowed there (the stream is reset, the link goes on), -EINVAL if our
 * own is not (a caller's mistake; nothing changes).  A message for a
 * closed stream is -EPROTO too: the caller drops those that may cross a
 * RESET or a refusal (see stream.c) before asking.
 */
static inline int afrdma_stream_next(unsigned int state, unsigned int ev)
{
	if (state >= AFRDMA_STREAM_STATE_MAX || ev >= AFRDMA_STREAM_EVENT_MAX)
		return -EINVAL;
	if (state == AFRDMA_STREAM_CLOSED)
		return ev >= AFRDMA_STREAM_TX_FIN ? -EINVAL : -EPROTO;

	switch (ev) {
	case AFRDMA_STREAM_RX_ACCEPT:
		return state == AFRDMA_STREAM_SYN_SENT ?
		       AFRDMA_STREAM_ESTABLISHED : -EPROTO;
	case AFRDMA_STREAM_RX_REFUSE:
		return state == AFRDMA_STREAM_SYN_SENT ?
		       AFRDMA_STREAM_CLOSED : -EPROTO;
	case AFRDMA_STREAM_RX_CURSOR:
		/* a reader goes on consuming after either FIN */
		return state == AFRDMA_STREAM_SYN_SENT ? -EPROTO : (int)state;
	case AFRDMA_STREAM_RX_FIN:
		if (state == AFRDMA_STREAM_ESTABLISHED)
			return AFRDMA_STREAM_CLOSE_WAIT;
		if (state == AFRDMA_STREAM_FIN_WAIT)
			return AFRDMA_STREAM_CLOSED;
		return -EPROTO;
	case AFRDMA_STREAM_RX_RESET:
		/* CONNECT named our id: a peer may reset instead of refusing */
		return AFRDMA_STREAM_CLOSED;
	case AFRDMA_STREAM_TX_FIN:
		if (state == AFRDMA_STREAM_ESTABLISHED)
			return AFRDMA_STREAM_FIN_WAIT;
		if (state == AFRDMA_STREAM_CLOSE_WAIT)
			return AFRDMA_STREAM_CLOSED;
		return -EINVAL;
	case AFRDMA_STREAM_TX_RESET:
		return AFRDMA_STREAM_CLOSED;
	}
	return -EINVAL;
}

/*
 * Byte counts are u32 and wrap: only differences mean anything.  A writer
 * has written @written and the peer's reader consumed @acked of it; the
 * bytes in flight are written - acked, never more than the area.
 */
static inline __u32 afrdma_stream_in_flight(__u32 written, __u32 acked)
{
	return written - acked;
}

/*
 * A peer's CURSOR @cursor: the reader moved forward from @acked, and not
 * past what we wrote.  Both differences modulo 2^32, so it holds across
 * the wrap; a cursor that went back, or ahead of @written, is refused.
 */
static inline bool afrdma_stream_cursor_ok(__u32 acked, __u32 written,
					   __u32 cursor)
{
	return (__u32)(cursor - acked) <= (__u32)(written - acked);
}

/*
 * Room the writer has in an area of @size bytes (at most 2^31): what the
 * reader has not consumed takes its place.  0 if the counts are beyond
 * the area, which a checked cursor never makes them.
 */
static inline __u32 afrdma_stream_room(__u32 written, __u32 acked, __u32 size)
{
	__u32 used = written - acked;

	return used >= size ? 0 : size - used;
}

/*
 * A peer's FIN @fin: all it wrote, which must be all we received; a
 * writer cannot stop at a byte it never sent, nor send past its FIN.
 */
static inline bool afrdma_stream_fin_ok(__u32 received, __u32 fin)
{
	return fin == received;
}

/*
 * Whether an area a peer offers, 2^@order pages at @page, lies in a chunk
 * of 2^@chunk_order pages, the geometry the peer's HELLO announced: it
 * must start inside the chunk and be aligned to its size, and then it
 * ends inside too.
 */
static inline bool afrdma_stream_area_fits(unsigned int page,
					   unsigned int order,
					   unsigned int chunk_order)
{
	return order <= chunk_order && page < 1U << chunk_order &&
	       !(page & ((1U << order) - 1));
}

#endif /* _AFRDMA_STREAM_STATE_H */
