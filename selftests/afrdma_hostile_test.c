// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma hostile-peer selftest: tools/testing/afrdma-hostile attacks an
 * afrdma listener, one case per test, while a well-behaved connection on
 * the same listener, opened before the attack, streams checksummed data.
 * The victim connection must end (or, where the peer is merely silent,
 * time out) within a bound, the bystander must keep moving data during and
 * after the attack with matching checksums, and every RC QP must be gone
 * afterwards.  vm-run fails the run if the kernel log shows a WARN or BUG.
 */
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

#define HOSTILE		"tools/testing/afrdma-hostile"
#define GREETING	(64 * 1024)

enum victim_end {
	END_RESET,		/* recv: -1 ECONNRESET */
	END_EOF_OR_RESET,	/* recv: 0 or -1 ECONNRESET */
	END_TIMEOUT,		/* recv: -1 EAGAIN after SO_RCVTIMEO */
	END_DEAD,		/* recv: -1 ETIMEDOUT from SO_KEEPALIVE */
	END_REJECTED,		/* never accepted */
};

static const char *addr4(void)
{
	const char *a = getenv("AFRDMA_ADDR");

	return a ? a : "10.99.0.1";
}

/* The well-behaved connection: a checksummed stream in one direction. */
struct bystander {
	int			cfd, sfd;
	pthread_t		tx, rx;
	atomic_bool		stop;
	atomic_ullong		rx_bytes;
	struct afrdma_csum	tx_sum, rx_sum;
	int			tx_err, rx_err;
};

static void *bystander_tx(void *arg)
{
	struct bystander *b = arg;
	static char buf[16384];
	unsigned long long seq = 0;
	size_t i;

	while (!atomic_load(&b->stop)) {
		ssize_t n;

		for (i = 0; i < sizeof(buf); i++)
			buf[i] = (char)((seq + i) * 2654435761u >> 13);
		n = send(b->cfd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (n <= 0) {
			b->tx_err = n ? errno : EPIPE;
			break;
		}
		afrdma_csum_update(&b->tx_sum, buf, n);
		seq += n;
	}
	shutdown(b->cfd, SHUT_WR);
	return NULL;
}

static void *bystander_rx(void *arg)
{
	struct bystander *b = arg;
	static char buf[65536];

	for (;;) {
		ssize_t n = recv(b->sfd, buf, sizeof(buf), 0);

		if (n == 0)
			break;
		if (n < 0) {
			b->rx_err = errno;
			break;
		}
		afrdma_csum_update(&b->rx_sum, buf, n);
		atomic_fetch_add(&b->rx_bytes, n);
	}
	return NULL;
}

/* Waits up to @secs for the bystander to receive @more bytes. */
static bool bystander_moves(struct bystander *b, unsigned long long more,
			    double secs)
{
	unsigned long long start = atomic_load(&b->rx_bytes);
	double end = now() + secs;

	while (now() < end) {
		if (atomic_load(&b->rx_bytes) >= start + more)
			return true;
		usleep(10000);
	}
	return false;
}

FIXTURE(hostile) {
	int			lfd;
	unsigned short		port;
	int			qps;
	struct bystander	*b;
};

FIXTURE_VARIANT(hostile) {
	const char		*tool_case;
	enum victim_end		end;
	bool			data_ok;	/* data before the end is fine */
	bool			slow_reader;	/* 64 bytes per recv, 150 ms apart */
	double			close_max;	/* seconds close() may take */
	const char		*stat_up;	/* a counter the attack raises */
	const char		*stat_or;	/* ... or this one, in a race */
};

#define HOSTILE_CASE(id, tcase, vend, data, closes)			\
	FIXTURE_VARIANT_ADD(hostile, id) {				\
		.tool_case = tcase, .end = vend, .data_ok = data,	\
		.close_max = closes,					\
	}

HOSTILE_CASE(hdr_flags, "hdr-flags", END_RESET, false, 2);
HOSTILE_CASE(hdr_truncated, "hdr-truncated", END_RESET, false, 2);
HOSTILE_CASE(send_empty, "send-empty", END_RESET, false, 2);
HOSTILE_CASE(len_long, "len-long", END_RESET, false, 2);
HOSTILE_CASE(len_short, "len-short", END_RESET, false, 2);
HOSTILE_CASE(data_empty, "data-empty", END_RESET, false, 2);
HOSTILE_CASE(type_unknown, "type-unknown", END_RESET, false, 2);
HOSTILE_CASE(credit_lie, "credit-lie", END_RESET, false, 2);
/*
 * RNR holds a SEND that finds no posted buffer, so an overrun is only
 * visible when it lands in a buffer reposted but not yet offered back:
 * behind a slow reader, which is where it would hurt.  The reader here
 * offers buffers back (16 read) well after the attacker's RNR retry
 * (655 ms: rdma_cm's min_rnr_timer 0).
 */
FIXTURE_VARIANT_ADD(hostile, credit_overrun) {
	.tool_case = "credit-overrun", .end = END_RESET, .data_ok = true,
	.slow_reader = true, .close_max = 2,
};
HOSTILE_CASE(data_after_fin, "data-after-fin", END_EOF_OR_RESET, false, 2);
HOSTILE_CASE(ctrl_flood, "ctrl-flood", END_RESET, false, 2);
HOSTILE_CASE(priv_short, "priv-short", END_REJECTED, false, 0);
HOSTILE_CASE(priv_magic, "priv-magic", END_REJECTED, false, 0);
HOSTILE_CASE(priv_slots_low, "priv-slots-low", END_REJECTED, false, 0);
HOSTILE_CASE(priv_slots_high, "priv-slots-high", END_REJECTED, false, 0);
HOSTILE_CASE(priv_size_low, "priv-size-low", END_REJECTED, false, 0);
HOSTILE_CASE(priv_size_high, "priv-size-high", END_REJECTED, false, 0);
HOSTILE_CASE(lie_size, "lie-size", END_RESET, false, 2);
/*
 * SENDs posted to receives the peer never made wait for RC's acks: close()
 * waits up to afrdma's 10 s for them (data merely unsent would orphan).
 */
HOSTILE_CASE(lie_slots, "lie-slots", END_TIMEOUT, false, 13);
HOSTILE_CASE(silence, "silence", END_TIMEOUT, false, 2);
/* A dead peer: keepalive (1 s idle, 1 s x 2 probes) must find it. */
HOSTILE_CASE(vanish, "vanish", END_DEAD, false, 2);
HOSTILE_CASE(rdma_write, "rdma-write", END_RESET, false, 2);
HOSTILE_CASE(big_send, "big-send", END_RESET, false, 2);
/*
 * Receive zero-copy: the victim's READ of a bogus region fails (a
 * completion error, not a protocol error: the READ was really tried);
 * the rest are protocol errors.
 */
#define HOSTILE_RZC(id, tcase, stat, or)				\
	FIXTURE_VARIANT_ADD(hostile, id) {				\
		.tool_case = tcase, .end = END_RESET, .close_max = 2,	\
		.stat_up = stat, .stat_or = or,				\
	}
HOSTILE_RZC(srcavail_bogus, "srcavail-bogus", "CompletionErrors", NULL);
/*
 * The victim's reader may reach the first (bogus) region and try its READ
 * before the second SRCAVAIL arrives: then the READ's failure ends it.
 */
HOSTILE_RZC(srcavail_twice, "srcavail-twice", "ProtocolErrors",
	    "CompletionErrors");
HOSTILE_RZC(srcavail_huge, "srcavail-huge", "ProtocolErrors", NULL);
HOSTILE_RZC(rddone_unasked, "rddone-unasked", "ProtocolErrors", NULL);

FIXTURE_SETUP(hostile)
{
	struct bystander *b;

	self->lfd = -1;
	self->b = NULL;
	if (access(HOSTILE, X_OK))
		SKIP(return, HOSTILE " not built (needs librdmacm-dev and libibverbs-dev)");
	self->qps = rc_qps();
	if (self->qps < 0)
		SKIP(return, "no `rdma resource show qp` (iproute2's rdma)");

	self->lfd = afrdma_listen_on(AFRDMA_T_IPPROTO, addr4(), 0, 16,
				     &self->port);
	ASSERT_LE(0, self->lfd) TH_LOG("listen: %s", strerror(errno));

	b = calloc(1, sizeof(*b));
	ASSERT_NE(NULL, b);
	self->b = b;
	b->cfd = afrdma_connect_to(AFRDMA_T_IPPROTO, addr4(), self->port);
	ASSERT_LE(0, b->cfd) TH_LOG("bystander connect: %s", strerror(errno));
	b->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, b->sfd) TH_LOG("bystander accept: %s", strerror(errno));
	ASSERT_EQ(0, pthread_create(&b->rx, NULL, bystander_rx, b));
	ASSERT_EQ(0, pthread_create(&b->tx, NULL, bystander_tx, b));
	ASSERT_TRUE(bystander_moves(b, 1 << 20, 20))
		TH_LOG("the bystander moves no data before the attack");
}

FIXTURE_TEARDOWN(hostile)
{
	if (self->lfd >= 0)
		close(self->lfd);
}

TEST_F_TIMEOUT(hostile, attack, 150)
{
	const FIXTURE_VARIANT(hostile) *v = variant;
	struct bystander *b = self->b;
	char port[8], buf[65536];
	struct timeval tv;
	struct pollfd pfd = { .fd = self->lfd, .events = POLLIN };
	long long got = 0, stat0, or0;
	double t0, t;
	int vfd, logfd, st, qps = -1, err = 0;
	ssize_t r;
	pid_t pid;

	stat0 = v->stat_up ? afrdma_stat(v->stat_up) : 0;
	or0 = v->stat_or ? afrdma_stat(v->stat_or) : 0;
	snprintf(port, sizeof(port), "%u", self->port);
	logfd = memfd_create("hostile-log", 0);
	ASSERT_LE(0, logfd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(logfd, 1);
		dup2(logfd, 2);
		execl(HOSTILE, HOSTILE, "-a", addr4(), "-p", port, "-c",
		      v->tool_case, "-t", "30", (char *)NULL);
		_exit(127);
	}

	if (v->end == END_REJECTED) {
		/* The listener must not hand the attacker to the program. */
		EXPECT_EQ(0, poll(&pfd, 1, 3000));
		st = wait_tool(pid, 30);
		show_log(logfd);
		EXPECT_EQ(0, st) TH_LOG("the tool was not rejected");
		goto after;
	}

	ASSERT_EQ(1, poll(&pfd, 1, 20000)) {
		kill(pid, SIGKILL);
		show_log(logfd);
	}
	vfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, vfd);
	tv.tv_sec = v->end == END_TIMEOUT ? 2 : 15;
	tv.tv_usec = 0;
	setsockopt(vfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (v->end == END_DEAD) {
		int one = 1, two = 2;

		ASSERT_EQ(0, setsockopt(vfd, SOL_TCP, TCP_KEEPIDLE, &one, sizeof(one)));
		ASSERT_EQ(0, setsockopt(vfd, SOL_TCP, TCP_KEEPINTVL, &one, sizeof(one)));
		ASSERT_EQ(0, setsockopt(vfd, SOL_TCP, TCP_KEEPCNT, &two, sizeof(two)));
		ASSERT_EQ(0, setsockopt(vfd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
	}
	tv.tv_sec = 2;
	setsockopt(vfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* Gives lie-size something to choke on; may fail once reset. */
	memset(buf, 'g', sizeof(buf));
	r = send(vfd, buf, GREETING, MSG_NOSIGNAL);
	TH_LOG("greeting: %zd (%s)", r, r < 0 ? strerror(errno) : "sent");

	t0 = now();
	while ((r = recv(vfd, buf, v->slow_reader ? 64 : sizeof(buf), 0)) > 0) {
		got += r;
		if (v->slow_reader)
			usleep(150000);
	}
	err = r < 0 ? errno : 0;
	t = now() - t0;
	TH_LOG("victim recv: %zd (%s) after %.2f s, %lld bytes before",
	       r, r < 0 ? strerror(err) : "EOF", t, got);

	switch (v->end) {
	case END_RESET:
		EXPECT_EQ(-1, r);
		EXPECT_EQ(ECONNRESET, err);
		break;
	case END_EOF_OR_RESET:
		EXPECT_TRUE(r == 0 || err == ECONNRESET);
		break;
	case END_DEAD:
		EXPECT_EQ(-1, r);
		EXPECT_EQ(ETIMEDOUT, err);
		EXPECT_GT(15.0, t) TH_LOG("found only by SO_RCVTIMEO");
		break;
	default:
		EXPECT_EQ(-1, r);
		EXPECT_EQ(EAGAIN, err);
		break;
	}
	if (!v->data_ok)
		EXPECT_EQ(0, got) TH_LOG("bytes reached the program");
	if (v->stat_up && !(v->stat_or && or0 < afrdma_stat(v->stat_or)))
		EXPECT_LT(stat0, afrdma_stat(v->stat_up)) TH_LOG("%s did not rise", v->stat_up);
	if (v->end != END_TIMEOUT) {
		/* What the attacker sends after the end must not surface. */
		usleep(300000);
		r = recv(vfd, buf, sizeof(buf), MSG_DONTWAIT);
		EXPECT_GE(0, r) TH_LOG("%zd bytes after the end", r);
	}

	t0 = now();
	EXPECT_EQ(0, close(vfd));
	t = now() - t0;
	TH_LOG("close: %.2f s", t);
	EXPECT_GE(v->close_max, t);

	st = wait_tool(pid, 40);
	show_log(logfd);
	EXPECT_EQ(0, st) TH_LOG("the attacker saw something unexpected");

after:
	close(logfd);
	/* The bystander carried on through the attack and still does. */
	EXPECT_TRUE(bystander_moves(b, 1 << 20, 20));
	atomic_store(&b->stop, true);
	pthread_join(b->tx, NULL);
	pthread_join(b->rx, NULL);
	EXPECT_EQ(0, b->tx_err);
	EXPECT_EQ(0, b->rx_err);
	EXPECT_EQ(b->tx_sum.bytes, b->rx_sum.bytes);
	EXPECT_EQ(afrdma_csum_final(&b->tx_sum), afrdma_csum_final(&b->rx_sum));
	TH_LOG("bystander: %llu bytes, checksums %s", b->rx_sum.bytes,
	       afrdma_csum_final(&b->tx_sum) == afrdma_csum_final(&b->rx_sum) ?
	       "match" : "DIFFER");
	close(b->cfd);
	close(b->sfd);
	close(self->lfd);
	self->lfd = -1;

	/* Nothing leaks: the victim's, the attacker's and the bystander's QPs go. */
	for (t0 = now(); now() - t0 < 10; usleep(100000)) {
		qps = rc_qps();
		if (qps == self->qps)
			break;
	}
	EXPECT_EQ(self->qps, qps) TH_LOG("RC QPs: %d before, %d after",
					 self->qps, qps);
}

TEST_HARNESS_MAIN
