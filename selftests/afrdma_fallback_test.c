// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma selftests for the TCP fallback: a peer RDMA cannot reach is
 * reached over TCP behind the same fd, a listener serves plain TCP clients
 * on its port, and net.afrdma.fallback=0 (or AFRDMA_FALLBACK=0 on the
 * socket) turns it all off.  The program sees which transport it got
 * through SOL_RDMA, and /proc/net/afrdma_stat counts why.
 */
#include <fcntl.h>
#include <grp.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

/* A local address on a netdev without RDMA: rdma_cm has no device there. */
static const char *no_rdma_addr(bool v6)
{
	return v6 ? "fd98::1" : "10.98.0.1";
}

static int setup_dummy(void)
{
	return system("ip link show afrdma-dummy >/dev/null 2>&1 || "
		      "ip -batch - <<'EOF'\n"
		      "link add afrdma-dummy type dummy\n"
		      "addr add 10.98.0.1/24 dev afrdma-dummy\n"
		      "addr add fd98::1/64 dev afrdma-dummy nodad\n"
		      "link set afrdma-dummy up\n"
		      "EOF");
}

static int rdma_opt(int fd, int name)
{
	socklen_t len = sizeof(int);
	int val = -1;

	if (getsockopt(fd, SOL_RDMA, name, &val, &len))
		return -1;
	return val;
}

struct listing {
	char	state[16], local[64], remote[64], transport[8], dev[64];
	unsigned int	rxq, txq, uid, qpn, reason;
};

/* @fd's line in /proc/net/afrdma, found by the socket's inode. */
static int listing_of(int fd, struct listing *l)
{
	FILE *f = fopen("/proc/net/afrdma", "r");
	unsigned long ino;
	char line[512];
	struct stat st;
	int ret = -1;

	if (!f || fstat(fd, &st))
		goto out;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%15s %63s %63s %7s %u %u %u %lu %u %63s %u",
			   l->state, l->local, l->remote, l->transport, &l->rxq,
			   &l->txq, &l->uid, &ino, &l->qpn, l->dev, &l->reason) == 11 &&
		    ino == st.st_ino) {
			ret = 0;
			break;
		}
	}
out:
	if (f)
		fclose(f);
	return ret;
}

/* Sends @len bytes each way between @a and @b and checks them. */
static int exchange(int a, int b, size_t len)
{
	unsigned char *out = malloc(len), *in = malloc(len);
	int ret = -1;

	if (!out || !in)
		goto out;
	fill(out, len, (unsigned int)len);
	/* Small enough for the socket buffers: no writer thread needed. */
	if (send(a, out, len, 0) != (ssize_t)len ||
	    recv(b, in, len, MSG_WAITALL) != (ssize_t)len || memcmp(in, out, len))
		goto out;
	memset(in, 0, len);
	if (send(b, out, len, 0) != (ssize_t)len ||
	    recv(a, in, len, MSG_WAITALL) != (ssize_t)len || memcmp(in, out, len))
		goto out;
	ret = 0;
out:
	free(out);
	free(in);
	return ret;
}

FIXTURE(fb) {
	int lfd, cfd, sfd;
	unsigned short port;
	int saved_fallback;
	int saved_timeout;
};

FIXTURE_VARIANT(fb) {
	enum afrdma_transport t;
	bool v6;
};

FIXTURE_VARIANT_ADD(fb, af_rdma_v4) { .t = AFRDMA_T_FAMILY, .v6 = false };
FIXTURE_VARIANT_ADD(fb, af_rdma_v6) { .t = AFRDMA_T_FAMILY, .v6 = true };
FIXTURE_VARIANT_ADD(fb, ipproto_v4) { .t = AFRDMA_T_IPPROTO, .v6 = false };
FIXTURE_VARIANT_ADD(fb, ipproto_v6) { .t = AFRDMA_T_IPPROTO, .v6 = true };

FIXTURE_SETUP(fb)
{
	self->lfd = self->cfd = self->sfd = -1;
	self->saved_fallback = afrdma_sysctl("fallback", -1);
	ASSERT_EQ(1, self->saved_fallback) TH_LOG("net.afrdma.fallback is not on by default");
	self->saved_timeout = afrdma_sysctl("fallback_timeout_ms", -1);
	ASSERT_LT(0, self->saved_timeout);
	ASSERT_EQ(0, setup_dummy());
	/* The wildcard address: both rxe0's address and the dummy's. */
	self->lfd = afrdma_listen_on(variant->t, variant->v6 ? "::" : "0.0.0.0",
				     0, 16, &self->port);
	ASSERT_LE(0, self->lfd) TH_LOG("listen: %s", strerror(errno));
}

FIXTURE_TEARDOWN(fb)
{
	afrdma_sysctl("fallback", self->saved_fallback);
	afrdma_sysctl("fallback_timeout_ms", self->saved_timeout);
	if (self->sfd >= 0)
		close(self->sfd);
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->lfd >= 0)
		close(self->lfd);
}

/* No RDMA device reaches the peer: TCP carries it, on both ends. */
TEST_F(fb, no_rdma_device)
{
	long long no_dev = afrdma_stat("FallbackNoDevice");
	long long peer_tcp = afrdma_stat("FallbackPeerTcp");
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);
	int qps = rc_qps();

	ASSERT_LE(0, no_dev);
	self->cfd = afrdma_connect_to(variant->t, no_rdma_addr(variant->v6),
				      self->port);
	ASSERT_LE(0, self->cfd) TH_LOG("connect: %s", strerror(errno));
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->cfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(AFRDMA_FB_NO_DEVICE, rdma_opt(self->cfd, AFRDMA_FALLBACK_REASON));
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->sfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(AFRDMA_FB_PEER_TCP, rdma_opt(self->sfd, AFRDMA_FALLBACK_REASON));
	ASSERT_EQ(0, exchange(self->cfd, self->sfd, 100000));
	ASSERT_EQ(qps, rc_qps()) TH_LOG("a fallback connection made RC QPs");

	/* Names are the TCP connection's, in the socket's own family. */
	ASSERT_EQ(0, getsockname(self->cfd, (struct sockaddr *)&a, &la));
	ASSERT_EQ(0, getpeername(self->sfd, (struct sockaddr *)&b, &lb));
	ASSERT_EQ(la, lb);
	ASSERT_EQ(0, memcmp(&a, &b, la));
	lb = sizeof(b);
	ASSERT_EQ(0, getpeername(self->cfd, (struct sockaddr *)&b, &lb));
	ASSERT_EQ(self->port, afrdma_addr_port(&b));

	ASSERT_EQ(no_dev + 1, afrdma_stat("FallbackNoDevice"));
	ASSERT_EQ(peer_tcp + 1, afrdma_stat("FallbackPeerTcp"));
}

/*
 * An address no RDMA device has can still be bound, as with TCP: such a
 * listener serves TCP clients, and such a client connects over TCP at once;
 * without fallback, bind fails as before.
 */
TEST_F(fb, bind_no_rdma_address)
{
	struct sockaddr_storage ss, name;
	socklen_t len, nlen = sizeof(name);
	unsigned short port;
	int lfd, qps = rc_qps();

	lfd = afrdma_listen_on(variant->t, no_rdma_addr(variant->v6), 0, 4, &port);
	ASSERT_LE(0, lfd) TH_LOG("listen: %s", strerror(errno));
	ASSERT_NE(0, port);
	ASSERT_EQ(0, getsockname(lfd, (struct sockaddr *)&name, &nlen));
	len = afrdma_make_addr(&ss, no_rdma_addr(variant->v6), port);
	ASSERT_EQ(len, nlen);
	ASSERT_EQ(0, memcmp(&ss, &name, len));

	/* A client bound there too: no RDMA is tried, TCP carries it. */
	self->cfd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, self->cfd);
	afrdma_make_addr(&name, no_rdma_addr(variant->v6), 0);
	ASSERT_EQ(0, bind(self->cfd, (struct sockaddr *)&name, len));
	ASSERT_EQ(0, connect(self->cfd, (struct sockaddr *)&ss, len));
	self->sfd = accept(lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->cfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(AFRDMA_FB_NO_DEVICE, rdma_opt(self->cfd, AFRDMA_FALLBACK_REASON));
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->sfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(0, exchange(self->cfd, self->sfd, 100000));
	ASSERT_EQ(qps, rc_qps());
	close(lfd);

	ASSERT_EQ(0, afrdma_sysctl("fallback", 0));
	lfd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(-1, bind(lfd, (struct sockaddr *)&name, len));
	ASSERT_EQ(EADDRNOTAVAIL, errno);
	close(lfd);
}

/* One listener, two kinds of client: RDMA ones get RDMA, TCP ones TCP. */
TEST_F(fb, listener_serves_both)
{
	struct sockaddr_storage ss;
	struct listing l;
	socklen_t len;
	int tfd, rfd;

	len = afrdma_make_addr(&ss, test_addr(variant->v6), self->port);
	tfd = socket(ss.ss_family, SOCK_STREAM, 0);
	ASSERT_LE(0, tfd);
	ASSERT_EQ(0, connect(tfd, (struct sockaddr *)&ss, len))
		TH_LOG("TCP connect: %s", strerror(errno));
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->sfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(0, exchange(tfd, self->sfd, 60000));
	/* Half-close, as TCP: the peer reads EOF and can still send. */
	ASSERT_EQ(0, shutdown(tfd, SHUT_WR));
	ASSERT_NE(0, wait_for(self->sfd, POLLIN, 10000) & POLLIN);
	ASSERT_EQ(0, recv(self->sfd, &len, 1, 0));
	ASSERT_EQ(3, send(self->sfd, "bye", 3, 0));
	ASSERT_EQ(3, recv(tfd, &ss, 3, MSG_WAITALL));
	close(tfd);

	rfd = afrdma_connect_to(variant->t, test_addr(variant->v6), self->port);
	ASSERT_LE(0, rfd) TH_LOG("connect: %s", strerror(errno));
	/* Still open, so that the listing shows a TCP connection beside. */
	tfd = self->sfd;
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, rdma_opt(rfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, rdma_opt(self->sfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(AFRDMA_FB_NONE, rdma_opt(rfd, AFRDMA_FALLBACK_REASON));
	ASSERT_EQ(0, exchange(rfd, self->sfd, 60000));

	/* /proc/net/afrdma: each socket, with what carries it. */
	ASSERT_EQ(0, listing_of(self->lfd, &l));
	ASSERT_STREQ("LISTEN", l.state);
	ASSERT_EQ(getuid(), l.uid);
	ASSERT_EQ(0, listing_of(rfd, &l));
	ASSERT_STREQ("ESTAB", l.state);
	ASSERT_STREQ("rdma", l.transport);
	ASSERT_LT(0U, l.qpn);
	ASSERT_STREQ("rxe0", l.dev);
	ASSERT_NE(NULL, strstr(l.remote, ":")) TH_LOG("remote %s", l.remote);
	ASSERT_EQ(0, listing_of(tfd, &l));
	ASSERT_STREQ("ESTAB", l.state);
	ASSERT_STREQ("tcp", l.transport);
	ASSERT_EQ((unsigned int)AFRDMA_FB_PEER_TCP, l.reason);
	ASSERT_EQ(0U, l.qpn);
	/* Queues: bytes the reader has not read yet. */
	ASSERT_EQ(5, send(self->sfd, "hello", 5, 0));
	ASSERT_NE(0, wait_for(rfd, POLLIN, 10000) & POLLIN);
	ASSERT_EQ(0, listing_of(rfd, &l));
	ASSERT_EQ(5U, l.rxq);
	close(tfd);
	close(rfd);
}

/* A plain TCP server: RDMA is refused there, so TCP carries the connection. */
TEST_F(fb, tcp_server)
{
	long long rejected = afrdma_stat("FallbackRejected");
	unsigned short port;
	struct tcp_info ti;
	int one = 1, tl, v;
	socklen_t len;

	tl = tcp_listen_on(test_addr(variant->v6), &port);
	ASSERT_LE(0, tl);

	self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6), port);
	ASSERT_LE(0, self->cfd) TH_LOG("connect: %s", strerror(errno));
	self->sfd = accept(tl, NULL, NULL);
	close(tl);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->cfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(AFRDMA_FB_REJECTED, rdma_opt(self->cfd, AFRDMA_FALLBACK_REASON));
	ASSERT_EQ(rejected + 1, afrdma_stat("FallbackRejected"));
	ASSERT_EQ(0, exchange(self->cfd, self->sfd, 100000));

	/* TCP-level options reach the real TCP socket. */
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	v = 0;
	len = sizeof(v);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_TCP, TCP_NODELAY, &v, &len));
	ASSERT_EQ(1, v);
	len = sizeof(ti);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_TCP, TCP_INFO, &ti, &len));
	ASSERT_EQ(TCP_ESTABLISHED, ti.tcpi_state);
	ASSERT_LT(0U, ti.tcpi_rtt) TH_LOG("TCP_INFO is not the TCP socket's");
	/* Reset by the peer (close with unread data), as TCP. */
	ASSERT_EQ(1, send(self->cfd, "x", 1, 0));
	ASSERT_NE(0, wait_for(self->sfd, POLLIN, 10000) & POLLIN);
	close(self->sfd);
	self->sfd = -1;
	ASSERT_NE(0, wait_for(self->cfd, POLLIN, 10000));
	ASSERT_EQ(-1, recv(self->cfd, &one, 1, 0));
	ASSERT_EQ(ECONNRESET, errno);
}

/*
 * Non-blocking connect that falls back, with epoll registered before the
 * fallback happened: the TCP socket's wakeups must reach it.
 */
TEST_F(fb, nonblocking_epoll)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET };
	struct sockaddr_storage ss;
	socklen_t len;
	int ep, err = -1;
	char c;

	len = afrdma_make_addr(&ss, no_rdma_addr(variant->v6), self->port);
	self->cfd = afrdma_socket(variant->t, ss.ss_family, SOCK_NONBLOCK);
	ASSERT_LE(0, self->cfd);
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->cfd, &ev));
	ASSERT_EQ(-1, connect(self->cfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, 20000));
	ASSERT_NE(0U, ev.events & EPOLLOUT);
	len = sizeof(err);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ERROR, &err, &len));
	ASSERT_EQ(0, err);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->cfd, AFRDMA_TRANSPORT));

	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(-1, recv(self->cfd, &c, 1, 0));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(1, send(self->sfd, "y", 1, 0));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, 20000));
	ASSERT_NE(0U, ev.events & EPOLLIN);
	ASSERT_EQ(1, recv(self->cfd, &c, 1, 0));
	ASSERT_EQ('y', c);
	close(ep);
}

/* The same while the connect that falls back is under way. */
TEST_F(fb, recv_while_connecting)
{
	struct sockaddr_storage ss;
	char why[128] = "";
	socklen_t len;

	len = afrdma_make_addr(&ss, no_rdma_addr(variant->v6), self->port);
	self->cfd = afrdma_socket(variant->t, ss.ss_family, SOCK_NONBLOCK);
	ASSERT_LE(0, self->cfd);
	ASSERT_EQ(-1, connect(self->cfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, recv_while_connecting(self->cfd, self->lfd, &self->sfd,
					   why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->cfd, AFRDMA_TRANSPORT));
}

/* Nobody listens: refused over TCP too, on a blocking and a non-blocking connect. */
TEST_F(fb, refused)
{
	struct sockaddr_storage ss;
	unsigned short port = self->port;
	socklen_t len;
	int err = 0;

	close(self->lfd);
	self->lfd = -1;
	ASSERT_EQ(-1, afrdma_connect_to(variant->t, no_rdma_addr(variant->v6), port));
	ASSERT_EQ(ECONNREFUSED, errno);

	len = afrdma_make_addr(&ss, no_rdma_addr(variant->v6), port);
	self->cfd = afrdma_socket(variant->t, ss.ss_family, SOCK_NONBLOCK);
	ASSERT_LE(0, self->cfd);
	ASSERT_EQ(-1, connect(self->cfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_NE(0, wait_for(self->cfd, POLLOUT, 20000) & (POLLERR | POLLHUP));
	len = sizeof(err);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ERROR, &err, &len));
	ASSERT_EQ(ECONNREFUSED, err);
}

struct relisten_race {
	int fd, family;
	volatile int stop;
	int bad;
};

/* getsockname() while another thread stops and restarts the listener. */
static void *names_reader(void *arg)
{
	struct relisten_race *r = arg;

	while (!r->stop) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);

		if (getsockname(r->fd, (struct sockaddr *)&ss, &len) ||
		    ss.ss_family != r->family)
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * A listener on TCP alone (no RDMA device on its address) gets a new TCP
 * side when listen() follows shutdown(); getsockname() must never see the
 * old one freed (KASAN on make check-debug reports the use-after-free).
 */
TEST_F(fb, names_while_relistening)
{
	struct relisten_race r = { .family = variant->v6 ? AF_INET6 : AF_INET };
	pthread_t readers[2];
	int i, fails = 0;

	r.fd = afrdma_listen_on(variant->t, no_rdma_addr(variant->v6), 0, 16, NULL);
	ASSERT_LE(0, r.fd) TH_LOG("listen: %s", strerror(errno));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&readers[i], NULL, names_reader, &r));
	for (i = 0; i < 500; i++) {
		if (shutdown(r.fd, SHUT_RDWR) || listen(r.fd, 16))
			fails++;
	}
	r.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(readers[i], NULL);
	close(r.fd);
	EXPECT_EQ(0, fails) TH_LOG("shutdown or listen failed: %s", strerror(errno));
	EXPECT_EQ(0, r.bad);
}

static int name_of(int fd, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	memset(ss, 0, sizeof(*ss));
	return getsockname(fd, (struct sockaddr *)ss, &len);
}

/*
 * listen() after shutdown() binds again where bind() said, as TCP does:
 * the same address, and the same port when bind() named one.
 */
TEST_F(fb, relisten_keeps_address)
{
	struct sockaddr_storage a, b;
	int i, fd;

	close(self->lfd);
	self->lfd = -1;
	for (i = 0; i < 2; i++) {
		unsigned short port = i ? self->port : 0;

		fd = afrdma_listen_on(variant->t, test_addr(variant->v6), port, 16, NULL);
		ASSERT_LE(0, fd) TH_LOG("listen on port %u: %s", port, strerror(errno));
		ASSERT_EQ(0, name_of(fd, &a));
		ASSERT_EQ(0, shutdown(fd, SHUT_RDWR));
		ASSERT_EQ(0, listen(fd, 16));
		ASSERT_EQ(0, name_of(fd, &b));
		ASSERT_EQ(a.ss_family, b.ss_family);
		if (port) {
			ASSERT_EQ(0, memcmp(&a, &b, sizeof(a)));
		} else if (a.ss_family == AF_INET6) {
			ASSERT_EQ(0, memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr,
					    &((struct sockaddr_in6 *)&b)->sin6_addr,
					    sizeof(struct in6_addr)));
		} else {
			ASSERT_EQ(((struct sockaddr_in *)&a)->sin_addr.s_addr,
				  ((struct sockaddr_in *)&b)->sin_addr.s_addr);
		}
		self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6),
					      afrdma_addr_port(&b));
		ASSERT_LE(0, self->cfd) TH_LOG("connect: %s", strerror(errno));
		self->sfd = accept(fd, NULL, NULL);
		ASSERT_LE(0, self->sfd);
		EXPECT_EQ(AFRDMA_TRANSPORT_RDMA, rdma_opt(self->cfd, AFRDMA_TRANSPORT));
		close(self->sfd);
		close(self->cfd);
		close(fd);
		self->sfd = self->cfd = -1;
	}
}

/*
 * A socket whose connect went to TCP and was refused stays TCP's: listen()
 * would bind a new TCP side that other threads' calls may still be using.
 */
TEST_F(fb, listen_after_tcp_refused)
{
	unsigned short port = self->port;
	struct sockaddr_storage ss;
	socklen_t len;

	close(self->lfd);
	self->lfd = -1;
	len = afrdma_make_addr(&ss, no_rdma_addr(variant->v6), port);
	self->cfd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, self->cfd);
	ASSERT_EQ(-1, connect(self->cfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(ECONNREFUSED, errno);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->cfd, AFRDMA_TRANSPORT));
	ASSERT_EQ(-1, listen(self->cfd, 4));
	ASSERT_EQ(EINVAL, errno);
}

/* net.afrdma.fallback=0, or AFRDMA_FALLBACK=0: the RDMA errors, no TCP side. */
TEST_F(fb, off)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, zero = 0;

	/* Per socket, set before connect. */
	len = afrdma_make_addr(&ss, no_rdma_addr(variant->v6), self->port);
	fd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, rdma_opt(fd, AFRDMA_FALLBACK));
	ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &zero, sizeof(zero)));
	ASSERT_EQ(0, rdma_opt(fd, AFRDMA_FALLBACK));
	ASSERT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
	ASSERT_TRUE(errno == EHOSTUNREACH || errno == ENETUNREACH) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(AFRDMA_TRANSPORT_NONE, rdma_opt(fd, AFRDMA_TRANSPORT));
	close(fd);

	/* The sysctl, for sockets made after it changed. */
	ASSERT_EQ(0, afrdma_sysctl("fallback", 0));
	ASSERT_EQ(-1, afrdma_connect_to(variant->t, no_rdma_addr(variant->v6), self->port));
	ASSERT_TRUE(errno == EHOSTUNREACH || errno == ENETUNREACH) TH_LOG("%s", strerror(errno));

	/* A listener made now has no TCP side: plain TCP is refused. */
	close(self->lfd);
	self->lfd = afrdma_listen_on(variant->t, test_addr(variant->v6), 0, 4, &self->port);
	ASSERT_LE(0, self->lfd);
	len = afrdma_make_addr(&ss, test_addr(variant->v6), self->port);
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(ECONNREFUSED, errno);
	close(fd);
	ASSERT_EQ(-1, afrdma_sysctl("fallback", 2)) TH_LOG("out of range accepted");
}

/*
 * AFRDMA_FALLBACK=0 holds however long RDMA takes: a connect that outlasts
 * fallback_timeout_ms stays on RDMA and ends with RDMA's error, never on
 * TCP.  Nobody answers the peer address on rxe0's subnet, so address
 * resolution takes its whole 2 s, twenty times the timeout set here.
 */
TEST_F(fb, off_outlasts_timeout)
{
	long long timeouts = afrdma_stat("FallbackTimeout");
	struct sockaddr_storage ss;
	int fd, zero = 0;
	socklen_t len;

	ASSERT_LE(0, timeouts);
	ASSERT_EQ(100, afrdma_sysctl("fallback_timeout_ms", 100));
	len = afrdma_make_addr(&ss, variant->v6 ? "fd99::77" : "10.99.0.77", self->port);
	fd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &zero, sizeof(zero)));
	EXPECT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
	EXPECT_TRUE(errno == EHOSTUNREACH || errno == ENETUNREACH) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(AFRDMA_TRANSPORT_NONE, rdma_opt(fd, AFRDMA_TRANSPORT));
	EXPECT_EQ(timeouts, afrdma_stat("FallbackTimeout"));
	close(fd);
}

/*
 * net.afrdma.max_connections bounds the RDMA connections of a namespace
 * (both ends count here: they share a host); past it, TCP carries new
 * ones, or with the fallback off, connect fails with ENOBUFS.
 */
TEST_F(fb, connection_limit)
{
	int saved = afrdma_sysctl("max_connections", -1);
	long long base = afrdma_stat("CurrConnections");
	const char *a = test_addr(variant->v6);
	int rfd, fd, sfd2, zero = 0;
	struct sockaddr_storage ss;
	socklen_t len;

	ASSERT_LT(0, saved);
	ASSERT_LE(0, base);
	ASSERT_EQ(base + 2, afrdma_sysctl("max_connections", base + 2));
	rfd = afrdma_connect_to(variant->t, a, self->port);
	EXPECT_LE(0, rfd);
	self->sfd = accept(self->lfd, NULL, NULL);
	EXPECT_EQ(AFRDMA_TRANSPORT_RDMA, rdma_opt(rfd, AFRDMA_TRANSPORT));
	EXPECT_EQ(base + 2, afrdma_stat("CurrConnections"));

	self->cfd = afrdma_connect_to(variant->t, a, self->port);
	EXPECT_LE(0, self->cfd) TH_LOG("connect: %s", strerror(errno));
	sfd2 = accept(self->lfd, NULL, NULL);
	EXPECT_LE(0, sfd2);
	EXPECT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(self->cfd, AFRDMA_TRANSPORT));
	EXPECT_EQ(AFRDMA_FB_RESOURCES, rdma_opt(self->cfd, AFRDMA_FALLBACK_REASON));
	EXPECT_EQ(0, exchange(self->cfd, sfd2, 10000));
	close(sfd2);

	len = afrdma_make_addr(&ss, a, self->port);
	fd = afrdma_socket(variant->t, ss.ss_family, 0);
	EXPECT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &zero, sizeof(zero)));
	EXPECT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
	EXPECT_EQ(ENOBUFS, errno);
	close(fd);

	/* Closing gives the slots back. */
	close(rfd);
	close(self->sfd);
	self->sfd = -1;
	EXPECT_EQ(base, afrdma_stat("CurrConnections"));
	rfd = afrdma_connect_to(variant->t, a, self->port);
	EXPECT_LE(0, rfd);
	EXPECT_EQ(AFRDMA_TRANSPORT_RDMA, rdma_opt(rfd, AFRDMA_TRANSPORT));
	self->sfd = accept(self->lfd, NULL, NULL);
	close(rfd);
	ASSERT_EQ(saved, afrdma_sysctl("max_connections", saved));
}

/* TCP_CONGESTION @name on @fd: 0 or the errno. */
static int set_cc(int fd, const char *name)
{
	if (fd < 0)
		return -1;
	return setsockopt(fd, SOL_TCP, TCP_CONGESTION, name, strlen(name)) ? errno : 0;
}

static bool module_loaded(const char *name)
{
	FILE *f = fopen("/proc/modules", "r");
	size_t len = strlen(name);
	char line[256];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = !strncmp(line, name, len) && line[len] == ' ';
	if (f)
		fclose(f);
	return found;
}

/* What an unprivileged program got; -1 where a call failed outright. */
struct cc_seen {
	int tcp_bbr, tcp_none;			/* a plain TCP socket */
	int rdma_reno, rdma_none, rdma_bbr;	/* afrdma, not connected */
	int est_bbr;				/* afrdma over RDMA */
	int fb_transport, fb_bbr;		/* afrdma fallen back to TCP */
	char fb_cc[16];
};

/*
 * As nobody: TCP_CONGESTION names outside the allowed list, then a connect
 * that RDMA rejects, so that the fallback runs in rdma_cm's worker.
 */
static void cc_unprivileged(enum afrdma_transport t, bool v6,
			    unsigned short rdma_port, unsigned short tcp_port,
			    struct cc_seen *s)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	memset(s, 0xff, sizeof(*s));
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return;
	len = afrdma_make_addr(&ss, test_addr(v6), tcp_port);
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	s->tcp_bbr = set_cc(fd, "bbr");
	s->tcp_none = set_cc(fd, "nosuchcc");
	close(fd);

	/* In this order an unchecked module keeps "bbr" for the fallback. */
	fd = afrdma_socket(t, ss.ss_family, 0);
	s->rdma_reno = set_cc(fd, "reno");
	s->rdma_none = set_cc(fd, "nosuchcc");
	s->rdma_bbr = set_cc(fd, "bbr");
	if (!connect(fd, (struct sockaddr *)&ss, len)) {
		len = sizeof(int);
		getsockopt(fd, SOL_RDMA, AFRDMA_TRANSPORT, &s->fb_transport, &len);
		len = sizeof(s->fb_cc);
		memset(s->fb_cc, 0, sizeof(s->fb_cc));
		getsockopt(fd, SOL_TCP, TCP_CONGESTION, s->fb_cc, &len);
		s->fb_bbr = set_cc(fd, "bbr");
	}
	close(fd);

	fd = afrdma_connect_to(t, test_addr(v6), rdma_port);
	s->est_bbr = set_cc(fd, "bbr");
	close(fd);
}

/*
 * TCP checks TCP_CONGESTION against the caller's CAP_NET_ADMIN and the
 * allowed list, and loads a module only for a caller with CAP_NET_ADMIN.
 * afrdma must give TCP's answer at setsockopt time, before and after a
 * fallback, and never apply a name later with a kernel worker's rights.
 */
TEST_F(fb, congestion_unprivileged)
{
	long long rejected = afrdma_stat("FallbackRejected");
	struct cc_seen *s;
	unsigned short port;
	int tl, status;
	bool bbr_before;
	pid_t pid;

	if (module_loaded("tcp_bbr"))
		system("modprobe -r tcp_bbr 2>/dev/null");
	bbr_before = module_loaded("tcp_bbr");
	if (bbr_before)
		TH_LOG("tcp_bbr stays loaded: the module load is not checked");
	tl = tcp_listen_on(test_addr(variant->v6), &port);
	ASSERT_LE(0, tl);
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, s);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		cc_unprivileged(variant->t, variant->v6, self->port, port, s);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(tl);

	/* The control: plain TCP refuses both names to nobody. */
	EXPECT_LT(0, s->tcp_bbr);
	EXPECT_EQ(ENOENT, s->tcp_none);
	EXPECT_EQ(0, s->rdma_reno);
	EXPECT_EQ(s->tcp_none, s->rdma_none);
	EXPECT_EQ(s->tcp_bbr, s->rdma_bbr);
	EXPECT_EQ(AFRDMA_TRANSPORT_TCP, s->fb_transport);
	EXPECT_EQ(rejected + 1, afrdma_stat("FallbackRejected"));
	EXPECT_STREQ("reno", s->fb_cc);
	EXPECT_EQ(s->tcp_bbr, s->fb_bbr);
	EXPECT_EQ(s->tcp_bbr, s->est_bbr);
	if (!bbr_before) {
		EXPECT_FALSE(module_loaded("tcp_bbr")) TH_LOG("nobody loaded tcp_bbr");
		system("modprobe -r tcp_bbr 2>/dev/null");
	}
	munmap(s, sizeof(*s));
}

/*
 * The peer host answers TCP but not RDMA (its netdev has no RDMA device,
 * though ours does): RDMA gets fallback_timeout_ms, then TCP.  The peer is
 * vb, the other end of rxe0's veth, moved into its own namespace.
 */
TEST(no_rdma_peer)
{
	long long timeouts = afrdma_stat("FallbackTimeout");
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7071) };
	struct timespec t0, t1;
	int fd, nsfd, pipefd[2], reason;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, system("ip netns add afrdma-peer && ip link set vb netns afrdma-peer && "
			    "ip -n afrdma-peer addr add 10.99.0.2/24 dev vb && "
			    "ip -n afrdma-peer link set vb up && "
			    "ip -n afrdma-peer link set lo up"));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int l, s, one = 1;

		nsfd = open("/run/netns/afrdma-peer", O_RDONLY);
		if (nsfd < 0 || setns(nsfd, CLONE_NEWNET))
			_exit(1);
		inet_pton(AF_INET, "10.99.0.2", &sin.sin_addr);
		l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1))
			_exit(2);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(3);
		s = accept(l, NULL, NULL);
		if (s < 0 || recv(s, &c, 1, MSG_WAITALL) != 1 || send(s, &c, 1, 0) != 1)
			_exit(4);
		close(s);
		_exit(0);
	}
	ASSERT_EQ(1, read(pipefd[0], &c, 1));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = afrdma_connect_to(AFRDMA_T_IPPROTO, "10.99.0.2", 7071);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_LE(0, fd) TH_LOG("connect: %s", strerror(errno));
	if (fd >= 0) {
		reason = rdma_opt(fd, AFRDMA_FALLBACK_REASON);
		TH_LOG("fell back to TCP in %ld ms (reason %d)",
		       (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
		       reason);
		EXPECT_EQ(AFRDMA_TRANSPORT_TCP, rdma_opt(fd, AFRDMA_TRANSPORT));
		EXPECT_TRUE(reason == AFRDMA_FB_TIMEOUT || reason == AFRDMA_FB_UNREACHABLE);
		EXPECT_EQ(1, send(fd, "z", 1, 0));
		EXPECT_EQ(1, recv(fd, &c, 1, MSG_WAITALL));
		EXPECT_EQ('z', c);
		if (reason == AFRDMA_FB_TIMEOUT)
			EXPECT_EQ(timeouts + 1, afrdma_stat("FallbackTimeout"));
		close(fd);
	} else {
		kill(pid, SIGKILL);
	}
	waitpid(pid, NULL, 0);
	/* Put vb back: rxe0's veth needs its peer up. */
	ASSERT_EQ(0, system("ip -n afrdma-peer link set vb netns 1 && ip netns del afrdma-peer && "
			    "ip link set vb mtu 9000 up"));
}

TEST_HARNESS_MAIN
