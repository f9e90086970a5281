/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * afrdma user API: stream sockets carried over RDMA reliable-connected
 * queue pairs.
 *
 * Two ways in, both taking struct sockaddr_in / sockaddr_in6 whose family
 * field is AF_INET or AF_INET6:
 *
 *	socket(AF_RDMA, SOCK_STREAM, 0);
 *	socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_RDMA);
 *
 * The second form needs no header at all, so any language can use it.
 * Both numbers are module parameters; the values below are the defaults.
 * The values in effect are in /sys/module/afrdma/parameters/{family,ipproto}.
 */
#ifndef _UAPI_LINUX_AFRDMA_H
#define _UAPI_LINUX_AFRDMA_H

#include <linux/types.h>

/*
 * AF_WANPIPE's number: reserved in linux/socket.h, but no mainline module
 * registers it.  Never AF_IB (27), which rdma_cm addresses use.
 */
#define AFRDMA_FAMILY_DEFAULT	25
#ifndef AF_RDMA
#define AF_RDMA			AFRDMA_FAMILY_DEFAULT
#define PF_RDMA			AF_RDMA
#endif

/* 256 is IPPROTO_SMC, 262 IPPROTO_MPTCP: the module takes 257-261. */
#define AFRDMA_IPPROTO_MIN	257
#define AFRDMA_IPPROTO_MAX	261
#define AFRDMA_IPPROTO_DEFAULT	257
#ifndef IPPROTO_RDMA
#define IPPROTO_RDMA		AFRDMA_IPPROTO_DEFAULT
#endif

/* Socket level for afrdma's own options. */
#ifndef SOL_RDMA
#define SOL_RDMA		299
#endif

/*
 * SOL_RDMA options, all int-valued.
 *
 * AFRDMA_FALLBACK: 1 lets the socket carry its connection over TCP when
 * RDMA cannot (the default is net.afrdma.fallback).  Set it before connect()
 * or listen().  A listener with fallback also accepts plain TCP clients on
 * its port.
 *
 * AFRDMA_TRANSPORT (read only): AFRDMA_TRANSPORT_*, what carries the
 * socket now.
 *
 * AFRDMA_FALLBACK_REASON (read only): AFRDMA_FB_*, why a socket whose
 * transport is AFRDMA_TRANSPORT_TCP is not on RDMA.
 *
 * AFRDMA_ZEROCOPY: the same switch as SO_ZEROCOPY, for kernels that refuse
 * SO_ZEROCOPY at SOL_SOCKET for anything but TCP, UDP and RDS (6.1).
 * Notifications then arrive on the error queue exactly as TCP sends them.
 */
#define AFRDMA_FALLBACK		1
#define AFRDMA_TRANSPORT	2
#define AFRDMA_FALLBACK_REASON	3
#define AFRDMA_ZEROCOPY		4

enum {
	AFRDMA_TRANSPORT_NONE	= 0,	/* not connected yet */
	AFRDMA_TRANSPORT_RDMA	= 1,
	AFRDMA_TRANSPORT_TCP	= 2,
};

enum {
	AFRDMA_FB_NONE		= 0,
	AFRDMA_FB_NO_DEVICE	= 1,	/* no RDMA device reaches the peer */
	AFRDMA_FB_NO_ROUTE	= 2,	/* RDMA route resolution failed */
	AFRDMA_FB_UNREACHABLE	= 3,	/* the peer's RDMA CM did not answer */
	AFRDMA_FB_REJECTED	= 4,	/* the peer refused RDMA (no afrdma listener) */
	AFRDMA_FB_RESOURCES	= 5,	/* local QP or buffer setup failed */
	AFRDMA_FB_PROTOCOL	= 6,	/* the peer answered, but not as afrdma */
	AFRDMA_FB_TIMEOUT	= 7,	/* RDMA setup outlasted fallback_timeout_ms */
	AFRDMA_FB_PEER_TCP	= 8,	/* accepted: the client came over plain TCP */
	AFRDMA_FB_MAX
};

/*
 * Socket diagnostics over NETLINK_SOCK_DIAG (net/afrdma/nl_diag.c), the way
 * smc_diag serves AF_SMC: a SOCK_DIAG_BY_FAMILY dump request (NLM_F_DUMP)
 * whose sdiag_family is AF_RDMA's number in effect lists every afrdma
 * socket of the requester's network namespace, those made with AF_RDMA and
 * those made with IPPROTO_RDMA under AF_INET or AF_INET6 alike.
 *
 * A filter field of zero matches everything.  adiag_states is a mask of
 * 1 << TCP_* (TCP_ESTABLISHED, TCP_SYN_SENT, TCP_SYN_RECV, TCP_LISTEN,
 * TCP_CLOSE); adiag_family is the family the socket was made with.
 */
struct afrdma_diag_req {
	__u8	sdiag_family;		/* AF_RDMA's number in effect */
	__u8	sdiag_protocol;		/* 0 */
	__u8	adiag_family;		/* AF_INET, AF_INET6, AF_RDMA's, or 0 */
	__u8	adiag_pad;
	__u32	adiag_states;		/* 1 << TCP_*, or 0 */
	__be16	adiag_sport;		/* local port, or 0 */
	__be16	adiag_dport;		/* peer port, or 0 */
};

/* One per socket, followed by AFRDMA_DIAG_* attributes. */
struct afrdma_diag_msg {
	__u8	adiag_family;		/* as in the request */
	__u8	adiag_state;		/* TCP_* */
	__u8	adiag_transport;	/* AFRDMA_TRANSPORT_* */
	__u8	adiag_fb_reason;	/* AFRDMA_FB_*, why TCP carries it */
	__be16	adiag_sport;
	__be16	adiag_dport;
	__u32	adiag_uid;
	__u32	adiag_inode;
	__u32	adiag_cookie[2];	/* sock_diag's socket cookie */
};

/* AFRDMA_DIAG_RINGS: buffers each way, now and at most, and their sizes. */
struct afrdma_diag_rings {
	__u32	rx_slots;
	__u32	rx_max;
	__u32	rx_slot_size;
	__u32	tx_slots;
	__u32	tx_max;
	__u32	tx_slot_size;
	__u32	tx_inline;		/* payload bytes a SEND carries inline */
};

/* AFRDMA_DIAG_CREDITS: the flow control of an RDMA connection. */
struct afrdma_diag_credits {
	__u32	tx_credits;		/* peer receive buffers we may fill */
	__u32	peer_credits;		/* ours the peer was told of, unfilled */
	__u32	rx_owed;		/* ours reposted, not yet reported */
};

/* AFRDMA_DIAG_ZEROCOPY flags */
#define AFRDMA_DIAG_ZC_ON	0x1	/* SO_ZEROCOPY (or AFRDMA_ZEROCOPY) set */
#define AFRDMA_DIAG_ZC_RX	0x2	/* the peer reads large sends (SRCAVAIL) */

/* AFRDMA_DIAG_ZEROCOPY */
struct afrdma_diag_zerocopy {
	__u32	flags;			/* AFRDMA_DIAG_ZC_* */
	__u32	tx_pages;		/* user pages per SEND; 0: sends copy */
	__u32	rx_pages;		/* pages per SRCAVAIL offered; 0: none */
};

/*
 * Attributes after struct afrdma_diag_msg.  AFRDMA_DIAG_QPN reads 0 unless
 * the requester (the netlink socket's opener) owns the socket or has
 * CAP_NET_ADMIN, as in /proc/net/afrdma.  QPN and DEVICE come once a
 * socket had an RDMA connection; RINGS, CREDITS and ZEROCOPY only while
 * that connection has its resources.
 */
enum {
	AFRDMA_DIAG_UNSPEC,
	AFRDMA_DIAG_PAD,
	AFRDMA_DIAG_LOCAL,		/* struct sockaddr_in or sockaddr_in6 */
	AFRDMA_DIAG_PEER,		/* struct sockaddr_in or sockaddr_in6 */
	AFRDMA_DIAG_RQUEUE,		/* u32: unread bytes; listener: backlog */
	AFRDMA_DIAG_WQUEUE,		/* u32: unsent bytes; listener: its limit */
	AFRDMA_DIAG_DEVICE,		/* string: the RDMA device */
	AFRDMA_DIAG_QPN,		/* u32 */
	AFRDMA_DIAG_RINGS,		/* struct afrdma_diag_rings */
	AFRDMA_DIAG_CREDITS,		/* struct afrdma_diag_credits */
	AFRDMA_DIAG_ZEROCOPY,		/* struct afrdma_diag_zerocopy */
	__AFRDMA_DIAG_MAX,
};

#define AFRDMA_DIAG_MAX		(__AFRDMA_DIAG_MAX - 1)

/*
 * Generic netlink family AFRDMA_GENL_NAME (net/afrdma/nl_stats.c), per
 * network namespace.  AFRDMA_CMD_GET_STATS, a request without attributes,
 * is answered with one AFRDMA_A_STATS nest holding an AFRDMA_A_STATS_STAT
 * nest per counter of the requester's namespace, named as in
 * /proc/net/afrdma_stat.
 *
 * AFRDMA_CMD_GET_DEVICES, a dump request (NLM_F_DUMP) without attributes
 * (net/afrdma/nl_dev.c), is answered with a message per RDMA device afrdma
 * uses that the requester's namespace may see, each one AFRDMA_A_DEVICE
 * nest: its name, identity, the connections of the requester's namespace
 * on it, and an AFRDMA_A_DEV_PORT nest per port.
 *
 * AFRDMA_CMD_GET_LINKS, a dump request without attributes
 * (net/afrdma/nl_link.c), is answered with a message per link of the
 * requester's namespace (Documentation/links.rst), each one AFRDMA_A_LINK
 * nest of AFRDMA_A_LINK_* attributes.  The QP numbers read 0 without
 * CAP_NET_ADMIN.
 *
 * AFRDMA_CMD_LINK_TEST (CAP_NET_ADMIN; a test interface until connections
 * use links) asks for a link to AFRDMA_A_LINK_PEER, a struct sockaddr_in
 * or sockaddr_in6 whose port is ignored, as the first connection to that
 * peer will: one is set up unless there is one.  AFRDMA_A_LINK_USERS, if
 * given, sets how many test users the link has (a link with users does
 * not expire); AFRDMA_A_LINK_AREA_PAGES, if given, how many pages of the
 * link's registered memory a test area holds (0: none).  The answer comes
 * before the link is up: the dump shows its progress.  EOPNOTSUPP while
 * net.afrdma.links is 0.  The AFRDMA_A_LINK_TEST_* attributes ask for
 * streams (links.rst, step 4b), on the link once it is up (ENOTCONN
 * before): TEST_LISTEN starts a test listener of the namespace on a port,
 * with a queue of TEST_BACKLOG streams (default 16; 0 stops it), which
 * it never takes; TEST_PORT opens TEST_STREAMS streams (default 1) to a
 * port of the peer, their ids from TEST_FIRST_ID if given; TEST_RESET
 * resets a stream, TEST_FIN sends its FIN (0: every stream's), and
 * TEST_CURSOR sends a CURSOR of TEST_VALUE on it.  Ids are this end's.
 */
#define AFRDMA_GENL_NAME	"afrdma"
#define AFRDMA_GENL_VERSION	1

enum {
	AFRDMA_CMD_UNSPEC,
	AFRDMA_CMD_GET_STATS,
	AFRDMA_CMD_GET_DEVICES,
	AFRDMA_CMD_GET_LINKS,
	AFRDMA_CMD_LINK_TEST,
	__AFRDMA_CMD_MAX,
};

#define AFRDMA_CMD_MAX		(__AFRDMA_CMD_MAX - 1)

enum {
	AFRDMA_A_UNSPEC,
	AFRDMA_A_STATS,			/* nest of AFRDMA_A_STATS_STAT */
	AFRDMA_A_DEVICE,		/* nest of AFRDMA_A_DEV_* */
	AFRDMA_A_LINK,			/* nest of AFRDMA_A_LINK_* */
	__AFRDMA_A_MAX,
};

#define AFRDMA_A_MAX		(__AFRDMA_A_MAX - 1)

/* Inside AFRDMA_A_STATS */
enum {
	AFRDMA_A_STATS_UNSPEC,
	AFRDMA_A_STATS_STAT,		/* nest of AFRDMA_A_STAT_* */
	__AFRDMA_A_STATS_MAX,
};

#define AFRDMA_A_STATS_MAX	(__AFRDMA_A_STATS_MAX - 1)

/* Inside each AFRDMA_A_STATS_STAT */
enum {
	AFRDMA_A_STAT_UNSPEC,
	AFRDMA_A_STAT_PAD,
	AFRDMA_A_STAT_NAME,		/* string, e.g. "ActiveOpens" */
	AFRDMA_A_STAT_VALUE,		/* u64 */
	AFRDMA_A_STAT_GAUGE,		/* flag: a level now, not a count */
	__AFRDMA_A_STAT_MAX,
};

#define AFRDMA_A_STAT_MAX	(__AFRDMA_A_STAT_MAX - 1)

/* Inside AFRDMA_A_DEVICE */
enum {
	AFRDMA_A_DEV_UNSPEC,
	AFRDMA_A_DEV_PAD,
	AFRDMA_A_DEV_NAME,		/* string, e.g. "rxe0" */
	AFRDMA_A_DEV_INDEX,		/* u32: the RDMA core's, as `rdma dev` */
	AFRDMA_A_DEV_NODE_GUID,		/* u64, in host order */
	AFRDMA_A_DEV_CONNS,		/* u32: the namespace's connections on it */
	AFRDMA_A_DEV_PORT,		/* nest of AFRDMA_A_PORT_*, one per port */
	__AFRDMA_A_DEV_MAX,
};

#define AFRDMA_A_DEV_MAX	(__AFRDMA_A_DEV_MAX - 1)

/*
 * Inside each AFRDMA_A_DEV_PORT.  STATE is the port's logical state as
 * the RDMA core numbers it (1 down, 2 init, 3 armed, 4 active, 5 active
 * defer); LINK_LAYER 1 is InfiniBand, 2 Ethernet.  NETDEV and IFINDEX
 * come only for a netdev in the requester's namespace.
 */
enum {
	AFRDMA_A_PORT_UNSPEC,
	AFRDMA_A_PORT_NUM,		/* u32, from 1 */
	AFRDMA_A_PORT_STATE,		/* u8 */
	AFRDMA_A_PORT_LINK_LAYER,	/* u8 */
	AFRDMA_A_PORT_ACTIVE_MTU,	/* u32: bytes */
	AFRDMA_A_PORT_NETDEV,		/* string */
	AFRDMA_A_PORT_IFINDEX,		/* u32 */
	__AFRDMA_A_PORT_MAX,
};

#define AFRDMA_A_PORT_MAX	(__AFRDMA_A_PORT_MAX - 1)

/* A link's state (AFRDMA_A_LINK_STATE) */
enum {
	AFRDMA_LINK_STATE_NONE,
	AFRDMA_LINK_STATE_RESOLVING,	/* active: address and route */
	AFRDMA_LINK_STATE_CONNECTING,	/* QP made, rdma_cm connecting */
	AFRDMA_LINK_STATE_HELLO,	/* connected, HELLOs not yet both ways */
	AFRDMA_LINK_STATE_UP,
	AFRDMA_LINK_STATE_CLOSED,	/* torn down, about to go */
	AFRDMA_LINK_STATE_MAX
};

/*
 * Inside AFRDMA_A_LINK.  PEER and LOCAL are a struct sockaddr_in or
 * sockaddr_in6; USERS are this end's connections on the link, PEER_USERS
 * what the peer last said of its own (USE); MSGS and BYTES count the
 * link's control messages and everything it carried each way; CHUNKS
 * and MEM_BYTES the memory it registered, AREA_PAGES what of it is
 * handed out; STREAMS* its streams now and since it came up.  PEER, USERS,
 * AREA_PAGES and the TEST_* ones go in AFRDMA_CMD_LINK_TEST.
 */
enum {
	AFRDMA_A_LINK_UNSPEC,
	AFRDMA_A_LINK_PAD,
	AFRDMA_A_LINK_ID,		/* u32: grows; a dump's place */
	AFRDMA_A_LINK_STATE,		/* u8: AFRDMA_LINK_STATE_* */
	AFRDMA_A_LINK_PASSIVE,		/* u8: 1 if the peer set it up */
	AFRDMA_A_LINK_PEER,		/* binary: sockaddr */
	AFRDMA_A_LINK_LOCAL,		/* binary: sockaddr */
	AFRDMA_A_LINK_DEVICE,		/* string: the RDMA device */
	AFRDMA_A_LINK_QPN,		/* u32 */
	AFRDMA_A_LINK_PEER_QPN,		/* u32 */
	AFRDMA_A_LINK_USERS,		/* u32 */
	AFRDMA_A_LINK_PEER_USERS,	/* u32 */
	AFRDMA_A_LINK_TX_MSGS,		/* u64 */
	AFRDMA_A_LINK_RX_MSGS,		/* u64 */
	AFRDMA_A_LINK_TX_BYTES,		/* u64 */
	AFRDMA_A_LINK_RX_BYTES,		/* u64 */
	AFRDMA_A_LINK_CHUNKS,		/* u32 */
	AFRDMA_A_LINK_MEM_BYTES,	/* u64: registered */
	AFRDMA_A_LINK_AREA_PAGES,	/* u32 */
	AFRDMA_A_LINK_IDLE_MS,		/* u32: idle for, 0 if in use or not up */
	AFRDMA_A_LINK_STREAMS,		/* u32: open at this end, any state */
	AFRDMA_A_LINK_STREAMS_EST,	/* u32: of them established or closing */
	AFRDMA_A_LINK_STREAMS_SYN,	/* u32: of them connecting */
	AFRDMA_A_LINK_STREAMS_HALF_OPEN, /* u32: not yet taken by a listener */
	AFRDMA_A_LINK_STREAMS_OPENED,	/* u64: became established */
	AFRDMA_A_LINK_STREAMS_REFUSED,	/* u64: our connects refused */
	AFRDMA_A_LINK_STREAMS_BUSY,	/* u64: BUSY answers to our connects */
	AFRDMA_A_LINK_STREAMS_RESETS,	/* u64: ended by a RESET either way */
	AFRDMA_A_LINK_STREAMS_FINS,	/* u64: ended by FINs both ways */
	AFRDMA_A_LINK_STREAMS_ERRORS,	/* u64: reset for the peer's error */
	AFRDMA_A_LINK_TEST_LISTEN,	/* u32: a port; AFRDMA_CMD_LINK_TEST only */
	AFRDMA_A_LINK_TEST_BACKLOG,	/* u32 */
	AFRDMA_A_LINK_TEST_PORT,	/* u32: a port to open streams to */
	AFRDMA_A_LINK_TEST_STREAMS,	/* u32: how many */
	AFRDMA_A_LINK_TEST_FIRST_ID,	/* u32: their ids from */
	AFRDMA_A_LINK_TEST_RESET,	/* u32: a stream id */
	AFRDMA_A_LINK_TEST_FIN,		/* u32: a stream id, 0: all */
	AFRDMA_A_LINK_TEST_CURSOR,	/* u32: a stream id */
	AFRDMA_A_LINK_TEST_VALUE,	/* u32: the CURSOR's */
	__AFRDMA_A_LINK_MAX,
};

#define AFRDMA_A_LINK_MAX	(__AFRDMA_A_LINK_MAX - 1)

#endif /* _UAPI_LINUX_AFRDMA_H */
