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
	AFRDMA_LINK_MSG_MAX
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

/* The largest message: a link's message buffers are this big. */
#define AFRDMA_LINK_MSG_SIZE	64

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

/* Builds a HELLO in @buf (AFRDMA_LINK_MSG_SIZE bytes); returns its length. */
static inline size_t afrdma_link_build_hello(void *buf, unsigned int credits,
					     unsigned int seq,
					     const struct afrdma_link_msg *m)
{
	struct afrdma_link_hello *h = buf;

	memset(h, 0, sizeof(*h));
	afrdma_link_build_hdr(&h->hdr, AFRDMA_LINK_MSG_HELLO, credits, seq);
	h->flags = afrdma_lm_be32(m->hello.flags);
	h->rx_credits = afrdma_lm_be16(m->hello.rx_credits);
	h->chunk_order = m->hello.chunk_order;
	h->page_shift = m->hello.page_shift;
	h->max_chunks = afrdma_lm_be32(m->hello.max_chunks);
	h->nonce = afrdma_lm_be64(m->hello.nonce);
	return sizeof(*h);
}

static inline size_t afrdma_link_build_use(void *buf, unsigned int credits,
					   unsigned int seq, unsigned int users)
{
	struct afrdma_link_use *u = buf;

	memset(u, 0, sizeof(*u));
	afrdma_link_build_hdr(&u->hdr, AFRDMA_LINK_MSG_USE, credits, seq);
	u->users = afrdma_lm_be32(users);
	return sizeof(*u);
}

/*
 * Parses the @len bytes a peer sent at @buf into @m: 0, or -EPROTO for
 * anything this version does not accept.  @buf may be shorter than the
 * message it claims; nothing past @len is read.
 */
static inline int afrdma_link_parse(const void *buf, size_t len,
				    struct afrdma_link_msg *m)
{
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
	}
	return 0;
}

#endif /* _AFRDMA_LINK_MSG_H */
