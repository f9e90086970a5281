// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma load and churn: many connect-transfer-close cycles must leave
 * nothing behind (QPs, CQs, MRs, PDs, live sockets, the connection gauge),
 * and many concurrent connections must all carry their data.
 * `make check` runs short versions; `make stress` sets AFRDMA_CHURN=10000
 * and AFRDMA_CONNS=1024.  A burst of connects from many threads to one
 * listener is never refused while it listens, on afrdma as on TCP.
 */
#include <stdatomic.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

/* `rdma resource show` summary: the sum of one resource over devices. */
static int rdma_res(const char *what)
{
	FILE *p = popen("rdma resource show 2>/dev/null", "r");
	char line[512], key[32], *q;
	int n = 0;

	if (!p)
		return -1;
	snprintf(key, sizeof(key), " %s ", what);
	while (fgets(line, sizeof(line), p)) {
		q = strstr(line, key);
		if (q)
			n += atoi(q + strlen(key));
	}
	return pclose(p) == 0 ? n : -1;
}

/* Live afrdma sockets, from init to destruct: /proc/net/afrdma's lines. */
static long afrdma_socks(void)
{
	FILE *f = fopen("/proc/net/afrdma", "r");
	char line[512];
	long n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

struct baseline {
	int	qp, cq, mr, pd;
	long	socks;
	long long conns;
};

static void take_baseline(struct baseline *b)
{
	b->qp = rdma_res("qp");
	b->cq = rdma_res("cq");
	b->mr = rdma_res("mr");
	b->pd = rdma_res("pd");
	b->socks = afrdma_socks();
	b->conns = afrdma_stat("CurrConnections");
}

/* Sends @len bytes on @c and reads them on @s. */
static int one_transfer(int c, int s, const unsigned char *out,
			unsigned char *in, size_t len)
{
	if (send(c, out, len, MSG_NOSIGNAL) != (ssize_t)len)
		return -1;
	if (recv(s, in, len, MSG_WAITALL) != (ssize_t)len)
		return -1;
	return memcmp(in, out, len) ? -1 : 0;
}

FIXTURE(stress) {
};

FIXTURE_SETUP(stress)
{
}

FIXTURE_TEARDOWN(stress)
{
}

TEST_F_TIMEOUT(stress, churn, 3600)
{
	int cycles = env_int("AFRDMA_CHURN", 300);
	unsigned char out[4096], in[4096];
	struct baseline before, after;
	int lfd, c, s, i, zero = 0;
	struct sockaddr_storage ss;
	unsigned short port;
	socklen_t len;

	fill(out, sizeof(out), 5);
	lfd = afrdma_listen_on(AFRDMA_T_FAMILY, test_addr(false), 0, 16, &port);
	ASSERT_LE(0, lfd);
	/* Warm the CQ pool and PD up, so the baseline is steady state. */
	c = afrdma_connect_to(AFRDMA_T_FAMILY, test_addr(false), port);
	ASSERT_LE(0, c);
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	close(c);
	close(s);
	take_baseline(&before);
	ASSERT_LE(0, before.qp);

	len = afrdma_make_addr(&ss, test_addr(false), port);
	for (i = 0; i < cycles; i++) {
		c = afrdma_socket(AFRDMA_T_FAMILY, AF_INET, 0);
		ASSERT_LE(0, c);
		/* RDMA or nothing: a fallback would not exercise the QPs. */
		ASSERT_EQ(0, setsockopt(c, SOL_RDMA, AFRDMA_FALLBACK, &zero,
					sizeof(zero)));
		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len))
			TH_LOG("cycle %d: connect: %s", i, strerror(errno));
		s = accept(lfd, NULL, NULL);
		ASSERT_LE(0, s) TH_LOG("cycle %d: accept: %s", i, strerror(errno));
		ASSERT_EQ(0, one_transfer(c, s, out, in, sizeof(out)))
			TH_LOG("cycle %d", i);
		/* Alternate which side closes first. */
		if (i & 1) {
			close(c);
			close(s);
		} else {
			close(s);
			close(c);
		}
	}
	take_baseline(&after);
	TH_LOG("%d cycles: qp %d/%d cq %d/%d mr %d/%d pd %d/%d socks %ld/%ld",
	       cycles, before.qp, after.qp, before.cq, after.cq, before.mr,
	       after.mr, before.pd, after.pd, before.socks, after.socks);
	EXPECT_EQ(before.qp, after.qp);
	EXPECT_EQ(before.cq, after.cq);
	EXPECT_EQ(before.mr, after.mr);
	EXPECT_EQ(before.pd, after.pd);
	EXPECT_EQ(before.socks, after.socks);
	EXPECT_EQ(before.conns, after.conns);
	close(lfd);
}

/*
 * AFRDMA_CONNS connections open at once, each with traffic, small buffers
 * (SO_RCVBUF/SO_SNDBUF: 4 slots each way) so that 1024 of them fit the
 * guest's memory: the per-connection cost is the buffers plus a QP.
 */
TEST_F_TIMEOUT(stress, many_at_once, 3600)
{
	int n = env_int("AFRDMA_CONNS", 128), buf = 64 * 1024, i, lfd, qps;
	unsigned char out[4096], in[4096];
	struct sockaddr_storage ss;
	struct rlimit rl;
	unsigned short port;
	socklen_t len;
	int *c, *s;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < (rlim_t)(2 * n + 64)) {
		rl.rlim_cur = rl.rlim_max = 2 * n + 64;
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	}
	c = calloc(n, sizeof(int));
	s = calloc(n, sizeof(int));
	ASSERT_TRUE(c && s);
	fill(out, sizeof(out), 9);
	lfd = afrdma_listen_on(AFRDMA_T_FAMILY, test_addr(false), 0, n, &port);
	ASSERT_LE(0, lfd);
	setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(lfd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	len = afrdma_make_addr(&ss, test_addr(false), port);
	qps = rc_qps();
	for (i = 0; i < n; i++) {
		c[i] = afrdma_socket(AFRDMA_T_FAMILY, AF_INET, 0);
		ASSERT_LE(0, c[i]);
		setsockopt(c[i], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
		setsockopt(c[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
		ASSERT_EQ(0, connect(c[i], (struct sockaddr *)&ss, len))
			TH_LOG("connection %d: %s", i, strerror(errno));
		s[i] = accept(lfd, NULL, NULL);
		ASSERT_LE(0, s[i]);
	}
	TH_LOG("%d connections open, %d RC QPs (%d before)", n, rc_qps(), qps);
	EXPECT_LE(qps + 2 * n, rc_qps()) TH_LOG("not all on RDMA");
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, one_transfer(c[i], s[i], out, in, sizeof(out)))
			TH_LOG("connection %d", i);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, one_transfer(s[i], c[i], out, in, sizeof(out)))
			TH_LOG("connection %d, back", i);
	for (i = 0; i < n; i++) {
		close(c[i]);
		close(s[i]);
	}
	close(lfd);
	EXPECT_EQ(qps, rc_qps());
	free(c);
	free(s);
}

/*
 * A burst: BURST_THREADS threads connect and close in a loop to one
 * listener whose backlog is smaller than that, while a thread accepts
 * and closes.  TCP drops a SYN the full accept queue cannot take and
 * the client sends it again; nothing may be refused.
 */
#define BURST_THREADS	16
#define BURST_BACKLOG	8

struct burst {
	enum afrdma_transport	t;
	struct sockaddr_storage	ss;
	socklen_t		len;
	int			lfd;
	int			per_thread;
	atomic_int		ok;
	atomic_int		refused;
	atomic_int		failed;	/* any other error */
	atomic_int		last_err;
	atomic_int		accepted;
};

static void *burst_accept(void *arg)
{
	struct burst *b = arg;
	int s;

	/* Until the listener is shut down. */
	while ((s = accept(b->lfd, NULL, NULL)) >= 0 || errno == EINTR ||
	       errno == ECONNABORTED) {
		if (s >= 0) {
			atomic_fetch_add(&b->accepted, 1);
			close(s);
		}
	}
	return NULL;
}

static void *burst_connect(void *arg)
{
	struct burst *b = arg;
	int i, fd, zero = 0;

	for (i = 0; i < b->per_thread; i++) {
		fd = afrdma_socket(b->t, b->ss.ss_family, SOCK_CLOEXEC);
		if (fd < 0 || (b->t != AFRDMA_T_TCP &&
			       setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &zero,
					  sizeof(zero)))) {
			atomic_store(&b->last_err, errno);
			atomic_fetch_add(&b->failed, 1);
		} else if (!connect(fd, (struct sockaddr *)&b->ss, b->len)) {
			atomic_fetch_add(&b->ok, 1);
		} else {
			atomic_store(&b->last_err, errno);
			atomic_fetch_add(errno == ECONNREFUSED ? &b->refused :
					 &b->failed, 1);
		}
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

/* AFRDMA_BURST connects (2000) in all; fills @b with the counts. */
static int connect_burst(struct burst *b, enum afrdma_transport t)
{
	pthread_t acc, th[BURST_THREADS];
	unsigned short port;
	int i, n = 0;

	memset(b, 0, sizeof(*b));
	b->t = t;
	b->per_thread = env_int("AFRDMA_BURST", 2000) / BURST_THREADS;
	b->lfd = afrdma_listen_on(t, test_addr(false), 0, BURST_BACKLOG, &port);
	if (b->lfd < 0)
		return -1;
	b->len = afrdma_make_addr(&b->ss, test_addr(false), port);
	if (pthread_create(&acc, NULL, burst_accept, b))
		return -1;
	for (i = 0; i < BURST_THREADS; i++, n++)
		if (pthread_create(&th[i], NULL, burst_connect, b))
			break;
	while (n--)
		pthread_join(th[n], NULL);
	/* As on TCP, a listener shut down for reading wakes its accept(). */
	shutdown(b->lfd, SHUT_RD);
	pthread_join(acc, NULL);
	close(b->lfd);
	return i == BURST_THREADS ? 0 : -1;
}

static void burst_check(struct __test_metadata *_metadata, enum afrdma_transport t)
{
	struct burst b;
	int total;

	ASSERT_EQ(0, connect_burst(&b, t));
	total = b.per_thread * BURST_THREADS;
	TH_LOG("%s: %d connects: %d ok, %d refused, %d other errors (last: %s), %d accepted",
	       afrdma_transport_name(t), total, atomic_load(&b.ok),
	       atomic_load(&b.refused), atomic_load(&b.failed),
	       strerror(atomic_load(&b.last_err)), atomic_load(&b.accepted));
	EXPECT_EQ(0, atomic_load(&b.refused));
	EXPECT_EQ(0, atomic_load(&b.failed));
	EXPECT_EQ(total, atomic_load(&b.ok));
}

TEST_F_TIMEOUT(stress, connect_burst, 3600)
{
	burst_check(_metadata, AFRDMA_T_FAMILY);
}

/* The control: the same burst over TCP. */
TEST_F_TIMEOUT(stress, connect_burst_tcp, 3600)
{
	burst_check(_metadata, AFRDMA_T_TCP);
}

TEST_HARNESS_MAIN
