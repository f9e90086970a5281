/* SPDX-License-Identifier: GPL-2.0 */
/*
 * afrdma internal definitions shared by the socket layer, the rdma_cm state
 * machine and the data path.
 */
#ifndef _AFRDMA_H
#define _AFRDMA_H

#include <linux/cred.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/timer.h>
#include <linux/xarray.h>
#include <net/inet_sock.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <uapi/linux/afrdma.h>

#include "compat/compat.h"
#include "link.h"
#include "ring.h"
#include "wire.h"

#define AFRDMA_RX_SLOTS		32
#define AFRDMA_TX_SLOTS		32
#define AFRDMA_INITIAL_SLOTS	AFRDMA_MIN_SLOTS	/* each way, grown later */
#define AFRDMA_CTRL_SLOTS	8	/* a power of two: see tx.c */
#define AFRDMA_CTRL_SIZE	64	/* one header, cache-line spaced */
#define AFRDMA_SLOT_SIZE	(16 * 1024)
#define AFRDMA_RESOLVE_MS	2000
/* Address resolution runs in steps this long, AFRDMA_RESOLVE_MS in all. */
#define AFRDMA_RESOLVE_STEP_MS	100
/* Connects sent again after the peer's CM refused one as stale (cm.c) */
#define AFRDMA_STALE_RETRIES	3
/*
 * rdma_cm events one socket may have waiting for it (cm.c).  They are all
 * for one cm id, which gets a handful in its life.
 */
#define AFRDMA_CM_EVENTS_MAX	16
#define AFRDMA_TCP_OPTS		16
#define AFRDMA_FALLBACK_TIMEOUT_MS	2000
#define AFRDMA_MAX_CONNS	4096
/* Closed sockets still delivering data, as tcp_max_orphans (af_rdma.c) */
#define AFRDMA_MAX_ORPHANS	1024
/*
 * Accepted connections not yet established (cm.c), as TCP's SYN queue:
 * per listener, per peer address, and how long one may stay half-open.
 */
#define AFRDMA_MAX_HALF_OPEN	128
#define AFRDMA_HALF_OPEN_PER_PEER	64
#define AFRDMA_HALF_OPEN_TIMEOUT_MS	30000
/* Keepalive defaults in seconds and probes, as TCP's */
#define AFRDMA_KEEPALIVE_TIME	7200
#define AFRDMA_KEEPALIVE_INTVL	75
#define AFRDMA_KEEPALIVE_PROBES	9

/* RC's retries and ack timeout (4.096 us << it); see cm.c for why. */
#define AFRDMA_RC_RETRIES	6
#define AFRDMA_ACK_TIMEOUT	19
/*
 * (retries + 1) ack timeouts, twice over (30 s): a work request RC has
 * neither completed nor failed for this long sits on a dead peer, or on
 * one that paces its answers to hold us (keepalive.c, rzc.c).
 */
#define AFRDMA_RC_DEAD_MS \
	(2 * (AFRDMA_RC_RETRIES + 1) * ((4096ULL << AFRDMA_ACK_TIMEOUT) / NSEC_PER_MSEC))
#define AFRDMA_ZC_MIN		(16 * 1024)
/* Payload bytes a SEND may carry inline: off by default (Documentation/tuning.rst), at most. */
#define AFRDMA_INLINE		0
#define AFRDMA_INLINE_MAX	1024
/* Send gather entries: a header and up to 16 user pages per SEND. */
#define AFRDMA_ZC_MAX_SGE	17

/*
 * Receive zero-copy (rzc.c): sends of at least net.afrdma.rx_zerocopy_min
 * bytes advertise up to AFRDMA_RZC_PAGES user pages per SRCAVAIL, which
 * the receiver RDMA READs with up to AFRDMA_RZC_RD_DEPTH READs in flight.
 * AFRDMA_RZC_WRS send queue entries cover one receive's READs and one
 * advertised region's REG_MR and LOCAL_INV.
 */
#define AFRDMA_RZC_MIN		(64 * 1024)
#define AFRDMA_RZC_PAGES	256
#define AFRDMA_RZC_RD_DEPTH	16
#define AFRDMA_RZC_WRS		(AFRDMA_RZC_PAGES / (AFRDMA_ZC_MAX_SGE - 1) + 4)

/* Local limit on buffers per direction: the QP and CQ are sized from it. */
#define AFRDMA_MAX_SLOTS_LOCAL	1024

/* Counters in /proc/net/afrdma_stat; names in stats.c. */
enum afrdma_mib_field {
	AFRDMA_MIB_ACTIVE_OPENS,	/* RDMA connections we opened */
	AFRDMA_MIB_PASSIVE_OPENS,	/* RDMA connections we accepted */
	AFRDMA_MIB_FALLBACK_ACTIVE,	/* connects carried over TCP */
	AFRDMA_MIB_FALLBACK_PASSIVE,	/* TCP clients accepted */
	/* AFRDMA_FB_NO_DEVICE .. AFRDMA_FB_PEER_TCP, in uapi order */
	AFRDMA_MIB_FALLBACK_REASON,
	AFRDMA_MIB_CONNECT_FAILED = AFRDMA_MIB_FALLBACK_REASON + AFRDMA_FB_MAX - 1,
	AFRDMA_MIB_RESETS,		/* connections ended by a reset */
	AFRDMA_MIB_KEEPALIVE_PROBES,
	AFRDMA_MIB_KEEPALIVE_TIMEOUTS,	/* peers found dead */
	AFRDMA_MIB_DATA_SENDS,		/* RDMA SENDs carrying data */
	AFRDMA_MIB_CTRL_SENDS,		/* credit returns and FINs */
	AFRDMA_MIB_BYTES_SENT,		/* payload, RDMA connections */
	AFRDMA_MIB_RECVS,		/* receive completions, all kinds */
	AFRDMA_MIB_BYTES_RECEIVED,
	AFRDMA_MIB_COMPLETION_ERRORS,	/* work completions failed, not flushed */
	AFRDMA_MIB_PROTOCOL_ERRORS,	/* peers reset for breaking the protocol */
	AFRDMA_MIB_BUSY_POLL_HITS,	/* a spin in recv found data */
	AFRDMA_MIB_BUSY_POLL_MISSES,	/* a spin ended in a sleep after all */
	AFRDMA_MIB_ZEROCOPY_SENDS,	/* MSG_ZEROCOPY calls sent from user pages */
	AFRDMA_MIB_ZEROCOPY_COPIED,	/* MSG_ZEROCOPY calls copied instead */
	AFRDMA_MIB_SRCAVAIL_SENT,	/* regions offered for RDMA READ */
	AFRDMA_MIB_RX_ZEROCOPY_READS,	/* recvs READ into the user's pages */
	AFRDMA_MIB_RX_ZEROCOPY_BYTES,
	AFRDMA_MIB_RX_BOUNCE_READS,	/* READs into a receive buffer */
	AFRDMA_MIB_ORPHAN_DROPS,	/* closes reset: too many orphans */
	AFRDMA_MIB_ORPHAN_TIMEOUTS,	/* orphans reset: their data not taken */
	AFRDMA_MIB_STALE_RETRIES,	/* connects sent again after a stale REJ */
	AFRDMA_MIB_HALF_OPEN_DROPS,	/* requests dropped: half-open limits */
	AFRDMA_MIB_HALF_OPEN_TIMEOUTS,	/* half-open connections timed out */
	AFRDMA_MIB_MEMORY_DROPS,	/* requests dropped: net.afrdma.mem full */
	AFRDMA_MIB_GROWTHS_DECLINED,	/* ring growths not made: memory pressure */
	AFRDMA_MIB_RX_READ_STALLS,	/* resets: a recv's READs made no progress */
	AFRDMA_MIB_MAX
};

struct afrdma_mib {
	u64	mibs[AFRDMA_MIB_MAX];
};

/* net.afrdma.*, per network namespace; read once per socket or connection. */
struct afrdma_net {
	int			rx_slots;
	int			tx_slots;
	int			slot_size;
	int			initial_slots;
	int			fallback;
	int			fallback_timeout_ms;
	int			max_conns;
	int			zerocopy;
	int			keepalive_time;	/* TCP_KEEPIDLE etc. of new sockets */
	int			keepalive_intvl;
	int			keepalive_probes;
	int			busy_poll;	/* usecs; SO_BUSY_POLL's default */
	int			zerocopy_min;	/* bytes; smaller sends copy */
	int			inline_threshold; /* payload bytes sent inline */
	int			rx_zerocopy_min; /* bytes; 0: no SRCAVAIL */
	int			max_orphans;
	int			max_half_open;	/* per listener */
	int			half_open_per_peer;
	int			half_open_timeout_ms;
	int			links;		/* the link layer's switch */
	int			links_idle_s;	/* an unused link's life */
	struct afrdma_link_net	lnk;		/* link.c */
	atomic_t		conns;		/* RDMA connections with resources */
	atomic_t		orphans;	/* closed, still delivering */
	atomic_t		half_open;	/* accepted, not yet established */
	atomic_long_t		mem_pages;	/* its share of net.afrdma.mem */
	/*
	 * The namespace's afrdma sockets by diag_id, from init to destruct
	 * (diag.c).  Its lock, a BH one, also guards each socket's diag_*
	 * snapshot and its ->tcp and ->conn pointers for readers without the
	 * socket lock.  @socks_next, xa_alloc_cyclic()'s, is under it too.
	 */
	struct xarray		socks;
	u32			socks_next;
	struct ctl_table_header	*sysctl;
	struct afrdma_mib __percpu *mib;
};

extern int afrdma_family;
extern int afrdma_ipproto;

/*
 * One per RDMA device, from the ib_client.  @conns, @links and @removing
 * are under @lock.  Connections and links hold @ref; removal tears every
 * connection and link down (and with each its PD) and waits for the last
 * reference.
 */
struct afrdma_device {
	struct ib_device	*ibdev;
	struct list_head	node;		/* afrdma_devices, under its mutex */
	u32			id;		/* grows in list order: a dump's place */
	spinlock_t		lock;
	struct list_head	conns;
	struct list_head	links;		/* link.c */
	bool			removing;
	struct kref		ref;
	struct completion	released;
};

struct afrdma_conn;

struct afrdma_rx_slot {
	struct ib_cqe		cqe;
	struct afrdma_conn	*conn;
	struct list_head	node;		/* on conn->rx_ready */
	void			*buf;
	u64			dma;
	unsigned int		len;		/* payload bytes */
	unsigned int		off;		/* payload already read */
	/* A SRCAVAIL: @len bytes at @src_addr, to READ; set on receipt */
	bool			src;
	u32			src_rkey;
	u64			src_addr;
};

struct afrdma_zc_send;
struct afrdma_rzc_src;

/*
 * A send buffer.  @zc is set by the owner when it posts the slot with the
 * caller's pages (MSG_ZEROCOPY) and released by the slot's completion,
 * before tx_tail lets anyone reuse the slot.
 */
struct afrdma_tx_slot {
	struct ib_cqe		cqe;
	struct afrdma_conn	*conn;
	void			*buf;
	u64			dma;
	unsigned int		len;		/* payload bytes in flight */
	struct afrdma_zc_send	*zc;		/* user pages sent, zerocopy.c */
};

/*
 * The RDMA side of one connection: a PD of its own, an RC QP, a CQ from
 * the pool, and the receive and send buffers, DMA-mapped once and kept
 * for the connection's lifetime, used with the PD's local DMA lkey.
 *
 * The rings start at net.afrdma.initial_slots buffers each way and double,
 * up to @rx_max and @tx_max, while traffic needs it (conn.c); the QP and
 * CQ are sized for the maxima from the start.  Only the owner grows them,
 * in process context (sendmsg(), or @grow_work with the socket locked).
 * @rx (the buffers, in no order) is the owner's alone; @tx, a ring of any
 * size, is replaced under @lock, and @rx_slots and @tx_slots change under
 * it.  tx[@tx_slot] is the buffer tx_head names: an index that wraps at
 * @tx_slots, beside the free-running counter (ring.h).
 *
 * Locking: the owner holds the socket lock to create, use and tear down
 * the connection; the structure lives as long as the socket.  @lock, a BH
 * lock because completions and @cork_timer run in softirq, covers the
 * counters, lists and flags below it, which they also touch.
 *
 * The open slot: data the send path holds back (TCP_CORK, MSG_MORE, Nagle)
 * waits in tx[tx_slot], not yet posted, @tx_pending bytes long.
 * The owner copies into it with @lock dropped and @tx_filling set; while
 * that is set nobody else may post the slot, so completions and the timer
 * only record why it should go (@tx_push, a lower @tx_tail) and the owner
 * posts it when the copy is done.  Otherwise whoever holds @lock and sees
 * it due posts it.  @tx_cork and @tx_nodelay mirror the socket options,
 * written by the owner under @lock.  @cork_timer only ever takes @lock;
 * teardown shuts it down before draining the QP.
 *
 * Receive zero-copy (rzc.c): @src, under @lock, is the region we offered
 * with a SRCAVAIL; the owner sets it when it posts the SRCAVAIL, and while
 * it is set nothing more of the stream is posted.  The receive completion
 * of the peer's RDDONE posts its LOCAL_INV (setting @src->inv_posted under
 * @lock) and that completion, or teardown after the drain if it was never
 * posted, releases it and clears @src.  @src_rcvd, under @lock, says the
 * peer's SRCAVAIL waits in @rx_ready (one at a time); @rddone, under
 * @lock, is the RDDONE owed to the peer, posted like a FIN when credits
 * allow.  @mr_pool (owner) says qp->rdma_mrs holds our MR; @rzc and
 * @rd_sge are fixed once the connection starts; the owner reads
 * @rd_depth from the QP at the first SRCAVAIL it reaches.
 */
struct afrdma_conn {
	struct sock		*sk;
	struct mem_cgroup	*memcg;		/* charged for what we allocate */
	struct afrdma_device	*dev;
	struct list_head	dev_node;	/* under dev->lock */
	struct rdma_cm_id	*cm_id;
	struct ib_pd		*pd;		/* the connection's own */
	struct ib_qp		*qp;
	struct ib_cq		*cq;
	unsigned int		cq_size;

	struct afrdma_rx_slot	**rx;
	unsigned int		rx_slots;	/* receive buffers posted */
	unsigned int		rx_max;
	unsigned int		rx_slot_size;
	struct afrdma_tx_slot	**tx;
	unsigned int		tx_slots;	/* send buffers */
	unsigned int		tx_max;
	unsigned int		tx_slot_size;
	struct afrdma_tx_slot	ctrl[AFRDMA_CTRL_SLOTS];
	void			*ctrl_buf;
	u64			ctrl_dma;
	unsigned int		tx_payload;	/* bytes of data per SEND */
	unsigned int		peer_rx_slots;	/* most buffers it may offer */
	unsigned int		zc_pages;	/* user pages per SEND; 0: copy */
	unsigned int		tx_inline;	/* payload sent inline, at most */
	unsigned int		rd_sge;		/* gather entries per READ */
	unsigned int		rd_depth;	/* READs in flight; 0: unknown */
	unsigned int		rzc_pages;	/* pages per SRCAVAIL; 0: none */
	bool			rzc;		/* peer takes SRCAVAIL */
	bool			rzc_read;	/* READs land under the lkey */
	bool			mr_pool;	/* qp->rdma_mrs set up */
	unsigned int		rx_taken;	/* bytes read: peeks' places */

	spinlock_t		lock;		/* the fields below */
	struct list_head	rx_ready;	/* slots with unread payload */
	unsigned int		rx_bytes;	/* unread payload bytes */
	unsigned int		rx_owed;	/* reposted, not yet reported */
	bool			rx_lone_last;	/* peer's last message returned 1 */
	bool			rx_rddone_last;	/* ... was an RDDONE */
	unsigned int		peer_credits;	/* reported, not yet filled */
	unsigned int		tx_head;	/* SENDs posted */
	unsigned int		tx_tail;	/* SENDs completed */
	unsigned int		tx_slot;	/* tx[] index of tx_head's */
	unsigned int		tx_unacked;	/* payload bytes not completed */
	unsigned int		tx_pending;	/* bytes in the open slot */
	unsigned long		tx_opened;	/* jiffies when it was opened */
	unsigned int		ctrl_head;	/* control SENDs posted */
	unsigned int		ctrl_tail;	/* control SENDs completed */
	unsigned int		tx_credits;	/* peer receive buffers free */
	struct afrdma_rzc_src	*src;		/* our SRCAVAIL, unresolved */
	unsigned int		rddone;		/* RDDONE owed, bytes */
	bool			src_rcvd;	/* peer's SRCAVAIL unread */
	bool			rx_grow;	/* grow_work queued */
	bool			fin_rcvd;
	bool			fin_pending;	/* shut down, FIN not yet sent */
	bool			fin_sent;
	bool			dead;		/* device gone or fatal error */
	bool			peer_gone;	/* peer's DREQ: flushes are no error */
	bool			torn;		/* resources released */
	bool			tx_filling;	/* owner copying into open slot */
	bool			tx_push;	/* post open slot regardless */
	bool			tx_more;	/* last send had MSG_MORE */
	bool			tx_cork;	/* TCP_CORK */
	bool			tx_nodelay;	/* TCP_NODELAY */
	struct timer_list	cork_timer;	/* TCP's 200 ms cork ceiling */
	struct work_struct	grow_work;	/* grows @rx; holds a sock ref */

	/* keepalive.c; see its locking note */
	struct timer_list	ka_timer;
	struct ib_cqe		ka_cqe;
	unsigned long		ka_last;	/* jiffies of the last sign of life */
	unsigned long		ka_probe_sent;
	bool			ka_on;
	bool			ka_persist;	/* a sender waits for credits */
	bool			ka_probing;
};

/*
 * The socket.  It begins with an inet_sock because inet_create() and
 * inet6_create() treat it as one on the IPPROTO_RDMA path.
 *
 * Locking: the socket lock covers every field; the rdma_cm handler owns
 * the socket too, but only if it can without waiting (cm.c).  A
 * listener's queues are under its accept_lock as well, which is all
 * rdma_cm's handler takes of a listener.
 */
struct afrdma_sock {
	struct inet_sock	inet;
	/*
	 * Changed only by the owner, and under sk_lock.slock too
	 * (afrdma_cm_set_id()): the rdma_cm handler compares an event's id
	 * with it there, without owning the socket.
	 */
	struct rdma_cm_id	*cm_id;
	/*
	 * rdma_cm events that found the socket owned (cm.c), oldest first,
	 * all for cm_id: a new id drops the old one's.  Under sk_lock.slock.
	 * @cm_work, queued with a socket reference, handles them with the
	 * socket locked.  @cm_lost: one more could not be kept (memory, or
	 * AFRDMA_CM_EVENTS_MAX), and cm_work resets the connection for it.
	 */
	struct list_head	cm_events;
	unsigned int		cm_nr_events;
	bool			cm_lost;
	struct work_struct	cm_work;
	struct afrdma_conn	*conn;		/* cleared under socks lock too */
	struct sock		*parent;	/* handshake in progress */
	/*
	 * A listener's queues (accept_q, syn_q, their lengths) change under
	 * it, and, on every socket, what a REQ's child copies of its
	 * listener that is more than a word (tcp_opt, tcp_congestion,
	 * cred).  Held across nothing that sleeps: rdma_cm's handler takes
	 * it for a REQ instead of the listener's lock (cm.c).  Taken last,
	 * never two at once.
	 */
	spinlock_t		accept_lock;
	struct list_head	accept_node;	/* on the parent's syn_q or accept_q */
	struct list_head	accept_q;	/* listener: ready to accept */
	unsigned int		accept_len;
	/*
	 * Listener: its children in the handshake, on syn_q.  A child is
	 * there from its REQ until its first event after the REP, or until
	 * syn_timer drops it (cm.c).
	 */
	struct list_head	syn_q;
	unsigned int		pending_len;
	/* Child in the handshake: its peer's address, IPv4 mapped */
	struct in6_addr		syn_peer;
	struct delayed_work	syn_timer;	/* holds a socket reference */
	struct afrdma_cm_params	peer;
	int			cm_state;	/* resolve/connect progress */
	bool			bound;
	bool			fallback;	/* may use TCP (AFRDMA_FALLBACK) */
	bool			tcp_only;	/* bound where no RDMA device is */
	u8			transport;	/* enum afrdma_transport */
	u8			fb_reason;	/* enum afrdma_fallback_reason */
	/*
	 * TCP: the socket carrying a fallen-back connection, or a listener's
	 * (or bound socket's) TCP side on the same port.  Its callbacks are
	 * ours while it is attached; the originals are saved here.  Set and
	 * cleared under the socks lock too, for readers without ours.
	 */
	struct socket		*tcp;
	void			(*tcp_state_change)(struct sock *sk);
	void			(*tcp_data_ready)(struct sock *sk);
	void			(*tcp_write_space)(struct sock *sk);
	void			(*tcp_error_report)(struct sock *sk);
	struct sockaddr_storage	daddr;		/* connect()'s peer */
	struct sockaddr_storage	saddr;		/* bind()'s; port 0 if picked: relisten, reconnect */
	/* Address resolution's next step (cm.c); socket lock */
	unsigned long		resolve_end;	/* jiffies */
	struct work_struct	resolve_work;
	/*
	 * The cm id resolve_work is using without the socket lock.  Whoever
	 * lets go of that id meanwhile (afrdma_cm_take_id(), the handler)
	 * sets resolve_drop instead of destroying it, and the work does.
	 */
	struct rdma_cm_id	*resolve_id;
	bool			resolve_drop;
	/*
	 * A connect the peer's CM refused as stale goes again with a new cm
	 * id, from retry_work, which destroys the refused one (cm.c); socket
	 * lock.
	 */
	struct work_struct	retry_work;
	struct rdma_cm_id	*retry_id;
	u8			stale_retries;
	/*
	 * RDMA setup deadline, with a socket reference while queued; and a
	 * fallback decided in rdma_cm's handler, made from it at once with
	 * fb_deferred, the reason (fallback.c); socket lock.
	 */
	struct delayed_work	fb_timer;
	u8			fb_deferred;
	/* Closed with data still going (af_rdma.c); socket lock */
	struct delayed_work	orphan_work;
	unsigned long		orphan_end;	/* jiffies: period's end */
	unsigned long		orphan_limit;	/* jiffies: no period past it */
	unsigned int		orphan_posted;	/* SENDs at the period's start */
	bool			orphan;		/* lockless reads too */
	/*
	 * The listing (diag.c): @diag_id is fixed from init to destruct; the
	 * rest is under the namespace's socks lock, not the socket lock.
	 */
	u32			diag_id;
	struct sockaddr_storage	diag_src;
	struct sockaddr_storage	diag_dst;
	u32			diag_qpn;
	char			diag_dev[IB_DEVICE_NAME_MAX];
	int			tcp_opt[AFRDMA_TCP_OPTS];	/* see sockopt.c */
	char			tcp_congestion[TCP_CA_NAME_MAX];
	/*
	 * Whose options these are: the creator's, the listener's for an
	 * accepted socket, or whoever last set TCP_CONGESTION.  A fallback
	 * decided in a work item applies them with these, not the worker's.
	 */
	const struct cred	*cred;
	/* inet_create()'s or inet6_create()'s destructor, chained */
	void			(*base_destruct)(struct sock *sk);
};

#if IS_ENABLED(CONFIG_IPV6)
struct afrdma6_sock {
	struct afrdma_sock	rsk;
	struct ipv6_pinfo	inet6;		/* last: 6.1 finds it there */
};
#endif

static inline struct afrdma_sock *afrdma_sk(const struct sock *sk)
{
	return (struct afrdma_sock *)sk;
}

#include "trace.h"

/* af_rdma.c */
struct sock *afrdma_sk_clone(struct sock *parent);
void afrdma_sk_destroy_child(struct sock *sk);
int afrdma_put_addr(struct sock *sk, struct sockaddr *uaddr,
		    const struct sockaddr *src);

/* sockopt.c */
int afrdma_tcp_opt_index(int name);
void afrdma_sockopt_init(struct sock *sk);
void afrdma_sockopt_clone(struct sock *sk, struct sock *parent);
void afrdma_sockopt_set_cred(struct sock *sk, const struct cred *cred);
void afrdma_sockopt_to_tcp(struct sock *sk, struct socket *tcp);
int afrdma_setsockopt(struct socket *sock, int level, int optname,
		      sockptr_t optval, unsigned int optlen);
int afrdma_getsockopt(struct socket *sock, int level, int optname,
		      char __user *optval, int __user *optlen);
int afrdma_sockopt_tcp(const struct sock *sk, int optname);

/* sysctl.c */
int afrdma_sysctl_init(void);
void afrdma_sysctl_exit(void);
struct afrdma_net *afrdma_net(const struct net *net);

/* mem.c */
int afrdma_mem_init(void);
void afrdma_mem_exit(void);
bool afrdma_mem_charge(struct afrdma_net *an, size_t size);
void afrdma_mem_uncharge(struct afrdma_net *an, size_t size);
bool afrdma_mem_under_pressure(struct mem_cgroup *memcg);
bool afrdma_mem_full(void);

/* stats.c */
int afrdma_stats_net_init(struct net *net, struct afrdma_net *an);
void afrdma_stats_net_exit(struct net *net, struct afrdma_net *an);
const char *afrdma_stats_name(unsigned int i);
u64 afrdma_stats_read(const struct afrdma_net *an, unsigned int i);

/* nl_stats.c */
extern struct genl_family afrdma_nls_family;
int afrdma_nls_init(void);
void afrdma_nls_exit(void);

static inline void afrdma_inc_stats(const struct sock *sk,
				    enum afrdma_mib_field field)
{
	this_cpu_inc(afrdma_net(sock_net(sk))->mib->mibs[field]);
}

static inline void afrdma_add_stats(const struct sock *sk,
				    enum afrdma_mib_field field, u64 val)
{
	this_cpu_add(afrdma_net(sock_net(sk))->mib->mibs[field], val);
}

/* diag.c */
/* @sk's namespace's index, whose lock guards what struct afrdma_net says */
static inline struct xarray *afrdma_diag_socks(const struct sock *sk)
{
	return &afrdma_net(sock_net(sk))->socks;
}

int afrdma_diag_add(struct sock *sk);
void afrdma_diag_del(struct sock *sk);
struct sock *afrdma_diag_find(const struct net *net, u32 *id);
void afrdma_diag_set_tcp(struct sock *sk, struct socket *tcp);
void afrdma_diag_set_names(struct sock *sk, const struct sockaddr *src,
			   const struct sockaddr *dst);
void afrdma_diag_get_names(struct sock *sk, struct sockaddr_storage *src,
			   struct sockaddr_storage *dst);
void afrdma_diag_set_conn(struct sock *sk, const struct afrdma_conn *conn);
void afrdma_diag_set_cm(struct sock *sk, struct rdma_cm_id *id);
void afrdma_diag_queues(struct sock *sk, u32 *rxq, u32 *txq);
int afrdma_diag_net_init(struct net *net);
void afrdma_diag_net_exit(struct net *net);

/* nl_diag.c */
int afrdma_nld_init(void);
void afrdma_nld_exit(void);

/* fallback.c */
static inline bool afrdma_on_tcp(const struct sock *sk)
{
	return READ_ONCE(afrdma_sk(sk)->transport) == AFRDMA_TRANSPORT_TCP;
}

extern struct workqueue_struct *afrdma_wq;

int afrdma_fb_bind(struct sock *sk, struct sockaddr_storage *addr);
void afrdma_fb_unbind(struct sock *sk);
int afrdma_fb_prepare(struct sock *sk);
void afrdma_fb_rdma_up(struct sock *sk);
int afrdma_fb_connect(struct sock *sk, int reason);
void afrdma_fb_timer_init(struct sock *sk);
void afrdma_fb_timer_start(struct sock *sk);
void afrdma_fb_timer_stop(struct sock *sk);
void afrdma_fb_defer(struct sock *sk, int reason);
void afrdma_fb_sync(struct sock *sk);
bool afrdma_fb_connect_done(const struct sock *sk);
int afrdma_fb_listen(struct sock *sk, int backlog);
void afrdma_fb_unlisten(struct sock *sk);
bool afrdma_fb_acceptable(const struct sock *sk);
int afrdma_fb_accept(struct sock *lsk, struct sock **newsk);
void afrdma_fb_accepted(struct sock *sk);
void afrdma_fb_release(struct sock *sk);
int afrdma_fb_sendmsg(struct socket *sock, struct msghdr *msg, size_t len);
int afrdma_fb_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
		      int flags);
__poll_t afrdma_fb_poll(struct file *file, struct socket *sock);
void afrdma_fb_set_names(struct sock *sk);
int afrdma_fb_getname(struct socket *sock, struct sockaddr *uaddr, int peer);
int afrdma_fb_ioctl(struct socket *sock, unsigned int cmd, unsigned long arg);
int afrdma_fb_shutdown(struct socket *sock, int how);
int afrdma_fb_setsockopt(struct socket *sock, int level, int optname,
			 sockptr_t optval, unsigned int optlen);
int afrdma_fb_getsockopt(struct socket *sock, int level, int optname,
			 char __user *optval, int __user *optlen);
void afrdma_fb_keepalive(struct sock *sk, int val);

/* cm.c */
int afrdma_cm_create_id(struct sock *sk);
void afrdma_cm_resolve_init(struct sock *sk);
void afrdma_cm_destruct(struct sock *sk);
int afrdma_cm_resolve(struct sock *sk);
struct rdma_cm_id *afrdma_cm_take_id(struct sock *sk);
void afrdma_cm_put_id(struct sock *sk, struct rdma_cm_id *id);
int afrdma_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
void afrdma_cm_syn_flush(struct sock *lsk);

/* conn.c */
struct afrdma_conn *afrdma_conn_create(struct sock *sk, struct rdma_cm_id *id,
				       bool grow, bool passive,
				       struct mem_cgroup *memcg);
int afrdma_conn_alloc_tx(struct afrdma_conn *conn);
void afrdma_conn_teardown(struct afrdma_conn *conn);
void afrdma_conn_free(struct afrdma_conn *conn);
void afrdma_conn_params(const struct afrdma_conn *conn,
			struct afrdma_cm_params *own);
int afrdma_conn_start(struct afrdma_conn *conn,
		      const struct afrdma_cm_params *peer);
void afrdma_conn_disconnect(struct sock *sk, struct rdma_cm_id *id);
void afrdma_conn_abort(struct sock *sk, int err);
void afrdma_conn_fatal(struct afrdma_conn *conn, int err);
void afrdma_conn_want_rx(struct afrdma_conn *conn);
int afrdma_conn_grow_tx(struct afrdma_conn *conn);

/* zerocopy.c */
void afrdma_zc_init(struct sock *sk);
void afrdma_zc_own_sol_socket(struct socket *sock);
int afrdma_zc_set(struct sock *sk, int val);
int afrdma_zc_begin(struct sock *sk, const struct afrdma_conn *conn,
		    const struct msghdr *msg, size_t len,
		    struct ubuf_info **uargp);
void afrdma_zc_end(struct ubuf_info *uarg, size_t sent);
struct afrdma_zc_send *afrdma_zc_pin(struct iov_iter *from, size_t max,
				     unsigned int max_pages);
size_t afrdma_zc_len(const struct afrdma_zc_send *zs);
int afrdma_zc_post(struct afrdma_conn *conn, struct afrdma_tx_slot *slot,
		   struct afrdma_zc_send *zs, struct ubuf_info *uarg,
		   unsigned int hdr_len);
void afrdma_zc_drop(struct afrdma_zc_send *zs, struct iov_iter *from);
ssize_t afrdma_zc_extract(struct iov_iter *from, struct page **pages,
			  size_t max, unsigned int max_pages, size_t *off);
unsigned int afrdma_zc_pin_pages(struct iov_iter *from, size_t max,
				 struct page **pages, struct ib_sge *sge,
				 unsigned int max_pages, ssize_t *bytes);
void afrdma_zc_done(struct afrdma_conn *conn, struct afrdma_zc_send *zs);
int afrdma_zc_recv(struct sock *sk, struct msghdr *msg, size_t len);

/* rzc.c */
int afrdma_rzc_send(struct sock *sk, struct afrdma_conn *conn,
		    struct msghdr *msg, size_t len, struct ubuf_info *uarg,
		    struct afrdma_rzc_src **srcp);
void afrdma_rzc_drop(struct afrdma_rzc_src *src, struct iov_iter *from);
int afrdma_rzc_rddone_locked(struct afrdma_conn *conn, unsigned int bytes);
int afrdma_rzc_recv(struct sock *sk, struct afrdma_conn *conn,
		    struct afrdma_rx_slot *slot, struct msghdr *msg,
		    unsigned int chunk, int flags);
void afrdma_rzc_teardown(struct afrdma_conn *conn);

/* keepalive.c */
void afrdma_ka_init(struct afrdma_conn *conn);
void afrdma_ka_set(struct afrdma_conn *conn, bool on);
void afrdma_ka_persist(struct afrdma_conn *conn);
void afrdma_ka_stop(struct afrdma_conn *conn);

/* rx.c */
void afrdma_rx_done(struct ib_cq *cq, struct ib_wc *wc);
int afrdma_rx_post(struct afrdma_conn *conn, struct afrdma_rx_slot *slot);
int afrdma_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
		   int flags);
bool afrdma_rx_readable(const struct sock *sk);

/* tx.c */
/* The buffer the next SEND goes from: the open slot.  conn->lock held. */
static inline struct afrdma_tx_slot *
afrdma_tx_head_slot(const struct afrdma_conn *conn)
{
	return conn->tx[conn->tx_slot];
}

/* A SEND went from afrdma_tx_head_slot().  conn->lock held. */
static inline void afrdma_tx_posted_locked(struct afrdma_conn *conn)
{
	WRITE_ONCE(conn->tx_head, conn->tx_head + 1);
	conn->tx_slot = afrdma_ring_next(conn->tx_slot, conn->tx_slots);
}

void afrdma_tx_done(struct ib_cq *cq, struct ib_wc *wc);
int afrdma_sendmsg(struct socket *sock, struct msghdr *msg, size_t len);
void afrdma_ctrl_done(struct ib_cq *cq, struct ib_wc *wc);
void afrdma_tx_fin(struct afrdma_conn *conn);
int afrdma_tx_next_locked(struct afrdma_conn *conn);
bool afrdma_tx_writable(const struct afrdma_conn *conn);
bool afrdma_tx_idle(const struct afrdma_conn *conn);
void afrdma_credits_sent_locked(struct afrdma_conn *conn);
void afrdma_tx_flush_credits(struct afrdma_conn *conn);
void afrdma_tx_read_credits(struct afrdma_conn *conn);
void afrdma_tx_init(struct afrdma_conn *conn);
void afrdma_tx_stop(struct afrdma_conn *conn);
void afrdma_tx_set_opt(struct afrdma_conn *conn, int optname, bool on);

/* device.c */
int afrdma_device_init(void);
void afrdma_device_exit(void);
struct afrdma_device *afrdma_device_get(struct ib_device *ibdev);
void afrdma_device_put(struct afrdma_device *dev);
bool afrdma_device_attach(struct afrdma_device *dev, struct afrdma_conn *conn);
void afrdma_device_detach(struct afrdma_conn *conn);
struct afrdma_device *afrdma_device_next(u32 id);
unsigned int afrdma_device_conns(struct afrdma_device *dev, const struct net *net);

/* nl_dev.c */
int afrdma_nldev_dump(struct sk_buff *skb, struct netlink_callback *cb);

#endif /* _AFRDMA_H */
