// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma selftests for the lazily grown rings: a connection starts with
 * net.afrdma.initial_slots buffers each way and grows only while traffic
 * needs it, up to net.afrdma.rx_slots/tx_slots or what SO_RCVBUF/SO_SNDBUF
 * set before connect; data stays intact while the rings grow.  Under
 * memory pressure (net.afrdma.mem) no ring grows, and data stays intact on
 * the rings there are.  The ring sizes come from /proc/net/afrdma.
 */
#include <errno.h>
#include <linux/tcp.h>
#include <pthread.h>
#include <sys/socket.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

#define SLOT		16384	/* net.afrdma.slot_size, checked below */
#define BULK		(8 << 20)
#define CHUNK		(256 << 10)
/*
 * The harness's bound for the longest cases, a hang detector only: the
 * debug kernel (make check-debug) runs them about 5 times slower than the
 * stock kernels, past the harness's default 30 s.
 */
#define RING_LONG_S	600

FIXTURE(ring) {
	int		lfd, cfd, sfd;
	unsigned short	port;
	unsigned int	initial, rx_max, tx_max;
	char		mem0[96];	/* net.afrdma.mem to restore */
};

/*
 * The settings the tests change, as the program found them, put back
 * after each test and by the harness's own process at exit: a test the
 * harness kills at its timeout runs no teardown, and rings left at 4
 * slots would make the next program's echo wait for ever (make
 * check-debug once did).  The forked tests leave with _exit().
 */
static struct {
	int	initial, rx_max, tx_max;
	char	mem[96];
} ring_saved = { .initial = -1 };

static void __attribute__((constructor)) ring_save(void)
{
	ring_saved.initial = afrdma_sysctl("initial_slots", -1);
	ring_saved.rx_max = afrdma_sysctl("rx_slots", -1);
	ring_saved.tx_max = afrdma_sysctl("tx_slots", -1);
	if (afrdma_mem_sysctl(ring_saved.mem, sizeof(ring_saved.mem), NULL))
		ring_saved.mem[0] = 0;
}

static void __attribute__((destructor)) ring_restore(void)
{
	if (ring_saved.initial < 0)
		return;
	afrdma_sysctl("initial_slots", ring_saved.initial);
	afrdma_sysctl("rx_slots", ring_saved.rx_max);
	afrdma_sysctl("tx_slots", ring_saved.tx_max);
	afrdma_param_set("debug_counter_start", 0);
	if (ring_saved.mem[0])
		afrdma_mem_sysctl(NULL, 0, ring_saved.mem);
}

FIXTURE_SETUP(ring)
{
	self->cfd = -1;
	self->sfd = -1;
	self->mem0[0] = 0;
	self->initial = afrdma_sysctl("initial_slots", -1);
	self->rx_max = afrdma_sysctl("rx_slots", -1);
	self->tx_max = afrdma_sysctl("tx_slots", -1);
	ASSERT_NE(-1, afrdma_sysctl("initial_slots", -1))
		TH_LOG("no net.afrdma.initial_slots");
	ASSERT_EQ(SLOT, afrdma_sysctl("slot_size", -1));
	/* The tests need room to grow. */
	ASSERT_LT(self->initial, self->rx_max);
	ASSERT_LT(self->initial, self->tx_max);
	self->lfd = afrdma_listen_on(AFRDMA_T_FAMILY, test_addr(false), 0, 16,
				     &self->port);
	ASSERT_LE(0, self->lfd);
}

FIXTURE_TEARDOWN(ring)
{
	/* What a test changed, back for the next one. */
	ring_restore();
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->sfd >= 0)
		close(self->sfd);
	close(self->lfd);
}

/* A client socket with SO_RCVBUF/SO_SNDBUF (@force: the FORCE options). */
static int sized_socket(int rcvbuf, int sndbuf, bool force)
{
	int fd = afrdma_socket(AFRDMA_T_FAMILY, AF_INET, 0);

	if (fd < 0)
		return -1;
	if ((rcvbuf && setsockopt(fd, SOL_SOCKET,
				  force ? SO_RCVBUFFORCE : SO_RCVBUF,
				  &rcvbuf, sizeof(rcvbuf))) ||
	    (sndbuf && setsockopt(fd, SOL_SOCKET,
				  force ? SO_SNDBUFFORCE : SO_SNDBUF,
				  &sndbuf, sizeof(sndbuf)))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Connects @fd (or a fresh socket if -1) to the listener and accepts. */
static int pair(struct __test_metadata *_metadata, FIXTURE_DATA(ring) *self,
		int fd)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (fd < 0)
		fd = afrdma_socket(AFRDMA_T_FAMILY, AF_INET, 0);
	if (fd < 0)
		return -1;
	len = afrdma_make_addr(&ss, test_addr(false), self->port);
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	self->cfd = fd;
	self->sfd = accept(self->lfd, NULL, NULL);
	return self->sfd < 0 ? -1 : 0;
}

static struct afrdma_rings rings_of(struct __test_metadata *_metadata, int fd)
{
	struct afrdma_rings r = {};

	EXPECT_EQ(0, afrdma_rings(fd, &r)) TH_LOG("fd %d not in /proc/net/afrdma", fd);
	return r;
}

static unsigned int getint(int fd, int name)
{
	socklen_t len = sizeof(int);
	int val = -1;

	if (getsockopt(fd, SOL_SOCKET, name, &val, &len))
		return 0;
	return val;
}

/* One direction of a transfer: what was written or read, checksummed. */
struct flow {
	int			fd;
	size_t			bytes;
	unsigned int		seed;
	unsigned long long	csum;
	int			err;
};

/* Writes of many sizes, 1 byte to 200 KiB, so every slot fill occurs. */
static void *flow_send(void *arg)
{
	static const size_t sizes[] = { 65536, 1, 204800, 100, 16376, 16377, 4096, 7 };
	struct afrdma_csum c = {};
	struct flow *f = arg;
	size_t done = 0, n, off;
	unsigned char *buf;
	unsigned int i = 0;
	ssize_t r;

	buf = malloc(CHUNK);
	if (!buf) {
		f->err = ENOMEM;
		return NULL;
	}
	while (done < f->bytes) {
		n = sizes[i % ARRAY_SIZE(sizes)];
		if (n > f->bytes - done)
			n = f->bytes - done;
		fill(buf, n, f->seed + i++);
		afrdma_csum_update(&c, buf, n);
		for (off = 0; off < n; off += r) {
			r = send(f->fd, buf + off, n - off, MSG_NOSIGNAL);
			if (r <= 0) {
				f->err = r < 0 ? errno : EPIPE;
				goto out;
			}
		}
		done += n;
	}
	f->csum = afrdma_csum_final(&c);
out:
	free(buf);
	return NULL;
}

static void *flow_recv(void *arg)
{
	static const size_t sizes[] = { CHUNK, 10, 16384, 3000 };
	struct afrdma_csum c = {};
	struct flow *f = arg;
	unsigned char *buf;
	unsigned int i = 0;
	size_t done = 0;
	ssize_t r;

	buf = malloc(CHUNK);
	if (!buf) {
		f->err = ENOMEM;
		return NULL;
	}
	while (done < f->bytes) {
		r = recv(f->fd, buf, sizes[i++ % ARRAY_SIZE(sizes)], 0);
		if (r <= 0) {
			f->err = r < 0 ? errno : EPIPE;
			break;
		}
		afrdma_csum_update(&c, buf, r);
		done += r;
	}
	f->csum = afrdma_csum_final(&c);
	free(buf);
	return NULL;
}

/* Moves @ab bytes from @a to @b and @ba from @b to @a at once; checks both. */
static void transfer(struct __test_metadata *_metadata, int a, int b,
		     size_t ab, size_t ba)
{
	struct flow fl[4] = {
		{ .fd = a, .bytes = ab, .seed = 1 }, { .fd = b, .bytes = ab },
		{ .fd = b, .bytes = ba, .seed = 2 }, { .fd = a, .bytes = ba },
	};
	struct timeval tv = { .tv_sec = 60 };
	int i, errs = 0;
	pthread_t t[4];

	/* A stall fails the test instead of hanging it. */
	for (i = 0; i < 4; i++)
		setsockopt(fl[i].fd, SOL_SOCKET, i % 2 ? SO_RCVTIMEO : SO_SNDTIMEO,
			   &tv, sizeof(tv));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL,
					    i % 2 ? flow_recv : flow_send, &fl[i]));
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 4; i++) {
		if (!fl[i].err)
			continue;
		TH_LOG("flow %d: %s", i, strerror(fl[i].err));
		errs++;
	}
	EXPECT_EQ(0, errs);
	EXPECT_EQ(fl[0].csum, fl[1].csum) TH_LOG("a to b corrupted");
	EXPECT_EQ(fl[2].csum, fl[3].csum) TH_LOG("b to a corrupted");
}

/* Idle and ping-pong connections stay small; a bulk transfer grows them. */
TEST_F(ring, idle_small_busy_grows)
{
	struct afrdma_rings c, s;
	char buf[64] = "ping";
	int i;

	ASSERT_EQ(0, pair(_metadata, self, -1));
	c = rings_of(_metadata, self->cfd);
	s = rings_of(_metadata, self->sfd);
	EXPECT_EQ(self->initial, c.rx);
	EXPECT_EQ(self->initial, c.tx);
	EXPECT_EQ(self->initial, s.rx);
	EXPECT_EQ(self->initial, s.tx);
	EXPECT_EQ(self->rx_max, c.rx_max);
	EXPECT_EQ(self->tx_max, c.tx_max);
	EXPECT_EQ(self->rx_max, s.rx_max);
	EXPECT_EQ(self->tx_max, s.tx_max);
	/* Nothing set: the rings as they are, doubled as the core reports. */
	EXPECT_EQ(2 * self->initial * SLOT, getint(self->sfd, SO_RCVBUF));
	EXPECT_EQ(2 * self->initial * SLOT, getint(self->sfd, SO_SNDBUF));

	/* One message at a time never runs the peer out of credits. */
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(64, send(self->cfd, buf, 64, 0));
		ASSERT_EQ(64, recv(self->sfd, buf, 64, MSG_WAITALL));
		ASSERT_EQ(64, send(self->sfd, buf, 64, 0));
		ASSERT_EQ(64, recv(self->cfd, buf, 64, MSG_WAITALL));
	}
	c = rings_of(_metadata, self->cfd);
	s = rings_of(_metadata, self->sfd);
	EXPECT_EQ(self->initial, c.rx);
	EXPECT_EQ(self->initial, c.tx);
	EXPECT_EQ(self->initial, s.rx);
	EXPECT_EQ(self->initial, s.tx);

	transfer(_metadata, self->cfd, self->sfd, BULK, 0);
	c = rings_of(_metadata, self->cfd);
	s = rings_of(_metadata, self->sfd);
	TH_LOG("after %d MiB: sender tx %u/%u, receiver rx %u/%u", BULK >> 20,
	       c.tx, c.tx_max, s.rx, s.rx_max);
	EXPECT_LT(self->initial, s.rx);
	EXPECT_GE(s.rx_max, s.rx);
	/*
	 * The send ring grows only when SENDs wait for their completions;
	 * rxe on 6.1 often completes a loopback SEND inside the post, so
	 * whether it grew depends on the kernel: only its bounds are checked.
	 */
	EXPECT_LE(self->initial, c.tx);
	EXPECT_GE(c.tx_max, c.tx);
	EXPECT_EQ(2 * s.rx * SLOT, getint(self->sfd, SO_RCVBUF));
	EXPECT_EQ(2 * c.tx * SLOT, getint(self->cfd, SO_SNDBUF));
}

/* SO_RCVBUF/SO_SNDBUF before connect bound the rings; huge ones are capped. */
TEST_F(ring, sockopt_bounds)
{
	int big = 64 << 20, fd;
	struct afrdma_rings r;

	/* 8 slots each way: below the default maximum, above the start. */
	fd = sized_socket(8 * SLOT, 8 * SLOT, false);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pair(_metadata, self, fd));
	r = rings_of(_metadata, self->cfd);
	EXPECT_EQ(8U, r.rx_max);
	EXPECT_EQ(8U, r.tx_max);
	EXPECT_EQ(self->initial, r.rx);
	/* Set by the program: the bound, doubled as the core reports. */
	EXPECT_EQ(2U * 8 * SLOT, getint(self->cfd, SO_RCVBUF));
	EXPECT_EQ(2U * 8 * SLOT, getint(self->cfd, SO_SNDBUF));
	r = rings_of(_metadata, self->sfd);
	EXPECT_EQ(self->rx_max, r.rx_max);

	/* Busy both ways: the client's rings grow to the bound, no further. */
	transfer(_metadata, self->cfd, self->sfd, BULK, BULK);
	r = rings_of(_metadata, self->cfd);
	EXPECT_EQ(8U, r.rx);
	EXPECT_EQ(8U, r.rx_max);
	EXPECT_GE(8U, r.tx);	/* as above, growth depends on the kernel */
	EXPECT_EQ(8U, r.tx_max);
	close(self->cfd);
	close(self->sfd);

	/* Far above net.afrdma.rx_slots/tx_slots: capped there. */
	fd = sized_socket(big, big, true);
	if (fd < 0 && errno == EPERM)
		SKIP(return, "SO_RCVBUFFORCE needs CAP_NET_ADMIN");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pair(_metadata, self, fd));
	r = rings_of(_metadata, self->cfd);
	EXPECT_EQ(self->rx_max, r.rx_max);
	EXPECT_EQ(self->tx_max, r.tx_max);
	EXPECT_EQ(2 * self->rx_max * SLOT, getint(self->cfd, SO_RCVBUF));
	EXPECT_EQ(2 * self->tx_max * SLOT, getint(self->cfd, SO_SNDBUF));
	close(self->cfd);
	close(self->sfd);
	self->cfd = -1;
	self->sfd = -1;

	/* On the listener: the accepted connection inherits it, as TCP's. */
	fd = 4 * SLOT;
	ASSERT_EQ(0, setsockopt(self->lfd, SOL_SOCKET, SO_RCVBUF, &fd, sizeof(fd)));
	ASSERT_EQ(0, pair(_metadata, self, -1));
	r = rings_of(_metadata, self->sfd);
	EXPECT_EQ(4U, r.rx_max);
	EXPECT_EQ(4U, r.rx);
	EXPECT_EQ(self->tx_max, r.tx_max);
	transfer(_metadata, self->cfd, self->sfd, BULK / 4, BULK / 4);
}

/*
 * Above net.afrdma.mem's pressure no ring grows, as TCP's buffers stop
 * growing, and the data still arrives whole; back below its min, the
 * rings grow again.
 */
TEST_F(ring, pressure_keeps_rings)
{
	long long declined0 = afrdma_stat("GrowthsDeclined");
	unsigned long min, pressure, max;
	struct afrdma_rings c, s;
	char set[96];

	ASSERT_EQ(0, afrdma_mem_sysctl(self->mem0, sizeof(self->mem0), NULL))
		TH_LOG("no " AFRDMA_MEM_SYSCTL);
	ASSERT_EQ(3, sscanf(self->mem0, "%lu %lu %lu", &min, &pressure, &max));
	ASSERT_LE(0, declined0);
	ASSERT_EQ(0, pair(_metadata, self, -1));
	/* The two ends' buffers are above a pressure of one page. */
	snprintf(set, sizeof(set), "0 1 %lu\n", max);
	ASSERT_EQ(0, afrdma_mem_sysctl(NULL, 0, set));

	transfer(_metadata, self->cfd, self->sfd, BULK, BULK);
	c = rings_of(_metadata, self->cfd);
	s = rings_of(_metadata, self->sfd);
	TH_LOG("under pressure: client rx %u tx %u, server rx %u tx %u; GrowthsDeclined +%lld",
	       c.rx, c.tx, s.rx, s.tx, afrdma_stat("GrowthsDeclined") - declined0);
	EXPECT_EQ(self->initial, c.rx);
	EXPECT_EQ(self->initial, c.tx);
	EXPECT_EQ(self->initial, s.rx);
	EXPECT_EQ(self->initial, s.tx);
	EXPECT_LT(declined0, afrdma_stat("GrowthsDeclined"));

	ASSERT_EQ(0, afrdma_mem_sysctl(NULL, 0, self->mem0));
	transfer(_metadata, self->cfd, self->sfd, BULK, 0);
	s = rings_of(_metadata, self->sfd);
	TH_LOG("pressure gone: server rx %u", s.rx);
	EXPECT_LT(self->initial, s.rx);
}

/* Data intact both ways at once, while both ends' rings grow. */
TEST_F(ring, integrity_while_growing)
{
	struct afrdma_rings c, s;

	ASSERT_EQ(0, pair(_metadata, self, -1));
	transfer(_metadata, self->cfd, self->sfd, 2 * BULK, 2 * BULK);
	c = rings_of(_metadata, self->cfd);
	s = rings_of(_metadata, self->sfd);
	TH_LOG("client rx %u tx %u, server rx %u tx %u", c.rx, c.tx, s.rx, s.tx);
	EXPECT_GE(c.rx_max, c.rx);
	EXPECT_GE(s.rx_max, s.rx);
	/* Some ring grew; which ones depends on who ran short of what. */
	EXPECT_LT(4 * self->initial, c.rx + c.tx + s.rx + s.tx);
}

/*
 * In a ping-pong the credits ride on the answers: no credit message of its
 * own, even after the reader once owed half its ring of 4 (two messages
 * read before it answered, as a request header and the first ping).  Each
 * such message takes a buffer at the peer, owed back in turn, so one used
 * to keep a credit message going per message for the connection's life.
 */
TEST_F(ring, pingpong_credits_ride)
{
	char buf[64] = "ping";
	long long before;
	int i;

	ASSERT_EQ(0, pair(_metadata, self, -1));
	ASSERT_EQ(16, send(self->cfd, buf, 16, 0));
	ASSERT_EQ(16, recv(self->sfd, buf, 16, MSG_WAITALL));
	ASSERT_EQ(64, send(self->cfd, buf, 64, 0));
	ASSERT_EQ(64, recv(self->sfd, buf, 64, MSG_WAITALL));
	ASSERT_EQ(64, send(self->sfd, buf, 64, 0));
	ASSERT_EQ(64, recv(self->cfd, buf, 64, MSG_WAITALL));
	before = afrdma_stat("CtrlSends");
	ASSERT_LE(0, before);
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(64, send(self->cfd, buf, 64, 0));
		ASSERT_EQ(64, recv(self->sfd, buf, 64, MSG_WAITALL));
		ASSERT_EQ(64, send(self->sfd, buf, 64, 0));
		ASSERT_EQ(64, recv(self->cfd, buf, 64, MSG_WAITALL));
	}
	/* A few for the start are fine; one per message is not. */
	EXPECT_GT(before + 10, afrdma_stat("CtrlSends"))
		TH_LOG("%lld credit messages for 400 messages",
		       afrdma_stat("CtrlSends") - before);
}

/*
 * Credits on the smallest rings (4 buffers each way, SO_RCVBUF), in the
 * corner where the credit returns have the least room: the server's
 * messages fill all but one of the client's receive buffers and stay
 * unread, while the client streams to the server, whose credit returns
 * need the client's last buffer and must still get their own credits back.
 * Then the other way round.  A lost credit would stall the stream: the
 * transfer's timeouts make that a failure, not a hang.
 */
TEST_F_TIMEOUT(ring, credits_small_rings, RING_LONG_S)
{
	struct timeval tv = { .tv_sec = 60 };
	int one = 1, fd, side, k;
	char msg[100], in[100];

	fd = 4 * SLOT;
	ASSERT_EQ(0, setsockopt(self->lfd, SOL_SOCKET, SO_RCVBUF, &fd, sizeof(fd)));
	fd = sized_socket(4 * SLOT, 4 * SLOT, false);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pair(_metadata, self, fd));
	EXPECT_EQ(4U, rings_of(_metadata, self->cfd).rx_max);
	EXPECT_EQ(4U, rings_of(_metadata, self->sfd).rx_max);
	for (side = 0; side < 2; side++) {
		int a = side ? self->sfd : self->cfd;
		int b = side ? self->cfd : self->sfd;

		ASSERT_EQ(0, setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
		ASSERT_EQ(0, setsockopt(b, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
		ASSERT_EQ(0, setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
		/* One SEND each, into the three buffers a data message may take. */
		for (k = 0; k < 3; k++) {
			memset(msg, 'a' + k, sizeof(msg));
			ASSERT_EQ((ssize_t)sizeof(msg), send(b, msg, sizeof(msg), 0));
		}
		transfer(_metadata, a, b, BULK / 4, 0);
		for (k = 0; k < 3; k++) {
			memset(msg, 'a' + k, sizeof(msg));
			ASSERT_EQ((ssize_t)sizeof(in), recv(a, in, sizeof(in), MSG_WAITALL));
			ASSERT_EQ(0, memcmp(msg, in, sizeof(in)));
		}
	}
	/* And both ways at once on rings that cannot grow. */
	transfer(_metadata, self->cfd, self->sfd, BULK / 4, BULK / 4);
}

/*
 * The same wait, reached through a credit return: Y's last message before
 * its blocked send returned X's credits, and X reads Y's messages only
 * after that send.  X must still hand back the one buffer it owes.
 */
TEST_F(ring, credits_after_credit_return)
{
	struct timeval tv = { .tv_sec = 20 };
	char msg[100], in[300];
	int one = 1, fd, k;

	fd = 4 * SLOT;
	ASSERT_EQ(0, setsockopt(self->lfd, SOL_SOCKET, SO_RCVBUF, &fd, sizeof(fd)));
	fd = sized_socket(4 * SLOT, 4 * SLOT, false);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pair(_metadata, self, fd));
	for (k = 0; k < 2; k++) {
		ASSERT_EQ(0, setsockopt(k ? self->sfd : self->cfd, IPPROTO_TCP,
					TCP_NODELAY, &one, sizeof(one)));
		ASSERT_EQ(0, setsockopt(k ? self->sfd : self->cfd, SOL_SOCKET,
					SO_SNDTIMEO, &tv, sizeof(tv)));
	}
	memset(msg, 'y', sizeof(msg));
	/* Y (sfd): two messages X leaves unread; X (cfd): three Y reads. */
	for (k = 0; k < 2; k++)
		ASSERT_EQ((ssize_t)sizeof(msg), send(self->sfd, msg, sizeof(msg), 0));
	for (k = 0; k < 3; k++)
		ASSERT_EQ((ssize_t)sizeof(msg), send(self->cfd, msg, sizeof(msg), 0));
	ASSERT_EQ((ssize_t)sizeof(in), recv(self->sfd, in, sizeof(in), MSG_WAITALL));
	/* Y's third message needs the buffer X owes it, not X reading. */
	ASSERT_EQ((ssize_t)sizeof(msg), send(self->sfd, msg, sizeof(msg), 0))
		TH_LOG("Y's send: %s", strerror(errno));
	ASSERT_EQ((ssize_t)sizeof(in), recv(self->cfd, in, sizeof(in), MSG_WAITALL));
	ASSERT_EQ(0, memcmp(in, in + 100, 100));
	ASSERT_EQ(0, memcmp(msg, in + 200, 100));
}

/* initial_slots: its range, and at the maximum the rings start full. */
TEST_F(ring, initial_slots)
{
	struct afrdma_rings r;

	EXPECT_EQ(-1, afrdma_sysctl("initial_slots", 3));
	EXPECT_EQ(-1, afrdma_sysctl("initial_slots", 1025));
	EXPECT_EQ((int)self->initial, afrdma_sysctl("initial_slots", -1));

	ASSERT_EQ((int)self->rx_max, afrdma_sysctl("initial_slots", self->rx_max));
	ASSERT_EQ(0, pair(_metadata, self, -1));
	afrdma_sysctl("initial_slots", self->initial);
	r = rings_of(_metadata, self->cfd);
	EXPECT_EQ(self->rx_max, r.rx);
	r = rings_of(_metadata, self->sfd);
	EXPECT_EQ(self->rx_max, r.rx);
	transfer(_metadata, self->cfd, self->sfd, BULK / 4, BULK / 4);
}

/* SENDs of data and of control messages posted, from TCP_INFO. */
static void sends(struct __test_metadata *_metadata, int fd,
		  unsigned int *data, unsigned int *ctrl)
{
	struct tcp_info ti = {};
	socklen_t len = sizeof(ti);

	ASSERT_EQ(0, getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len));
	*data = ti.tcpi_data_segs_out;
	*ctrl = ti.tcpi_segs_out - ti.tcpi_data_segs_out;
}

/* One connection's rings, its SEND counters from 2^32 - @back. */
struct wrap_cfg {
	unsigned int	initial, max, sndbuf;	/* slots; sndbuf: SO_SNDBUF */
};

static void wrap_run(struct __test_metadata *_metadata,
		     FIXTURE_DATA(ring) *self, const struct wrap_cfg *cfg,
		     unsigned int back)
{
	unsigned int k, data, ctrl, start = 0U - back;
	struct afrdma_rings r;
	int fd;

	ASSERT_EQ(0, afrdma_param_set("debug_counter_start", start))
		TH_LOG("no debug_counter_start knob: %s", strerror(errno));
	ASSERT_EQ((int)cfg->max, afrdma_sysctl("rx_slots", cfg->max));
	ASSERT_EQ((int)cfg->max, afrdma_sysctl("tx_slots", cfg->max));
	ASSERT_EQ((int)cfg->initial,
		  afrdma_sysctl("initial_slots", cfg->initial));
	fd = sized_socket(0, cfg->sndbuf * SLOT, false);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pair(_metadata, self, fd));
	transfer(_metadata, self->cfd, self->sfd, BULK / 4, 0);
	transfer(_metadata, self->cfd, self->sfd, 0, BULK / 4);
	transfer(_metadata, self->cfd, self->sfd, BULK / 4, BULK / 4);
	for (k = 0; k < 2; k++) {
		fd = k ? self->sfd : self->cfd;
		r = rings_of(_metadata, fd);
		sends(_metadata, fd, &data, &ctrl);
		TH_LOG("initial %u max %u sndbuf %u, from 2^32-%u, %s: rx %u/%u tx %u/%u, %u data and %u control SENDs",
		       cfg->initial, cfg->max, cfg->sndbuf, back,
		       k ? "server" : "client", r.rx, r.rx_max, r.tx,
		       r.tx_max, data - start, ctrl - start);
		EXPECT_EQ(!k && cfg->sndbuf ? cfg->sndbuf : cfg->max, r.tx_max);
		/*
		 * Past 2^32.  Control SENDs (credit returns) are rarer, the
		 * more so the larger the ring: checked from 2^32-5 on small
		 * rings only, where these streams take more than 10.
		 */
		EXPECT_LE(back, data - start);
		if (back <= 8 && cfg->max <= 32)
			EXPECT_LE(back, ctrl - start);
	}
	close(self->cfd);
	close(self->sfd);
	self->cfd = -1;
	self->sfd = -1;
}

/*
 * Ring indices across the wrap of the 32-bit SEND counters, for ring sizes
 * the sysctls and SO_SNDBUF allow: powers of two and not, fixed, doubled,
 * and grown partly to a bound that is no double.  counter % size would
 * reuse, at 2^32, the buffer of the SEND 2^32 % size before, still in
 * flight: only 1 before for 5 and 17.  The counters start just below 2^32
 * (the module's test knob): 100 SENDs before, when the rings have
 * settled, and 29 and 5 before, while they still grow, 5 also so that the
 * rarer control messages cross it.  Streams one way, the other and both
 * at once must arrive intact, and the counters must have crossed 2^32.
 */
TEST_F_TIMEOUT(ring, counter_wrap, RING_LONG_S)
{
	static const struct wrap_cfg cfg[] = {
		{ 4, 4, 0 }, { 5, 5, 0 }, { 4, 5, 0 }, { 6, 6, 0 }, { 4, 6, 0 },
		{ 7, 7, 0 }, { 5, 12, 0 }, { 17, 17, 0 }, { 12, 24, 0 },
		{ 4, 32, 5 }, { 4, 32, 6 }, { 100, 1000, 0 },
	};
	static const unsigned int backs[] = { 100, 29, 5 };
	unsigned int i, b;

	for (i = 0; i < ARRAY_SIZE(cfg); i++) {
		for (b = 0; b < ARRAY_SIZE(backs); b++) {
			wrap_run(_metadata, self, &cfg[i], backs[b]);
			/* One failure says it; the rest would take time. */
			if (_metadata->exit_code)
				return;
		}
	}
}

TEST_HARNESS_MAIN
