// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma selftests: stream semantics and error handling over soft-RoCE, on
 * each way in (AF_RDMA and IPPROTO_RDMA, IPv4 and IPv6).  Needs the module
 * loaded and an RDMA device on AFRDMA_ADDR / AFRDMA_ADDR6 (tools/testing/
 * vm-run provides both).
 */
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

static const char *addr4(void)
{
	return test_addr(false);
}

static const char *addr6(void)
{
	return test_addr(true);
}

struct writer {
	int		fd;
	const unsigned char *buf;
	size_t		len;
	int		err;
};

/* Sends @len bytes in odd-sized pieces. */
static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	size_t done = 0, chunk;
	ssize_t n;

	while (done < w->len) {
		chunk = 1 + (done * 7919) % 40000;
		if (chunk > w->len - done)
			chunk = w->len - done;
		n = send(w->fd, w->buf + done, chunk, MSG_NOSIGNAL);
		if (n <= 0) {
			w->err = n < 0 ? errno : EIO;
			return NULL;
		}
		done += n;
	}
	return NULL;
}

FIXTURE(conn) {
	int lfd, cfd, sfd;
	unsigned short port;
};

FIXTURE_VARIANT(conn) {
	enum afrdma_transport t;
	bool v6;
};

FIXTURE_VARIANT_ADD(conn, af_rdma_v4) { .t = AFRDMA_T_FAMILY, .v6 = false };
FIXTURE_VARIANT_ADD(conn, af_rdma_v6) { .t = AFRDMA_T_FAMILY, .v6 = true };
FIXTURE_VARIANT_ADD(conn, ipproto_v4) { .t = AFRDMA_T_IPPROTO, .v6 = false };
FIXTURE_VARIANT_ADD(conn, ipproto_v6) { .t = AFRDMA_T_IPPROTO, .v6 = true };

FIXTURE_SETUP(conn)
{
	const char *a = variant->v6 ? addr6() : addr4();

	self->cfd = self->sfd = -1;
	self->lfd = afrdma_listen_on(variant->t, a, 0, 16, &self->port);
	ASSERT_LE(0, self->lfd) TH_LOG("listen on %s: %s", a, strerror(errno));
	self->cfd = afrdma_connect_to(variant->t, a, self->port);
	ASSERT_LE(0, self->cfd) TH_LOG("connect: %s", strerror(errno));
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd) TH_LOG("accept: %s", strerror(errno));
}

FIXTURE_TEARDOWN(conn)
{
	if (self->sfd >= 0)
		close(self->sfd);
	if (self->cfd >= 0)
		close(self->cfd);
	close(self->lfd);
}

/*
 * Odd-sized writes read back with small reads, order kept, echoed back;
 * the connection's QPs are listed by `rdma resource show qp` meanwhile.
 */
TEST_F(conn, echo)
{
	size_t len = 300000, got = 0;
	unsigned char *out = malloc(len), *in = malloc(len), *back = malloc(len);
	struct writer w = { .fd = self->cfd, .len = len };
	pthread_t t;
	ssize_t n;

	ASSERT_TRUE(out && in && back);
	fill(out, len, 1);
	w.buf = out;
	ASSERT_EQ(0, pthread_create(&t, NULL, writer_thread, &w));
	while (got < len) {
		size_t want = 1 + (got * 31) % 3000;

		n = recv(self->sfd, in + got, want < len - got ? want : len - got, 0);
		ASSERT_LT(0, n) TH_LOG("recv: %s", n ? strerror(errno) : "EOF");
		ASSERT_GE(want, (size_t)n);
		got += n;
	}
	pthread_join(t, NULL);
	ASSERT_EQ(0, w.err) TH_LOG("send: %s", strerror(w.err));
	ASSERT_EQ(0, memcmp(in, out, len));

	ASSERT_EQ((ssize_t)len, send(self->sfd, in, len, 0));
	ASSERT_EQ((ssize_t)len, recv(self->cfd, back, len, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(back, out, len));
	ASSERT_LE(2, rc_qps()) TH_LOG("no RC QPs in rdma resource show qp");
	free(out);
	free(in);
	free(back);
}

TEST_F(conn, names)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	ASSERT_EQ(0, getsockname(self->cfd, (struct sockaddr *)&a, &la));
	ASSERT_EQ(0, getpeername(self->sfd, (struct sockaddr *)&b, &lb));
	ASSERT_EQ(la, lb);
	ASSERT_EQ(0, memcmp(&a, &b, la));
	ASSERT_EQ(variant->v6 ? AF_INET6 : AF_INET, a.ss_family);
	lb = sizeof(b);
	ASSERT_EQ(0, getpeername(self->cfd, (struct sockaddr *)&b, &lb));
	ASSERT_EQ(self->port, afrdma_addr_port(&b));
}

/* The peer's close is EOF after the data, and stays EOF. */
TEST_F(conn, eof_after_close)
{
	char buf[64];

	ASSERT_EQ(5, send(self->cfd, "hello", 5, 0));
	ASSERT_EQ(0, close(self->cfd));
	self->cfd = -1;
	ASSERT_EQ(5, recv(self->sfd, buf, sizeof(buf), MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "hello", 5));
	ASSERT_EQ(0, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, recv(self->sfd, buf, sizeof(buf), 0));
}

/* SHUT_WR is a FIN: the peer reads EOF and can still send. */
TEST_F(conn, half_close)
{
	char buf[16];

	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(0, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(3, send(self->sfd, "abc", 3, 0));
	ASSERT_EQ(3, recv(self->cfd, buf, 3, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "abc", 3));
}

/*
 * An orderly close is no reset and no completion error, as a TCP close
 * sends no RST, even when the closing side's disconnect flushes receives
 * before the peer's FIN arrives: here the reader closes right after the
 * answer, while the peer is still open.
 */
TEST_F(conn, clean_close_no_reset)
{
	long long resets, errors;
	char buf[16];
	int i;

	/* Earlier tests' connections may still be going down. */
	for (i = 0; i < 100 && rc_qps() > 2; i++)
		usleep(100000);
	resets = afrdma_stat("Resets");
	errors = afrdma_stat("CompletionErrors");
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(0, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(3, send(self->sfd, "abc", 3, 0));
	ASSERT_EQ(3, recv(self->cfd, buf, 3, MSG_WAITALL));
	ASSERT_EQ(0, close(self->cfd));
	self->cfd = -1;
	ASSERT_EQ(0, close(self->sfd));
	self->sfd = -1;
	/* The flushes come before the QPs go. */
	for (i = 0; i < 100 && rc_qps() > 0; i++)
		usleep(100000);
	ASSERT_EQ(0, rc_qps());
	EXPECT_EQ(resets, afrdma_stat("Resets"));
	EXPECT_EQ(errors, afrdma_stat("CompletionErrors"));
}

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	sigpipes++;
}

/*
 * Closing with unread data resets, as in TCP: the peer reads ECONNRESET,
 * then sends get EPIPE, with SIGPIPE unless MSG_NOSIGNAL.  It is one reset
 * and no completion error: neither end's disconnect flushes count again.
 */
TEST_F(conn, reset)
{
	long long resets, errors;
	char buf[16];
	int ev, i;

	/* Earlier tests' connections may still be going down. */
	for (i = 0; i < 100 && rc_qps() > 2; i++)
		usleep(100000);
	resets = afrdma_stat("Resets");
	errors = afrdma_stat("CompletionErrors");
	ASSERT_EQ(4, send(self->sfd, "data", 4, 0));
	/* The data must have arrived before the close to make it a reset. */
	ASSERT_NE(0, wait_for(self->cfd, POLLIN, 10000));
	ASSERT_EQ(0, close(self->cfd));
	self->cfd = -1;

	ev = wait_for(self->sfd, POLLIN, 10000);
	ASSERT_NE(0, ev & (POLLERR | POLLHUP)) TH_LOG("revents %#x", ev);
	ASSERT_EQ(-1, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(ECONNRESET, errno);
	ASSERT_EQ(-1, send(self->sfd, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);

	signal(SIGPIPE, on_sigpipe);
	ASSERT_EQ(-1, send(self->sfd, "x", 1, 0));
	ASSERT_EQ(EPIPE, errno);
	ASSERT_EQ(1, sigpipes);
	signal(SIGPIPE, SIG_DFL);

	ASSERT_EQ(0, close(self->sfd));
	self->sfd = -1;
	/* The flushes come before the QPs go. */
	for (i = 0; i < 100 && rc_qps() > 0; i++)
		usleep(100000);
	ASSERT_EQ(0, rc_qps());
	EXPECT_EQ(resets + 1, afrdma_stat("Resets"));
	EXPECT_EQ(errors, afrdma_stat("CompletionErrors"));
}

/* The module cannot go while a socket holds it. */
static int set_int(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val));
}

static int get_int(int fd, int level, int name)
{
	socklen_t len = sizeof(int);
	int val = -1;

	return getsockopt(fd, level, name, &val, &len) ? -1 : val;
}

/*
 * SO_KEEPALIVE with 1 s idle and interval: an idle connection to a live
 * peer is probed and stays up.  (A dead peer is the wire tests' job: here
 * both ends share one device.)
 */
TEST_F(conn, keepalive_probes)
{
	long long probes = afrdma_stat("KeepaliveProbes");
	long long timeouts = afrdma_stat("KeepaliveTimeouts");
	char c;

	ASSERT_LE(0, probes);
	ASSERT_EQ(0, set_int(self->cfd, SOL_TCP, TCP_KEEPIDLE, 1));
	ASSERT_EQ(0, set_int(self->cfd, SOL_TCP, TCP_KEEPINTVL, 1));
	ASSERT_EQ(0, set_int(self->cfd, SOL_TCP, TCP_KEEPCNT, 2));
	ASSERT_EQ(0, set_int(self->cfd, SOL_SOCKET, SO_KEEPALIVE, 1));
	ASSERT_EQ(1, get_int(self->cfd, SOL_SOCKET, SO_KEEPALIVE));
	/* Idle: nothing to read for 4 s, and no error. */
	ASSERT_EQ(0, wait_for(self->cfd, POLLIN, 4000));
	ASSERT_LE(probes + 2, afrdma_stat("KeepaliveProbes"));
	ASSERT_EQ(timeouts, afrdma_stat("KeepaliveTimeouts"));
	ASSERT_EQ(0, get_int(self->cfd, SOL_SOCKET, SO_ERROR));
	ASSERT_EQ(1, send(self->sfd, "k", 1, 0));
	ASSERT_EQ(1, recv(self->cfd, &c, 1, 0));

	/* Off: no more probes. */
	ASSERT_EQ(0, set_int(self->cfd, SOL_SOCKET, SO_KEEPALIVE, 0));
	probes = afrdma_stat("KeepaliveProbes");
	ASSERT_EQ(0, wait_for(self->cfd, POLLIN, 2500));
	ASSERT_EQ(probes, afrdma_stat("KeepaliveProbes"));
}

/* Accepted sockets inherit SO_KEEPALIVE from their listener, as in TCP. */
TEST_F(conn, keepalive_inherited)
{
	const char *a = variant->v6 ? addr6() : addr4();
	unsigned short port;
	int lfd, cfd, sfd;

	lfd = afrdma_listen_on(variant->t, a, 0, 4, &port);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, set_int(lfd, SOL_SOCKET, SO_KEEPALIVE, 1));
	cfd = afrdma_connect_to(variant->t, a, port);
	ASSERT_LE(0, cfd);
	sfd = accept(lfd, NULL, NULL);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(1, get_int(sfd, SOL_SOCKET, SO_KEEPALIVE));
	ASSERT_EQ(0, get_int(cfd, SOL_SOCKET, SO_KEEPALIVE));
	close(sfd);
	close(cfd);
	close(lfd);
}

TEST_F(conn, rmmod_refused)
{
	ASSERT_NE(0, syscall(__NR_delete_module, "afrdma", O_NONBLOCK));
	ASSERT_TRUE(errno == EBUSY || errno == EWOULDBLOCK)
		TH_LOG("delete_module: %s", strerror(errno));
	ASSERT_EQ(0, access("/sys/module/afrdma", F_OK));
}

FIXTURE(any) {
	int fd;
};

FIXTURE_VARIANT(any) {
	enum afrdma_transport t;
	bool v6;
};

FIXTURE_VARIANT_ADD(any, af_rdma_v4) { .t = AFRDMA_T_FAMILY, .v6 = false };
FIXTURE_VARIANT_ADD(any, ipproto_v4) { .t = AFRDMA_T_IPPROTO, .v6 = false };
FIXTURE_VARIANT_ADD(any, ipproto_v6) { .t = AFRDMA_T_IPPROTO, .v6 = true };

FIXTURE_SETUP(any)
{
	self->fd = -1;
}

FIXTURE_TEARDOWN(any)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(any, refused)
{
	const char *a = variant->v6 ? addr6() : addr4();
	unsigned short port;
	int lfd;

	/* A port that was just free: nobody listens there. */
	lfd = afrdma_listen_on(variant->t, a, 0, 1, &port);
	ASSERT_LE(0, lfd);
	close(lfd);
	ASSERT_EQ(-1, afrdma_connect_to(variant->t, a, port));
	ASSERT_EQ(ECONNREFUSED, errno);
}

/*
 * A peer behind a netdev that has no RDMA device, and one with no route,
 * with the TCP fallback off (afrdma_fallback_test covers it on).
 */
TEST_F(any, unreachable)
{
	const char *via_dummy = variant->v6 ? "fd98::2" : "10.98.0.2";
	const char *no_route = variant->v6 ? "2001:db8::1" : "192.0.2.1";
	int saved = afrdma_sysctl("fallback", -1);

	ASSERT_EQ(0, system("ip link show afrdma-dummy >/dev/null 2>&1 || "
			    "ip -batch - <<'EOF'\n"
			    "link add afrdma-dummy type dummy\n"
			    "addr add 10.98.0.1/24 dev afrdma-dummy\n"
			    "addr add fd98::1/64 dev afrdma-dummy nodad\n"
			    "link set afrdma-dummy up\n"
			    "EOF"));
	ASSERT_LE(0, saved);
	ASSERT_EQ(0, afrdma_sysctl("fallback", 0));
	EXPECT_EQ(-1, afrdma_connect_to(variant->t, via_dummy, 7));
	EXPECT_TRUE(errno == EHOSTUNREACH || errno == ENETUNREACH)
		TH_LOG("%s: %s", via_dummy, strerror(errno));
	EXPECT_EQ(-1, afrdma_connect_to(variant->t, no_route, 7));
	EXPECT_TRUE(errno == EHOSTUNREACH || errno == ENETUNREACH)
		TH_LOG("%s: %s", no_route, strerror(errno));
	ASSERT_EQ(saved, afrdma_sysctl("fallback", saved));
}

TEST_F(any, bad_sockaddr)
{
	struct sockaddr_storage ss;
	socklen_t len, short_len;

	len = afrdma_make_addr(&ss, variant->v6 ? addr6() : addr4(), 0);
	self->fd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, 1));
	ASSERT_EQ(EINVAL, errno);
	/* One byte short of the shortest valid sockaddr_in / sockaddr_in6. */
	short_len = (variant->v6 ? 24 : sizeof(struct sockaddr_in)) - 1;
	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, short_len));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, short_len));
	ASSERT_EQ(EINVAL, errno);
	ss.ss_family = AF_UNIX;
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_TRUE(errno == EINVAL || errno == EAFNOSUPPORT);
	/* Still usable after all that. */
	len = afrdma_make_addr(&ss, variant->v6 ? addr6() : addr4(), 0);
	ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINVAL, errno);
}

TEST(bad_types)
{
	int fam = afrdma_family_nr(), proto = afrdma_ipproto_nr();

	ASSERT_EQ(-1, socket(fam, SOCK_DGRAM, 0));
	ASSERT_EQ(ESOCKTNOSUPPORT, errno);
	ASSERT_EQ(-1, socket(fam, SOCK_SEQPACKET, 0));
	ASSERT_EQ(ESOCKTNOSUPPORT, errno);
	ASSERT_EQ(-1, socket(fam, SOCK_STREAM, IPPROTO_UDP));
	ASSERT_EQ(EPROTONOSUPPORT, errno);
	ASSERT_EQ(-1, socket(AF_INET, SOCK_DGRAM, proto));
	ASSERT_TRUE(errno == EPROTONOSUPPORT || errno == ESOCKTNOSUPPORT);
	ASSERT_EQ(-1, socket(AF_INET6, SOCK_SEQPACKET, proto));
	ASSERT_TRUE(errno == EPROTONOSUPPORT || errno == ESOCKTNOSUPPORT);
}

/* The family and protocol numbers are where the uapi header says. */
TEST(params)
{
	int fd;

	ASSERT_EQ(AFRDMA_FAMILY_DEFAULT, afrdma_family_nr());
	ASSERT_EQ(AFRDMA_IPPROTO_DEFAULT, afrdma_ipproto_nr());
	fd = socket(AF_RDMA, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM, IPPROTO_RDMA);
	ASSERT_LE(0, fd);
	close(fd);
}

#define NCONNS	100
#define CONN_BYTES (64 * 1024UL)

FIXTURE(many) {
	int lfd;
	unsigned short port;
};

FIXTURE_SETUP(many)
{
	self->lfd = afrdma_listen_on(AFRDMA_T_FAMILY, addr4(), 0, NCONNS + 8,
				     &self->port);
	ASSERT_LE(0, self->lfd);
}

FIXTURE_TEARDOWN(many)
{
	close(self->lfd);
}

struct many_clients {
	pthread_barrier_t counted;	/* the server has seen every QP */
	unsigned short	port;
	int		fds[NCONNS];
	int		err;
};

/* Opens every connection first, then writes each its own data. */
static void *many_client_thread(void *arg)
{
	struct many_clients *c = arg;
	unsigned char (*bufs)[CONN_BYTES] = malloc(NCONNS * CONN_BYTES);
	size_t off;
	int i;

	if (!bufs) {
		c->err = ENOMEM;
		return NULL;
	}
	for (i = 0; i < NCONNS; i++)
		fill(bufs[i], CONN_BYTES, i);

	for (i = 0; i < NCONNS; i++) {
		c->fds[i] = afrdma_connect_to(AFRDMA_T_FAMILY, addr4(), c->port);
		if (c->fds[i] < 0) {
			c->err = errno;
			pthread_barrier_wait(&c->counted);
			return NULL;
		}
	}
	pthread_barrier_wait(&c->counted);
	for (off = 0; off < CONN_BYTES; off += 4096) {
		for (i = 0; i < NCONNS; i++) {
			if (send(c->fds[i], bufs[i] + off, 4096, MSG_NOSIGNAL) != 4096) {
				c->err = errno;
				return NULL;
			}
		}
	}
	for (i = 0; i < NCONNS; i++)
		close(c->fds[i]);
	free(bufs);
	return NULL;
}

TEST_F_TIMEOUT(many, hundred_conns, 600)
{
	static struct pollfd pfd[NCONNS];
	static unsigned char got[NCONNS][CONN_BYTES];
	struct many_clients c = { .port = self->port };
	unsigned char seen[NCONNS] = {};
	size_t have[NCONNS] = {};
	unsigned char want[CONN_BYTES];
	int i, open_fds = NCONNS;
	pthread_t t;
	ssize_t n;

	int qps;

	ASSERT_EQ(0, pthread_barrier_init(&c.counted, NULL, 2));
	ASSERT_EQ(0, pthread_create(&t, NULL, many_client_thread, &c));
	for (i = 0; i < NCONNS; i++) {
		pfd[i].fd = accept(self->lfd, NULL, NULL);
		ASSERT_LE(0, pfd[i].fd) TH_LOG("accept %d: %s", i, strerror(errno));
		pfd[i].events = POLLIN;
	}
	/* All 100 at once: two QPs each, both ends on this host. */
	qps = all_qps();
	pthread_barrier_wait(&c.counted);
	ASSERT_LE(2 * NCONNS, qps);
	while (open_fds) {
		ASSERT_LT(0, poll(pfd, NCONNS, 60000)) TH_LOG("stalled");
		for (i = 0; i < NCONNS; i++) {
			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			n = recv(pfd[i].fd, got[i] + have[i],
				 CONN_BYTES - have[i] ? CONN_BYTES - have[i] : 1,
				 MSG_DONTWAIT);
			if (n < 0 && errno == EAGAIN)
				continue;
			ASSERT_LE(0, n) TH_LOG("conn %d: %s", i, strerror(errno));
			if (n == 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
				continue;
			}
			have[i] += n;
			ASSERT_GE(CONN_BYTES, have[i]);
		}
	}
	pthread_join(t, NULL);
	ASSERT_EQ(0, c.err) TH_LOG("client: %s", strerror(c.err));
	/*
	 * Accept order need not be connect order: a late RTU queues its
	 * connection after the next one, as a lost final ACK does in TCP.
	 * The first byte names the connection: fill() starts with seed * 7,
	 * and 183 is 7's inverse modulo 256.
	 */
	for (i = 0; i < NCONNS; i++) {
		unsigned int seed;

		ASSERT_EQ(CONN_BYTES, have[i]);
		seed = (got[i][0] * 183u) & 0xff;
		ASSERT_GT((unsigned int)NCONNS, seed) TH_LOG("accepted %d: first byte %u", i, got[i][0]);
		ASSERT_EQ(0, seen[seed]++) TH_LOG("connection %u accepted twice", seed);
		fill(want, CONN_BYTES, seed);
		ASSERT_EQ(0, memcmp(want, got[i], CONN_BYTES)) TH_LOG("conn %u", seed);
	}
}

TEST_HARNESS_MAIN
