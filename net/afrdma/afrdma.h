/* SPDX-License-Identifier: GPL-2.0 */
/*
 * afrdma internal definitions shared by the socket layer, the rdma_cm state
 * machine and the data path.
 */
#ifndef _AFRDMA_H
#define _AFRDMA_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <net/inet_sock.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "compat/compat.h"
#include "wire.h"

#define AFRDMA_RX_SLOTS		32
#define AFRDMA_TX_SLOTS		32
#define AFRDMA_CTRL_SLOTS	8
#define AFRDMA_CTRL_SIZE	64	/* one header, cache-line spaced */
#define AFRDMA_SLOT_SIZE	(16 * 1024)
#define AFRDMA_RESOLVE_MS	2000
#define AFRDMA_TCP_OPTS		16

/* Local limit on buffers per direction: the QP and CQ are sized from it. */
#define AFRDMA_MAX_SLOTS_LOCAL	1024

/* net.afrdma.*, per network namespace; read once per connection. */
struct afrdma_net {
	int			rx_slots;
	int			tx_slots;
	int			slot_size;
	struct ctl_table_header	*sysctl;
};

extern int afrdma_family;
extern int afrdma_ipproto;

/*
 * One per RDMA device, from the ib_client.  @conns and @removing are under
 * @lock.  Connections hold @ref; removal tears every connection down and
 * waits for the last reference before the PD goes.
 */
struct afrdma_device {
	struct ib_device	*ibdev;
	struct ib_pd		*pd;
	struct list_head	node;		/* afrdma_devices, under its mutex */
	spinlock_t		lock;
	struct list_head	conns;
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
};

struct afrdma_tx_slot {
	struct ib_cqe		cqe;
	struct afrdma_conn	*conn;
	void			*buf;
	u64			dma;
	unsigned int		len;		/* payload bytes in flight */
};

/*
 * The RDMA side of one connection: an RC QP, a CQ from the pool, and the
 * receive and send buffers, DMA-mapped once for the connection's lifetime
 * and used with the PD's local DMA lkey.
 *
 * Locking: the owner holds the socket lock to create, use and tear down
 * the connection; the structure lives as long as the socket.  @lock, a BH
 * lock because completions run in softirq, covers the counters, lists and
 * flags below it, which completions also touch.
 */
struct afrdma_conn {
	struct sock		*sk;
	struct afrdma_device	*dev;
	struct list_head	dev_node;	/* under dev->lock */
	struct rdma_cm_id	*cm_id;
	struct ib_qp		*qp;
	struct ib_cq		*cq;
	unsigned int		cq_size;

	struct afrdma_rx_slot	*rx;
	unsigned int		rx_slots;
	unsigned int		rx_slot_size;
	struct afrdma_tx_slot	*tx;
	unsigned int		tx_slots;
	unsigned int		tx_slot_size;
	struct afrdma_tx_slot	ctrl[AFRDMA_CTRL_SLOTS];
	void			*ctrl_buf;
	u64			ctrl_dma;
	unsigned int		tx_payload;	/* bytes of data per SEND */
	unsigned int		peer_rx_slots;

	spinlock_t		lock;		/* the fields below */
	struct list_head	rx_ready;	/* slots with unread payload */
	unsigned int		rx_bytes;	/* unread payload bytes */
	unsigned int		rx_owed;	/* reposted, not yet reported */
	unsigned int		peer_credits;	/* reported, not yet filled */
	unsigned int		tx_head;	/* SENDs posted */
	unsigned int		tx_tail;	/* SENDs completed */
	unsigned int		tx_unacked;	/* payload bytes not completed */
	unsigned int		ctrl_head;	/* control SENDs posted */
	unsigned int		ctrl_tail;	/* control SENDs completed */
	unsigned int		tx_credits;	/* peer receive buffers free */
	bool			fin_rcvd;
	bool			fin_pending;	/* shut down, FIN not yet sent */
	bool			fin_sent;
	bool			dead;		/* device gone or fatal error */
	bool			torn;		/* resources released */
};

/*
 * The socket.  It begins with an inet_sock because inet_create() and
 * inet6_create() treat it as one on the IPPROTO_RDMA path.
 *
 * Locking: the socket lock covers every field; the rdma_cm handler takes
 * it too.  A listener's queues are under the listener's lock.
 */
struct afrdma_sock {
	struct inet_sock	inet;
	struct rdma_cm_id	*cm_id;
	struct afrdma_conn	*conn;
	struct sock		*parent;	/* handshake in progress */
	struct list_head	accept_node;
	struct list_head	accept_q;	/* listener: ready to accept */
	unsigned int		accept_len;
	unsigned int		pending_len;	/* listener: in handshake */
	struct afrdma_cm_params	peer;
	int			cm_state;	/* resolve/connect progress */
	bool			bound;
	int			tcp_opt[AFRDMA_TCP_OPTS];	/* see sockopt.c */
	char			tcp_congestion[TCP_CA_NAME_MAX];
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

/* af_rdma.c */
struct sock *afrdma_sk_clone(struct sock *parent);
void afrdma_sk_destroy_child(struct sock *sk);

/* sockopt.c */
void afrdma_sockopt_init(struct sock *sk);
void afrdma_sockopt_clone(struct sock *sk, const struct sock *parent);
int afrdma_setsockopt(struct socket *sock, int level, int optname,
		      sockptr_t optval, unsigned int optlen);
int afrdma_getsockopt(struct socket *sock, int level, int optname,
		      char __user *optval, int __user *optlen);

/* sysctl.c */
int afrdma_sysctl_init(void);
void afrdma_sysctl_exit(void);
struct afrdma_net *afrdma_net(const struct net *net);

/* cm.c */
int afrdma_cm_create_id(struct sock *sk);
int afrdma_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

/* conn.c */
struct afrdma_conn *afrdma_conn_create(struct sock *sk, struct rdma_cm_id *id);
void afrdma_conn_teardown(struct afrdma_conn *conn);
void afrdma_conn_free(struct afrdma_conn *conn);
void afrdma_conn_params(const struct afrdma_conn *conn,
			struct afrdma_cm_params *own);
int afrdma_conn_start(struct afrdma_conn *conn,
		      const struct afrdma_cm_params *peer);
void afrdma_conn_abort(struct sock *sk, int err);
void afrdma_conn_fatal(struct afrdma_conn *conn, int err);

/* rx.c */
void afrdma_rx_done(struct ib_cq *cq, struct ib_wc *wc);
int afrdma_rx_post(struct afrdma_conn *conn, struct afrdma_rx_slot *slot);
int afrdma_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
		   int flags);
bool afrdma_rx_readable(const struct sock *sk);

/* tx.c */
void afrdma_tx_done(struct ib_cq *cq, struct ib_wc *wc);
int afrdma_sendmsg(struct socket *sock, struct msghdr *msg, size_t len);
void afrdma_ctrl_done(struct ib_cq *cq, struct ib_wc *wc);
void afrdma_tx_fin(struct afrdma_conn *conn);
bool afrdma_tx_writable(const struct afrdma_conn *conn);
bool afrdma_tx_idle(const struct afrdma_conn *conn);
void afrdma_tx_flush_credits(struct afrdma_conn *conn);

/* device.c */
int afrdma_device_init(void);
void afrdma_device_exit(void);
struct afrdma_device *afrdma_device_get(struct ib_device *ibdev);
void afrdma_device_put(struct afrdma_device *dev);
bool afrdma_device_attach(struct afrdma_device *dev, struct afrdma_conn *conn);
void afrdma_device_detach(struct afrdma_conn *conn);

#endif /* _AFRDMA_H */
