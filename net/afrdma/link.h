/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Links (Documentation/links.rst): one RC QP pair between two hosts per
 * RDMA device and network namespace, set up by rdma_cm, carrying control
 * messages (link_msg.h) and, from step 4 on, the streams of many
 * connections in ring areas (link_area.h) of memory it registers in
 * chunks.  Only while net.afrdma.links is 1.
 */
#ifndef _AFRDMA_LINK_H
#define _AFRDMA_LINK_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "link_area.h"
#include "link_msg.h"
#include "stream.h"

#define AFRDMA_LINK_RX		16	/* control receives posted */
#define AFRDMA_LINK_TX		8	/* control SENDs in flight */
/* Chunks of 2^6 order-0 pages (256 KiB of 4 KiB pages), 64 at most */
#define AFRDMA_LINK_CHUNK_ORDER	6
#define AFRDMA_LINK_CHUNKS	64
/* Links to one peer address, both roles, all devices: a reconnecting peer's */
#define AFRDMA_LINK_PEER_MAX	4
/* Links the peers set up that are not up yet, per namespace */
#define AFRDMA_LINK_HALF_OPEN	16
/* From creation to UP, or the link goes */
#define AFRDMA_LINK_SETUP_MS	10000
#define AFRDMA_LINK_RESOLVE_MS	2000
#define AFRDMA_LINK_PORT	18637
#define AFRDMA_LINK_IDLE_S	600

struct afrdma_device;
struct afrdma_link;

/* What an rdma_cm event handler finds in id->context. */
enum afrdma_link_kind {
	AFRDMA_LINK_KIND_LISTENER = 1,
	AFRDMA_LINK_KIND_LINK,
};

/*
 * A namespace's links, in its struct afrdma_net.  @mutex serializes the
 * switch (listeners up or down); @lock, a BH lock never held across a
 * call that sleeps, covers @links, @next_id, @half_open and @on, which
 * the listeners' rdma_cm handler reads, and the stream listeners
 * (stream.h).
 */
struct afrdma_link_net {
	u8			kind;		/* AFRDMA_LINK_KIND_LISTENER */
	struct net		*net;		/* not counted: ours */
	struct mutex		mutex;		/* see above */
	struct rdma_cm_id	*listen[2];	/* IPv4, IPv6 */
	spinlock_t		lock;
	struct list_head	links;
	u32			next_id;
	unsigned int		half_open;
	bool			on;
	struct list_head	stream_listeners; /* struct afrdma_stream_listener */
};

struct afrdma_link_rx {
	struct ib_cqe		cqe;
	struct afrdma_link	*link;
	unsigned int		i;
};

struct afrdma_link_tx {
	struct ib_cqe		cqe;
	struct afrdma_link	*link;
};

/* A chunk: 2^chunk_order order-0 pages, mapped, under one fast-reg MR. */
struct afrdma_link_chunk {
	struct ib_mr		*mr;
	struct sg_table		sgt;
	int			nents;		/* mapped; 0: not */
	unsigned int		npages;
	struct page		*pages[];
};

/*
 * One link.  The list of its namespace holds a reference while it is
 * listed, and so does each queued run of @work.
 *
 * Locking: @mutex is held by @work, which runs the link's state machine
 * (rdma_cm calls, verbs objects, chunks), and by whoever tears the link
 * down (device removal, the switch); the verbs objects and the chunks are
 * under it.  @lock, a BH lock (completions run in softirq), covers
 * @state, the events recorded for @work, the send ring, credits and the
 * counters.  The rdma_cm handler takes @lock only, never @mutex, so that
 * rdma_destroy_id() under @mutex cannot wait on it.  @state changes only
 * under both, with WRITE_ONCE(): @work may read it under @mutex alone.
 */
struct afrdma_link {
	u8			kind;		/* AFRDMA_LINK_KIND_LINK */
	bool			passive;	/* the peer set it up */
	bool			half_open;	/* counted in ln->half_open */
	u32			id;
	struct kref		ref;
	struct afrdma_link_net	*ln;
	struct list_head	node;		/* ln->links, under ln->lock */
	struct list_head	dev_node;	/* dev->links, under dev->lock */
	struct sockaddr_storage	peer;
	struct sockaddr_storage	local;

	struct mutex		mutex;		/* see above */
	struct rdma_cm_id	*cm_id;
	struct afrdma_device	*dev;		/* held */
	struct ib_pd		*pd;		/* the link's own */
	struct ib_cq		*cq;
	unsigned int		cq_size;
	struct ib_qp		*qp;
	void			*buf;		/* RX then TX message buffers */
	u64			dma;
	struct afrdma_link_rx	rx[AFRDMA_LINK_RX];
	struct afrdma_link_tx	tx[AFRDMA_LINK_TX];
	struct ib_cqe		reg_cqe;	/* REG_MR and LOCAL_INV, one at a time */
	struct completion	reg_done;
	int			reg_status;
	struct afrdma_area_map	areas;
	struct afrdma_link_chunk **chunks;	/* [max_chunks] */
	struct afrdma_area	test_area;	/* AFRDMA_CMD_LINK_TEST's */
	bool			test_area_held;
	unsigned int		max_chunks;
	unsigned int		chunk_order;	/* what HELLO announces */

	spinlock_t		lock;		/* the fields below */
	u8			state;		/* AFRDMA_LINK_STATE_* */
	unsigned long		events;		/* AFRDMA_LINK_EV_* for @work */
	int			cm_status;	/* why it closed */
	unsigned int		users;		/* ours */
	unsigned int		test_users;	/* of them, AFRDMA_CMD_LINK_TEST's */
	unsigned int		test_pages;	/* its area's size, wanted */
	unsigned int		peer_users;	/* the peer's last USE */
	unsigned int		tx_head;	/* SENDs posted */
	unsigned int		tx_tail;	/* SENDs completed */
	unsigned int		tx_credits;	/* peer receives we may use */
	unsigned int		rx_owed;	/* ours posted again, not told */
	unsigned int		seq;		/* messages sent */
	bool			hello_sent;
	bool			hello_rcvd;
	bool			want_use;	/* @users changed: tell the peer */
	bool			peer_up;	/* rdma_cm said ESTABLISHED */
	bool			qp_ready;	/* QP made, receives posted */
	u32			qpn;
	char			dev_name[IB_DEVICE_NAME_MAX];
	u32			peer_qpn;
	unsigned int		peer_chunk_order;
	unsigned int		peer_max_chunks;
	bool			idle;		/* up, and no users either end */
	unsigned long		idle_start;	/* jiffies */
	unsigned long		deadline;	/* jiffies: setup, or expiry */
	struct afrdma_link_streams streams;	/* stream.h says its locking */
	u64			tx_msgs;
	u64			rx_msgs;
	u64			tx_bytes;
	u64			rx_bytes;
	struct work_struct	work;
	struct delayed_work	timer;		/* setup deadline, then expiry */
};

/* Consistent numbers for the listing, read under @lock. */
struct afrdma_link_info {
	u8			state;
	u32			qpn;
	u32			peer_qpn;
	unsigned int		users;
	unsigned int		peer_users;
	unsigned int		chunks;
	unsigned int		area_pages;
	u64			mem_bytes;
	u64			tx_msgs;
	u64			rx_msgs;
	u64			tx_bytes;
	u64			rx_bytes;
	unsigned int		idle_ms;
	char			dev_name[IB_DEVICE_NAME_MAX];
	unsigned int		streams;
	unsigned int		streams_est;
	unsigned int		streams_syn;
	unsigned int		streams_half_open;
	u64			streams_opened;
	u64			streams_refused;
	u64			streams_busy;
	u64			streams_resets;
	u64			streams_fins;
	u64			streams_errors;
};

struct afrdma_net;
struct genl_info;
struct netlink_callback;
struct sk_buff;

void afrdma_link_net_init(struct afrdma_link_net *ln, struct net *net);
void afrdma_link_net_exit(struct afrdma_link_net *ln);
int afrdma_link_switch(struct afrdma_link_net *ln, bool on);
void afrdma_link_device_removed(struct afrdma_device *dev);
int afrdma_link_test(struct net *net, const struct sockaddr_storage *peer,
		     int users, int pages, const struct afrdma_stream_test *st);
/* For stream.c: the link's own, which it calls with what they say held. */
void afrdma_link_kick_streams_locked(struct afrdma_link *link);
void afrdma_link_fail(struct afrdma_link *link, int err);
void afrdma_link_flush_locked(struct afrdma_link *link);
void afrdma_link_users_locked(struct afrdma_link *link, int delta);
bool afrdma_link_is_up(struct afrdma_link *link);
int afrdma_link_area_get(struct afrdma_link *link, unsigned int order,
			 struct afrdma_area *area);
int afrdma_link_area_put(struct afrdma_link *link,
			 const struct afrdma_area *area);
struct afrdma_link *afrdma_link_next(struct afrdma_link_net *ln, u32 id);
void afrdma_link_put(struct afrdma_link *link);
void afrdma_link_info(struct afrdma_link *link, struct afrdma_link_info *info);
int afrdma_link_dump(struct sk_buff *skb, struct netlink_callback *cb);
int afrdma_link_nl_test(struct sk_buff *skb, struct genl_info *info);

#endif /* _AFRDMA_LINK_H */
