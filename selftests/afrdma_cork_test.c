// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma selftests for what the send path holds back and when it lets go:
 * TCP_CORK (and its 200 ms ceiling), MSG_MORE, Nagle and TCP_NODELAY, the
 * push before FIN, and data integrity across all of them mixed.  Each way
 * in (AF_RDMA and IPPROTO_RDMA, IPv4 and IPv6).
 *
 * TCP_INFO's tcpi_data_segs_out counts the SENDs posted, so coalescing is
 * seen by counting, not by timing.  Emulation can stall a test for longer
 * than the 200 ms cork ceiling: checks that data is still held are made
 * only when the test got there well within it (and say so when not); the
 * ceiling itself is checked only as eventual delivery.
 */
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

/* Well within the 200 ms ceiling, so data must still be held. */
#define HOLD_MS		100
/* Generous, for emulation: delivery, never latency. */
#define WAIT_MS		5000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int set_opt(int fd, int name, int val)
{
	return setsockopt(fd, IPPROTO_TCP, name, &val, sizeof(val));
}

static int get_opt(int fd, int name)
{
	socklen_t len = sizeof(int);
	int val = -1;

	if (getsockopt(fd, IPPROTO_TCP, name, &val, &len))
		return -1;
	return val;
}

static struct tcp_info get_info(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		ti.tcpi_state = 0xff;
	return ti;
}

static unsigned int data_segs(int fd)
{
	return get_info(fd).tcpi_data_segs_out;
}

/* True when nothing is readable: what a held send must look like. */
static bool nothing_readable(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) == -1 &&
	       errno == EAGAIN;
}

/*
 * Reads the 300 bytes of three 100-byte sends: after a hold, one recv with
 * a large buffer gets them all, and the sender posted one SEND for them.
 */
static void recv_three(struct __test_metadata *_metadata, int cfd, int sfd,
		       const char *out, unsigned int segs, bool held)
{
	char in[4096];
	int n;

	ASSERT_NE(0, wait_for(sfd, POLLIN, WAIT_MS) & POLLIN);
	n = recv(sfd, in, sizeof(in), 0);
	ASSERT_LT(0, n);
	if (held) {
		ASSERT_EQ(300, n);
		ASSERT_EQ(segs + 1, data_segs(cfd));
	} else {
		ASSERT_EQ(300 - n, recv(sfd, in + n, 300 - n, MSG_WAITALL));
	}
	ASSERT_EQ(0, memcmp(in, out, 300));
}

FIXTURE(cork) {
	int lfd, cfd, sfd;
	unsigned short port;
};

FIXTURE_VARIANT(cork) {
	enum afrdma_transport t;
	bool v6;
};

FIXTURE_VARIANT_ADD(cork, af_rdma_v4) { .t = AFRDMA_T_FAMILY, .v6 = false };
FIXTURE_VARIANT_ADD(cork, af_rdma_v6) { .t = AFRDMA_T_FAMILY, .v6 = true };
FIXTURE_VARIANT_ADD(cork, ipproto_v4) { .t = AFRDMA_T_IPPROTO, .v6 = false };
FIXTURE_VARIANT_ADD(cork, ipproto_v6) { .t = AFRDMA_T_IPPROTO, .v6 = true };

FIXTURE_SETUP(cork)
{
	const char *a = test_addr(variant->v6);

	self->lfd = afrdma_listen_on(variant->t, a, 0, 4, &self->port);
	ASSERT_LE(0, self->lfd) TH_LOG("listen: %s", strerror(errno));
	self->cfd = afrdma_connect_to(variant->t, a, self->port);
	ASSERT_LE(0, self->cfd) TH_LOG("connect: %s", strerror(errno));
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd) TH_LOG("accept: %s", strerror(errno));
}

FIXTURE_TEARDOWN(cork)
{
	if (self->sfd >= 0)
		close(self->sfd);
	if (self->cfd >= 0)
		close(self->cfd);
	close(self->lfd);
}

/* Several small corked sends: held until uncorked, then one SEND. */
TEST_F(cork, cork_coalesces)
{
	char out[300];
	unsigned int segs;
	long long t0;
	bool held;
	int i, n, nsd;

	fill((unsigned char *)out, sizeof(out), 1);
	ASSERT_EQ(0, set_opt(self->cfd, TCP_CORK, 1));
	ASSERT_EQ(1, get_opt(self->cfd, TCP_CORK));
	segs = data_segs(self->cfd);
	t0 = now_ms();
	for (i = 0; i < 3; i++)
		ASSERT_EQ(100, send(self->cfd, out + i * 100, 100, 0));
	held = nothing_readable(self->sfd);
	ASSERT_EQ(0, ioctl(self->cfd, SIOCOUTQ, &n));
	ASSERT_EQ(0, ioctl(self->cfd, SIOCOUTQNSD, &nsd));
	/* Room left in the open slot: still writable. */
	ASSERT_NE(0, wait_for(self->cfd, POLLOUT, 0) & POLLOUT);
	if (now_ms() - t0 < HOLD_MS) {
		struct tcp_info ti = get_info(self->cfd);

		ASSERT_TRUE(held);
		ASSERT_EQ(300, n);
		ASSERT_EQ(300, nsd);
		ASSERT_EQ(300U, ti.tcpi_notsent_bytes);
		ASSERT_EQ(segs, ti.tcpi_data_segs_out);
	} else {
		TH_LOG("slow guest: hold not checked");
		ASSERT_GE(300, n);
		held = false;
	}

	ASSERT_EQ(0, set_opt(self->cfd, TCP_CORK, 0));
	recv_three(_metadata, self->cfd, self->sfd, out, segs, held);
	ASSERT_EQ(0U, get_info(self->cfd).tcpi_notsent_bytes);
}

/* MSG_MORE holds like a cork; the next plain send lets it all go. */
TEST_F(cork, msg_more_coalesces)
{
	unsigned int segs;
	char out[300];
	long long t0;
	bool held;

	fill((unsigned char *)out, sizeof(out), 2);
	segs = data_segs(self->cfd);
	t0 = now_ms();
	ASSERT_EQ(100, send(self->cfd, out, 100, MSG_MORE));
	ASSERT_EQ(100, send(self->cfd, out + 100, 100, MSG_MORE));
	held = nothing_readable(self->sfd) && data_segs(self->cfd) == segs &&
	       now_ms() - t0 < HOLD_MS;
	if (!held)
		TH_LOG("slow guest: hold not checked");
	ASSERT_EQ(100, send(self->cfd, out + 200, 100, 0));
	recv_three(_metadata, self->cfd, self->sfd, out, segs, held);
}

/* A cork is not forever: TCP's 200 ms ceiling sends without an uncork. */
TEST_F(cork, cork_ceiling)
{
	char out[100], in[200];
	unsigned int segs;
	long long t0;

	fill((unsigned char *)out, sizeof(out), 3);
	ASSERT_EQ(0, set_opt(self->cfd, TCP_CORK, 1));
	segs = data_segs(self->cfd);
	t0 = now_ms();
	ASSERT_EQ(100, send(self->cfd, out, 100, 0));
	if (!nothing_readable(self->sfd) && now_ms() - t0 < HOLD_MS)
		ASSERT_TRUE(false) TH_LOG("corked data readable at once");
	ASSERT_NE(0, wait_for(self->sfd, POLLIN, WAIT_MS) & POLLIN);
	ASSERT_EQ(100, recv(self->sfd, in, sizeof(in), 0));
	ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
	ASSERT_EQ(segs + 1, data_segs(self->cfd));
	/* The ceiling pushes; it does not uncork. */
	ASSERT_EQ(1, get_opt(self->cfd, TCP_CORK));
}

TEST_F(cork, msg_more_ceiling)
{
	char out[100], in[200];
	long long t0;

	fill((unsigned char *)out, sizeof(out), 4);
	t0 = now_ms();
	ASSERT_EQ(100, send(self->cfd, out, 100, MSG_MORE));
	if (!nothing_readable(self->sfd) && now_ms() - t0 < HOLD_MS)
		ASSERT_TRUE(false) TH_LOG("MSG_MORE data readable at once");
	ASSERT_NE(0, wait_for(self->sfd, POLLIN, WAIT_MS) & POLLIN);
	ASSERT_EQ(100, recv(self->sfd, in, sizeof(in), 0));
	ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
}

/* TCP_NODELAY: every small send goes at once, one SEND each. */
TEST_F(cork, nodelay_each_send)
{
	unsigned int segs;
	char in[64];
	int i;

	ASSERT_EQ(0, set_opt(self->cfd, TCP_NODELAY, 1));
	ASSERT_EQ(1, get_opt(self->cfd, TCP_NODELAY));
	segs = data_segs(self->cfd);
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(10, send(self->cfd, "0123456789", 10, 0));
		ASSERT_NE(0, wait_for(self->sfd, POLLIN, WAIT_MS) & POLLIN)
			TH_LOG("send %d not readable", i);
		ASSERT_EQ(10, recv(self->sfd, in, sizeof(in), 0));
	}
	ASSERT_EQ(segs + 10, data_segs(self->cfd));
}

/* Setting TCP_NODELAY pushes held data, even while corked, as TCP does. */
TEST_F(cork, nodelay_pushes_cork)
{
	char out[50], in[100];

	fill((unsigned char *)out, sizeof(out), 5);
	ASSERT_EQ(0, set_opt(self->cfd, TCP_CORK, 1));
	ASSERT_EQ(50, send(self->cfd, out, 50, 0));
	ASSERT_EQ(0, set_opt(self->cfd, TCP_NODELAY, 1));
	ASSERT_NE(0, wait_for(self->sfd, POLLIN, WAIT_MS) & POLLIN);
	ASSERT_EQ(50, recv(self->sfd, in, sizeof(in), 0));
	ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
}

/* Nagle (the default) never holds a send when nothing is in flight. */
TEST_F(cork, nagle_ping_pong)
{
	char buf[64];
	int i;

	ASSERT_EQ(0, get_opt(self->cfd, TCP_NODELAY));
	memset(buf, 'p', sizeof(buf));
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(64, send(self->cfd, buf, 64, 0));
		ASSERT_NE(0, wait_for(self->sfd, POLLIN, WAIT_MS) & POLLIN)
			TH_LOG("ping %d not readable", i);
		ASSERT_EQ(64, recv(self->sfd, buf, 64, MSG_WAITALL));
		ASSERT_EQ(64, send(self->sfd, buf, 64, 0));
		ASSERT_NE(0, wait_for(self->cfd, POLLIN, WAIT_MS) & POLLIN)
			TH_LOG("pong %d not readable", i);
		ASSERT_EQ(64, recv(self->cfd, buf, 64, MSG_WAITALL));
	}
}

/*
 * Small sends behind a window of full SENDs: with TCP_NODELAY each takes
 * its own SEND.  With Nagle they share one while SENDs are in flight, but
 * rxe over loopback completes a SEND inside ib_post_send(), so here there
 * is seldom anything in flight to wait for: only the bounds are checked.
 */
static void behind_window(struct __test_metadata *_metadata, int cfd, int sfd,
			  bool nodelay)
{
	struct tcp_info ti = get_info(cfd);
	unsigned int mss = ti.tcpi_snd_mss, full, segs, i;
	size_t big, total, got = 0;
	char *out, *in;
	ssize_t n;

	ASSERT_LT(12U, ti.tcpi_snd_cwnd);
	full = ti.tcpi_snd_cwnd - 10;
	big = (size_t)full * mss;
	total = big + 6 * 100;
	out = malloc(total);
	in = malloc(total);
	ASSERT_TRUE(out && in);
	fill((unsigned char *)out, total, nodelay);
	ASSERT_EQ(0, set_opt(cfd, TCP_NODELAY, nodelay));

	segs = data_segs(cfd);
	ASSERT_EQ((ssize_t)big, send(cfd, out, big, 0));
	for (i = 0; i < 6; i++)
		ASSERT_EQ(100, send(cfd, out + big + i * 100, 100, 0));
	while (got < total) {
		n = recv(sfd, in + got, total - got, 0);
		ASSERT_LT(0, n);
		got += n;
	}
	ASSERT_EQ(0, memcmp(in, out, total));
	segs = data_segs(cfd) - segs;
	if (nodelay) {
		ASSERT_EQ(full + 6, segs);
	} else {
		ASSERT_LE(full + 1, segs);
		ASSERT_GE(full + 6, segs);
		TH_LOG("Nagle: %u SENDs for %u full and 6 small writes%s",
		       segs, full, segs == full + 6 ? " (nothing in flight)" : "");
	}
	free(out);
	free(in);
}

/*
 * A new connection whose rings start at their largest, so that the window
 * is wide at once (how rings grow is afrdma_ring_test's business).
 */
static void wide_pair(struct __test_metadata *_metadata,
		      FIXTURE_DATA(cork) *self,
		      const FIXTURE_VARIANT(cork) *variant)
{
	int initial = afrdma_sysctl("initial_slots", -1);

	ASSERT_LT(0, initial);
	close(self->cfd);
	close(self->sfd);
	self->cfd = -1;
	self->sfd = -1;
	ASSERT_LT(0, afrdma_sysctl("initial_slots", afrdma_sysctl("rx_slots", -1)));
	self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6), self->port);
	afrdma_sysctl("initial_slots", initial);
	ASSERT_LE(0, self->cfd) TH_LOG("connect: %s", strerror(errno));
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd) TH_LOG("accept: %s", strerror(errno));
}

TEST_F(cork, nagle_behind_window)
{
	wide_pair(_metadata, self, variant);
	behind_window(_metadata, self->cfd, self->sfd, false);
}

TEST_F(cork, nodelay_behind_window)
{
	wide_pair(_metadata, self, variant);
	behind_window(_metadata, self->cfd, self->sfd, true);
}

/* shutdown(SHUT_WR) sends what the cork holds, then FIN. */
TEST_F(cork, shutdown_pushes)
{
	char out[100], in[200];

	fill((unsigned char *)out, sizeof(out), 6);
	ASSERT_EQ(0, set_opt(self->cfd, TCP_CORK, 1));
	ASSERT_EQ(100, send(self->cfd, out, 100, MSG_MORE));
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(100, recv(self->sfd, in, 100, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
	ASSERT_EQ(0, recv(self->sfd, in, sizeof(in), 0));
}

/* close() too: the peer reads the held bytes, then EOF. */
TEST_F(cork, close_pushes)
{
	char out[1000], in[2000];

	fill((unsigned char *)out, sizeof(out), 7);
	ASSERT_EQ(0, set_opt(self->cfd, TCP_CORK, 1));
	ASSERT_EQ(1000, send(self->cfd, out, 1000, MSG_MORE));
	ASSERT_EQ(0, close(self->cfd));
	self->cfd = -1;
	ASSERT_EQ(1000, recv(self->sfd, in, 1000, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
	ASSERT_EQ(0, recv(self->sfd, in, sizeof(in), 0));
}

struct reader {
	int fd;
	struct afrdma_csum csum;
	int err;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	static char buf[1 << 16];
	ssize_t n;

	while ((n = recv(r->fd, buf, sizeof(buf), 0)) > 0)
		afrdma_csum_update(&r->csum, buf, n);
	r->err = n ? errno : 0;
	return NULL;
}

/* Corked, uncorked, MSG_MORE and TCP_NODELAY writes mixed: no byte lost. */
TEST_F(cork, mixed_integrity)
{
	static const size_t sizes[] = { 1, 7, 100, 1000, 5000, 16383, 40000 };
	struct reader r = { .fd = self->sfd };
	unsigned int mss = get_info(self->cfd).tcpi_snd_mss;
	unsigned int seed = 1, segs, one_each = 0;
	struct afrdma_csum sent = {};
	static char out[40000];
	pthread_t th;
	int i;

	ASSERT_LT(0U, mss);
	segs = data_segs(self->cfd);
	ASSERT_EQ(0, pthread_create(&th, NULL, read_all, &r));
	for (i = 0; i < 600; i++) {
		size_t len;
		int flags;

		seed = seed * 1103515245 + 12345;
		len = sizes[(seed >> 8) % 7];
		len = 1 + (seed >> 4) % len;
		flags = (seed >> 20) & 1 ? MSG_MORE : 0;
		if (!((seed >> 21) % 16))
			ASSERT_EQ(0, set_opt(self->cfd, TCP_CORK, (seed >> 25) & 1));
		if (!((seed >> 26) % 32))
			ASSERT_EQ(0, set_opt(self->cfd, TCP_NODELAY, (seed >> 30) & 1));
		fill((unsigned char *)out, len, i);
		ASSERT_EQ((ssize_t)len, send(self->cfd, out, len, flags));
		afrdma_csum_update(&sent, out, len);
		one_each += (len + mss - 1) / mss;
	}
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, r.err);
	ASSERT_EQ(sent.bytes, r.csum.bytes);
	ASSERT_EQ(afrdma_csum_final(&sent), afrdma_csum_final(&r.csum));
	/* Fewer SENDs than writes cut one by one would take. */
	segs = data_segs(self->cfd) - segs;
	ASSERT_LE((sent.bytes + mss - 1) / mss, segs);
	ASSERT_GT(one_each, segs);
}

TEST_HARNESS_MAIN
