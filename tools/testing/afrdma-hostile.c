// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma-hostile: a broken or malicious afrdma peer, for the hostile-peer
 * selftest.  It connects to an afrdma listener through rdma_cm (RDMA_PS_TCP,
 * the port space afrdma listens in) and speaks the wire protocol badly, one
 * case per run.  Messages are built with net/afrdma/wire.c and corrupted
 * afterwards, so only the intended field is wrong.
 *
 *   afrdma-hostile -a ADDR -p PORT -c CASE [-t SECONDS]
 *   afrdma-hostile -l        list the cases
 *
 * Once the case has done its damage the tool stays connected, taking
 * whatever the victim sends, until the victim disconnects or SECONDS (20)
 * pass: the victim must end the connection itself, not because the
 * attacker went away.  Exit status: 0 when the attacker saw what its case
 * expects on its side (a reject, a remote access error, ...), 1 when not,
 * 2 when it could not set up.
 *
 * Two cases attack the CM handshake itself and make no QP:
 *
 *   afrdma-hostile -a ADDR -p PORT -c req-flood [-n N] [-t SECONDS]
 *   afrdma-hostile -a ADDR -p PORT -c rtu-withhold [-t SECONDS]
 *
 * Each request is a cm id of its own with valid afrdma private data and a
 * made-up QP number.  Without a QP, librdmacm hands the victim's REP to
 * us as CONNECT_RESPONSE and would send the RTU only on rdma_establish(),
 * which we never call: the victim's side stays half-open.  Requests the
 * victim drops are sent again by our CM (every 4.6 s, 15 times).  After
 * all are sent, the tool holds them for SECONDS (20); SIGUSR1 cancels
 * those still unanswered (their REQs stop), keeping the answered ones.
 * req-flood exits 0 once all N (4096) went out and at least one was
 * answered; rtu-withhold exits 0 if the victim, having answered, gave
 * up on it (a REJ) within SECONDS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "wire.h"

#define HDR_LEN		sizeof(struct afrdma_msg_hdr)
#define SEND_BUF	(2 * AFRDMA_MAX_SLOT_SIZE)
#define MAX_RECV	64
#define MAX_SEND	256
#define RESOLVE_MS	2000
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum expect {
	EXP_NONE,		/* nothing to see on this side */
	EXP_REJECT,		/* the connect is rejected */
	EXP_REM_ACCESS,		/* our RDMA WRITE fails: remote access error */
	EXP_SEND_ERR,		/* our SEND fails: the victim had no room */
	EXP_RECV_ERR,		/* a victim SEND overflows our buffer */
	EXP_CM,			/* CM-level: see cm_attack() */
};

struct hostile_case {
	const char	*name;
	const char	*what;
	enum expect	expect;
};

static const struct hostile_case cases[] = {
	{ "hdr-flags", "DATA header with a reserved flag set", EXP_NONE },
	{ "hdr-truncated", "a 5-byte SEND, shorter than a header", EXP_NONE },
	{ "send-empty", "a zero-byte SEND", EXP_NONE },
	{ "len-long", "DATA whose len exceeds the bytes sent", EXP_NONE },
	{ "len-short", "DATA whose len is short of the bytes sent", EXP_NONE },
	{ "data-empty", "DATA with len 0", EXP_NONE },
	{ "type-unknown", "a message of type 7", EXP_NONE },
	{ "credit-lie", "returns 65535 credits it was never given", EXP_NONE },
	{ "credit-overrun",
	  "sends slots+8 DATA (248 to a ring that grows) without waiting for credits",
	  EXP_NONE },
	{ "data-after-fin", "FIN, then DATA", EXP_NONE },
	{ "ctrl-flood",
	  "credit messages as fast as credits allow, then no FIN",
	  EXP_NONE },
	{ "priv-short", "4 bytes of private data", EXP_REJECT },
	{ "priv-magic", "private data with a wrong magic", EXP_REJECT },
	{ "priv-slots-low", "announces 1 receive slot", EXP_REJECT },
	{ "priv-slots-high", "announces 65535 receive slots", EXP_REJECT },
	{ "priv-size-low", "announces 8-byte slots", EXP_REJECT },
	{ "priv-size-high", "announces 16 MiB slots", EXP_REJECT },
	{ "lie-size", "announces 1 MiB slots, posts 1 KiB buffers",
	  EXP_RECV_ERR },
	{ "lie-slots", "announces 4096 slots, posts 4, then reads nothing",
	  EXP_NONE },
	{ "silence", "connects and then says nothing", EXP_NONE },
	{ "vanish",
	  "its QP disappears without a disconnect, like a host losing power",
	  EXP_NONE },
	{ "rdma-write", "RDMA WRITE to a random address and rkey",
	  EXP_REM_ACCESS },
	{ "big-send", "a SEND 8 bytes larger than the victim's slots",
	  EXP_SEND_ERR },
	{ "srcavail-bogus", "SRCAVAIL of 64 KiB at a random address and rkey",
	  EXP_NONE },
	{ "srcavail-twice", "a second SRCAVAIL before the first is read",
	  EXP_NONE },
	{ "srcavail-huge", "SRCAVAIL of 16 MiB + 1", EXP_NONE },
	{ "rddone-unasked", "RDDONE with no SRCAVAIL out", EXP_NONE },
	{ "req-flood", "N connect requests (-n, 4096), none ever completed",
	  EXP_CM },
	{ "rtu-withhold", "one connect request answered, its RTU never sent",
	  EXP_CM },
};

struct peer {
	const struct hostile_case *c;
	struct rdma_event_channel *ch;
	struct rdma_cm_id	*id;
	struct ibv_pd		*pd;
	struct ibv_cq		*cq;
	struct ibv_mr		*rx_mr, *tx_mr;
	char			*rx_buf, *tx_buf;
	unsigned int		rx_posted;	/* receive buffers we post */
	unsigned int		rx_size;	/* their size */
	struct afrdma_cm_params	victim;
	unsigned int		credits;	/* victim buffers we may fill */
	unsigned int		owed;		/* reposted, not yet returned */
	unsigned int		outstanding;	/* SENDs not completed */
	unsigned long		sends, recvs;
	bool			disconnected;
	bool			saw_rem_access, saw_send_err, saw_recv_err;
	bool			stop_reposting;
};

static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("afrdma-hostile: ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Next cm event within @ms, or NULL.  The caller acks it. */
static struct rdma_cm_event *cm_event(struct peer *p, int ms)
{
	struct pollfd pfd = { .fd = p->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, ms) <= 0)
		return NULL;
	if (rdma_get_cm_event(p->ch, &ev))
		return NULL;
	return ev;
}

static int cm_wait(struct peer *p, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = cm_event(p, 2 * RESOLVE_MS);
	int ret = -1;

	if (!ev) {
		msg("timed out waiting for %s\n", rdma_event_str(want));
		return -1;
	}
	if (ev->event == want)
		ret = 0;
	else
		msg("%s (status %d) instead of %s\n", rdma_event_str(ev->event),
		    ev->status, rdma_event_str(want));
	rdma_ack_cm_event(ev);
	return ret;
}

static int post_recv(struct peer *p, unsigned int i)
{
	struct ibv_sge sge = {
		.addr	= (uintptr_t)p->rx_buf + (size_t)i * p->rx_size,
		.length	= p->rx_size,
		.lkey	= p->rx_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = i, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	if (!p->id->qp)		/* vanished */
		return -1;
	return ibv_post_recv(p->id->qp, &wr, &bad);
}

/* Posts a SEND (or RDMA WRITE) of the first @len bytes of tx_buf. */
static int post_send(struct peer *p, size_t len, enum ibv_wr_opcode op,
		     uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr	= (uintptr_t)p->tx_buf,
		.length	= len,
		.lkey	= p->tx_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1ULL << 63, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int err;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (!p->id->qp)		/* vanished */
		return -1;
	err = ibv_post_send(p->id->qp, &wr, &bad);
	if (err) {
		msg("post send: %s\n", strerror(err));
		return -1;
	}
	p->outstanding++;
	p->sends++;
	return 0;
}

/* Builds a message in tx_buf and sends it; returns the SEND's length. */
static int send_msg(struct peer *p, unsigned int type, unsigned int len)
{
	afrdma_build_msg((struct afrdma_msg_hdr *)p->tx_buf, type, p->owed,
			 len);
	memset(p->tx_buf + HDR_LEN, 'x', len);
	p->owed = 0;
	if (p->credits)
		p->credits--;
	return post_send(p, HDR_LEN + len, IBV_WR_SEND, 0, 0);
}

/* Reaps completions for up to @ms; takes the victim's credits as it goes. */
static void poll_cq(struct peer *p, int ms)
{
	double end = now() + ms / 1000.0;
	struct ibv_wc wc[16];
	int n, i;

	do {
		n = ibv_poll_cq(p->cq, 16, wc);
		for (i = 0; i < n; i++) {
			struct afrdma_msg m;

			if (wc[i].wr_id >> 63) {
				p->outstanding--;
				if (wc[i].status == IBV_WC_REM_ACCESS_ERR)
					p->saw_rem_access = true;
				if (wc[i].status != IBV_WC_SUCCESS &&
				    wc[i].status != IBV_WC_WR_FLUSH_ERR) {
					p->saw_send_err = true;
					msg("send completion: %s\n",
					    ibv_wc_status_str(wc[i].status));
				}
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
					p->saw_recv_err = true;
					msg("receive completion: %s\n",
					    ibv_wc_status_str(wc[i].status));
				}
				continue;
			}
			p->recvs++;
			if (!afrdma_parse_msg(p->rx_buf + wc[i].wr_id *
					      p->rx_size, wc[i].byte_len, &m))
				p->credits += m.credits;
			if (!p->stop_reposting && !post_recv(p, wc[i].wr_id))
				p->owed++;
		}
		if (!n && ms)
			usleep(200);
	} while (now() < end);
}

/* Waits, reaping completions, until the victim disconnects or @secs. */
static void linger(struct peer *p, double secs)
{
	double end = now() + secs;

	while (!p->disconnected && now() < end) {
		struct rdma_cm_event *ev = cm_event(p, 0);

		if (ev) {
			msg("event %s\n", rdma_event_str(ev->event));
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
				p->disconnected = true;
			rdma_ack_cm_event(ev);
		}
		poll_cq(p, 20);
	}
}

static int setup(struct peer *p, const char *addr, const char *port)
{
	struct ibv_qp_init_attr qa = {};
	struct addrinfo *ai, hints = { .ai_socktype = SOCK_STREAM };
	unsigned int i;
	int err;

	err = getaddrinfo(addr, port, &hints, &ai);
	if (err) {
		msg("%s: %s\n", addr, gai_strerror(err));
		return -1;
	}
	p->ch = rdma_create_event_channel();
	if (!p->ch || rdma_create_id(p->ch, &p->id, NULL, RDMA_PS_TCP)) {
		msg("rdma_create_id: %s\n", strerror(errno));
		freeaddrinfo(ai);
		return -1;
	}
	err = rdma_resolve_addr(p->id, NULL, ai->ai_addr, RESOLVE_MS);
	freeaddrinfo(ai);
	if (err || cm_wait(p, RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(p->id, RESOLVE_MS) ||
	    cm_wait(p, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return -1;

	p->pd = ibv_alloc_pd(p->id->verbs);
	p->cq = p->pd ? ibv_create_cq(p->id->verbs, MAX_RECV + MAX_SEND + 8,
				      NULL, NULL, 0) : NULL;
	p->rx_buf = calloc(p->rx_posted, p->rx_size);
	p->tx_buf = calloc(1, SEND_BUF);
	if (!p->cq || !p->rx_buf || !p->tx_buf)
		return -1;
	p->rx_mr = ibv_reg_mr(p->pd, p->rx_buf,
			      (size_t)p->rx_posted * p->rx_size,
			      IBV_ACCESS_LOCAL_WRITE);
	p->tx_mr = ibv_reg_mr(p->pd, p->tx_buf, SEND_BUF,
			      IBV_ACCESS_LOCAL_WRITE);
	if (!p->rx_mr || !p->tx_mr) {
		msg("ibv_reg_mr: %s\n", strerror(errno));
		return -1;
	}
	qa.send_cq = p->cq;
	qa.recv_cq = p->cq;
	qa.cap.max_send_wr = MAX_SEND;
	qa.cap.max_recv_wr = MAX_RECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(p->id, p->pd, &qa)) {
		msg("rdma_create_qp: %s\n", strerror(errno));
		return -1;
	}
	for (i = 0; i < p->rx_posted; i++)
		if (post_recv(p, i))
			return -1;
	return 0;
}

/* Connects with @priv; 1 if rejected, 0 if established, -1 otherwise. */
static int connect_victim(struct peer *p, const void *priv, size_t priv_len)
{
	struct rdma_conn_param cp = {
		.private_data = priv,
		.private_data_len = priv_len,
		.flow_control = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,	/* as afrdma: wait for buffers */
		/* READs the victim may make of our (bogus) SRCAVAILs */
		.responder_resources = 1,
		.initiator_depth = 1,
	};
	struct rdma_cm_event *ev;
	int ret = -1;

	if (rdma_connect(p->id, &cp)) {
		msg("rdma_connect: %s\n", strerror(errno));
		return -1;
	}
	ev = cm_event(p, 10000);
	if (!ev) {
		msg("no answer to the connect\n");
		return -1;
	}
	msg("event %s (status %d)\n", rdma_event_str(ev->event), ev->status);
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		ret = 1;
	} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED &&
		   !afrdma_parse_cm_priv(ev->param.conn.private_data,
					 ev->param.conn.private_data_len,
					 &p->victim)) {
		p->credits = p->victim.rx_slots;
		msg("victim posts %u slots of %u bytes\n", p->victim.rx_slots,
		    p->victim.rx_slot_size);
		ret = 0;
	}
	rdma_ack_cm_event(ev);
	return ret;
}

/* Does the damage.  Returns -1 if it could not even try. */
static int attack(struct peer *p, double secs)
{
	const char *name = p->c->name;
	struct afrdma_msg_hdr *hdr = (struct afrdma_msg_hdr *)p->tx_buf;
	unsigned int i;

	/* Take the victim's greeting first, so credits are settled. */
	poll_cq(p, 300);

	if (!strcmp(name, "hdr-flags")) {
		afrdma_build_msg(hdr, AFRDMA_MSG_DATA, 0, 16);
		hdr->flags = 0x80;
		post_send(p, HDR_LEN + 16, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "hdr-truncated")) {
		afrdma_build_msg(hdr, AFRDMA_MSG_DATA, 0, 16);
		post_send(p, 5, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "send-empty")) {
		post_send(p, 0, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "len-long")) {
		afrdma_build_msg(hdr, AFRDMA_MSG_DATA, 0, 1000);
		post_send(p, HDR_LEN + 10, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "len-short")) {
		afrdma_build_msg(hdr, AFRDMA_MSG_DATA, 0, 4);
		post_send(p, HDR_LEN + 10, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "data-empty")) {
		afrdma_build_msg(hdr, AFRDMA_MSG_DATA, 0, 0);
		post_send(p, HDR_LEN, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "type-unknown")) {
		afrdma_build_msg(hdr, 7, 0, 0);
		post_send(p, HDR_LEN, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "credit-lie")) {
		afrdma_build_msg(hdr, AFRDMA_MSG_CREDIT, 0xffff, 0);
		post_send(p, HDR_LEN, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "credit-overrun")) {
		/* Past any ring the victim can grow to, by default at least. */
		unsigned int n = p->victim.flags & AFRDMA_CM_GROW ?
				 MAX_SEND : p->victim.rx_slots + 8;

		for (i = 0; i < n && i < MAX_SEND - 8; i++)
			send_msg(p, AFRDMA_MSG_DATA, 64);
	} else if (!strcmp(name, "data-after-fin")) {
		send_msg(p, AFRDMA_MSG_FIN, 0);
		poll_cq(p, 100);
		send_msg(p, AFRDMA_MSG_DATA, 16);
	} else if (!strcmp(name, "ctrl-flood")) {
		double end = now() + secs;

		/* Keep two credits back, as afrdma does for its FIN. */
		while (now() < end && !p->disconnected) {
			if (p->credits > 2 && p->outstanding < MAX_SEND - 8)
				send_msg(p, AFRDMA_MSG_CREDIT, 0);
			poll_cq(p, 0);
		}
		msg("flood: %lu messages sent, %lu received\n", p->sends,
		    p->recvs);
		rdma_disconnect(p->id);
		return 0;
	} else if (!strcmp(name, "rdma-write")) {
		uint64_t raddr;
		uint32_t rkey;

		srandom(getpid() ^ time(NULL));
		raddr = (uint64_t)random() << 32 | random();
		rkey = random();
		msg("RDMA WRITE to 0x%llx rkey 0x%x\n",
		    (unsigned long long)raddr, rkey);
		post_send(p, 64, IBV_WR_RDMA_WRITE, raddr, rkey);
	} else if (!strcmp(name, "vanish")) {
		/*
		 * Nothing answers the victim from now on, not even an ACK,
		 * and the CM stays quiet: only keepalive can tell.
		 */
		rdma_destroy_qp(p->id);
	} else if (!strncmp(name, "srcavail-", 9)) {
		unsigned int len = strcmp(name, "srcavail-huge") ?
				   65536 : AFRDMA_MAX_SRCAVAIL + 1;

		srandom(getpid() ^ time(NULL));
		for (i = 0; i < (strcmp(name, "srcavail-twice") ? 1 : 2); i++) {
			afrdma_build_msg(hdr, AFRDMA_MSG_SRCAVAIL, 0,
					 sizeof(struct afrdma_srcavail));
			afrdma_build_srcavail(p->tx_buf + HDR_LEN, len, random(),
					      (uint64_t)random() << 32 | random());
			if (p->credits)
				p->credits--;
			post_send(p, HDR_LEN + sizeof(struct afrdma_srcavail),
				  IBV_WR_SEND, 0, 0);
		}
	} else if (!strcmp(name, "rddone-unasked")) {
		afrdma_build_msg(hdr, AFRDMA_MSG_RDDONE, 0, 4);
		afrdma_build_rddone(p->tx_buf + HDR_LEN, 65536);
		post_send(p, HDR_LEN + 4, IBV_WR_SEND, 0, 0);
	} else if (!strcmp(name, "big-send")) {
		unsigned int len = p->victim.rx_slot_size + 8 - HDR_LEN;

		if (len + HDR_LEN > SEND_BUF)
			return -1;
		send_msg(p, AFRDMA_MSG_DATA, len);
	}

	/*
	 * After a protocol error nothing more may reach the victim's program:
	 * the selftest checks that it reads no byte of this.
	 */
	if (p->c->expect == EXP_NONE && strcmp(name, "silence") &&
	    strcmp(name, "lie-slots") && strcmp(name, "credit-overrun") &&
	    strcmp(name, "data-after-fin") && strcmp(name, "vanish")) {
		poll_cq(p, 50);
		send_msg(p, AFRDMA_MSG_DATA, 100);
	}
	return 0;
}

/* One connect request of a CM-level attack. */
struct cm_req {
	struct rdma_cm_id	*id;
	enum { REQ_RESOLVING, REQ_SENT, REQ_ANSWERED, REQ_ENDED } state;
	double			answered;	/* when the REP came */
};

struct cm_flood {
	struct rdma_event_channel *ch;
	struct addrinfo		*ai;
	struct cm_req		*reqs;
	unsigned int		n, launched, resolving, sent, answered;
	unsigned int		rejected, dropped, unreachable, failed;
	double			first_drop;	/* seconds after its REP */
	uint32_t		qpn;		/* made-up QP numbers from here */
	struct afrdma_cm_priv	priv;
};

static volatile sig_atomic_t cm_quiet;

static void on_usr1(int sig)
{
	(void)sig;
	cm_quiet = 1;
}

/* Starts request @i: address resolution first, as rdma_connect() needs. */
static int cm_launch(struct cm_flood *f, unsigned int i)
{
	struct cm_req *r = &f->reqs[i];

	if (rdma_create_id(f->ch, &r->id, r, RDMA_PS_TCP)) {
		msg("rdma_create_id %u: %s\n", i, strerror(errno));
		return -1;
	}
	if (rdma_resolve_addr(r->id, NULL, f->ai->ai_addr, RESOLVE_MS)) {
		msg("rdma_resolve_addr %u: %s\n", i, strerror(errno));
		return -1;
	}
	f->resolving++;
	return 0;
}

static void cm_flood_event(struct cm_flood *f, struct rdma_cm_event *ev)
{
	struct cm_req *r = ev->id->context;
	struct rdma_conn_param cp = {
		.private_data = &f->priv,
		.private_data_len = sizeof(f->priv),
		.flow_control = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.responder_resources = 1,
		.initiator_depth = 1,
	};

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!rdma_resolve_route(ev->id, RESOLVE_MS))
			break;
		msg("rdma_resolve_route: %s\n", strerror(errno));
		goto failed;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		/* Distinct, or the victim's CM refuses a REQ as stale. */
		cp.qp_num = (f->qpn + (unsigned int)(r - f->reqs)) & 0xffffff;
		f->resolving--;
		if (rdma_connect(ev->id, &cp)) {
			msg("rdma_connect: %s\n", strerror(errno));
			f->failed++;
			r->state = REQ_ENDED;
			break;
		}
		r->state = REQ_SENT;
		f->sent++;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		goto failed;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		/* The REP.  No rdma_establish(): no RTU, ever. */
		if (r->state == REQ_SENT) {
			r->state = REQ_ANSWERED;
			r->answered = now();
			f->answered++;
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (r->state == REQ_ANSWERED) {
			/* The victim gave up on the half-open connection. */
			if (!f->dropped++)
				f->first_drop = now() - r->answered;
		} else {
			f->rejected++;
		}
		r->state = REQ_ENDED;
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		/* Our CM sent the REQ for the last time. */
		f->unreachable++;
		r->state = REQ_ENDED;
		break;
	default:
		msg("event %s (status %d)\n", rdma_event_str(ev->event),
		    ev->status);
		break;
	}
	return;
failed:
	f->resolving--;
	f->failed++;
	r->state = REQ_ENDED;
}

static void cm_flood_report(const struct cm_flood *f, const char *when)
{
	msg("%s: %u sent, %u answered (REP, RTU withheld), %u dropped by the victim after its REP",
	    when, f->sent, f->answered, f->dropped);
	if (f->dropped)
		printf(" (the first %.1f s after it)", f->first_drop);
	printf(", %u rejected, %u unanswered to the end, %u failed\n",
	       f->rejected, f->unreachable, f->failed);
	fflush(stdout);
}

/* Cancels the requests still unanswered: our CM stops sending them. */
static void cm_flood_quiet(struct cm_flood *f)
{
	unsigned int i, n = 0;

	for (i = 0; i < f->launched; i++) {
		struct cm_req *r = &f->reqs[i];

		if (r->state == REQ_ANSWERED || !r->id)
			continue;
		rdma_destroy_id(r->id);
		r->id = NULL;
		if (r->state != REQ_ENDED)
			n++;
		r->state = REQ_ENDED;
	}
	msg("cancelled %u unanswered requests; %u answered ones held\n", n,
	    f->answered - f->dropped);
}

/*
 * req-flood and rtu-withhold: @n requests, at most 64 resolving at a time,
 * then held for @secs.  Returns the exit status.
 */
static int cm_attack(const struct hostile_case *c, const char *addr,
		     const char *port, unsigned int n, double secs)
{
	/* As afrdma's: the victim builds its connection for it. */
	struct afrdma_cm_params own = { 32, 16384, AFRDMA_CM_GROW };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct cm_flood f = { .n = n };
	double start = now(), last = start, end = 0;
	bool quieted = false;
	unsigned int i;
	int err;

	signal(SIGUSR1, on_usr1);
	err = getaddrinfo(addr, port, &hints, &f.ai);
	if (err) {
		msg("%s: %s\n", addr, gai_strerror(err));
		return 2;
	}
	f.ch = rdma_create_event_channel();
	f.reqs = calloc(n, sizeof(*f.reqs));
	if (!f.ch || !f.reqs) {
		msg("setup: %s\n", strerror(errno));
		return 2;
	}
	afrdma_build_cm_priv(&f.priv, &own);
	srandom(getpid() ^ time(NULL));
	/* Above rxe's own QP numbers (below 2^17), within 24 bits. */
	f.qpn = 0x100000 + (random() % 0xe0000);

	for (;;) {
		struct rdma_cm_event *ev;
		struct pollfd pfd = { .fd = f.ch->fd, .events = POLLIN };

		while (f.launched < n && f.resolving < 64) {
			if (cm_launch(&f, f.launched++))
				return 2;
		}
		if (!end && f.launched == n && !f.resolving) {
			end = now() + secs;
			msg("all sent: %u requests in %.1f s\n", f.sent,
			    now() - start);
		}
		if (end && now() >= end)
			break;
		/* rtu-withhold: over once its one request is. */
		if (end && n == 1 && f.reqs[0].state == REQ_ENDED)
			break;
		if (cm_quiet && !quieted) {
			quieted = true;
			cm_flood_quiet(&f);
		}
		if (poll(&pfd, 1, 100) > 0 && !rdma_get_cm_event(f.ch, &ev)) {
			cm_flood_event(&f, ev);
			rdma_ack_cm_event(ev);
		}
		if (now() - last >= 2) {
			last = now();
			cm_flood_report(&f, "holding");
		}
	}
	cm_flood_report(&f, "at the end");
	for (i = 0; i < f.launched; i++)
		if (f.reqs[i].id)
			rdma_destroy_id(f.reqs[i].id);
	freeaddrinfo(f.ai);

	if (!strcmp(c->name, "rtu-withhold"))
		return f.answered == 1 && f.dropped == 1 ? 0 : 1;
	return f.sent == n && f.answered ? 0 : 1;
}

static void print_usage(void)
{
	unsigned int i;

	fputs("usage: afrdma-hostile -a ADDR -p PORT -c CASE [-t SECONDS] [-n REQUESTS]\n",
	      stderr);
	fputs("       afrdma-hostile -l\ncases:\n", stderr);
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		fprintf(stderr, "  %-16s %s\n", cases[i].name, cases[i].what);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = NULL, *name = NULL;
	/* As afrdma: its ring may grow, and it takes credits for that. */
	struct afrdma_cm_params own = { 32, 16384, AFRDMA_CM_GROW };
	struct afrdma_cm_priv priv;
	struct peer p = {};
	double secs = 20;
	unsigned int nreq = 4096;
	size_t priv_len = sizeof(priv);
	unsigned int i;
	bool ok;
	int opt, ret;

	while ((opt = getopt(argc, argv, "a:p:c:t:n:lh")) != -1) {
		switch (opt) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'c':
			name = optarg;
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'n':
			nreq = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			for (i = 0; i < ARRAY_SIZE(cases); i++)
				printf("%s\n", cases[i].name);
			return 0;
		default:
			print_usage();
			return 2;
		}
	}
	for (i = 0; name && i < ARRAY_SIZE(cases); i++)
		if (!strcmp(name, cases[i].name))
			p.c = &cases[i];
	if (!addr || !port || !p.c) {
		print_usage();
		return 2;
	}
	msg("case %s: %s\n", p.c->name, p.c->what);
	if (p.c->expect == EXP_CM)
		return cm_attack(p.c, addr, port,
				 strcmp(name, "rtu-withhold") ? nreq : 1, secs);

	p.rx_posted = own.rx_slots;
	p.rx_size = own.rx_slot_size;
	if (!strcmp(name, "lie-size"))
		p.rx_size = 1024;
	if (!strcmp(name, "lie-slots")) {
		/* Never reposted: the victim's fifth SEND finds no buffer. */
		p.rx_posted = 4;
		p.stop_reposting = true;
	}
	if (setup(&p, addr, port)) {
		msg("setup failed\n");
		return 2;
	}

	if (!strcmp(name, "priv-slots-low"))
		own.rx_slots = 1;
	else if (!strcmp(name, "priv-slots-high"))
		own.rx_slots = 65535;
	else if (!strcmp(name, "priv-size-low"))
		own.rx_slot_size = 8;
	else if (!strcmp(name, "priv-size-high"))
		own.rx_slot_size = 16 << 20;
	else if (!strcmp(name, "lie-size"))
		own.rx_slot_size = AFRDMA_MAX_SLOT_SIZE;
	else if (!strcmp(name, "lie-slots"))
		own.rx_slots = AFRDMA_MAX_SLOTS;
	afrdma_build_cm_priv(&priv, &own);
	if (!strcmp(name, "priv-magic"))
		priv.magic = htons(0x5241);
	else if (!strcmp(name, "priv-short"))
		priv_len = 4;

	ret = connect_victim(&p, &priv, priv_len);
	if (ret < 0)
		return 2;
	if (ret == 1) {
		ok = p.c->expect == EXP_REJECT;
		msg("rejected: %s\n", ok ? "as expected" : "UNEXPECTED");
		return ok ? 0 : 1;
	}
	if (p.c->expect == EXP_REJECT) {
		msg("accepted: UNEXPECTED\n");
		rdma_disconnect(p.id);
		return 1;
	}

	if (attack(&p, 3))
		return 2;
	linger(&p, secs);
	msg("%s after the attack; %lu sends, %lu receives\n",
	    p.disconnected ? "victim disconnected" : "victim still connected",
	    p.sends, p.recvs);

	switch (p.c->expect) {
	case EXP_REM_ACCESS:
		ok = p.saw_rem_access;
		break;
	case EXP_SEND_ERR:
		ok = p.saw_send_err;
		break;
	case EXP_RECV_ERR:
		ok = p.saw_recv_err;
		break;
	default:
		ok = true;
	}
	msg("attacker side: %s\n", ok ? "as expected" : "UNEXPECTED");
	if (!p.disconnected)
		rdma_disconnect(p.id);
	if (p.id->qp)		/* not vanished */
		rdma_destroy_qp(p.id);
	rdma_destroy_id(p.id);
	return ok ? 0 : 1;
}
