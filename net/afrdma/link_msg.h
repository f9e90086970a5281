/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The link control messages' wire format (Documentation/links.rst): the
 * rdma_cm private data of a link's connect request, and the small SENDs
 * the two ends of a link exchange.  This header is their only definition;
 * its parser builds in user space too (tools/testing/link_msg).
 *
 * Every message begins with struct afrdma_link_hdr.  @len is the whole
 * message's length and must be exactly its type's; @credits returns
 * receives the sender posted again since it last said so.  A message of a
 * type this version does not know, a wrong length, magic or version, or
 * a field out of range is a protocol error: the link goes, as a TCP
 * connection is reset.
 *
 * HELLO, first on each side once the connection is established, tells
 * the receives the sender had posted (the peer's first credits, of which
 * the peer's own HELLO used one), the chunk geometry of the memory it
 * will offer, and a random nonce naming this link instance.
 *
 * USE tells how many users (connections) the sender has on the link now.
 * A link expires only when neither end has had one for links_idle_s, so
 * an end sends USE when its count leaves or reaches zero; USE with an
 * unchanged count also carries credits back when nothing else would.
 *
 * The stream messages (links.rst, step 4) carry connections on the link.
 * A stream has an id at each end, chosen by that end, never 0; every
 * message names the receiver's id, but CONNECT, which names the sender's.
 * Each end offers the other an area of its chunks to RDMA WRITE its data
 * into (struct afrdma_link_area: 2^order pages at a page of a chunk,
 * aligned to their size); a WRITE's immediate is the receiver's stream id.
 *
 * CHUNK tells the rkey and address of one of the sender's chunks, before
 * any area in it is offered.  CONNECT asks for a stream to the receiver's
 * port, from the sender's, with the area the acceptor may write into;
 * ACCEPT answers it with the acceptor's id and area, REFUSE with a reason
 * (BUSY: the listener's queue is full, so the connector tries again, as a
 * TCP SYN is sent again).  CURSOR tells how many bytes of the receiver's
 * stream the sender's reader consumed, FIN how many the sender wrote in
 * all before it stopped writing, both counted modulo 2^32.  RESET ends a
 * stream at once.
 */
#ifndef _AFRDMA_LINK_MSG_H
#define _AFRDMA_LINK_MSG_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/types.h>
#include <asm/byteorder.h>
#define afrdma_lm_be16(x)	cpu_to_be16(x)
#define afrdma_lm_be32(x)	cpu_to_be32(x)
#define afrdma_lm_be64(x)	cpu_to_be64(x)
#define afrdma_lm_cpu16(x)	be16_to_cpu(x)
#define afrdma_lm_cpu32(x)	be32_to_cpu(x)
#define afrdma_lm_cpu64(x)	be64_to_cpu(x)
#else
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>
#define afrdma_lm_be16(x)	((__be16)htobe16(x))
#define afrdma_lm_be32(x)	((__be32)htobe32(x))
#define afrdma_lm_be64(x)	((__be64)htobe64(x))
#define afrdma_lm_cpu16(x)	be16toh((__u16)(x))
#define afrdma_lm_cpu32(x)	be32toh((__u32)(x))
#define afrdma_lm_cpu64(x)	be64toh((__u64)(x))
#endif

#define AFRDMA_LINK_MAGIC	0x41464c4b	/* "AFLK" */
#define AFRDMA_LINK_VERSION	1

/* What any peer must respect: a HELLO outside these is refused. */
#define AFRDMA_LINK_MIN_CREDITS		2
#define AFRDMA_LINK_MAX_CREDITS		1024
#define AFRDMA_LINK_MAX_CHUNK_ORDER	12	/* AFRDMA_AREA_MAX_CHUNK_ORDER */
#define AFRDMA_LINK_MAX_CHUNKS		(1U << 16)	/* AFRDMA_AREA_MAX_CHUNKS */
#define AFRDMA_LINK_MAX_USERS		(1U << 30)

/* The private data of a link's connect request and of its accept. */
struct afrdma_link_cm_priv {
	__be32	magic;
	__u8	version;
	__u8	reserved[3];
} __attribute__((packed));

enum afrdma_link_msg_type {
	AFRDMA_LINK_MSG_HELLO	= 1,
	AFRDMA_LINK_MSG_USE	= 2,
	AFRDMA_LINK_MSG_CHUNK	= 3,
	AFRDMA_LINK_MSG_CONNECT	= 4,
	AFRDMA_LINK_MSG_ACCEPT	= 5,
	AFRDMA_LINK_MSG_REFUSE	= 6,
	AFRDMA_LINK_MSG_CURSOR	= 7,
	AFRDMA_LINK_MSG_FIN	= 8,
	AFRDMA_LINK_MSG_RESET	= 9,
	AFRDMA_LINK_MSG_MAX
};

/* CONNECT's flags: the connecting socket's family is AF_INET6. */
#define AFRDMA_LINK_STREAM_V6	0x1
#define AFRDMA_LINK_STREAM_FLAGS	AFRDMA_LINK_STREAM_V6

/* Why a CONNECT was refused, or a stream reset. */
enum afrdma_link_reason {
	AFRDMA_LINK_NO_LISTENER	= 1,	/* ECONNREFUSED */
	AFRDMA_LINK_BUSY	= 2,	/* the queue is full: try again */
	AFRDMA_LINK_RESOURCES	= 3,	/* no memory for the stream */
	AFRDMA_LINK_PROTOCOL	= 4,	/* the stream broke the protocol */
	AFRDMA_LINK_ABORT	= 5,	/* closed with data unread, or SO_LINGER 0 */
	AFRDMA_LINK_REASON_MAX
};

struct afrdma_link_hdr {
	__be32	magic;
	__u8	version;
	__u8	type;		/* enum afrdma_link_msg_type */
	__be16	len;		/* the whole message, header included */
	__be16	credits;	/* receives posted again, returned */
	__be16	reserved;	/* 0; ignored */
	__be32	seq;		/* the sender's message count; for traces */
} __attribute__((packed));

struct afrdma_link_hello {
	struct afrdma_link_hdr	hdr;
	__be32	flags;		/* none yet; unknown ones are ignored */
	__be16	rx_credits;	/* receives posted, HELLO's own included */
	__u8	chunk_order;	/* chunks of 2^order pages ... */
	__u8	page_shift;	/* ... of 2^page_shift bytes */
	__be32	max_chunks;
	__be32	reserved;
	__be64	nonce;
} __attribute__((packed));

struct afrdma_link_use {
	struct afrdma_link_hdr	hdr;
	__be32	users;
	__be32	reserved;
} __attribute__((packed));

struct afrdma_link_chunk_msg {
	struct afrdma_link_hdr	hdr;
	__be32	chunk;		/* < the sender's HELLO's max_chunks */
	__be32	rkey;
	__be64	iova;		/* the chunk's first byte, for the rkey */
} __attribute__((packed));

/* An area of the sender's chunks that the receiver may write into. */
struct afrdma_link_area_wire {
	__be32	chunk;
	__be32	page;		/* its first page in the chunk */
	__u8	order;		/* 2^order pages; @page a multiple of that */
	__u8	reserved[3];
} __attribute__((packed));

struct afrdma_link_connect {
	struct afrdma_link_hdr	hdr;
	__be32	stream;		/* the sender's id */
	__be16	sport;
	__be16	dport;		/* the listener's port, never 0 */
	__be32	flags;		/* AFRDMA_LINK_STREAM_* */
	struct afrdma_link_area_wire area;
} __attribute__((packed));

struct afrdma_link_accept {
	struct afrdma_link_hdr	hdr;
	__be32	stream;		/* the receiver's (the connector's) id */
	__be32	peer_stream;	/* the sender's id */
	struct afrdma_link_area_wire area;
} __attribute__((packed));

/* REFUSE, CURSOR, FIN and RESET: a stream id and a value. */
struct afrdma_link_stream_msg {
	struct afrdma_link_hdr	hdr;
	__be32	stream;		/* the receiver's id */
	__be32	value;		/* a reason, or a byte count mod 2^32 */
} __attribute__((packed));

/* The largest message: a link's message buffers are this big. */
#define AFRDMA_LINK_MSG_SIZE	64

/* An area, parsed. */
struct afrdma_link_area {
	unsigned int	chunk;
	unsigned int	page;
	unsigned int	order;
};

/* A parsed message, in host order. */
struct afrdma_link_msg {
	unsigned int	type;
	unsigned int	credits;
	unsigned int	seq;
	union {
		struct {
			unsigned int	flags;
			unsigned int	rx_credits;
			unsigned int	chunk_order;
			unsigned int	page_shift;
			unsigned int	max_chunks;
			__u64		nonce;
		} hello;
		struct {
			unsigned int	users;
		} use;
		struct {
			unsigned int	chunk;
			unsigned int	rkey;
			__u64		iova;
		} chunk;
		struct {
			unsigned int	stream;
			unsigned int	sport;
			unsigned int	dport;
			unsigned int	flags;
			struct afrdma_link_area area;
		} connect;
		struct {
			unsigned int	stream;
			unsigned int	peer_stream;
			struct afrdma_link_area area;
		} accept;
		/* REFUSE, RESET: @value a reason; CURSOR, FIN: a byte count */
		struct {
			unsigned int	stream;
			unsigned int	value;
		} stream;
	};
};

static inline void afrdma_link_build_cm_priv(struct afrdma_link_cm_priv *p)
{
	memset(p, 0, sizeof(*p));
	p->magic = afrdma_lm_be32(AFRDMA_LINK_MAGIC);
	p->version = AFRDMA_LINK_VERSION;
}

/* 0 if @len bytes at @data are a link's connect private data. */
static inline int afrdma_link_parse_cm_priv(const void *data, size_t len)
{
	struct afrdma_link_cm_priv p;

	if (!data || len < sizeof(p))
		return -EPROTO;
	memcpy(&p, data, sizeof(p));
	if (afrdma_lm_cpu32(p.magic) != AFRDMA_LINK_MAGIC ||
	    p.version != AFRDMA_LINK_VERSION)
		return -EPROTO;
	return 0;
}

/* A message's exact length by type; 0 for a type this version lacks. */
static inline size_t afrdma_link_msg_len(unsigned int type)
{
	switch (type) {
	case AFRDMA_LINK_MSG_HELLO:
		return sizeof(struct afrdma_link_hello);
	case AFRDMA_LINK_MSG_USE:
		return sizeof(struct afrdma_link_use);
	case AFRDMA_LINK_MSG_CHUNK:
		return sizeof(struct afrdma_link_chunk_msg);
	case AFRDMA_LINK_MSG_CONNECT:
		return sizeof(struct afrdma_link_connect);
	case AFRDMA_LINK_MSG_ACCEPT:
		return sizeof(struct afrdma_link_accept);
	case AFRDMA_LINK_MSG_REFUSE:
	case AFRDMA_LINK_MSG_CURSOR:
	case AFRDMA_LINK_MSG_FIN:
	case AFRDMA_LINK_MSG_RESET:
		return sizeof(struct afrdma_link_stream_msg);
	}
	return 0;
}

static inline void afrdma_link_build_hdr(struct afrdma_link_hdr *h,
					 unsigned int type, unsigned int credits,
					 unsigned int seq)
{
	memset(h, 0, sizeof(*h));
	h->magic = afrdma_lm_be32(AFRDMA_LINK_MAGIC);
	h->version = AFRDMA_LINK_VERSION;
	h->type = type;
	h->len = afrdma_lm_be16(afrdma_link_msg_len(type));
	h->credits = afrdma_lm_be16(credits);
	h->seq = afrdma_lm_be32(seq);
}

static inline void afrdma_link_build_area(struct afrdma_link_area_wire *w,
					  const struct afrdma_link_area *a)
{
	w->chunk = afrdma_lm_be32(a->chunk);
	w->page = afrdma_lm_be32(a->page);
	w->order = a->order;
}

/*
 * Builds @m, of any type, in @buf (AFRDMA_LINK_MSG_SIZE bytes) with
 * @credits and @seq in its header; returns its length.
 */
static inline size_t afrdma_link_build_msg(void *buf, unsigned int credits,
					   unsigned int seq,
					   const struct afrdma_link_msg *m)
{
	struct afrdma_link_stream_msg *sm = buf;
	struct afrdma_link_chunk_msg *ch = buf;
	struct afrdma_link_connect *co = buf;
	struct afrdma_link_accept *ac = buf;
	struct afrdma_link_hello *h = buf;
	struct afrdma_link_use *u = buf;
	size_t len = afrdma_link_msg_len(m->type);

	memset(buf, 0, len);
	afrdma_link_build_hdr(buf, m->type, credits, seq);
	switch (m->type) {
	case AFRDMA_LINK_MSG_HELLO:
		h->flags = afrdma_lm_be32(m->hello.flags);
		h->rx_credits = afrdma_lm_be16(m->hello.rx_credits);
		h->chunk_order = m->hello.chunk_order;
		h->page_shift = m->hello.page_shift;
		h->max_chunks = afrdma_lm_be32(m->hello.max_chunks);
		h->nonce = afrdma_lm_be64(m->hello.nonce);
		break;
	case AFRDMA_LINK_MSG_USE:
		u->users = afrdma_lm_be32(m->use.users);
		break;
	case AFRDMA_LINK_MSG_CHUNK:
		ch->chunk = afrdma_lm_be32(m->chunk.chunk);
		ch->rkey = afrdma_lm_be32(m->chunk.rkey);
		ch->iova = afrdma_lm_be64(m->chunk.iova);
		break;
	case AFRDMA_LINK_MSG_CONNECT:
		co->stream = afrdma_lm_be32(m->connect.stream);
		co->sport = afrdma_lm_be16(m->connect.sport);
		co->dport = afrdma_lm_be16(m->connect.dport);
		co->flags = afrdma_lm_be32(m->connect.flags);
		afrdma_link_build_area(&co->area, &m->connect.area);
		break;
	case AFRDMA_LINK_MSG_ACCEPT:
		ac->stream = afrdma_lm_be32(m->accept.stream);
		ac->peer_stream = afrdma_lm_be32(m->accept.peer_stream);
		afrdma_link_build_area(&ac->area, &m->accept.area);
		break;
	case AFRDMA_LINK_MSG_REFUSE:
	case AFRDMA_LINK_MSG_CURSOR:
	case AFRDMA_LINK_MSG_FIN:
	case AFRDMA_LINK_MSG_RESET:
		sm->stream = afrdma_lm_be32(m->stream.stream);
		sm->value = afrdma_lm_be32(m->stream.value);
		break;
	}
	return len;
}

/* Builds a HELLO in @buf (AFRDMA_LINK_MSG_SIZE bytes); returns its length. */
static inline size_t afrdma_link_build_hello(void *buf, unsigned int credits,
					     unsigned int seq,
					     const struct afrdma_link_msg *m)
{
	struct afrdma_link_msg hello = *m;

	hello.type = AFRDMA_LINK_MSG_HELLO;
	return afrdma_link_build_msg(buf, credits, seq, &hello);
}

static inline size_t afrdma_link_build_use(void *buf, unsigned int credits,
					   unsigned int seq, unsigned int users)
{
	struct afrdma_link_msg m = { .type = AFRDMA_LINK_MSG_USE };

	m.use.users = users;
	return afrdma_link_build_msg(buf, credits, seq, &m);
}

/*
 * An area as a peer can offer it: inside a chunk of the largest geometry
 * any peer may have, aligned to its size.  Whether the chunk exists, and
 * is that big, is the link's to check against the peer's CHUNKs.
 */
static inline int afrdma_link_parse_area(const struct afrdma_link_area_wire *w,
					 struct afrdma_link_area *a)
{
	a->chunk = afrdma_lm_cpu32(w->chunk);
	a->page = afrdma_lm_cpu32(w->page);
	a->order = w->order;
	if (a->chunk >= AFRDMA_LINK_MAX_CHUNKS ||
	    a->order > AFRDMA_LINK_MAX_CHUNK_ORDER ||
	    a->page >= 1U << AFRDMA_LINK_MAX_CHUNK_ORDER ||
	    a->page & ((1U << a->order) - 1))
		return -EPROTO;
	return 0;
}

/*
 * Parses the @len bytes a peer sent at @buf into @m: 0, or -EPROTO for
 * anything this version does not accept.  @buf may be shorter than the
 * message it claims; nothing past @len is read.
 */
static inline int afrdma_link_parse(const void *buf, size_t len,
				    struct afrdma_link_msg *m)
{
	struct afrdma_link_stream_msg sm;
	struct afrdma_link_chunk_msg ch;
	struct afrdma_link_connect co;
	struct afrdma_link_accept ac;
	struct afrdma_link_hello hello;
	struct afrdma_link_use use;
	struct afrdma_link_hdr h;
	size_t want;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (afrdma_lm_cpu32(h.magic) != AFRDMA_LINK_MAGIC ||
	    h.version != AFRDMA_LINK_VERSION)
		return -EPROTO;
	want = afrdma_link_msg_len(h.type);
	if (!want || afrdma_lm_cpu16(h.len) != want || len != want)
		return -EPROTO;
	memset(m, 0, sizeof(*m));
	m->type = h.type;
	m->credits = afrdma_lm_cpu16(h.credits);
	m->seq = afrdma_lm_cpu32(h.seq);
	if (m->credits > AFRDMA_LINK_MAX_CREDITS)
		return -EPROTO;

	switch (h.type) {
	case AFRDMA_LINK_MSG_HELLO:
		memcpy(&hello, buf, sizeof(hello));
		m->hello.flags = afrdma_lm_cpu32(hello.flags);
		m->hello.rx_credits = afrdma_lm_cpu16(hello.rx_credits);
		m->hello.chunk_order = hello.chunk_order;
		m->hello.page_shift = hello.page_shift;
		m->hello.max_chunks = afrdma_lm_cpu32(hello.max_chunks);
		m->hello.nonce = afrdma_lm_cpu64(hello.nonce);
		if (m->hello.rx_credits < AFRDMA_LINK_MIN_CREDITS ||
		    m->hello.rx_credits > AFRDMA_LINK_MAX_CREDITS ||
		    m->hello.chunk_order > AFRDMA_LINK_MAX_CHUNK_ORDER ||
		    m->hello.page_shift < 12 || m->hello.page_shift > 16 ||
		    !m->hello.max_chunks ||
		    m->hello.max_chunks > AFRDMA_LINK_MAX_CHUNKS)
			return -EPROTO;
		break;
	case AFRDMA_LINK_MSG_USE:
		memcpy(&use, buf, sizeof(use));
		m->use.users = afrdma_lm_cpu32(use.users);
		if (m->use.users > AFRDMA_LINK_MAX_USERS)
			return -EPROTO;
		break;
	case AFRDMA_LINK_MSG_CHUNK:
		memcpy(&ch, buf, sizeof(ch));
		m->chunk.chunk = afrdma_lm_cpu32(ch.chunk);
		m->chunk.rkey = afrdma_lm_cpu32(ch.rkey);
		m->chunk.iova = afrdma_lm_cpu64(ch.iova);
		if (m->chunk.chunk >= AFRDMA_LINK_MAX_CHUNKS)
			return -EPROTO;
		break;
	case AFRDMA_LINK_MSG_CONNECT:
		memcpy(&co, buf, sizeof(co));
		m->connect.stream = afrdma_lm_cpu32(co.stream);
		m->connect.sport = afrdma_lm_cpu16(co.sport);
		m->connect.dport = afrdma_lm_cpu16(co.dport);
		m->connect.flags = afrdma_lm_cpu32(co.flags);
		if (!m->connect.stream || !m->connect.dport ||
		    m->connect.flags & ~AFRDMA_LINK_STREAM_FLAGS ||
		    afrdma_link_parse_area(&co.area, &m->connect.area))
			return -EPROTO;
		break;
	case AFRDMA_LINK_MSG_ACCEPT:
		memcpy(&ac, buf, sizeof(ac));
		m->accept.stream = afrdma_lm_cpu32(ac.stream);
		m->accept.peer_stream = afrdma_lm_cpu32(ac.peer_stream);
		if (!m->accept.stream || !m->accept.peer_stream ||
		    afrdma_link_parse_area(&ac.area, &m->accept.area))
			return -EPROTO;
		break;
	case AFRDMA_LINK_MSG_REFUSE:
	case AFRDMA_LINK_MSG_CURSOR:
	case AFRDMA_LINK_MSG_FIN:
	case AFRDMA_LINK_MSG_RESET:
		memcpy(&sm, buf, sizeof(sm));
		m->stream.stream = afrdma_lm_cpu32(sm.stream);
		m->stream.value = afrdma_lm_cpu32(sm.value);
		if (!m->stream.stream)
			return -EPROTO;
		if ((h.type == AFRDMA_LINK_MSG_REFUSE ||
		     h.type == AFRDMA_LINK_MSG_RESET) &&
		    (!m->stream.value || m->stream.value >= AFRDMA_LINK_REASON_MAX))
			return -EPROTO;
		break;
	}
	return 0;
}

#endif /* _AFRDMA_LINK_MSG_H */
