// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma MSG_ZEROCOPY, as tools/testing/selftests/net/msg_zerocopy.c drives
 * TCP: opt in with SO_ZEROCOPY (AFRDMA_ZEROCOPY where SOL_SOCKET refuses
 * it), send N buffers with MSG_ZEROCOPY, read every notification from the
 * error queue (POLLERR, recvmsg(MSG_ERRQUEUE), SOL_IP/IP_RECVERR or
 * SOL_IPV6/IPV6_RECVERR cmsgs) and check that the ranges cover each send
 * exactly once: zero-copy for sends of net.afrdma.zerocopy_min bytes or
 * more, SO_EE_CODE_ZEROCOPY_COPIED below it.  Also RLIMIT_MEMLOCK, pages
 * released when the sender dies, data integrity, and TCP's own
 * MSG_ZEROCOPY under a fallen-back socket.
 */
#include <netinet/in.h>
#include <signal.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/errqueue.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY		5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED	1
#endif

#define NSENDS	200

FIXTURE(zc) {
	int lfd, cfd, sfd;
	unsigned short port;
	int saved_min;
	int saved_rzc;
};

FIXTURE_VARIANT(zc) {
	enum afrdma_transport t;
	bool v6;
};

FIXTURE_VARIANT_ADD(zc, af_rdma_v4) { .t = AFRDMA_T_FAMILY, .v6 = false };
FIXTURE_VARIANT_ADD(zc, ipproto_v6) { .t = AFRDMA_T_IPPROTO, .v6 = true };

FIXTURE_SETUP(zc)
{
	self->saved_min = afrdma_sysctl("zerocopy_min", -1);
	ASSERT_LE(0, self->saved_min);
	self->saved_rzc = afrdma_sysctl("rx_zerocopy_min", -1);
	ASSERT_LE(0, self->saved_rzc);
	self->lfd = afrdma_listen_on(variant->t, test_addr(variant->v6), 0, 4,
				     &self->port);
	ASSERT_LE(0, self->lfd);
	self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6),
				      self->port);
	ASSERT_LE(0, self->cfd);
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
}

FIXTURE_TEARDOWN(zc)
{
	afrdma_sysctl("zerocopy_min", self->saved_min);
	afrdma_sysctl("rx_zerocopy_min", self->saved_rzc);
	if (self->cfd >= 0)
		close(self->cfd);
	close(self->sfd);
	close(self->lfd);
}

/* SO_ZEROCOPY where the kernel lets the protocol take it, else SOL_RDMA. */
static int enable_zerocopy(int fd, bool *via_sol_socket)
{
	int one = 1;

	*via_sol_socket = !setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one,
				      sizeof(one));
	if (*via_sol_socket)
		return 0;
	if (errno != EOPNOTSUPP)
		return -1;
	return setsockopt(fd, SOL_RDMA, AFRDMA_ZEROCOPY, &one, sizeof(one));
}

/* Reads one notification; returns its range in @lo..@hi, or -1. */
static int read_notification(int fd, unsigned int *lo, unsigned int *hi,
			     int *code, bool v6)
{
	char control[128];
	struct msghdr msg = {
		.msg_control = control,
		.msg_controllen = sizeof(control),
	};
	struct sock_extended_err *serr;
	struct cmsghdr *cm;

	if (recvmsg(fd, &msg, MSG_ERRQUEUE) < 0)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != (v6 ? SOL_IPV6 : SOL_IP) ||
	    cm->cmsg_type != (v6 ? IPV6_RECVERR : IP_RECVERR))
		return -1;
	serr = (struct sock_extended_err *)CMSG_DATA(cm);
	if (serr->ee_origin != SO_EE_ORIGIN_ZEROCOPY || serr->ee_errno)
		return -1;
	*lo = serr->ee_info;
	*hi = serr->ee_data;
	*code = serr->ee_code;
	return 0;
}

TEST_F(zc, notifications)
{
	static char buf[NSENDS][4096];
	unsigned int lo, hi, next = 0, notes = 0;
	bool via_sol_socket;
	socklen_t len = sizeof(int);
	char in[4096];
	int i, code, val = 0;

	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via_sol_socket)) TH_LOG("%s", strerror(errno));
	TH_LOG("opted in through %s", via_sol_socket ? "SOL_SOCKET" : "SOL_RDMA");
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ZEROCOPY, &val, &len));
	ASSERT_EQ(1, val) TH_LOG("SO_ZEROCOPY does not read back");

	for (i = 0; i < NSENDS; i++) {
		fill((unsigned char *)buf[i], sizeof(buf[i]), i);
		ASSERT_EQ((ssize_t)sizeof(buf[i]),
			  send(self->cfd, buf[i], sizeof(buf[i]), MSG_ZEROCOPY));
		/* Read as we go, so that the receiver never runs dry. */
		ASSERT_EQ((ssize_t)sizeof(in), recv(self->sfd, in, sizeof(in), MSG_WAITALL));
		ASSERT_EQ(0, memcmp(in, buf[i], sizeof(in))) TH_LOG("send %d", i);
	}

	/* Every id exactly once, in order: ranges never overlap or skip. */
	while (next < NSENDS) {
		ASSERT_NE(0, wait_for(self->cfd, POLLERR, 10000) & POLLERR)
			TH_LOG("notifications stop at %u of %d", next, NSENDS);
		ASSERT_EQ(0, read_notification(self->cfd, &lo, &hi, &code, variant->v6));
		ASSERT_EQ(next, lo);
		ASSERT_LE(lo, hi);
		ASSERT_EQ(SO_EE_CODE_ZEROCOPY_COPIED, code);
		next = hi + 1;
		notes++;
	}
	ASSERT_EQ((unsigned int)NSENDS, next);
	TH_LOG("%d sends, %u notifications (consecutive ranges merged)", NSENDS, notes);
	/* Nothing left: no POLLERR, and the error queue is empty. */
	ASSERT_EQ(0, wait_for(self->cfd, POLLERR, 0) & POLLERR);
	ASSERT_EQ(-1, recv(self->cfd, in, sizeof(in), MSG_ERRQUEUE));
	ASSERT_EQ(EAGAIN, errno);
}

/* Without the opt-in, MSG_ZEROCOPY is an ordinary send, as on TCP. */
TEST_F(zc, ignored_without_opt_in)
{
	char out[100] = "x", in[100];
	int val = 1;
	socklen_t len = sizeof(val);

	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ZEROCOPY, &val, &len));
	ASSERT_EQ(0, val);
	ASSERT_EQ(100, send(self->cfd, out, sizeof(out), MSG_ZEROCOPY));
	ASSERT_EQ(100, recv(self->sfd, in, sizeof(in), MSG_WAITALL));
	ASSERT_EQ(0, wait_for(self->cfd, POLLERR, 200) & POLLERR);
	ASSERT_EQ(-1, recv(self->cfd, in, sizeof(in), MSG_ERRQUEUE));
	ASSERT_EQ(EAGAIN, errno);
}

/* Notifications nobody read go with the socket (nothing leaks, no WARN). */
TEST_F(zc, close_with_notifications_queued)
{
	bool via_sol_socket;
	char out[512] = "y", in[512];
	int i;

	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via_sol_socket));
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(512, send(self->cfd, out, sizeof(out), MSG_ZEROCOPY));
		ASSERT_EQ(512, recv(self->sfd, in, sizeof(in), MSG_WAITALL));
	}
	ASSERT_NE(0, wait_for(self->cfd, POLLERR, 10000) & POLLERR);
	close(self->cfd);
	self->cfd = -1;
}

#define BIG	(64 * 1024)
#define NBIG	32
#define NSMALL	20

/*
 * Pages pinned with FOLL_PIN right now, system-wide.  The counters are
 * per-CPU until folded (every second, or when vm.stat_refresh is read),
 * and /proc/vmstat leaves the unfolded rest out: tens of pages, either
 * way, once receives pin as well as sends.  Fold them first.
 */
static long long pins_held(void)
{
	char c;
	int fd = open("/proc/sys/vm/stat_refresh", O_RDONLY);

	if (fd >= 0) {
		if (read(fd, &c, 1) < 0)
			c = 0;
		close(fd);
	}
	return file_stat("/proc/vmstat", "nr_foll_pin_acquired") -
	       file_stat("/proc/vmstat", "nr_foll_pin_released");
}

/*
 * Connections of earlier tests may still be draining, their flushed SENDs
 * still holding pages: a baseline taken before they go drifts below.
 */
static void earlier_connections_gone(void)
{
	/* The fixture's own pair of QPs stays. */
	for (int i = 0; i < 200 && rc_qps() > 2; i++)
		usleep(50000);
}

/*
 * A baseline for pins_held(): someone else's pins (a program just run
 * from the 9p root, say) come and go, so wait until the count holds still.
 */
static long long pins_settled(void)
{
	long long prev = pins_held(), cur;
	int still = 0, i;

	for (i = 0; i < 50 && still < 3; i++) {
		usleep(100000);
		cur = pins_held();
		still = cur == prev ? still + 1 : 0;
		prev = cur;
	}
	return prev;
}

/*
 * Waits up to @ms for pins_held() to come back to @held, or below: the
 * count is system-wide, and a pin someone else held at the baseline may
 * be gone by now.
 */
static bool pins_back_to(long long held, int ms)
{
	for (; ms > 0; ms -= 50) {
		if (pins_held() <= held)
			return true;
		usleep(50000);
	}
	return pins_held() <= held;
}

/*
 * Reads notifications until ids *@next..@end - 1 (at most 64) are all
 * covered, each exactly once; counts the ids reported zero-copy and
 * copied.  Order is not guaranteed (msg_zerocopy.rst): a copied send
 * notifies at once, while an earlier zero-copy one may still be in
 * flight.  Returns 0, or -1 on a timeout, -2 on a malformed notification,
 * -3 on an id out of range or seen twice.
 */
static int collect(int fd, bool v6, unsigned int *next, unsigned int end,
		   int *zc, int *copied)
{
	unsigned long long seen = 0, all;
	unsigned int lo, hi, id;
	int code;

	all = end - *next >= 64 ? ~0ULL : (1ULL << (end - *next)) - 1;
	while (seen != all) {
		if (!(wait_for(fd, POLLERR, 10000) & POLLERR))
			return -1;
		if (read_notification(fd, &lo, &hi, &code, v6))
			return -2;
		if (lo < *next || hi < lo || hi >= end ||
		    (code && code != SO_EE_CODE_ZEROCOPY_COPIED))
			return -3;
		for (id = lo; id <= hi; id++) {
			if (seen & (1ULL << (id - *next)))
				return -3;
			seen |= 1ULL << (id - *next);
		}
		if (code)
			*copied += (int)(hi - lo + 1);
		else
			*zc += (int)(hi - lo + 1);
	}
	*next = end;
	return 0;
}

/* Writes @val, a string, to net.afrdma.@name; 0 if the kernel took it. */
static int sysctl_write(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/sys/net/afrdma/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fputs(val, f) >= 0;
	return fclose(f) || !ok ? -1 : 0;
}

static void *map_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Large sends go from the caller's pages (pinned, never copied), small
 * ones below net.afrdma.zerocopy_min are copied and say so.
 */
TEST_F(zc, large_sends_zerocopy)
{
	long long zcs = afrdma_stat("ZeroCopySends");
	long long copies = afrdma_stat("ZeroCopyCopied");
	long long pinned = file_stat("/proc/vmstat", "nr_foll_pin_acquired");
	unsigned int next = 0;
	int zc = 0, copied = 0;
	unsigned char *buf, *in;
	long long held;
	bool via;
	int i;

	earlier_connections_gone();
	held = pins_settled();
	ASSERT_LE(0, zcs);
	ASSERT_LE(0, pinned);
	ASSERT_EQ(16384, self->saved_min) TH_LOG("zerocopy_min is not 16 KiB by default");
	buf = map_pages(NBIG * BIG);
	in = malloc(BIG);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via));

	for (i = 0; i < NBIG; i++) {
		fill(buf + i * BIG, BIG, i);
		ASSERT_EQ(BIG, send(self->cfd, buf + i * BIG, BIG, MSG_ZEROCOPY));
		ASSERT_EQ(BIG, recv(self->sfd, in, BIG, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(in, buf + i * BIG, BIG)) TH_LOG("send %d", i);
	}
	ASSERT_EQ(0, collect(self->cfd, variant->v6, &next, NBIG, &zc, &copied));
	ASSERT_EQ(NBIG, zc);
	ASSERT_EQ(0, copied) TH_LOG("large sends were copied");
	ASSERT_EQ(zcs + NBIG, afrdma_stat("ZeroCopySends"));
	ASSERT_EQ(copies, afrdma_stat("ZeroCopyCopied"));
	/* Every page of every send was pinned, at least once. */
	ASSERT_LE(pinned + NBIG * BIG / 4096,
		  file_stat("/proc/vmstat", "nr_foll_pin_acquired"));
	/* ... and unpinned before its notification. */
	ASSERT_TRUE(pins_back_to(held, 2000))
		TH_LOG("%lld pages still pinned", pins_held() - held);

	/* Below zerocopy_min: copied, and notified as such. */
	zc = 0;
	for (i = 0; i < NSMALL; i++) {
		ASSERT_EQ(4096, send(self->cfd, buf, 4096, MSG_ZEROCOPY));
		ASSERT_EQ(4096, recv(self->sfd, in, 4096, MSG_WAITALL));
	}
	ASSERT_EQ(0, collect(self->cfd, variant->v6, &next, NBIG + NSMALL,
			     &zc, &copied));
	ASSERT_EQ(0, zc);
	ASSERT_EQ(NSMALL, copied);
	ASSERT_EQ(copies + NSMALL, afrdma_stat("ZeroCopyCopied"));
	ASSERT_EQ(zcs + NBIG, afrdma_stat("ZeroCopySends"));
	ASSERT_EQ(0, wait_for(self->cfd, POLLERR, 0) & POLLERR);
	munmap(buf, NBIG * BIG);
	free(in);
}

/* net.afrdma.zerocopy_min moves the line, and is range-checked. */
TEST_F(zc, zerocopy_min)
{
	unsigned int next = 0;
	int zc = 0, copied = 0;
	unsigned char *buf, in[BIG];
	bool via;

	buf = map_pages(BIG);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(-1, sysctl_write("zerocopy_min", "-1"));
	ASSERT_EQ(-1, sysctl_write("zerocopy_min", "2147483648"));
	ASSERT_EQ(16384, afrdma_sysctl("zerocopy_min", -1));
	ASSERT_EQ(0, afrdma_sysctl("zerocopy_min", 0));
	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via));
	ASSERT_EQ(100, send(self->cfd, buf, 100, MSG_ZEROCOPY));
	ASSERT_EQ(0, collect(self->cfd, variant->v6, &next, 1, &zc, &copied));
	ASSERT_EQ(1, zc) TH_LOG("zerocopy_min=0: a small send was copied");

	ASSERT_EQ(1 << 20, afrdma_sysctl("zerocopy_min", 1 << 20));
	ASSERT_EQ(BIG, send(self->cfd, buf, BIG, MSG_ZEROCOPY));
	ASSERT_EQ(0, collect(self->cfd, variant->v6, &next, 2, &zc, &copied));
	ASSERT_EQ(1, copied) TH_LOG("zerocopy_min=1M: a 64 KiB send went zero-copy");
	ASSERT_EQ(100, recv(self->sfd, in, 100, MSG_WAITALL));
	ASSERT_EQ(BIG, recv(self->sfd, in, BIG, MSG_WAITALL));
	munmap(buf, BIG);
}

/*
 * Past RLIMIT_MEMLOCK, without CAP_IPC_LOCK, a zero-copy send fails with
 * ENOBUFS and sends nothing, as TCP's; under it, and copied sends, go.
 */
TEST_F(zc, memlock_enobufs)
{
	unsigned int next = 0;
	int zc = 0, copied = 0;
	unsigned char *buf, *in;
	int status;
	pid_t pid;
	bool via;

	buf = map_pages(256 * 1024);
	in = malloc(BIG);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rlimit rl = { 64 * 1024, 64 * 1024 };

		/* nobody has no CAP_IPC_LOCK: the limit applies */
		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) ||
		    setuid(65534))
			_exit(10);
		if (send(self->cfd, buf, 256 * 1024, MSG_ZEROCOPY) != -1 ||
		    errno != ENOBUFS)
			_exit(11);
		if (send(self->cfd, buf, 32 * 1024, MSG_ZEROCOPY) != 32 * 1024)
			_exit(12);
		if (send(self->cfd, buf, 4096, MSG_ZEROCOPY) != 4096)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("step %d failed", WEXITSTATUS(status));
	ASSERT_EQ(32 * 1024, recv(self->sfd, in, 32 * 1024, MSG_WAITALL));
	ASSERT_EQ(4096, recv(self->sfd, in, 4096, MSG_WAITALL));
	/* The refused send took no id: the two that went are 0 and 1. */
	ASSERT_EQ(0, collect(self->cfd, variant->v6, &next, 2, &zc, &copied));
	ASSERT_EQ(0, wait_for(self->cfd, POLLERR, 200) & POLLERR);
	munmap(buf, 256 * 1024);
	free(in);
}

/*
 * A sender killed while its zero-copy send waits for the peer (which
 * reads nothing): every pinned page comes back, and the connection's QPs
 * and memory regions go with the sockets.
 */
TEST_F(zc, sender_dies)
{
	int qps, mrs, p[2], status, fd = -1;
	long long held;
	pid_t pid;
	char c;

	earlier_connections_gone();
	qps = rc_qps();
	mrs = rdma_mrs();
	held = pins_settled();
	ASSERT_LE(0, qps);
	ASSERT_LE(0, mrs);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char *buf = map_pages(1024 * 1024);
		bool via;
		int cfd;

		cfd = afrdma_connect_to(variant->t, test_addr(variant->v6),
					self->port);
		if (cfd < 0 || !buf || enable_zerocopy(cfd, &via))
			_exit(1);
		/* Not the zero page: pinning that is not counted (6.6+). */
		memset(buf, 1, 1024 * 1024);
		/* Fill the peer's receive buffers, then block with pages pinned. */
		while (send(cfd, buf, BIG, MSG_ZEROCOPY | MSG_DONTWAIT) > 0)
			;
		if (errno != EAGAIN || write(p[1], "x", 1) != 1)
			_exit(2);
		send(cfd, buf, 1024 * 1024, MSG_ZEROCOPY);
		_exit(100 + errno);
	}
	close(p[1]);
	fd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, read(p[0], &c, 1)) TH_LOG("the child could not fill the window");
	close(p[0]);
	/* The blocked send holds its first chunk's pages. */
	for (int i = 0; i < 100 && pins_held() <= held; i++)
		usleep(50000);
	ASSERT_LT(held, pins_held()) {
		TH_LOG("no pages pinned while the send waits");
		if (waitpid(pid, &status, WNOHANG) == pid)
			TH_LOG("the child exited %d", WEXITSTATUS(status));
	}
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_TRUE(pins_back_to(held, 10000))
		TH_LOG("%lld pages still pinned", pins_held() - held);
	close(fd);
	for (int i = 0; i < 200 && rc_qps() != qps; i++)
		usleep(50000);
	ASSERT_EQ(qps, rc_qps());
	ASSERT_EQ(mrs, rdma_mrs());
}

/*
 * The buffer is rewritten only after its notification, before the peer
 * reads anything: every send must arrive as it was when sent.  Unaligned,
 * scattered over three iovecs, so SENDs span pages and segments.  A round
 * (4 x 60000 bytes, 16 full SENDs) fits the receive buffers the peer is
 * sure to have handed back after the last one.
 */
TEST_F(zc, rewrite_after_notification)
{
	const size_t len = 60000, seg[3] = { 5000, 30000, 25000 };
	unsigned int next = 0;
	int zc = 0, copied = 0;
	unsigned char *buf, *p, *in, *want;
	struct iovec iov[3];
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };
	int round, i;
	bool via;

	buf = map_pages(len + 8192);
	in = malloc(len);
	want = malloc(len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, want);
	p = buf + 100;
	iov[0] = (struct iovec){ p, seg[0] };
	iov[1] = (struct iovec){ p + seg[0], seg[1] };
	iov[2] = (struct iovec){ p + seg[0] + seg[1], seg[2] };
	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via));

	for (round = 0; round < 4; round++) {
		for (i = 0; i < 4; i++) {
			fill(p, len, round * 4 + i);
			ASSERT_EQ((ssize_t)len, sendmsg(self->cfd, &msg, MSG_ZEROCOPY));
			ASSERT_EQ(0, collect(self->cfd, variant->v6, &next,
					     round * 4 + i + 1, &zc, &copied));
		}
		for (i = 0; i < 4; i++) {
			fill(want, len, round * 4 + i);
			ASSERT_EQ((ssize_t)len, recv(self->sfd, in, len, MSG_WAITALL));
			ASSERT_EQ(0, memcmp(in, want, len)) TH_LOG("round %d send %d", round, i);
		}
	}
	ASSERT_EQ(16, zc);
	ASSERT_EQ(0, copied);
	munmap(buf, len + 8192);
	free(in);
	free(want);
}

/* A socket TCP carries uses TCP's own MSG_ZEROCOPY. */
TEST_F(zc, tcp_fallback)
{
	long long zcs = afrdma_stat("ZeroCopySends");
	unsigned int next = 0;
	int zc = 0, copied = 0;
	unsigned char *buf, *in;
	unsigned short port;
	int one, tl, c, s;
	socklen_t len;
	bool via;

	buf = map_pages(BIG);
	in = malloc(BIG);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	tl = tcp_listen_on(test_addr(variant->v6), &port);
	ASSERT_LE(0, tl);
	c = afrdma_connect_to(variant->t, test_addr(variant->v6), port);
	ASSERT_LE(0, c) TH_LOG("connect: %s", strerror(errno));
	s = accept(tl, NULL, NULL);
	ASSERT_LE(0, s);
	close(tl);
	len = sizeof(one);
	ASSERT_EQ(0, getsockopt(c, SOL_RDMA, AFRDMA_TRANSPORT, &one, &len));
	ASSERT_EQ(AFRDMA_TRANSPORT_TCP, one);

	ASSERT_EQ(0, enable_zerocopy(c, &via));
	fill(buf, BIG, 7);
	ASSERT_EQ(BIG, send(c, buf, BIG, MSG_ZEROCOPY));
	ASSERT_EQ(BIG, recv(s, in, BIG, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(in, buf, BIG));
	ASSERT_EQ(0, collect(c, variant->v6, &next, 1, &zc, &copied));
	ASSERT_EQ(1, zc + copied);
	ASSERT_EQ(zcs, afrdma_stat("ZeroCopySends")) TH_LOG("TCP's send counted as ours");
	close(c);
	close(s);
	munmap(buf, BIG);
	free(in);
}

/*
 * Receive zero-copy: a large MSG_ZEROCOPY send is offered to the peer
 * (SRCAVAIL) and a large plain recv RDMA READs it straight into the
 * caller's buffer.  No copy at either end: the counters say the READ
 * path carried every byte, and every page comes back.
 */
TEST_F(zc, rx_zerocopy_read)
{
	long long sa = afrdma_stat("SrcAvailSent");
	long long reads = afrdma_stat("RxZeroCopyReads");
	long long bytes = afrdma_stat("RxZeroCopyBytes");
	long long bounces = afrdma_stat("RxBounceReads");
	const size_t len = 1024 * 1024;
	long long held = pins_settled();
	unsigned int next = 0;
	int zc = 0, copied = 0, i;
	unsigned char *buf, *in;
	bool via;

	ASSERT_LE(0, sa);
	ASSERT_EQ(65536, self->saved_rzc) TH_LOG("rx_zerocopy_min is not 64 KiB by default");
	buf = map_pages(len);
	in = map_pages(len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via));
	for (i = 0; i < 4; i++) {
		fill(buf, len, 40 + i);
		memset(in, 0, len);
		/* Page-aligned, one region: the send returns once it is offered. */
		ASSERT_EQ((ssize_t)len, send(self->cfd, buf, len, MSG_ZEROCOPY));
		ASSERT_EQ((ssize_t)len, recv(self->sfd, in, len, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(in, buf, len)) TH_LOG("send %d", i);
		ASSERT_EQ(0, collect(self->cfd, variant->v6, &next, i + 1, &zc,
				     &copied));
	}
	ASSERT_EQ(4, zc);
	ASSERT_EQ(sa + 4, afrdma_stat("SrcAvailSent"));
	ASSERT_LE(reads + 4, afrdma_stat("RxZeroCopyReads"));
	ASSERT_EQ(bytes + 4 * (long long)len, afrdma_stat("RxZeroCopyBytes"));
	ASSERT_EQ(bounces, afrdma_stat("RxBounceReads")) TH_LOG("a large recv was bounced");
	/* Released before the notifications; others' pins may linger. */
	ASSERT_TRUE(pins_back_to(held, 10000))
		TH_LOG("%lld pages still pinned", pins_held() - held);

	/* rx_zerocopy_min = 0: the same send goes by SENDs. */
	ASSERT_EQ(0, afrdma_sysctl("rx_zerocopy_min", 0));
	ASSERT_LT(0, send(self->cfd, buf, len, MSG_ZEROCOPY | MSG_DONTWAIT));
	ASSERT_EQ(sa + 4, afrdma_stat("SrcAvailSent"));
	munmap(buf, len);
	munmap(in, len);
}

/*
 * Small buffers, MSG_PEEK and MSG_TRUNC on an offered region: the bytes
 * are READ into a receive buffer and copied, exact and in order.
 */
TEST_F(zc, rx_zerocopy_small_buffer)
{
	long long bounces = afrdma_stat("RxBounceReads");
	const size_t len = 256 * 1024;
	long long held = pins_settled();
	unsigned char *buf, *in, peek[100];
	unsigned int next = 0;
	int zc = 0, copied = 0;
	size_t got = 0;
	ssize_t n;
	bool via;

	buf = map_pages(len);
	in = map_pages(len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via));
	fill(buf, len, 77);
	ASSERT_EQ((ssize_t)len, send(self->cfd, buf, len, MSG_ZEROCOPY));
	ASSERT_EQ(100, recv(self->sfd, peek, 100, MSG_PEEK | MSG_WAITALL));
	ASSERT_EQ(0, memcmp(peek, buf, 100));
	/* 1000 bytes at a time, and 5000 dropped unread halfway. */
	while (got < len) {
		size_t want = got == len / 2 ? 5000 : 1000;

		if (want > len - got)
			want = len - got;
		if (got == len / 2) {
			ASSERT_EQ((ssize_t)want, recv(self->sfd, NULL, want,
						      MSG_TRUNC | MSG_WAITALL));
			memcpy(in + got, buf + got, want);
			got += want;
			continue;
		}
		n = recv(self->sfd, in + got, want, 0);
		ASSERT_LT(0, n);
		got += n;
	}
	ASSERT_EQ(0, memcmp(in, buf, len));
	ASSERT_LT(bounces + 200, afrdma_stat("RxBounceReads"));
	ASSERT_EQ(0, collect(self->cfd, variant->v6, &next, 1, &zc, &copied));
	ASSERT_EQ(1, zc);
	ASSERT_TRUE(pins_back_to(held, 10000))
		TH_LOG("%lld pages still pinned", pins_held() - held);
	munmap(buf, len);
	munmap(in, len);
}

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245 + 12345;
	return *s >> 8;
}

/*
 * 32 MiB in sends of random sizes, copied and zero-copy (offered for
 * READ or not) interleaved, unaligned, read with random buffer sizes:
 * one stream, in order, byte for byte.
 */
TEST_F(zc, rx_zerocopy_stream_order)
{
	const size_t total = 32 << 20;
	long long sa = afrdma_stat("SrcAvailSent");
	long long reads = afrdma_stat("RxZeroCopyReads");
	unsigned char *buf, *in;
	unsigned int seed = 1;
	int status;
	size_t got = 0;
	pid_t pid;

	buf = map_pages(total + 4096);
	in = malloc(1 << 20);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	fill(buf, total + 4096, 5);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t off = 0, n;
		bool via;
		ssize_t r;

		if (enable_zerocopy(self->cfd, &via))
			_exit(1);
		while (off < total) {
			unsigned int kind = rnd(&seed) % 3;

			n = kind ? rnd(&seed) % (512 * 1024) + 1 :
				   rnd(&seed) % 20000 + 1;
			if (n > total - off)
				n = total - off;
			r = send(self->cfd, buf + 1 + off, n,
				 kind ? MSG_ZEROCOPY : 0);
			if (r <= 0)
				_exit(2);
			off += r;
			/* Dropped, so that they never reach optmem_max. */
			afrdma_drain_errqueue(self->cfd);
		}
		_exit(0);
	}
	close(self->cfd);
	self->cfd = -1;
	seed = 99;
	while (got < total) {
		size_t want = rnd(&seed) % 3 ? rnd(&seed) % (1 << 20) + 1 :
					       rnd(&seed) % 3000 + 1;
		ssize_t n = recv(self->sfd, in, want, 0);

		ASSERT_LT(0, n) TH_LOG("at %zu: %s", got, strerror(errno));
		ASSERT_EQ(0, memcmp(in, buf + 1 + got, n)) TH_LOG("at %zu", got);
		got += n;
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_LT(sa + 10, afrdma_stat("SrcAvailSent"));
	ASSERT_LT(reads, afrdma_stat("RxZeroCopyReads"));
	munmap(buf, total + 4096);
	free(in);
}

/*
 * A region offered and never read: the sender exits, or the receiver
 * closes, with the SRCAVAIL out.  Every page comes back, and the memory
 * regions and QPs go with the connection.
 */
TEST_F(zc, rx_zerocopy_close_outstanding)
{
	int qps = rc_qps(), mrs = rdma_mrs();
	long long held = pins_settled();
	int round, p[2], status, fd;
	pid_t pid;
	char c;

	ASSERT_LE(0, qps);
	ASSERT_LE(0, mrs);
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, pipe(p));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			unsigned char *buf = map_pages(1024 * 1024);
			bool via;
			int cfd;

			alarm(60);	/* never outlives a failed parent for long */
			cfd = afrdma_connect_to(variant->t,
						test_addr(variant->v6),
						self->port);
			if (cfd < 0 || !buf || enable_zerocopy(cfd, &via))
				_exit(1);
			memset(buf, 1, 1024 * 1024);
			if (send(cfd, buf, 1024 * 1024, MSG_ZEROCOPY) != 1024 * 1024)
				_exit(2);
			if (write(p[1], "x", 1) != 1)
				_exit(3);
			/* Round 0: killed; round 1: reset by the receiver. */
			if (round == 0)
				pause();
			_exit(read(cfd, &c, 1) < 0 ? 0 : 4);
		}
		close(p[1]);
		fd = accept(self->lfd, NULL, NULL);
		ASSERT_LE(0, fd);
		ASSERT_EQ(1, read(p[0], &c, 1)) TH_LOG("the child could not send");
		close(p[0]);
		/*
		 * The region (256 pages) is pinned and registered while it
		 * waits; the count is system-wide, so allow for others'.
		 */
		ASSERT_LE(held + 128, pins_held());
		ASSERT_LT(mrs, rdma_mrs());
		if (round == 0) {
			ASSERT_EQ(0, kill(pid, SIGKILL));
			ASSERT_EQ(pid, waitpid(pid, &status, 0));
			ASSERT_TRUE(WIFSIGNALED(status));
			close(fd);
		} else {
			/* Unread data: the receiver's close resets. */
			ASSERT_EQ(POLLIN, wait_for(fd, POLLIN, 5000) & POLLIN);
			close(fd);
			ASSERT_EQ(pid, waitpid(pid, &status, 0));
			ASSERT_TRUE(WIFEXITED(status));
			ASSERT_EQ(0, WEXITSTATUS(status));
		}
		ASSERT_TRUE(pins_back_to(held, 15000))
			TH_LOG("round %d: %lld pages still pinned", round,
			       pins_held() - held);
		for (int i = 0; i < 200 && (rc_qps() != qps || rdma_mrs() != mrs); i++)
			usleep(50000);
		ASSERT_EQ(qps, rc_qps());
		ASSERT_EQ(mrs, rdma_mrs()) TH_LOG("round %d", round);
	}
}

/* net.afrdma.rx_zerocopy_min is range-checked: 0 (off) to 16 MiB. */
TEST_F(zc, rx_zerocopy_min_range)
{
	ASSERT_EQ(-1, sysctl_write("rx_zerocopy_min", "-1"));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, sysctl_write("rx_zerocopy_min", "16777217"));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(self->saved_rzc, afrdma_sysctl("rx_zerocopy_min", -1));
	ASSERT_EQ(0, afrdma_sysctl("rx_zerocopy_min", 0));
	ASSERT_EQ(16777216, afrdma_sysctl("rx_zerocopy_min", 16777216));
}

TEST_HARNESS_MAIN
