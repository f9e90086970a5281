// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma selftests for the rest of the socket API that TCP programs use:
 * non-blocking connect and accept, epoll, ioctls, recv flags, options,
 * vectored and zero-copy-style calls (sendfile, splice), fd passing, fork
 * and signals.  Runs on AF_RDMA over IPv4 and IPPROTO_RDMA over IPv6.
 */
#include <fcntl.h>
#include <net/if.h>
#include <linux/bpf.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

FIXTURE(api) {
	int lfd, cfd, sfd;
	unsigned short port;
	struct sockaddr_storage ss;
	socklen_t sslen;
};

FIXTURE_VARIANT(api) {
	enum afrdma_transport t;
	bool v6;
};

FIXTURE_VARIANT_ADD(api, af_rdma_v4) { .t = AFRDMA_T_FAMILY, .v6 = false };
FIXTURE_VARIANT_ADD(api, ipproto_v6) { .t = AFRDMA_T_IPPROTO, .v6 = true };

FIXTURE_SETUP(api)
{
	const char *a = test_addr(variant->v6);

	self->cfd = self->sfd = -1;
	self->lfd = afrdma_listen_on(variant->t, a, 0, 16, &self->port);
	ASSERT_LE(0, self->lfd) TH_LOG("listen: %s", strerror(errno));
	self->sslen = afrdma_make_addr(&self->ss, a, self->port);
}

FIXTURE_TEARDOWN(api)
{
	if (self->sfd >= 0)
		close(self->sfd);
	if (self->cfd >= 0)
		close(self->cfd);
	close(self->lfd);
}

/* Blocking connect and accept, for tests that just need a pair. */
static int api_pair(struct __test_metadata *_metadata,
		    FIXTURE_DATA(api) *self, const FIXTURE_VARIANT(api) *variant)
{
	self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6),
				      self->port);
	if (self->cfd < 0)
		return -1;
	self->sfd = accept(self->lfd, NULL, NULL);
	return self->sfd < 0 ? -1 : 0;
}

TEST_F(api, nonblocking_connect)
{
	int err = -1;
	socklen_t len = sizeof(err);
	int ret, ev;

	self->cfd = afrdma_socket(variant->t, self->ss.ss_family, SOCK_NONBLOCK);
	ASSERT_LE(0, self->cfd);
	ret = connect(self->cfd, (struct sockaddr *)&self->ss, self->sslen);
	ASSERT_TRUE(ret == 0 || errno == EINPROGRESS) TH_LOG("%s", strerror(errno));
	/* As TCP: EALREADY while in progress, 0 if it completed meanwhile. */
	ret = connect(self->cfd, (struct sockaddr *)&self->ss, self->sslen);
	ASSERT_TRUE(ret == 0 || errno == EALREADY) TH_LOG("%s", strerror(errno));
	ev = wait_for(self->cfd, POLLOUT, 20000);
	ASSERT_NE(0, ev & POLLOUT);
	ASSERT_EQ(0, ev & (POLLERR | POLLHUP));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ERROR, &err, &len));
	ASSERT_EQ(0, err);
	/* As TCP: the first connect after completion reports it with 0. */
	ret = connect(self->cfd, (struct sockaddr *)&self->ss, self->sslen);
	ASSERT_TRUE(ret == 0 || errno == EISCONN);
	ASSERT_EQ(-1, connect(self->cfd, (struct sockaddr *)&self->ss, self->sslen));
	ASSERT_EQ(EISCONN, errno);
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(2, send(self->cfd, "hi", 2, 0));
	ASSERT_EQ(2, recv(self->sfd, &err, 2, MSG_WAITALL));
}

TEST_F(api, nonblocking_connect_refused)
{
	int err = 0, ev;
	socklen_t len = sizeof(err);

	close(self->lfd);
	self->lfd = socket(AF_INET, SOCK_STREAM, 0);
	self->cfd = afrdma_socket(variant->t, self->ss.ss_family, SOCK_NONBLOCK);
	ASSERT_LE(0, self->cfd);
	ASSERT_EQ(-1, connect(self->cfd, (struct sockaddr *)&self->ss, self->sslen));
	ASSERT_EQ(EINPROGRESS, errno);
	ev = wait_for(self->cfd, POLLOUT, 20000);
	ASSERT_NE(0, ev & POLLERR) TH_LOG("revents %#x", ev);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ERROR, &err, &len));
	ASSERT_EQ(ECONNREFUSED, err);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ERROR, &err, &len));
	ASSERT_EQ(0, err);
}

TEST_F(api, nonblocking_accept)
{
	int fl;

	fl = fcntl(self->lfd, F_GETFL);
	ASSERT_EQ(0, fcntl(self->lfd, F_SETFL, fl | O_NONBLOCK));
	ASSERT_EQ(-1, accept(self->lfd, NULL, NULL));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wait_for(self->lfd, POLLIN, 100));

	self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6), self->port);
	ASSERT_LE(0, self->cfd);
	ASSERT_NE(0, wait_for(self->lfd, POLLIN, 20000) & POLLIN);
	self->sfd = accept4(self->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	ASSERT_LE(0, self->sfd);
	ASSERT_NE(0, fcntl(self->sfd, F_GETFL) & O_NONBLOCK);
	ASSERT_NE(0, fcntl(self->sfd, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(-1, recv(self->sfd, &fl, 1, 0));
	ASSERT_EQ(EAGAIN, errno);
}

TEST_F(api, epoll)
{
	struct epoll_event ev = {}, out[4];
	int ep, buf;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->sfd, &ev));
	ASSERT_EQ(0, epoll_wait(ep, out, 4, 0));

	ASSERT_EQ(4, send(self->cfd, "abcd", 4, 0));
	ASSERT_EQ(1, epoll_wait(ep, out, 4, 20000));
	ASSERT_NE(0U, out[0].events & EPOLLIN);
	/* Edge-triggered: no new event without new data. */
	ASSERT_EQ(0, epoll_wait(ep, out, 4, 200));

	/* Level-triggered: reported while data waits. */
	ev.events = EPOLLIN | EPOLLRDHUP;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_MOD, self->sfd, &ev));
	ASSERT_EQ(1, epoll_wait(ep, out, 4, 0));
	ASSERT_EQ(1, epoll_wait(ep, out, 4, 0));
	ASSERT_EQ(4, recv(self->sfd, &buf, 4, 0));
	ASSERT_EQ(0, epoll_wait(ep, out, 4, 0));

	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(1, epoll_wait(ep, out, 4, 20000));
	ASSERT_NE(0U, out[0].events & EPOLLRDHUP);
	ASSERT_EQ(0U, out[0].events & EPOLLHUP);
	close(ep);
}

TEST_F(api, ioctls)
{
	char buf[3000];
	int i, n;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	memset(buf, 7, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), send(self->cfd, buf, sizeof(buf), 0));
	ASSERT_NE(0, wait_for(self->sfd, POLLIN, 20000));
	ASSERT_EQ(0, ioctl(self->sfd, SIOCINQ, &n));
	ASSERT_EQ((int)sizeof(buf), n);
	ASSERT_EQ(0, ioctl(self->sfd, FIONREAD, &n));
	ASSERT_EQ((int)sizeof(buf), n);
	/* Unacknowledged bytes drain to 0 once the peer has them. */
	for (i = 0; i < 500; i++) {
		ASSERT_EQ(0, ioctl(self->cfd, SIOCOUTQ, &n));
		ASSERT_GE((int)sizeof(buf), n);
		if (!n)
			break;
		usleep(10000);
	}
	ASSERT_EQ(0, n);
	ASSERT_EQ(1000, recv(self->sfd, buf, 1000, 0));
	ASSERT_EQ(0, ioctl(self->sfd, SIOCINQ, &n));
	ASSERT_EQ(2000, n);
	ASSERT_EQ(-1, ioctl(self->lfd, SIOCINQ, &n));
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(api, recv_flags)
{
	char buf[16];
	struct timeval tv = { .tv_usec = 200000 };

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(-1, recv(self->sfd, buf, sizeof(buf), MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_EQ(-1, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(EAGAIN, errno);

	ASSERT_EQ(10, send(self->cfd, "0123456789", 10, 0));
	ASSERT_EQ(10, recv(self->sfd, buf, 10, MSG_PEEK | MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "0123456789", 10));
	ASSERT_EQ(4, recv(self->sfd, buf, 4, MSG_PEEK));
	ASSERT_EQ(3, recv(self->sfd, NULL, 3, MSG_TRUNC));
	ASSERT_EQ(7, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, memcmp(buf, "3456789", 7));
}

/*
 * A peek that waits (MSG_WAITALL, SO_RCVLOWAT) for more than is queued
 * returns the queued bytes once, then what came while it slept: as TCP,
 * on @rfd, which @wfd writes to.
 */
static void peek_across(struct __test_metadata *_metadata, int wfd, int rfd,
			int lowat, int flags, size_t len)
{
	struct bg_recv r = { .fd = rfd, .flags = MSG_PEEK | flags, .len = len };
	int one = 1;
	char buf[16];
	pthread_t t;

	ASSERT_EQ(0, setsockopt(wfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	ASSERT_EQ(4, send(wfd, "AAAA", 4, 0));
	ASSERT_NE(0, wait_for(rfd, POLLIN, 20000) & POLLIN);
	ASSERT_EQ(0, setsockopt(rfd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)));
	ASSERT_EQ(0, pthread_create(&t, NULL, bg_recv_run, &r));
	EXPECT_EQ(0, bg_recv_blocked(&r))
		TH_LOG("the peek returned %zd before the rest was sent", r.n);
	ASSERT_EQ(4, send(wfd, "BBBB", 4, 0));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(8, r.n) TH_LOG("peek: %s", r.n < 0 ? strerror(r.err) : "short");
	ASSERT_EQ(0, memcmp(r.buf, "AAAABBBB", 8))
		TH_LOG("peeked \"%.8s\"", r.buf);
	ASSERT_EQ(8, recv(rfd, buf, sizeof(buf), MSG_DONTWAIT));
	ASSERT_EQ(0, memcmp(buf, "AAAABBBB", 8));
	ASSERT_EQ(0, setsockopt(rfd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one)));
	ASSERT_EQ(-1, recv(rfd, buf, sizeof(buf), MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);
}

static int transport_of(int fd)
{
	socklen_t len = sizeof(int);
	int val = -1;

	return getsockopt(fd, SOL_RDMA, AFRDMA_TRANSPORT, &val, &len) ? -1 : val;
}

TEST_F(api, peek_waits)
{
	unsigned short port;
	int tl, tc, ts;

	/* The expectation is TCP's: the same between the same addresses. */
	tl = tcp_listen_on(test_addr(variant->v6), &port);
	ASSERT_LE(0, tl);
	tc = afrdma_connect_to(AFRDMA_T_TCP, test_addr(variant->v6), port);
	ASSERT_LE(0, tc);
	ts = accept(tl, NULL, NULL);
	ASSERT_LE(0, ts);
	peek_across(_metadata, tc, ts, 1, MSG_WAITALL, 8);
	peek_across(_metadata, tc, ts, 8, 0, 16);
	close(ts);
	close(tc);
	close(tl);

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(self->cfd));
	ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(self->sfd));
	peek_across(_metadata, self->cfd, self->sfd, 1, MSG_WAITALL, 8);
	peek_across(_metadata, self->cfd, self->sfd, 8, 0, 16);
}

TEST_F(api, options)
{
	int val, fam = variant->t == AFRDMA_T_FAMILY ? afrdma_family_nr() :
			(variant->v6 ? AF_INET6 : AF_INET);
	struct tcp_info ti;
	socklen_t len = sizeof(val);
	char cc[16];

	ASSERT_EQ(0, getsockopt(self->lfd, SOL_SOCKET, SO_ACCEPTCONN, &val, &len));
	ASSERT_EQ(1, val);
	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ACCEPTCONN, &val, &len));
	ASSERT_EQ(0, val);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_TYPE, &val, &len));
	ASSERT_EQ(SOCK_STREAM, val);
	ASSERT_EQ(0, getsockopt(self->sfd, SOL_SOCKET, SO_PROTOCOL, &val, &len));
	ASSERT_EQ(afrdma_ipproto_nr(), val);
	ASSERT_EQ(0, getsockopt(self->sfd, SOL_SOCKET, SO_DOMAIN, &val, &len));
	ASSERT_EQ(fam, val);

	/* What TCP programs set blindly is taken and read back. */
	val = 1;
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_TCP, TCP_NODELAY, &val, sizeof(val)));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_TCP, TCP_NODELAY, &val, &len));
	ASSERT_EQ(1, val);
	val = 30;
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_TCP, TCP_KEEPIDLE, &val, sizeof(val)));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_TCP, TCP_KEEPIDLE, &val, &len));
	ASSERT_EQ(30, val);
	val = 0;
	ASSERT_EQ(-1, setsockopt(self->cfd, SOL_TCP, TCP_KEEPCNT, &val, sizeof(val)));
	ASSERT_EQ(EINVAL, errno);
	val = 1;
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_TCP, TCP_QUICKACK, &val, sizeof(val)));
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_TCP, TCP_CONGESTION, "cubic", 5));
	len = sizeof(cc);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_TCP, TCP_CONGESTION, cc, &len));
	len = sizeof(ti);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_TCP, TCP_INFO, &ti, &len));
	ASSERT_EQ(TCP_ESTABLISHED, (int)ti.tcpi_state);
	ASSERT_LT(0, (int)ti.tcpi_snd_mss);
	val = 0x10;
	if (variant->v6) {
		ASSERT_EQ(0, setsockopt(self->cfd, SOL_IPV6, IPV6_TCLASS, &val, sizeof(val)));
	} else {
		ASSERT_EQ(0, setsockopt(self->cfd, SOL_IP, IP_TOS, &val, sizeof(val)));
	}
	val = 1;
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_KEEPALIVE, &val, sizeof(val)));
}

/*
 * setsockopt() with an optlen longer than the program's buffer, whose
 * memory ends (a PROT_NONE page) within optlen: TCP reads only what the
 * option needs (an int's 4 bytes), so an int option set from the last 4
 * bytes of a page succeeds there.  afrdma copied all of optlen in first
 * and failed with EFAULT.  Each of afrdma's socket states answers as a
 * TCP socket in the same state does: result, errno, and the value read
 * back.
 */
struct past_opt {
	const char	*what;
	int		level, name;
	int		val;
	const char	*str;		/* the 4 bytes, instead of @val */
	unsigned int	optlen;
	int		family;		/* AF_INET or AF_INET6 only; 0: both */
};

static const struct past_opt past_opts[] = {
	{ "TCP_NODELAY", SOL_TCP, TCP_NODELAY, 1, NULL, 64, 0 },
	{ "TCP_KEEPIDLE", SOL_TCP, TCP_KEEPIDLE, 30, NULL, 64, 0 },
	{ "SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE, 1, NULL, 64, 0 },
	/* Past the 64 KiB afrdma copies in at most */
	{ "TCP_NODELAY, 70000", SOL_TCP, TCP_NODELAY, 0, NULL, 70000, 0 },
	/* TCP reads up to 15 bytes of a name: EFAULT on both */
	{ "TCP_CONGESTION", SOL_TCP, TCP_CONGESTION, 0, "reno", 64, 0 },
	/* Read, then refused: ENOPROTOOPT on both */
	{ "SOL_TCP 9999", SOL_TCP, 9999, 1, NULL, 64, 0 },
	{ "IP_TOS", SOL_IP, IP_TOS, 0x10, NULL, 64, AF_INET },
	/* Longer than 40: EINVAL before anything is read */
	{ "IP_OPTIONS", SOL_IP, IP_OPTIONS, 0, "\1\1\0\0", 64, AF_INET },
	{ "IPV6_TCLASS", SOL_IPV6, IPV6_TCLASS, 0x10, NULL, 64, AF_INET6 },
};

static void past_mapped_vs(struct __test_metadata *_metadata, const char *kind,
			   int family, int fd, int tfd, unsigned char *end4)
{
	int ret, err, tret, terr, val, tval;
	const struct past_opt *o;
	socklen_t len;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(past_opts); i++) {
		o = &past_opts[i];
		if (o->family && o->family != family)
			continue;
		memcpy(end4, o->str ? o->str : (const char *)&o->val, 4);
		errno = 0;
		tret = setsockopt(tfd, o->level, o->name, end4, o->optlen);
		terr = tret ? errno : 0;
		errno = 0;
		ret = setsockopt(fd, o->level, o->name, end4, o->optlen);
		err = ret ? errno : 0;
		EXPECT_EQ(tret, ret)
			TH_LOG("%s: %s from 4 bytes, optlen %u: %s, TCP: %s", kind,
			       o->what, o->optlen, strerror(err), strerror(terr));
		EXPECT_EQ(terr, err)
			TH_LOG("%s: %s from 4 bytes, optlen %u: %s, TCP: %s", kind,
			       o->what, o->optlen, strerror(err), strerror(terr));
		if (tret || ret || o->str)
			continue;
		len = sizeof(val);
		val = -1;
		tval = -1;
		ASSERT_EQ(0, getsockopt(tfd, o->level, o->name, &tval, &len));
		len = sizeof(val);
		ASSERT_EQ(0, getsockopt(fd, o->level, o->name, &val, &len));
		EXPECT_EQ(tval, val) TH_LOG("%s: %s read back", kind, o->what);
	}
}

TEST_F(api, sockopt_past_mapped)
{
	const char *a = test_addr(variant->v6);
	int family = variant->v6 ? AF_INET6 : AF_INET;
	int fd, tfd, tl, tc, ts, fb, zero = 0, one = 1;
	long page = sysconf(_SC_PAGESIZE);
	struct sockaddr_storage ss;
	unsigned short tport;
	unsigned char *map;
	socklen_t sslen;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));

	/* Not connected, the fallback off, then on */
	for (fb = 0; fb < 2; fb++) {
		tfd = socket(family, SOCK_STREAM, 0);
		ASSERT_LE(0, tfd);
		fd = afrdma_socket(variant->t, family, 0);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &fb,
					sizeof(fb)));
		past_mapped_vs(_metadata, fb ? "fallback on" : "fallback off",
			       family, fd, tfd, map + page - 4);
		close(fd);
		close(tfd);
	}

	/* Connected: TCP's answers are a connected TCP socket's. */
	tl = tcp_listen_on(a, &tport);
	ASSERT_LE(0, tl);
	tc = afrdma_connect_to(AFRDMA_T_TCP, a, tport);
	ASSERT_LE(0, tc);
	ts = accept(tl, NULL, NULL);
	ASSERT_LE(0, ts);
	close(ts);

	/* Over RDMA, the fallback off */
	fd = afrdma_socket(variant->t, family, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &zero, sizeof(zero)));
	ASSERT_EQ(0, connect(fd, (struct sockaddr *)&self->ss, self->sslen))
		TH_LOG("connect: %s", strerror(errno));
	self->cfd = fd;
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(fd));
	past_mapped_vs(_metadata, "over RDMA", family, fd, tc, map + page - 4);

	/* Fallen back: a plain TCP listener's peer */
	fd = afrdma_socket(variant->t, family, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &one, sizeof(one)));
	sslen = afrdma_make_addr(&ss, a, tport);
	ASSERT_EQ(0, connect(fd, (struct sockaddr *)&ss, sslen))
		TH_LOG("connect to TCP: %s", strerror(errno));
	ts = accept(tl, NULL, NULL);
	ASSERT_LE(0, ts);
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, transport_of(fd));
	past_mapped_vs(_metadata, "fallen back", family, fd, tc, map + page - 4);
	close(ts);
	close(fd);
	close(tc);
	close(tl);
	munmap(map, 2 * page);
}

TEST_F(api, readv_writev)
{
	char a[100], b[2000], c[5], in[2105];
	struct iovec iov[3] = {
		{ a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) },
	};
	size_t got = 0;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(c, 'c', sizeof(c));
	ASSERT_EQ((ssize_t)sizeof(in), writev(self->cfd, iov, 3));
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(c, 0, sizeof(c));
	while (got < sizeof(in)) {
		ssize_t n = readv(self->sfd, iov, 3);

		ASSERT_LT(0, n);
		memcpy(in + got, a, n < 100 ? n : 100);
		if (n > 100)
			memcpy(in + got + 100, b, n - 100 < 2000 ? n - 100 : 2000);
		if (n > 2100)
			memcpy(in + got + 2100, c, n - 2100);
		got += n;
		ASSERT_EQ(got, sizeof(in)) TH_LOG("short readv: %zd", n);
	}
	ASSERT_EQ('a', in[99]);
	ASSERT_EQ('b', in[100]);
	ASSERT_EQ('b', in[2099]);
	ASSERT_EQ('c', in[2104]);
}

TEST_F(api, fork_and_dup)
{
	char buf[8];
	pid_t pid;
	int st, d;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(send(self->cfd, "child", 5, 0) == 5 ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_EQ(5, recv(self->sfd, buf, 5, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "child", 5));

	d = dup(self->cfd);
	ASSERT_LE(0, d);
	close(self->cfd);
	self->cfd = d;
	ASSERT_EQ(3, send(d, "dup", 3, 0));
	ASSERT_EQ(3, recv(self->sfd, buf, 3, MSG_WAITALL));
}

TEST_F(api, scm_rights)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {}, b = 'x', buf[4];
	struct iovec iov = { &b, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int sv[2], fd;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &self->cfd, sizeof(int));
	ASSERT_EQ(1, sendmsg(sv[0], &m, 0));
	close(self->cfd);
	self->cfd = -1;

	memset(cbuf, 0, sizeof(cbuf));
	m.msg_controllen = sizeof(cbuf);
	ASSERT_EQ(1, recvmsg(sv[1], &m, 0));
	cm = CMSG_FIRSTHDR(&m);
	ASSERT_NE(NULL, cm);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	self->cfd = fd;
	ASSERT_EQ(4, send(fd, "pass", 4, 0));
	ASSERT_EQ(4, recv(self->sfd, buf, 4, MSG_WAITALL));
	close(sv[0]);
	close(sv[1]);
}

static void on_alarm(int sig)
{
}

TEST_F(api, eintr)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	char buf[4];

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));	/* no SA_RESTART */
	alarm(1);
	ASSERT_EQ(-1, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(EINTR, errno);
	alarm(1);
	ASSERT_EQ(-1, accept(self->lfd, NULL, NULL));
	ASSERT_EQ(EINTR, errno);
	alarm(0);
}

/* With SA_RESTART a blocked recv survives the signal and gets the data. */
TEST_F(api, sa_restart)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	char buf[4];
	pid_t pid;
	int st;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		sleep(2);
		_exit(send(self->cfd, "late", 4, 0) == 4 ? 0 : 1);
	}
	alarm(1);
	ASSERT_EQ(4, recv(self->sfd, buf, 4, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "late", 4));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
}

/*
 * recv on a socket whose non-blocking connect is under way: EAGAIN when
 * non-blocking; a blocking one waits for the connect, then reads, as TCP.
 */
TEST_F(api, recv_while_connecting)
{
	char why[128] = "";
	int ret;

	self->cfd = afrdma_socket(variant->t, self->ss.ss_family, SOCK_NONBLOCK);
	ASSERT_LE(0, self->cfd);
	ret = connect(self->cfd, (struct sockaddr *)&self->ss, self->sslen);
	ASSERT_TRUE(ret == 0 || errno == EINPROGRESS) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, recv_while_connecting(self->cfd, self->lfd, &self->sfd,
					   why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(self->cfd));
}

/*
 * A connect that takes long (nobody has the address: rdma_cm's address
 * resolution, then TCP's, wait for ARP): recv meanwhile honours
 * SO_RCVTIMEO and signals, then returns the connect's error, all as on
 * TCP.  Returns the last recv's errno.
 */
static int recv_unanswered(struct __test_metadata *_metadata,
			   enum afrdma_transport t, const char *addr)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct timeval tv = { .tv_usec = 200000 };
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[4];
	int fd, err;

	len = afrdma_make_addr(&ss, addr, 9);
	fd = afrdma_socket(t, ss.ss_family, SOCK_NONBLOCK);
	if (fd < 0)
		return -1;
	EXPECT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(-1, recv(fd, buf, sizeof(buf), 0));
	EXPECT_EQ(EAGAIN, errno) TH_LOG("%s: %s", afrdma_transport_name(t),
				       strerror(errno));
	/* Still resolving the address: no transport yet. */
	if (t != AFRDMA_T_TCP)
		EXPECT_EQ(AFRDMA_TRANSPORT_NONE, transport_of(fd));

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	EXPECT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	EXPECT_EQ(-1, recv(fd, buf, sizeof(buf), 0));
	EXPECT_EQ(EAGAIN, errno) TH_LOG("%s: %s", afrdma_transport_name(t),
				       strerror(errno));
	tv.tv_usec = 0;
	EXPECT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	EXPECT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	alarm(1);
	EXPECT_EQ(-1, recv(fd, buf, sizeof(buf), 0));
	EXPECT_EQ(EINTR, errno) TH_LOG("%s: %s", afrdma_transport_name(t),
				      strerror(errno));
	alarm(0);
	/* Until the connect gives up; ARP's and TCP's bounds end it. */
	EXPECT_EQ(-1, recv(fd, buf, sizeof(buf), 0));
	err = errno;
	close(fd);
	return err;
}

TEST_F(api, recv_unanswered_connect)
{
	const char *nobody = variant->v6 ? "fd99::3" : "10.99.0.3";
	int tcp_err, err;

	tcp_err = recv_unanswered(_metadata, AFRDMA_T_TCP, nobody);
	ASSERT_LT(0, tcp_err);
	err = recv_unanswered(_metadata, variant->t, nobody);
	ASSERT_EQ(tcp_err, err) TH_LOG("afrdma: %s, TCP: %s", strerror(err),
				       strerror(tcp_err));
}

/* A full window with SO_SNDTIMEO: a partial count, then EAGAIN. */
TEST_F(api, send_timeout)
{
	struct timeval tv = { .tv_usec = 300000 };
	static char big[4 << 20];
	ssize_t n;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	n = send(self->cfd, big, sizeof(big), 0);
	ASSERT_LT(0, n);
	ASSERT_GT((ssize_t)sizeof(big), n);
	ASSERT_EQ(-1, send(self->cfd, big, sizeof(big), 0));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(-1, send(self->cfd, big, 1, MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wait_for(self->cfd, POLLOUT, 0));
}

TEST_F(api, sendfile_and_splice)
{
	size_t len = 1 << 20, got = 0;
	char path[] = "/tmp/afrdma-sendfile.XXXXXX";
	unsigned char *data = malloc(len), *in = malloc(len);
	off_t off = 0;
	int fd, p[2], st;
	pid_t pid;
	size_t i;

	ASSERT_TRUE(data && in);
	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	for (i = 0; i < len; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 24);
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	unlink(path);
	ASSERT_EQ((ssize_t)len, write(fd, data, len));

	/* More than the receive window: send from a child while we read. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		while ((size_t)off < len)
			if (sendfile(self->cfd, fd, &off, len - off) <= 0)
				_exit(1);
		_exit(0);
	}
	close(fd);

	/* Out of the socket through a pipe. */
	ASSERT_EQ(0, pipe(p));
	while (got < len) {
		ssize_t n = splice(self->sfd, NULL, p[1], NULL, 65536, 0);

		ASSERT_LT(0, n) TH_LOG("splice: %s", strerror(errno));
		ASSERT_EQ(n, read(p[0], in + got, n));
		got += n;
	}
	ASSERT_EQ(0, memcmp(data, in, len));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st)) TH_LOG("sendfile failed in the child");

	/* Into the socket from a pipe. */
	ASSERT_EQ(5, write(p[1], "spliz", 5));
	ASSERT_EQ(5, splice(p[0], NULL, self->cfd, NULL, 5, 0));
	ASSERT_EQ(5, recv(self->sfd, in, 5, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(in, "spliz", 5));
	close(p[0]);
	close(p[1]);
	free(data);
	free(in);
}

static int sysctl_rw(const char *name, const char *set)
{
	char path[128], buf[32] = "";
	int fd, n;

	snprintf(path, sizeof(path), "/proc/sys/net/afrdma/%s", name);
	fd = open(path, set ? O_WRONLY : O_RDONLY);
	if (fd < 0)
		return -errno;
	n = set ? write(fd, set, strlen(set)) : read(fd, buf, sizeof(buf) - 1);
	n = n < 0 ? -errno : set ? 0 : atoi(buf);
	close(fd);
	return n;
}

static unsigned int rcv_space(int fd)
{
	struct tcp_info ti = {};
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &len))
		return 0;
	return ti.tcpi_rcv_space;
}

/* The most receive buffers @fd's connection may grow to. */
static unsigned int rx_max(int fd)
{
	struct afrdma_rings r = {};

	return afrdma_rings(fd, &r) ? 0 : r.rx_max;
}

/*
 * net.afrdma.* sizes new connections only; SO_RCVBUF overrides them.  The
 * rings start small (afrdma_ring_test): TCP_INFO shows what is posted now.
 */
TEST_F(api, buffers)
{
	static char big[1 << 20];
	int old_fd, st, val = 64 * 1024;
	size_t got = 0;
	pid_t pid;

	ASSERT_EQ(32, sysctl_rw("rx_slots", NULL));
	ASSERT_EQ(32, sysctl_rw("tx_slots", NULL));
	ASSERT_EQ(16384, sysctl_rw("slot_size", NULL));
	ASSERT_EQ(-EINVAL, sysctl_rw("rx_slots", "3"));
	ASSERT_EQ(-EINVAL, sysctl_rw("slot_size", "100"));
	ASSERT_EQ(32, sysctl_rw("rx_slots", NULL));

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(32U, rx_max(self->sfd));
	ASSERT_EQ(afrdma_sysctl("initial_slots", -1) * 16384U,
		  rcv_space(self->sfd));
	old_fd = self->sfd;

	ASSERT_EQ(0, sysctl_rw("rx_slots", "8"));
	close(self->cfd);
	self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6), self->port);
	self->sfd = accept(self->lfd, NULL, NULL);
	sysctl_rw("rx_slots", "32");
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(8U, rx_max(self->sfd));
	/* The live connection kept its limit. */
	ASSERT_EQ(32U, rx_max(old_fd));
	close(old_fd);

	close(self->cfd);
	self->cfd = afrdma_socket(variant->t, self->ss.ss_family, 0);
	ASSERT_LE(0, self->cfd);
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_RCVBUF, &val, sizeof(val)));
	ASSERT_EQ(0, connect(self->cfd, (struct sockaddr *)&self->ss, self->sslen));
	ASSERT_EQ(4U, rx_max(self->cfd));
	ASSERT_EQ(65536U, rcv_space(self->cfd));
	/* And data still flows through four receive buffers. */
	close(self->sfd);
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(send(self->sfd, big, sizeof(big), 0) == sizeof(big) ? 0 : 1);
	while (got < sizeof(big)) {
		ssize_t n = recv(self->cfd, big, sizeof(big), 0);

		ASSERT_LT(0, n);
		got += n;
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
}

/* Port 0 is ephemeral; a second bind of a bound port is EADDRINUSE. */
TEST_F(api, addr_in_use)
{
	struct sockaddr_storage ss = self->ss;
	int fd;

	ASSERT_NE(0, self->port);
	fd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(-1, bind(fd, (struct sockaddr *)&ss, self->sslen));
	ASSERT_EQ(EADDRINUSE, errno);
	close(fd);
}

struct accepter {
	int	fd;
	int	ret;
	int	err;
};

static void *accept_thread(void *arg)
{
	struct accepter *a = arg;

	a->ret = accept(a->fd, NULL, NULL);
	a->err = errno;
	return NULL;
}

/*
 * shutdown() on a listener, as TCP: a thread blocked in accept() returns
 * EINVAL, and after close the port is free again.
 */
TEST_F(api, shutdown_listener)
{
	struct accepter a = { .fd = self->lfd, .ret = -2 };
	struct sockaddr_storage ss = self->ss;
	int i, fd, one = 1;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, accept_thread, &a));
	usleep(200000);
	ASSERT_EQ(0, shutdown(self->lfd, SHUT_RDWR));
	for (i = 0; i < 100 && a.ret == -2; i++)
		usleep(50000);
	ASSERT_EQ(-1, a.ret) TH_LOG("accept() still blocked after shutdown");
	ASSERT_EQ(EINVAL, a.err);
	pthread_join(t, NULL);
	ASSERT_EQ(0, listen(self->lfd, 4)) TH_LOG("listen again: %s", strerror(errno));
	close(self->lfd);
	self->lfd = -1;

	fd = afrdma_socket(variant->t, ss.ss_family, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&ss, self->sslen))
		TH_LOG("rebind: %s", strerror(errno));
	ASSERT_EQ(0, listen(fd, 4));
	self->lfd = fd;
}

/*
 * exec: a socket without close-on-exec stays usable in the new program, one
 * with it is gone there.  The kernel fd is the socket; nothing to rebuild.
 */
TEST_F(api, exec)
{
	char cmd[128], buf[8] = {};
	int fd;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	/* The pair's sockets are made with SOCK_CLOEXEC: clear it here. */
	ASSERT_EQ(0, fcntl(self->cfd, F_SETFD, 0));
	snprintf(cmd, sizeof(cmd), "printf exec >&%d", self->cfd);
	/* system(): fork and exec /bin/sh, which inherits our fds. */
	ASSERT_EQ(0, WEXITSTATUS(system(cmd)));
	ASSERT_EQ(4, recv(self->sfd, buf, 4, MSG_WAITALL));
	ASSERT_STREQ("exec", buf);

	fd = fcntl(self->cfd, F_DUPFD_CLOEXEC, 100);
	ASSERT_LE(100, fd);
	snprintf(cmd, sizeof(cmd), "test ! -e /proc/self/fd/%d", fd);
	ASSERT_EQ(0, WEXITSTATUS(system(cmd))) TH_LOG("close-on-exec fd survived exec");
	close(fd);
}

/* SO_PEERCRED reads as it does on a TCP socket: no credentials to pass. */
TEST_F(api, peercred_as_tcp)
{
	struct ucred rdma_cred, tcp_cred;
	socklen_t len = sizeof(rdma_cred);
	int tl, tc, ts;
	unsigned short port;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_PEERCRED, &rdma_cred, &len));
	tl = afrdma_listen_on(AFRDMA_T_TCP, test_addr(variant->v6), 0, 1, &port);
	ASSERT_LE(0, tl);
	tc = afrdma_connect_to(AFRDMA_T_TCP, test_addr(variant->v6), port);
	ASSERT_LE(0, tc);
	ts = accept(tl, NULL, NULL);
	ASSERT_LE(0, ts);
	len = sizeof(tcp_cred);
	ASSERT_EQ(0, getsockopt(tc, SOL_SOCKET, SO_PEERCRED, &tcp_cred, &len));
	ASSERT_EQ(tcp_cred.pid, rdma_cred.pid);
	ASSERT_EQ(tcp_cred.uid, rdma_cred.uid);
	ASSERT_EQ(tcp_cred.gid, rdma_cred.gid);
	close(ts);
	close(tc);
	close(tl);
}

/*
 * close() with SO_LINGER {1, 0} is an abortive close, as TCP's RST: the
 * peer's recv fails with ECONNRESET and epoll reports EPOLLERR and
 * EPOLLHUP.  With {1, 5}, close() delivers the data and a FIN first.
 */
TEST_F(api, linger)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	static char buf[200000], in[200000];
	int ep, n;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->sfd, &ev));
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	ASSERT_EQ(0, close(self->cfd));
	self->cfd = -1;
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, 10000));
	ASSERT_NE(0U, ev.events & EPOLLERR) TH_LOG("events %#x", ev.events);
	ASSERT_NE(0U, ev.events & EPOLLHUP) TH_LOG("events %#x", ev.events);
	ASSERT_EQ(-1, recv(self->sfd, in, 1, 0));
	ASSERT_EQ(ECONNRESET, errno);
	close(ep);
	close(self->sfd);
	self->sfd = -1;

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	lg.l_linger = 5;
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	fill((unsigned char *)buf, sizeof(buf), 3);
	ASSERT_EQ((ssize_t)sizeof(buf), send(self->cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, close(self->cfd));
	self->cfd = -1;
	n = recv(self->sfd, in, sizeof(in), MSG_WAITALL);
	ASSERT_EQ((ssize_t)sizeof(in), n);
	ASSERT_EQ(0, memcmp(in, buf, sizeof(in)));
	ASSERT_EQ(0, recv(self->sfd, in, 1, 0));
}

/*
 * close_returns_at_once: an event loop fills 100 non-blocking connections
 * to a reader that does not read yet (small receive buffers, so that each
 * sender holds data and its FIN back for want of the reader's room), then
 * closes them all.  As TCP's, every close returns at once and the data is
 * delivered in the background: the reader, which starts reading once the
 * closes are done (or at a deadline that only a close waiting for it can
 * reach), gets every byte and then EOF.  TCP runs the same as the control.
 *
 * The reader is an event loop too, reading whichever connection is
 * readable.  An orphan is reset once a period of 10 s passes in which its
 * reader took none of its data (api.rst, Closing), so a reader that leaves
 * a connection untouched until it has finished 99 others may, on a slow
 * kernel, find it reset: by design (the debug kernel took over 10 s to
 * reach the 88th that way), where TCP would probe for minutes.  Serving
 * them all, it finds none reset.
 */
#define ORPHANS		100
#define ORPHAN_BUF	(64 * 1024)	/* afrdma: 4 buffers of 16 KiB */
#define ORPHAN_CAP	(8 << 20)	/* bytes a connection may take, at most */
#define ORPHAN_WAIT_S	5		/* the reader's deadline */
#define ORPHAN_IDLE_S	30		/* the reader's wait for any data */
#define ORPHAN_BOUND_S	10		/* af_rdma.c's AFRDMA_CLOSE_TIMEOUT */

struct orphan_reader {
	int			fd[ORPHANS];
	long long		sent[ORPHANS];
	pthread_mutex_t		lock;
	pthread_cond_t		cond;
	bool			closed;		/* every client closed */
	bool			timed_out;	/* the deadline came first */
	int			bad;		/* connections not delivered whole */
	char			why[160];
};

static double orphan_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned char orphan_byte(int i, long long off)
{
	return (unsigned char)((off * 131 + i * 7 + (off >> 9)) & 0xff);
}

static void orphan_bad(struct orphan_reader *r, int i, long long got,
		       const char *then)
{
	if (!r->bad++)
		snprintf(r->why, sizeof(r->why),
			 "connection %d: %lld of %lld bytes, then %s",
			 i, got, r->sent[i], then);
}

/*
 * Reads what connection @i has now; true once it is over: EOF after all
 * its bytes, or a failure noted in @r.
 */
static bool orphan_take(struct orphan_reader *r, int i, long long *got)
{
	static unsigned char buf[65536];
	ssize_t n, k;

	while ((n = recv(r->fd[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (k = 0; k < n; k++)
			if (buf[k] != orphan_byte(i, *got + k))
				break;
		if (k < n) {
			orphan_bad(r, i, *got + k, "wrong data");
			return true;
		}
		*got += n;
	}
	if (n < 0 && errno == EAGAIN)
		return false;
	if (n || *got != r->sent[i])
		orphan_bad(r, i, *got, n ? strerror(errno) : "EOF");
	return true;
}

static void *orphan_read(void *arg)
{
	struct orphan_reader *r = arg;
	long long got[ORPHANS] = { 0 };
	struct pollfd pfd[ORPHANS];
	int i, left = ORPHANS;
	struct timespec end;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += ORPHAN_WAIT_S;
	pthread_mutex_lock(&r->lock);
	while (!r->closed)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &end) == ETIMEDOUT) {
			r->timed_out = !r->closed;
			break;
		}
	pthread_mutex_unlock(&r->lock);

	for (i = 0; i < ORPHANS; i++)
		pfd[i] = (struct pollfd){ .fd = r->fd[i], .events = POLLIN };
	while (left && poll(pfd, ORPHANS, ORPHAN_IDLE_S * 1000) > 0) {
		for (i = 0; i < ORPHANS; i++) {
			if (!pfd[i].revents || !orphan_take(r, i, &got[i]))
				continue;
			close(r->fd[i]);
			pfd[i].fd = -1;
			left--;
		}
	}
	for (i = 0; i < ORPHANS; i++) {
		if (pfd[i].fd < 0)
			continue;
		orphan_bad(r, i, got[i], "no EOF");
		close(r->fd[i]);
	}
	return NULL;
}

/* Sends on every writable client until none has become writable for 0.5 s. */
static int orphan_fill(int *cfd, struct orphan_reader *r)
{
	static unsigned char buf[16384];
	struct pollfd pfd[ORPHANS];
	int i, n;

	for (;;) {
		for (i = 0; i < ORPHANS; i++)
			pfd[i] = (struct pollfd){ .fd = cfd[i], .events = POLLOUT };
		n = poll(pfd, ORPHANS, 500);
		if (n <= 0)
			return n;
		for (i = 0; i < ORPHANS; i++) {
			ssize_t s;
			int k;

			if (pfd[i].revents & (POLLERR | POLLHUP))
				return -1;
			if (!(pfd[i].revents & POLLOUT))
				continue;
			do {
				if (r->sent[i] >= ORPHAN_CAP)
					return -1;	/* the reader never filled */
				for (k = 0; k < (int)sizeof(buf); k++)
					buf[k] = orphan_byte(i, r->sent[i] + k);
				s = send(cfd[i], buf, sizeof(buf),
					 MSG_DONTWAIT | MSG_NOSIGNAL);
				if (s > 0)
					r->sent[i] += s;
			} while (s > 0);
			if (errno != EAGAIN)
				return -1;
		}
	}
}

/* Seconds the 100 closes took; the reader's verdict in @r. */
static double orphan_run(struct __test_metadata *_metadata,
			 enum afrdma_transport t, bool v6,
			 struct orphan_reader *r, long long *orphans)
{
	int lfd, i, size = ORPHAN_BUF, cfd[ORPHANS];
	const char *a = test_addr(v6);
	unsigned short port;
	pthread_t th;
	double t0, t1;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	lfd = afrdma_listen_on(t, a, 0, ORPHANS, &port);
	EXPECT_LE(0, lfd);
	EXPECT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)));
	for (i = 0; i < ORPHANS; i++) {
		cfd[i] = afrdma_connect_to(t, a, port);
		ASSERT_LE(0, cfd[i]) TH_LOG("connect %d: %s", i, strerror(errno));
		EXPECT_EQ(0, setsockopt(cfd[i], SOL_SOCKET, SO_SNDBUF, &size,
					sizeof(size)));
		EXPECT_EQ(0, fcntl(cfd[i], F_SETFL, O_NONBLOCK));
		r->fd[i] = accept(lfd, NULL, NULL);
		ASSERT_LE(0, r->fd[i]) TH_LOG("accept %d: %s", i, strerror(errno));
	}
	close(lfd);
	EXPECT_EQ(0, orphan_fill(cfd, r));
	ASSERT_EQ(0, pthread_create(&th, NULL, orphan_read, r));

	t0 = orphan_now();
	for (i = 0; i < ORPHANS; i++)
		EXPECT_EQ(0, close(cfd[i]));
	t1 = orphan_now();
	*orphans = afrdma_stat("CurrOrphans");
	pthread_mutex_lock(&r->lock);
	r->closed = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(th, NULL);
	return t1 - t0;
}

TEST_F_TIMEOUT(api, close_returns_at_once, 120)
{
	long long base = afrdma_stat("CurrOrphans"), orphans, left;
	struct orphan_reader r;
	double tcp, rdma;
	int i;

	tcp = orphan_run(_metadata, AFRDMA_T_TCP, variant->v6, &r, &orphans);
	EXPECT_FALSE(r.timed_out) TH_LOG("TCP: close waited for the reader");
	EXPECT_EQ(0, r.bad) TH_LOG("TCP: %s", r.why);

	rdma = orphan_run(_metadata, variant->t, variant->v6, &r, &orphans);
	TH_LOG("100 closes: %.3f s, TCP's %.3f s; %lld orphans after them",
	       rdma, tcp, orphans);
	EXPECT_FALSE(r.timed_out) TH_LOG("close waited %d s for the reader",
					 ORPHAN_WAIT_S);
	EXPECT_EQ(0, r.bad) TH_LOG("%s", r.why);
	/* Every connection still had data held back when it was closed. */
	EXPECT_LE(ORPHANS, orphans);

	/* The orphans go once their data went. */
	for (i = 0; i < 300; i++) {
		left = afrdma_stat("CurrOrphans");
		if (left <= base)
			break;
		usleep(100000);
	}
	EXPECT_GE(base, left) TH_LOG("%lld orphans left", left);
}

/*
 * orphan_reset_when_nothing_taken: the other side of the rule.  A sender
 * fills a connection whose reader takes nothing, then closes: the orphan
 * is reset (OrphanTimeouts) once its first 10 s pass, not re-armed, since
 * nothing was taken.  The reader, coming late, gets what had reached it,
 * then ECONNRESET.
 */
TEST_F_TIMEOUT(api, orphan_reset_when_nothing_taken, 90)
{
	long long base = afrdma_stat("OrphanTimeouts"), now = base;
	long long orphans = afrdma_stat("CurrOrphans");
	struct timeval tv = { .tv_sec = 10 };
	int lfd, cfd, sfd, size = ORPHAN_BUF;
	const char *a = test_addr(variant->v6);
	static unsigned char buf[16384];
	long long sent = 0, got = 0;
	unsigned short port;
	ssize_t n, k;
	double t0, t;

	lfd = afrdma_listen_on(variant->t, a, 0, 1, &port);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)));
	cfd = afrdma_connect_to(variant->t, a, port);
	ASSERT_LE(0, cfd) TH_LOG("connect: %s", strerror(errno));
	sfd = accept(lfd, NULL, NULL);
	ASSERT_LE(0, sfd) TH_LOG("accept: %s", strerror(errno));
	close(lfd);

	/* Until the sender has not become writable for 0.5 s */
	for (;;) {
		struct pollfd p = { .fd = cfd, .events = POLLOUT };

		if (poll(&p, 1, 500) <= 0)
			break;
		ASSERT_GT(ORPHAN_CAP, sent) TH_LOG("the reader never filled");
		for (k = 0; k < (ssize_t)sizeof(buf); k++)
			buf[k] = orphan_byte(0, sent + k);
		n = send(cfd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
		ASSERT_TRUE(n > 0 || errno == EAGAIN)
			TH_LOG("send: %s", strerror(errno));
		if (n > 0)
			sent += n;
	}
	ASSERT_LT(0, sent);

	t0 = orphan_now();
	ASSERT_EQ(0, close(cfd));
	EXPECT_LT(orphans, afrdma_stat("CurrOrphans")) TH_LOG("no orphan");
	while (now <= base && orphan_now() - t0 < 3 * ORPHAN_BOUND_S) {
		usleep(100000);
		now = afrdma_stat("OrphanTimeouts");
	}
	t = orphan_now() - t0;
	TH_LOG("orphan reset %.1f s after the close", t);
	ASSERT_LT(base, now) TH_LOG("no orphan timeout in %.1f s", t);
	/* Not before its 10 s, nor a period later: nothing was taken. */
	EXPECT_TRUE(t > ORPHAN_BOUND_S - 0.5 && t < ORPHAN_BOUND_S * 1.5);

	ASSERT_EQ(0, setsockopt(sfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	while ((n = recv(sfd, buf, sizeof(buf), 0)) > 0) {
		for (k = 0; k < n; k++)
			ASSERT_EQ(orphan_byte(0, got + k), buf[k]);
		got += n;
	}
	EXPECT_EQ(-1, n);
	EXPECT_EQ(ECONNRESET, errno);
	EXPECT_LT(0, got);
	EXPECT_GE(sent, got);
	close(sfd);
}

/* SO_RCVLOWAT: poll and a blocking recv wait for that many bytes. */
TEST_F(api, rcvlowat)
{
	int lowat = 100;
	char in[200];

	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)));
	ASSERT_EQ(50, send(self->cfd, in, 50, 0));
	ASSERT_EQ(0, wait_for(self->sfd, POLLIN, 300) & POLLIN);
	ASSERT_EQ(60, send(self->cfd, in, 60, 0));
	ASSERT_NE(0, wait_for(self->sfd, POLLIN, 10000) & POLLIN);
	ASSERT_EQ(110, recv(self->sfd, in, sizeof(in), 0));
}

static long long busy_polls(void)
{
	return afrdma_stat("BusyPollHits") + afrdma_stat("BusyPollMisses");
}

struct late_send {
	int fd;
	unsigned char buf[64];
};

static void *late_send(void *arg)
{
	struct late_send *ls = arg;

	usleep(20000);
	return send(ls->fd, ls->buf, sizeof(ls->buf), 0) == sizeof(ls->buf) ?
	       NULL : arg;
}

/*
 * One message from cfd that arrives while sfd's recv already waits, so
 * that recv takes the path that may spin; the contents are checked.
 */
static int recv_waiting(int cfd, int sfd, unsigned int seed)
{
	struct late_send ls = { .fd = cfd };
	unsigned char in[64];
	pthread_t t;
	void *ret;
	ssize_t n;

	fill(ls.buf, sizeof(ls.buf), seed);
	if (pthread_create(&t, NULL, late_send, &ls))
		return -1;
	n = recv(sfd, in, sizeof(in), MSG_WAITALL);
	pthread_join(t, &ret);
	return n == sizeof(in) && !ret && !memcmp(in, ls.buf, sizeof(in)) ? 0 : -1;
}

/*
 * recv spins before sleeping when SO_BUSY_POLL or net.afrdma.busy_poll
 * asks for it, and only then; the data is the same either way.
 */
TEST_F(api, busy_poll)
{
	int usecs = 200, val = -1;
	socklen_t len = sizeof(val);
	long long before;

	ASSERT_EQ(0, sysctl_rw("busy_poll", NULL));
	ASSERT_EQ(-EINVAL, sysctl_rw("busy_poll", "1000001"));
	ASSERT_EQ(0, api_pair(_metadata, self, variant));

	before = busy_polls();
	ASSERT_EQ(0, recv_waiting(self->cfd, self->sfd, 1));
	ASSERT_EQ(before, busy_polls());

	/* Per socket. */
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs)));
	ASSERT_EQ(0, getsockopt(self->sfd, SOL_SOCKET, SO_BUSY_POLL, &val, &len));
	ASSERT_EQ(usecs, val);
	ASSERT_EQ(0, recv_waiting(self->cfd, self->sfd, 2));
	ASSERT_LT(before, busy_polls());

	/* For the namespace, where the socket does not say. */
	usecs = 0;
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs)));
	before = busy_polls();
	ASSERT_EQ(0, sysctl_rw("busy_poll", "100"));
	val = recv_waiting(self->cfd, self->sfd, 3);
	sysctl_rw("busy_poll", "0");
	ASSERT_EQ(0, val);
	ASSERT_LT(before, busy_polls());
}

/* The payload bytes @fd's connection sends inline, or -1. */
static int inline_of(int fd)
{
	struct afrdma_rings r = {};

	return afrdma_rings(fd, &r) ? -1 : (int)r.inl;
}

/*
 * net.afrdma.inline_threshold is checked on write and taken by connections
 * set up afterwards, at both ends; live ones keep theirs.
 */
TEST_F(api, inline_threshold)
{
	int old_c, old_s, c, s, big_c, big_s;

	ASSERT_EQ(0, sysctl_rw("inline_threshold", NULL));
	ASSERT_EQ(-EINVAL, sysctl_rw("inline_threshold", "-1"));
	ASSERT_EQ(-EINVAL, sysctl_rw("inline_threshold", "1025"));
	ASSERT_EQ(0, sysctl_rw("inline_threshold", NULL));
	ASSERT_EQ(0, api_pair(_metadata, self, variant));
	ASSERT_EQ(0, inline_of(self->cfd));
	ASSERT_EQ(0, inline_of(self->sfd));
	old_c = self->cfd;
	old_s = self->sfd;

	ASSERT_EQ(0, sysctl_rw("inline_threshold", "100"));
	c = api_pair(_metadata, self, variant) ? -2 : inline_of(self->cfd);
	s = inline_of(self->sfd);
	/* Beyond what rxe takes (400 bytes): what the device gives, in range. */
	sysctl_rw("inline_threshold", "1024");
	close(old_c);
	close(old_s);
	old_c = self->cfd;
	old_s = self->sfd;
	self->cfd = -1;
	self->sfd = -1;
	big_c = api_pair(_metadata, self, variant) ? -2 : inline_of(self->cfd);
	big_s = inline_of(self->sfd);
	sysctl_rw("inline_threshold", "0");
	EXPECT_EQ(100, c);
	EXPECT_EQ(100, s);
	EXPECT_LT(0, big_c);
	EXPECT_GE(1024, big_c);
	EXPECT_EQ(big_c, big_s);
	TH_LOG("threshold 1024 gives %d inline bytes", big_c);
	/* The 100-byte connection kept its figure through the change. */
	EXPECT_EQ(100, inline_of(old_c));
	EXPECT_EQ(100, inline_of(old_s));
	close(old_c);
	close(old_s);
}

#define INL	100	/* inline_threshold for inline_sizes */
#define INL_N	400	/* messages per size */

/* The @i-th message of @len bytes, different in every byte and message. */
static void inl_fill(unsigned char *buf, size_t len, unsigned int i)
{
	size_t j;

	for (j = 0; j < len; j++)
		buf[j] = (unsigned char)(i * 131 + j * 7 + len);
}

struct inl_reader {
	int			fd;
	size_t			bytes;
	unsigned long long	csum;
	int			err;
};

static void *inl_read(void *arg)
{
	struct inl_reader *r = arg;
	struct afrdma_csum c = {};
	unsigned char buf[333];
	size_t done = 0;
	ssize_t n;

	while (done < r->bytes) {
		n = recv(r->fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			r->err = n < 0 ? errno : EPIPE;
			break;
		}
		afrdma_csum_update(&c, buf, n);
		done += n;
	}
	r->csum = afrdma_csum_final(&c);
	return NULL;
}

/*
 * Messages just under, at and just over the inline threshold (payload
 * bytes), alone and mixed, arrive intact: a ping-pong, where every message
 * is a SEND of its own, and a stream with TCP_NODELAY.
 */
TEST_F(api, inline_sizes)
{
	static const size_t sizes[] = { INL - 1, INL, INL + 1, 1 };
	unsigned char out[INL + 1], in[INL + 1];
	struct timeval tv = { .tv_sec = 60 };
	struct inl_reader rd = {};
	struct afrdma_csum c = {};
	unsigned int i, k;
	int one = 1, ok;
	pthread_t t;

	ASSERT_EQ(0, sysctl_rw("inline_threshold", "100"));
	ok = api_pair(_metadata, self, variant);
	sysctl_rw("inline_threshold", "0");
	ASSERT_EQ(0, ok);
	ASSERT_EQ(INL, inline_of(self->cfd));
	ASSERT_EQ(INL, inline_of(self->sfd));
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	/* A stall fails the test instead of hanging it. */
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));

	for (k = 0; k < ARRAY_SIZE(sizes); k++) {
		ssize_t len = sizes[k];

		for (i = 0; i < INL_N / 4; i++) {
			inl_fill(out, len, i);
			ASSERT_EQ(len, send(self->cfd, out, len, 0));
			ASSERT_EQ(len, recv(self->sfd, in, len, MSG_WAITALL));
			ASSERT_EQ(0, memcmp(out, in, len)) TH_LOG("%zd bytes, ping %u", len, i);
			in[0] ^= 0xff;
			ASSERT_EQ(len, send(self->sfd, in, len, 0));
			ASSERT_EQ(len, recv(self->cfd, out, len, MSG_WAITALL));
			ASSERT_EQ(0, memcmp(out, in, len)) TH_LOG("%zd bytes, pong %u", len, i);
		}
	}

	/* Each size on its own, then all of them interleaved. */
	for (k = 0; k <= ARRAY_SIZE(sizes); k++)
		for (i = 0; i < INL_N; i++)
			rd.bytes += sizes[k < ARRAY_SIZE(sizes) ? k : i % ARRAY_SIZE(sizes)];
	rd.fd = self->sfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, inl_read, &rd));
	for (k = 0; k <= ARRAY_SIZE(sizes); k++) {
		for (i = 0; i < INL_N; i++) {
			size_t len = sizes[k < ARRAY_SIZE(sizes) ? k :
					   i % ARRAY_SIZE(sizes)];

			inl_fill(out, len, i);
			afrdma_csum_update(&c, out, len);
			if (send(self->cfd, out, len, 0) != (ssize_t)len)
				break;
		}
	}
	pthread_join(t, NULL);
	ASSERT_EQ(0, rd.err) TH_LOG("reader: %s", strerror(rd.err));
	ASSERT_EQ(afrdma_csum_final(&c), rd.csum);
}

/* Ports below 1024 need CAP_NET_BIND_SERVICE, as for TCP. */
TEST_F(api, privileged_port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	pid_t pid;
	int st;

	len = afrdma_make_addr(&ss, test_addr(variant->v6), 1000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		fd = afrdma_socket(variant->t, ss.ss_family, 0);
		if (fd < 0)
			_exit(3);
		if (bind(fd, (struct sockaddr *)&ss, len) == 0 || errno != EACCES)
			_exit(4);
		/* An unprivileged port is fine. */
		len = afrdma_make_addr(&ss, test_addr(variant->v6), 0);
		_exit(bind(fd, (struct sockaddr *)&ss, len) ? 5 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
}

/*
 * Accepted connections on @port that are not yet closed by their peer
 * (ESTABLISHED or SYN_RECV): afrdma's from /proc/net/afrdma, TCP's from
 * /proc/net/tcp and tcp6.
 */
static int open_children(enum afrdma_transport t, unsigned short port)
{
	static const char *const tcp_files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512], state[32], local[128], *colon;
	unsigned int lport, st;
	int i, n = 0;
	FILE *f;

	if (t != AFRDMA_T_TCP) {
		f = fopen("/proc/net/afrdma", "r");
		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%31s %127s", state, local) != 2)
				continue;
			colon = strrchr(local, ':');
			if (colon && strtoul(colon + 1, NULL, 10) == port &&
			    (!strcmp(state, "ESTAB") || !strcmp(state, "SYN-RECV")))
				n++;
		}
		fclose(f);
		return n;
	}
	for (i = 0; i < 2; i++) {
		f = fopen(tcp_files[i], "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, " %*s %*[0-9A-Fa-f]:%x %*s %x", &lport, &st) == 2 &&
			    lport == port && (st == TCP_ESTABLISHED || st == TCP_SYN_RECV))
				n++;
		fclose(f);
	}
	return n;
}

#define EARLY_CLIENTS	6
#define EARLY_LEN	3000

/* What early client @i sends: its number, then a pattern of its own. */
static void early_data(unsigned char *buf, int i)
{
	fill(buf, EARLY_LEN, i);
	buf[0] = i;
}

/*
 * Clients that connect to listener @lfd on @port, send, shut down or
 * close, and exit before anyone accepts (`echo hi | nc` against a busy
 * server).  The server then accepts every one, with its peer's address
 * (accept must not fail with ECONNABORTED), and reads all its bytes, then
 * EOF.
 */
static void closed_before_accept(struct __test_metadata *_metadata,
				 enum afrdma_transport t, const char *addr,
				 int lfd, unsigned short port)
{
	unsigned char buf[EARLY_LEN + 1], want[EARLY_LEN];
	bool seen[EARLY_CLIENTS] = {};
	const char *name = afrdma_transport_name(t);
	struct sockaddr_storage peer;
	int i, fd, st, n = 0, got, off = 0;
	socklen_t plen;
	pid_t pid;

	for (i = 0; i < EARLY_CLIENTS; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid)
			continue;
		/* On RDMA only: TCP would not be the case under test. */
		plen = afrdma_make_addr(&peer, addr, port);
		fd = afrdma_socket(t, peer.ss_family, 0);
		if (fd < 0 || (t != AFRDMA_T_TCP &&
			       setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &off,
					  sizeof(off))) ||
		    connect(fd, (struct sockaddr *)&peer, plen))
			_exit(1);
		early_data(want, i);
		if (send(fd, want, 1000, 0) != 1000 ||
		    send(fd, want + 1000, EARLY_LEN - 1000, 0) != EARLY_LEN - 1000)
			_exit(2);
		/* Each way of leaving: shutdown then close, close, exit. */
		if (i % 3 == 0 && shutdown(fd, SHUT_WR))
			_exit(3);
		if (i % 3 != 2 && close(fd))
			_exit(4);
		_exit(0);
	}
	for (i = 0; i < EARLY_CLIENTS; i++) {
		ASSERT_LT(0, wait(&st));
		ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
			TH_LOG("%s: a client failed, status %#x", name, st);
	}
	/* Until the server has seen every client go (afrdma: a CM event). */
	for (i = 0; i < 6000; i++) {
		n = open_children(t, port);
		if (n <= 0)
			break;
		usleep(10000);
	}
	ASSERT_EQ(0, n) TH_LOG("%s: %d connections still open", name, n);

	for (i = 0; i < EARLY_CLIENTS; i++) {
		plen = sizeof(peer);
		fd = accept(lfd, (struct sockaddr *)&peer, &plen);
		ASSERT_LE(0, fd) TH_LOG("%s: accept %d: %s", name, i, strerror(errno));
		ASSERT_NE(0, afrdma_addr_port(&peer));
		if (t != AFRDMA_T_TCP)
			ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(fd));
		/* Still named after the peer closed, as in CLOSE_WAIT. */
		plen = sizeof(peer);
		ASSERT_EQ(0, getpeername(fd, (struct sockaddr *)&peer, &plen))
			TH_LOG("%s: getpeername: %s", name, strerror(errno));
		got = 0;
		while ((n = recv(fd, buf + got, sizeof(buf) - got, 0)) > 0)
			got += n;
		ASSERT_EQ(0, n) TH_LOG("%s: recv: %s", name, strerror(errno));
		ASSERT_EQ(EARLY_LEN, got);
		ASSERT_GT(EARLY_CLIENTS, buf[0]);
		ASSERT_FALSE(seen[buf[0]]);
		seen[buf[0]] = true;
		early_data(want, buf[0]);
		ASSERT_EQ(0, memcmp(buf, want, EARLY_LEN));
		close(fd);
	}
}

typedef void (*vs_tcp_fn)(struct __test_metadata *_metadata,
			  enum afrdma_transport t, const char *addr, int lfd,
			  unsigned short port);

/* @fn over TCP, which sets the expectation, then over the variant's listener. */
static void vs_tcp(struct __test_metadata *_metadata, FIXTURE_DATA(api) *self,
		   const FIXTURE_VARIANT(api) *variant, vs_tcp_fn fn)
{
	const char *a = test_addr(variant->v6);
	unsigned short port;
	int tl;

	tl = afrdma_listen_on(AFRDMA_T_TCP, a, 0, 16, &port);
	ASSERT_LE(0, tl);
	fn(_metadata, AFRDMA_T_TCP, a, tl, port);
	close(tl);
	fn(_metadata, variant->t, a, self->lfd, self->port);
}

TEST_F_TIMEOUT(api, closed_before_accept, 180)
{
	vs_tcp(_metadata, self, variant, closed_before_accept);
}

/*
 * connect() again after a refused one connects, as TCP's does (it used to
 * fail with EISCONN).  @fallback, if not -1, is the socket's
 * AFRDMA_FALLBACK; @bound binds it first, and the port stays.
 */
static void connect_after_refused(struct __test_metadata *_metadata,
				  enum afrdma_transport t, const char *addr,
				  int fallback, bool bound)
{
	const char *name = afrdma_transport_name(t);
	struct sockaddr_storage ss, me;
	unsigned short port, lport = 0;
	socklen_t len, mlen;
	int lfd, fd, sfd;
	char buf[2];

	/* A port nobody listens on: one a listener just gave up. */
	lfd = afrdma_listen_on(t, addr, 0, 4, &port);
	ASSERT_LE(0, lfd);
	close(lfd);
	len = afrdma_make_addr(&ss, addr, port);
	fd = afrdma_socket(t, ss.ss_family, 0);
	ASSERT_LE(0, fd);
	if (fallback >= 0)
		ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &fallback,
					sizeof(fallback)));
	if (bound) {
		/* A port named: TCP gives up one it picked for bind(..., 0). */
		sfd = tcp_listen_on(addr, &lport);
		ASSERT_LE(0, sfd);
		close(sfd);
		mlen = afrdma_make_addr(&me, addr, lport);
		ASSERT_EQ(0, bind(fd, (struct sockaddr *)&me, mlen))
			TH_LOG("%s: bind to %u: %s", name, lport, strerror(errno));
	}
	ASSERT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(ECONNREFUSED, errno) TH_LOG("%s: %s", name, strerror(errno));

	lfd = afrdma_listen_on(t, addr, port, 4, NULL);
	ASSERT_LE(0, lfd) TH_LOG("%s: listen on %u: %s", name, port, strerror(errno));
	ASSERT_EQ(0, connect(fd, (struct sockaddr *)&ss, len))
		TH_LOG("%s, fallback %d, %s: connect again: %s", name, fallback,
		       bound ? "bound" : "not bound", strerror(errno));
	sfd = accept(lfd, NULL, NULL);
	ASSERT_LE(0, sfd);
	if (t != AFRDMA_T_TCP)
		ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(fd));
	if (bound) {
		mlen = sizeof(me);
		ASSERT_EQ(0, getsockname(fd, (struct sockaddr *)&me, &mlen));
		ASSERT_EQ(lport, afrdma_addr_port(&me));
	}
	ASSERT_EQ(2, send(fd, "ok", 2, 0));
	ASSERT_EQ(2, recv(sfd, buf, 2, MSG_WAITALL));
	close(sfd);
	close(fd);
	close(lfd);
}

TEST_F_TIMEOUT(api, connect_after_refused, 120)
{
	const char *a = test_addr(variant->v6);

	connect_after_refused(_metadata, AFRDMA_T_TCP, a, -1, false);
	connect_after_refused(_metadata, AFRDMA_T_TCP, a, -1, true);
	connect_after_refused(_metadata, variant->t, a, -1, false);
	connect_after_refused(_metadata, variant->t, a, -1, true);
	connect_after_refused(_metadata, variant->t, a, 0, false);
	connect_after_refused(_metadata, variant->t, a, 0, true);
}

/* Where listen_after_failed()'s socket gets its address */
enum listen_how {
	LISTEN_ALONE,		/* listen() picks a port */
	LISTEN_BIND,		/* bind() to port 0 after the connect */
	LISTEN_BOUND,		/* bind() to a named port before it: it stays */
};

/*
 * listen() after a failed connect() listens, as TCP's does, and over RDMA:
 * the connect's cm id (left in CONNECT, or bound by address resolution)
 * is not one rdma_cm binds or listens on, and afrdma used to fail with
 * EINVAL.  The connect is refused, or to @unreach, which has no route;
 * afrdma's sockets have the fallback off, so that RDMA's own failure ends
 * the connect.
 */
static void listen_after_failed(struct __test_metadata *_metadata,
				enum afrdma_transport t, const char *addr,
				enum listen_how how, const char *unreach)
{
	const char *name = afrdma_transport_name(t);
	unsigned short port, lport = 0;
	struct sockaddr_storage ss, me;
	int zero = 0, fd, lfd, cfd, sfd;
	socklen_t len, mlen;
	char buf[2];

	afrdma_make_addr(&me, addr, 0);
	fd = afrdma_socket(t, me.ss_family, 0);
	ASSERT_LE(0, fd);
	if (t != AFRDMA_T_TCP)
		ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &zero,
					sizeof(zero)));
	if (how == LISTEN_BOUND) {
		/* A port named: TCP gives up one it picked for bind(..., 0). */
		lfd = tcp_listen_on(addr, &lport);
		ASSERT_LE(0, lfd);
		close(lfd);
		mlen = afrdma_make_addr(&me, addr, lport);
		ASSERT_EQ(0, bind(fd, (struct sockaddr *)&me, mlen))
			TH_LOG("%s: bind to %u: %s", name, lport, strerror(errno));
	}
	if (unreach) {
		len = afrdma_make_addr(&ss, unreach, 7);
		ASSERT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
		ASSERT_TRUE(errno == EHOSTUNREACH || errno == ENETUNREACH)
			TH_LOG("%s: connect to %s: %s", name, unreach,
			       strerror(errno));
	} else {
		/* A port nobody listens on: one a listener just gave up. */
		lfd = afrdma_listen_on(t, addr, 0, 4, &port);
		ASSERT_LE(0, lfd);
		close(lfd);
		len = afrdma_make_addr(&ss, addr, port);
		ASSERT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
		ASSERT_EQ(ECONNREFUSED, errno) TH_LOG("%s: %s", name,
						      strerror(errno));
	}

	if (how == LISTEN_BIND) {
		mlen = afrdma_make_addr(&me, addr, 0);
		ASSERT_EQ(0, bind(fd, (struct sockaddr *)&me, mlen))
			TH_LOG("%s, %s: bind after the failed connect: %s",
			       name, unreach ? "unreachable" : "refused",
			       strerror(errno));
	}
	ASSERT_EQ(0, listen(fd, 4))
		TH_LOG("%s, %s, %s: listen after the failed connect: %s", name,
		       unreach ? "unreachable" : "refused",
		       how == LISTEN_ALONE ? "alone" : how == LISTEN_BIND ?
		       "bind after" : "bound before", strerror(errno));
	mlen = sizeof(me);
	ASSERT_EQ(0, getsockname(fd, (struct sockaddr *)&me, &mlen));
	port = afrdma_addr_port(&me);
	ASSERT_NE(0, port);
	if (how == LISTEN_BOUND)
		ASSERT_EQ(lport, port);

	afrdma_make_addr(&ss, addr, 0);
	cfd = afrdma_socket(t, ss.ss_family, 0);
	ASSERT_LE(0, cfd);
	if (t != AFRDMA_T_TCP)
		ASSERT_EQ(0, setsockopt(cfd, SOL_RDMA, AFRDMA_FALLBACK, &zero,
					sizeof(zero)));
	len = afrdma_make_addr(&ss, addr, port);
	ASSERT_EQ(0, connect(cfd, (struct sockaddr *)&ss, len))
		TH_LOG("%s: connect to the new listener: %s", name,
		       strerror(errno));
	sfd = accept(fd, NULL, NULL);
	ASSERT_LE(0, sfd) TH_LOG("%s: accept: %s", name, strerror(errno));
	if (t != AFRDMA_T_TCP) {
		ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(sfd));
		ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(cfd));
	}
	ASSERT_EQ(2, send(cfd, "ok", 2, 0));
	ASSERT_EQ(2, recv(sfd, buf, 2, MSG_WAITALL));
	close(sfd);
	close(cfd);
	close(fd);
}

TEST_F_TIMEOUT(api, listen_after_failed, 180)
{
	const char *no_route = variant->v6 ? "2001:db8::1" : "192.0.2.1";
	const char *a = test_addr(variant->v6);

	listen_after_failed(_metadata, AFRDMA_T_TCP, a, LISTEN_ALONE, NULL);
	listen_after_failed(_metadata, AFRDMA_T_TCP, a, LISTEN_BIND, NULL);
	listen_after_failed(_metadata, AFRDMA_T_TCP, a, LISTEN_BOUND, NULL);
	/* Without bind(), rdma_listen() binds the IPv4 wildcard. */
	if (!variant->v6)
		listen_after_failed(_metadata, variant->t, a, LISTEN_ALONE,
				    NULL);
	listen_after_failed(_metadata, variant->t, a, LISTEN_BIND, NULL);
	listen_after_failed(_metadata, variant->t, a, LISTEN_BOUND, NULL);
	listen_after_failed(_metadata, variant->t, a, LISTEN_BIND, no_route);
	listen_after_failed(_metadata, variant->t, a, LISTEN_BOUND, no_route);
}

/*
 * The peer closed: the socket is in CLOSE_WAIT and still names its peer;
 * the first send succeeds (TCP learns of the close only from the peer's
 * answer, a reset, to that data), later ones fail with EPIPE, and recv
 * still reads EOF.
 */
static void send_after_peer_closed(struct __test_metadata *_metadata,
				   enum afrdma_transport t, const char *addr,
				   int lfd, unsigned short port)
{
	const char *name = afrdma_transport_name(t);
	struct sockaddr_storage peer;
	struct tcp_info ti = {};
	int cfd, sfd, i;
	socklen_t len;
	char c;

	cfd = afrdma_connect_to(t, addr, port);
	ASSERT_LE(0, cfd);
	sfd = accept(lfd, NULL, NULL);
	ASSERT_LE(0, sfd);
	if (t != AFRDMA_T_TCP)
		ASSERT_EQ(AFRDMA_TRANSPORT_RDMA, transport_of(cfd));
	ASSERT_EQ(0, close(sfd));
	ASSERT_EQ(0, recv(cfd, &c, 1, 0));
	/* afrdma learns that the peer is gone from a CM event after the FIN. */
	for (i = 0; i < 6000; i++) {
		len = sizeof(ti);
		ASSERT_EQ(0, getsockopt(cfd, SOL_TCP, TCP_INFO, &ti, &len));
		if (ti.tcpi_state != TCP_ESTABLISHED)
			break;
		usleep(10000);
	}
	ASSERT_EQ(TCP_CLOSE_WAIT, ti.tcpi_state) TH_LOG("%s", name);
	len = sizeof(peer);
	ASSERT_EQ(0, getpeername(cfd, (struct sockaddr *)&peer, &len))
		TH_LOG("%s: getpeername: %s", name, strerror(errno));
	ASSERT_EQ(1, send(cfd, "x", 1, MSG_NOSIGNAL))
		TH_LOG("%s: first send: %s", name, strerror(errno));
	/* Until the reset is in (TCP); afrdma knows at once. */
	ASSERT_NE(0, wait_for(cfd, 0, 20000) & POLLHUP) TH_LOG("%s", name);
	ASSERT_EQ(-1, send(cfd, "y", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno) TH_LOG("%s: %s", name, strerror(errno));
	ASSERT_EQ(-1, send(cfd, "z", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno) TH_LOG("%s: %s", name, strerror(errno));
	ASSERT_EQ(0, recv(cfd, &c, 1, 0)) TH_LOG("%s: %s", name, strerror(errno));
	close(cfd);
}

TEST_F_TIMEOUT(api, send_after_peer_closed, 120)
{
	vs_tcp(_metadata, self, variant, send_after_peer_closed);
}

FIXTURE(mapped) {
	int lfd, cfd, sfd;
};

FIXTURE_SETUP(mapped)
{
	self->cfd = self->sfd = -1;
	self->lfd = -1;
}

FIXTURE_TEARDOWN(mapped)
{
	if (self->sfd >= 0)
		close(self->sfd);
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->lfd >= 0)
		close(self->lfd);
}

/* An AF_INET6 IPPROTO_RDMA socket reaches an IPv4 listener by ::ffff:a.b.c.d. */
TEST_F(mapped, v4_mapped)
{
	struct sockaddr_in6 peer;
	socklen_t len = sizeof(peer);
	unsigned short port;
	char mapped[64], buf[4];

	self->lfd = afrdma_listen_on(AFRDMA_T_IPPROTO, test_addr(false), 0, 4, &port);
	ASSERT_LE(0, self->lfd);
	snprintf(mapped, sizeof(mapped), "::ffff:%s", test_addr(false));
	self->cfd = afrdma_connect_to(AFRDMA_T_IPPROTO, mapped, port);
	ASSERT_LE(0, self->cfd) TH_LOG("connect %s: %s", mapped, strerror(errno));
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
	ASSERT_EQ(0, getpeername(self->cfd, (struct sockaddr *)&peer, &len));
	ASSERT_EQ(AF_INET6, peer.sin6_family);
	ASSERT_TRUE(IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr));
	ASSERT_EQ(port, ntohs(peer.sin6_port));
	ASSERT_EQ(2, send(self->cfd, "v4", 2, 0));
	ASSERT_EQ(2, recv(self->sfd, buf, 2, MSG_WAITALL));
}

/*
 * Users of a multicast group on any device, from /proc/net/@file (igmp or
 * igmp6), where @group is spelled as that file does: the count follows it.
 */
static int group_users(const char *file, const char *group)
{
	char path[64], line[256], *p;
	int users = 0, n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/net/%s", file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, group);
		if (p && sscanf(p + strlen(group), "%d", &n) == 1)
			users += n;
	}
	fclose(f);
	return users;
}

/*
 * Multicast memberships, as TCP answers them: IP_ADD_MEMBERSHIP and
 * IPV6_ADD_MEMBERSHIP fail with EPROTO.  afrdma refuses the MCAST_* joins
 * too (TCP takes those), because nothing would drop the membership at
 * close: every join outlived its socket before.
 */
TEST(ip_memberships_as_tcp)
{
	const enum afrdma_transport kinds[] = {
		AFRDMA_T_TCP, AFRDMA_T_FAMILY, AFRDMA_T_IPPROTO,
	};
	unsigned int ifindex = if_nametoindex("va");
	struct group_req greq = { .gr_interface = ifindex };
	struct sockaddr_in *gsin = (struct sockaddr_in *)&greq.gr_group;
	struct sockaddr_in6 *gsin6 = (struct sockaddr_in6 *)&greq.gr_group;
	struct ipv6_mreq mreq6 = { .ipv6mr_interface = ifindex };
	struct ip_mreqn mreq = { .imr_ifindex = ifindex };
	unsigned int i, k;
	int fd, ret, users4, users6;

	ASSERT_TRUE(ifindex != 0) TH_LOG("no va: run under tools/testing/vm-run");
	/* Leaks of an earlier module stay: count from here. */
	users4 = group_users("igmp", "030201EF");
	users6 = group_users("igmp6", "ff150000000000000000000100020003");
	/* make check-debug's kernel is built without it. */
	if (users4 < 0 && access("/proc/net/igmp", F_OK))
		SKIP(return, "no /proc/net/igmp: a kernel without CONFIG_IP_MULTICAST");
	ASSERT_LE(0, users4);
	ASSERT_LE(0, users6);
	mreq.imr_multiaddr.s_addr = htonl(0xef010203);	/* 239.1.2.3 */
	inet_pton(AF_INET6, "ff15::1:2:3", &mreq6.ipv6mr_multiaddr);

	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		fd = afrdma_socket(kinds[k], AF_INET, 0);
		ASSERT_LE(0, fd);
		EXPECT_EQ(-1, setsockopt(fd, SOL_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq)));
		EXPECT_EQ(EPROTO, errno) TH_LOG("%s: %s", afrdma_transport_name(kinds[k]),
						strerror(errno));
		close(fd);
		if (kinds[k] == AFRDMA_T_FAMILY)
			continue;	/* SOL_IPV6 has IPV6_V6ONLY only */
		fd = afrdma_socket(kinds[k], AF_INET6, 0);
		ASSERT_LE(0, fd);
		EXPECT_EQ(-1, setsockopt(fd, SOL_IPV6, IPV6_ADD_MEMBERSHIP, &mreq6,
					 sizeof(mreq6)));
		EXPECT_EQ(EPROTO, errno) TH_LOG("%s: %s", afrdma_transport_name(kinds[k]),
						strerror(errno));
		close(fd);
	}

	/* Every afrdma socket kind: refused, and nothing left behind. */
	for (i = 0; i < 1000; i++) {
		k = 1 + i % 2;
		fd = afrdma_socket(kinds[k], AF_INET, 0);
		ASSERT_LE(0, fd);
		gsin->sin_family = AF_INET;
		gsin->sin_addr = mreq.imr_multiaddr;
		ret = setsockopt(fd, SOL_IP, MCAST_JOIN_GROUP, &greq, sizeof(greq));
		EXPECT_EQ(-1, ret);
		ret = setsockopt(fd, SOL_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq));
		EXPECT_EQ(-1, ret);
		close(fd);
		fd = afrdma_socket(AFRDMA_T_IPPROTO, AF_INET6, 0);
		ASSERT_LE(0, fd);
		memset(&greq.gr_group, 0, sizeof(greq.gr_group));
		gsin6->sin6_family = AF_INET6;
		gsin6->sin6_addr = mreq6.ipv6mr_multiaddr;
		ret = setsockopt(fd, SOL_IPV6, MCAST_JOIN_GROUP, &greq, sizeof(greq));
		EXPECT_EQ(-1, ret);
		ret = setsockopt(fd, SOL_IPV6, IPV6_JOIN_ANYCAST, &mreq6, sizeof(mreq6));
		EXPECT_EQ(-1, ret);
		close(fd);
		if (ret != -1)
			break;
	}
	/* /proc/net/igmp prints the group in host order, igmp6 in hex. */
	EXPECT_EQ(users4, group_users("igmp", "030201EF"));
	EXPECT_EQ(users6, group_users("igmp6", "ff150000000000000000000100020003"));
}

/*
 * IP_OPTIONS is kept and read back as on TCP, and freed with the socket:
 * AF_RDMA's sockets leaked it (kmemleak sees the loop under make
 * check-debug).
 */
TEST(ip_options_kept_and_freed)
{
	const enum afrdma_transport kinds[] = { AFRDMA_T_FAMILY, AFRDMA_T_IPPROTO };
	/* NOP, NOP, then end of list: the smallest non-empty option block. */
	const unsigned char opts[4] = { 1, 1, 0, 0 };
	unsigned char back[40], tcp[40];
	socklen_t len, tcp_len = sizeof(tcp);
	unsigned int i, k;
	int fd;

	/* What TCP reads back, to compare with. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, SOL_IP, IP_OPTIONS, opts, sizeof(opts)));
	ASSERT_EQ(0, getsockopt(fd, SOL_IP, IP_OPTIONS, tcp, &tcp_len));
	close(fd);

	for (i = 0; i < 2000; i++) {
		k = i % 2;
		fd = afrdma_socket(kinds[k], AF_INET, 0);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, setsockopt(fd, SOL_IP, IP_OPTIONS, opts, sizeof(opts)))
			TH_LOG("%s: %s", afrdma_transport_name(kinds[k]), strerror(errno));
		if (i < 2) {
			len = sizeof(back);
			ASSERT_EQ(0, getsockopt(fd, SOL_IP, IP_OPTIONS, back, &len));
			EXPECT_EQ(tcp_len, len);
			EXPECT_EQ(0, memcmp(tcp, back, tcp_len));
		}
		close(fd);
	}
}

#define CG_DIR "/sys/fs/cgroup/afrdma-accept-test"

static struct bpf_insn insn(__u8 code, __u8 dst, __u8 src, __s16 off, __s32 imm)
{
	struct bpf_insn i = { .code = code, .dst_reg = dst, .src_reg = src,
			      .off = off, .imm = imm };

	return i;
}

/*
 * A cgroup/setsockopt program refusing (EPERM) TCP_WINDOW_CLAMP: it runs
 * for a socket by the cgroup the socket belongs to, not the caller's.
 */
static int clamp_refuser(char *log, size_t log_len)
{
	struct bpf_insn prog[] = {
		insn(BPF_LDX | BPF_MEM | BPF_W, 2, 1, offsetof(struct bpf_sockopt, level), 0),
		insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 4, SOL_TCP),
		insn(BPF_LDX | BPF_MEM | BPF_W, 2, 1, offsetof(struct bpf_sockopt, optname), 0),
		insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 2, TCP_WINDOW_CLAMP),
		insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
		insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),
		insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_SOCKOPT;
	attr.expected_attach_type = BPF_CGROUP_SETSOCKOPT;
	attr.insns = (unsigned long)prog;
	attr.insn_cnt = ARRAY_SIZE(prog);
	attr.license = (unsigned long)"GPL";
	attr.log_buf = (unsigned long)log;
	attr.log_size = log_len;
	attr.log_level = 1;
	return syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

static int move_to_cgroup(const char *dir)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, "0", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

/*
 * An accepted connection belongs to its listener's cgroup (and LSM label
 * and memory cgroup), as TCP's does, not to the kernel worker that made
 * it.  Seen through a cgroup/setsockopt program attached to the
 * listener's cgroup: it must run for the accepted socket too.
 */
TEST(accepted_in_listener_cgroup)
{
	const enum afrdma_transport kinds[] = {
		AFRDMA_T_TCP, AFRDMA_T_FAMILY, AFRDMA_T_IPPROTO,
	};
	int prog, cg, lfd, cfd, sfd, clamp = 4096, ret[3][3];
	unsigned short port;
	static char log[4096];
	union bpf_attr attr;
	unsigned int k, i;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		SKIP(return, "no cgroup2 hierarchy at /sys/fs/cgroup");
	rmdir(CG_DIR);		/* an earlier failed run's */
	ASSERT_EQ(0, mkdir(CG_DIR, 0755)) TH_LOG("mkdir: %s", strerror(errno));
	cg = open(CG_DIR, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, cg);
	prog = clamp_refuser(log, sizeof(log));
	ASSERT_LE(0, prog) TH_LOG("BPF_PROG_LOAD: %s\n%s", strerror(errno), log);
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = cg;
	attr.attach_bpf_fd = prog;
	attr.attach_type = BPF_CGROUP_SETSOCKOPT;
	ASSERT_EQ(0, syscall(__NR_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr)))
		TH_LOG("BPF_PROG_ATTACH: %s", strerror(errno));

	/* Listeners made inside the cgroup, accepts done outside it. */
	ASSERT_EQ(0, move_to_cgroup(CG_DIR));
	for (k = 0; k < 3; k++) {
		lfd = afrdma_listen_on(kinds[k], test_addr(k == 2), 0, 4, &port);
		ASSERT_EQ(0, move_to_cgroup("/sys/fs/cgroup"));
		ASSERT_LE(0, lfd);
		cfd = afrdma_connect_to(kinds[k], test_addr(k == 2), port);
		ASSERT_LE(0, cfd);
		sfd = accept(lfd, NULL, NULL);
		ASSERT_LE(0, sfd);
		for (i = 0; i < 3; i++) {
			int fd = i == 0 ? lfd : i == 1 ? sfd : cfd;

			ret[k][i] = setsockopt(fd, SOL_TCP, TCP_WINDOW_CLAMP, &clamp,
					       sizeof(clamp)) ? errno : 0;
		}
		close(sfd);
		close(cfd);
		close(lfd);
		if (k < 2)
			ASSERT_EQ(0, move_to_cgroup(CG_DIR));
	}
	for (k = 0; k < 3; k++) {
		EXPECT_EQ(EPERM, ret[k][0]) TH_LOG("%s listener", afrdma_transport_name(kinds[k]));
		EXPECT_EQ(EPERM, ret[k][1]) TH_LOG("%s accepted", afrdma_transport_name(kinds[k]));
		/* The client was made outside. */
		EXPECT_EQ(0, ret[k][2]) TH_LOG("%s client", afrdma_transport_name(kinds[k]));
	}
	close(prog);
	close(cg);
	EXPECT_EQ(0, rmdir(CG_DIR)) TH_LOG("rmdir: %s", strerror(errno));
}

TEST_HARNESS_MAIN
