/* SPDX-License-Identifier: GPL-2.0 */
/*
 * afrdma tracepoints, in /sys/kernel/tracing/events/afrdma/.  Included by
 * afrdma.h after its structures; trace.c instantiates them.  The hooks in
 * the other files are one line each: what takes a lock or a decision is in
 * trace.c.
 */
#ifndef _AFRDMA_TRACE_HELPERS_H
#define _AFRDMA_TRACE_HELPERS_H

/* Why a connection was reset: afrdma_reset's cause. */
enum afrdma_reset_cause {
	AFRDMA_RST_PEER,	/* peer disconnected without a FIN */
	/* close() with unread data or SO_LINGER 0; a killed READ (rzc.c) */
	AFRDMA_RST_LOCAL,
	AFRDMA_RST_DEVICE,	/* the RDMA device went away */
	AFRDMA_RST_ERROR,	/* completion or protocol error, dead peer */
	AFRDMA_RST_READ_STALL,	/* a recv's READs made no progress (rzc.c) */
};

void afrdma_set_state(struct sock *sk, int state);
void afrdma_trace_close(struct sock *sk, const struct afrdma_conn *conn);
void afrdma_trace_stall(struct afrdma_conn *conn);

/* The caller of the function that resets, for afrdma_reset's "caller". */
#define afrdma_trace_reset(sk, err, cause) \
	trace_afrdma_reset(sk, err, cause, _RET_IP_)

#endif /* _AFRDMA_TRACE_HELPERS_H */

#undef TRACE_SYSTEM
#define TRACE_SYSTEM afrdma

#if !defined(_AFRDMA_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _AFRDMA_TRACE_H

#include <linux/tracepoint.h>
#include <net/tcp_states.h>

TRACE_DEFINE_ENUM(TCP_ESTABLISHED);
TRACE_DEFINE_ENUM(TCP_SYN_SENT);
TRACE_DEFINE_ENUM(TCP_SYN_RECV);
TRACE_DEFINE_ENUM(TCP_CLOSE);
TRACE_DEFINE_ENUM(TCP_LISTEN);
TRACE_DEFINE_ENUM(TCP_CLOSE_WAIT);
TRACE_DEFINE_ENUM(AFRDMA_TRANSPORT_NONE);
TRACE_DEFINE_ENUM(AFRDMA_TRANSPORT_RDMA);
TRACE_DEFINE_ENUM(AFRDMA_TRANSPORT_TCP);
TRACE_DEFINE_ENUM(AFRDMA_FB_NONE);
TRACE_DEFINE_ENUM(AFRDMA_FB_NO_DEVICE);
TRACE_DEFINE_ENUM(AFRDMA_FB_NO_ROUTE);
TRACE_DEFINE_ENUM(AFRDMA_FB_UNREACHABLE);
TRACE_DEFINE_ENUM(AFRDMA_FB_REJECTED);
TRACE_DEFINE_ENUM(AFRDMA_FB_RESOURCES);
TRACE_DEFINE_ENUM(AFRDMA_FB_PROTOCOL);
TRACE_DEFINE_ENUM(AFRDMA_FB_TIMEOUT);
TRACE_DEFINE_ENUM(AFRDMA_FB_PEER_TCP);
TRACE_DEFINE_ENUM(AFRDMA_RST_PEER);
TRACE_DEFINE_ENUM(AFRDMA_RST_LOCAL);
TRACE_DEFINE_ENUM(AFRDMA_RST_DEVICE);
TRACE_DEFINE_ENUM(AFRDMA_RST_ERROR);
TRACE_DEFINE_ENUM(AFRDMA_RST_READ_STALL);

#define afrdma_show_state(s)					\
	__print_symbolic(s,					\
			 { TCP_ESTABLISHED, "ESTABLISHED" },	\
			 { TCP_SYN_SENT, "SYN_SENT" },		\
			 { TCP_SYN_RECV, "SYN_RECV" },		\
			 { TCP_CLOSE, "CLOSE" },		\
			 { TCP_CLOSE_WAIT, "CLOSE_WAIT" },	\
			 { TCP_LISTEN, "LISTEN" })

#define afrdma_show_transport(t)				\
	__print_symbolic(t,					\
			 { AFRDMA_TRANSPORT_NONE, "none" },	\
			 { AFRDMA_TRANSPORT_RDMA, "rdma" },	\
			 { AFRDMA_TRANSPORT_TCP, "tcp" })

#define afrdma_show_reason(r)					\
	__print_symbolic(r,					\
			 { AFRDMA_FB_NONE, "none" },		\
			 { AFRDMA_FB_NO_DEVICE, "no_device" },	\
			 { AFRDMA_FB_NO_ROUTE, "no_route" },	\
			 { AFRDMA_FB_UNREACHABLE, "unreachable" }, \
			 { AFRDMA_FB_REJECTED, "rejected" },	\
			 { AFRDMA_FB_RESOURCES, "resources" },	\
			 { AFRDMA_FB_PROTOCOL, "protocol" },	\
			 { AFRDMA_FB_TIMEOUT, "timeout" },	\
			 { AFRDMA_FB_PEER_TCP, "peer_tcp" })

#define afrdma_show_cause(c)					\
	__print_symbolic(c,					\
			 { AFRDMA_RST_PEER, "peer" },		\
			 { AFRDMA_RST_LOCAL, "local" },		\
			 { AFRDMA_RST_DEVICE, "device" },	\
			 { AFRDMA_RST_ERROR, "error" },		\
			 { AFRDMA_RST_READ_STALL, "read_stall" })

/* A socket's state moved; see afrdma_set_state(). */
TRACE_EVENT(afrdma_state,
	TP_PROTO(const struct sock *sk, int oldstate, int newstate),
	TP_ARGS(sk, oldstate, newstate),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(int, oldstate)
		__field(int, newstate)
		__field(u8, transport)
	),
	TP_fast_assign(
		__entry->skaddr = sk;
		__entry->oldstate = oldstate;
		__entry->newstate = newstate;
		__entry->transport = READ_ONCE(afrdma_sk(sk)->transport);
	),
	TP_printk("sk=%p %s -> %s transport=%s", __entry->skaddr,
		  afrdma_show_state(__entry->oldstate),
		  afrdma_show_state(__entry->newstate),
		  afrdma_show_transport(__entry->transport))
);

/*
 * A connect or an accept ended: established over RDMA or TCP (@err 0) or
 * failed.  @src and @dst: sockaddr_in or sockaddr_in6, zeroed if unknown.
 */
DECLARE_EVENT_CLASS(afrdma_open_class,
	TP_PROTO(const struct sock *sk, const struct sockaddr_in6 *src,
		 const struct sockaddr_in6 *dst, int err),
	TP_ARGS(sk, src, dst, err),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__array(u8, saddr, sizeof(struct sockaddr_in6))
		__array(u8, daddr, sizeof(struct sockaddr_in6))
		__field(u8, transport)
		__field(u8, reason)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->skaddr = sk;
		memcpy(__entry->saddr, src, sizeof(*src));
		memcpy(__entry->daddr, dst, sizeof(*dst));
		__entry->transport = READ_ONCE(afrdma_sk(sk)->transport);
		__entry->reason = READ_ONCE(afrdma_sk(sk)->fb_reason);
		__entry->err = err;
	),
	TP_printk("sk=%p src=%pISpc dst=%pISpc transport=%s reason=%s err=%d",
		  __entry->skaddr, __entry->saddr, __entry->daddr,
		  afrdma_show_transport(__entry->transport),
		  afrdma_show_reason(__entry->reason), __entry->err)
);

DEFINE_EVENT(afrdma_open_class, afrdma_connect,
	TP_PROTO(const struct sock *sk, const struct sockaddr_in6 *src,
		 const struct sockaddr_in6 *dst, int err),
	TP_ARGS(sk, src, dst, err)
);

DEFINE_EVENT(afrdma_open_class, afrdma_accept,
	TP_PROTO(const struct sock *sk, const struct sockaddr_in6 *src,
		 const struct sockaddr_in6 *dst, int err),
	TP_ARGS(sk, src, dst, err)
);

/* A connecting socket goes over TCP instead, for @reason (AFRDMA_FB_*). */
TRACE_EVENT(afrdma_fallback,
	TP_PROTO(const struct sock *sk, int reason),
	TP_ARGS(sk, reason),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__array(u8, daddr, sizeof(struct sockaddr_in6))
		__field(int, reason)
	),
	TP_fast_assign(
		__entry->skaddr = sk;
		memcpy(__entry->daddr, &afrdma_sk(sk)->daddr,
		       sizeof(__entry->daddr));
		__entry->reason = reason;
	),
	TP_printk("sk=%p dst=%pISpc reason=%s", __entry->skaddr,
		  __entry->daddr, afrdma_show_reason(__entry->reason))
);

/* A connection ended abortively; @caller is who decided. */
TRACE_EVENT(afrdma_reset,
	TP_PROTO(const struct sock *sk, int err, int cause,
		 unsigned long caller),
	TP_ARGS(sk, err, cause, caller),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(unsigned long, caller)
		__field(int, err)
		__field(int, cause)
		__field(int, state)
	),
	TP_fast_assign(
		__entry->skaddr = sk;
		__entry->caller = caller;
		__entry->err = err;
		__entry->cause = cause;
		__entry->state = READ_ONCE(sk->sk_state);
	),
	TP_printk("sk=%p cause=%s err=%d state=%s caller=%pS",
		  __entry->skaddr, afrdma_show_cause(__entry->cause),
		  __entry->err, afrdma_show_state(__entry->state),
		  (void *)__entry->caller)
);

/* A sender found no send credit: the peer's receive ring is full. */
TRACE_EVENT(afrdma_credit_stall,
	TP_PROTO(const struct sock *sk, unsigned int credits,
		 unsigned int inflight, unsigned int slots,
		 unsigned int unacked, unsigned int peer_slots),
	TP_ARGS(sk, credits, inflight, slots, unacked, peer_slots),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(unsigned int, credits)
		__field(unsigned int, inflight)
		__field(unsigned int, slots)
		__field(unsigned int, unacked)
		__field(unsigned int, peer_slots)
	),
	TP_fast_assign(
		__entry->skaddr = sk;
		__entry->credits = credits;
		__entry->inflight = inflight;
		__entry->slots = slots;
		__entry->unacked = unacked;
		__entry->peer_slots = peer_slots;
	),
	TP_printk("sk=%p credits=%u inflight=%u slots=%u unacked=%u peer_slots=%u",
		  __entry->skaddr, __entry->credits, __entry->inflight,
		  __entry->slots, __entry->unacked, __entry->peer_slots)
);

/* A ring of buffers doubled: @rx the receive ring, else the send ring. */
TRACE_EVENT_CONDITION(afrdma_ring_grow,
	TP_PROTO(const struct sock *sk, bool rx, unsigned int from,
		 unsigned int to, unsigned int max),
	TP_ARGS(sk, rx, from, to, max),
	TP_CONDITION(to > from),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(bool, rx)
		__field(unsigned int, from)
		__field(unsigned int, to)
		__field(unsigned int, max)
	),
	TP_fast_assign(
		__entry->skaddr = sk;
		__entry->rx = rx;
		__entry->from = from;
		__entry->to = to;
		__entry->max = max;
	),
	TP_printk("sk=%p ring=%s slots=%u -> %u max=%u", __entry->skaddr,
		  __entry->rx ? "rx" : "tx", __entry->from, __entry->to,
		  __entry->max)
);

/*
 * Receive zero-copy (rzc.c): a region offered with SRCAVAIL, READ by the
 * receiver (into the caller's pages, or a bounce buffer), and invalidated
 * once the peer's RDDONE came.
 */
DECLARE_EVENT_CLASS(afrdma_rzc_class,
	TP_PROTO(const struct sock *sk, unsigned int len, u32 rkey, u64 addr,
		 bool direct),
	TP_ARGS(sk, len, rkey, addr, direct),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(u64, addr)
		__field(unsigned int, len)
		__field(u32, rkey)
		__field(bool, direct)
	),
	TP_fast_assign(
		__entry->skaddr = sk;
		__entry->addr = addr;
		__entry->len = len;
		__entry->rkey = rkey;
		__entry->direct = direct;
	),
	TP_printk("sk=%p len=%u rkey=0x%x addr=0x%llx%s", __entry->skaddr,
		  __entry->len, __entry->rkey, __entry->addr,
		  __entry->direct ? " direct" : "")
);

DEFINE_EVENT(afrdma_rzc_class, afrdma_rzc_offer,
	TP_PROTO(const struct sock *sk, unsigned int len, u32 rkey, u64 addr,
		 bool direct),
	TP_ARGS(sk, len, rkey, addr, direct)
);

DEFINE_EVENT(afrdma_rzc_class, afrdma_rzc_read,
	TP_PROTO(const struct sock *sk, unsigned int len, u32 rkey, u64 addr,
		 bool direct),
	TP_ARGS(sk, len, rkey, addr, direct)
);

DEFINE_EVENT(afrdma_rzc_class, afrdma_rzc_inval,
	TP_PROTO(const struct sock *sk, unsigned int len, u32 rkey, u64 addr,
		 bool direct),
	TP_ARGS(sk, len, rkey, addr, direct)
);

/* The ib_client saw an RDMA device come or go. */
DECLARE_EVENT_CLASS(afrdma_device_class,
	TP_PROTO(const struct ib_device *ibdev),
	TP_ARGS(ibdev),
	TP_STRUCT__entry(
		__array(char, name, IB_DEVICE_NAME_MAX)
		__field(u32, ports)
	),
	TP_fast_assign(
		strscpy(__entry->name, dev_name(&ibdev->dev),
			sizeof(__entry->name));
		__entry->ports = ibdev->phys_port_cnt;
	),
	TP_printk("device=%s ports=%u", __entry->name, __entry->ports)
);

DEFINE_EVENT(afrdma_device_class, afrdma_device_add,
	TP_PROTO(const struct ib_device *ibdev),
	TP_ARGS(ibdev)
);

DEFINE_EVENT(afrdma_device_class, afrdma_device_remove,
	TP_PROTO(const struct ib_device *ibdev),
	TP_ARGS(ibdev)
);

#define AFRDMA_TRACE_HDR	(sizeof(struct afrdma_msg_hdr) + \
				 sizeof(struct afrdma_srcavail))

/*
 * A peer broke the protocol: the message's first bytes as received (the
 * header, and a SRCAVAIL's region), @bytes its length; a reset follows.
 */
TRACE_EVENT(afrdma_proto_error,
	TP_PROTO(const struct sock *sk, const void *buf, unsigned int bytes),
	TP_ARGS(sk, buf, bytes),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__array(u8, hdr, AFRDMA_TRACE_HDR)
		__field(unsigned int, bytes)
		__field(u8, type)
		__field(u8, flags)
		__field(u16, credits)
		__field(u32, len)
	),
	TP_fast_assign(
		const struct afrdma_msg_hdr *h = (const void *)__entry->hdr;

		__entry->skaddr = sk;
		memset(__entry->hdr, 0, sizeof(__entry->hdr));
		memcpy(__entry->hdr, buf, min_t(unsigned int, bytes,
						sizeof(__entry->hdr)));
		__entry->bytes = bytes;
		__entry->type = h->type;
		__entry->flags = h->flags;
		__entry->credits = be16_to_cpu(h->credits);
		__entry->len = be32_to_cpu(h->len);
	),
	TP_printk("sk=%p bytes=%u type=%u flags=0x%x credits=%u len=%u hdr=%s",
		  __entry->skaddr, __entry->bytes, __entry->type,
		  __entry->flags, __entry->credits, __entry->len,
		  __print_hex(__entry->hdr, AFRDMA_TRACE_HDR))
);

#endif /* _AFRDMA_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
