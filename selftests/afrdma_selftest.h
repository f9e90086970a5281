/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the afrdma selftests: the test addresses vm-run sets
 * up, polling, RDMA resource counts, counters and sysctls.
 */
#ifndef _AFRDMA_SELFTEST_H
#define _AFRDMA_SELFTEST_H

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* The address of rxe0's netdev (va), from vm-run's environment. */
static inline const char *test_addr(bool v6)
{
	const char *a = getenv(v6 ? "AFRDMA_ADDR6" : "AFRDMA_ADDR");

	return a ? a : v6 ? "fd99::1" : "10.99.0.1";
}

/* Waits for @events on @fd; returns revents, 0 on timeout. */
static inline int wait_for(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	if (poll(&p, 1, ms) <= 0)
		return 0;
	return p.revents;
}

/* Lines of `rdma resource show @kind` that contain @match. */
static inline int rdma_res_count(const char *kind, const char *match)
{
	char line[512];
	int n = 0;
	FILE *p;

	snprintf(line, sizeof(line), "rdma resource show %s 2>/dev/null", kind);
	p = popen(line, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, match))
			n++;
	return pclose(p) == 0 ? n : -1;
}

/* Number of RC QPs that `rdma resource show qp` lists right now. */
static inline int rc_qps(void)
{
	return rdma_res_count("qp", "type RC");
}

/* Memory regions that `rdma resource show mr` lists right now. */
static inline int rdma_mrs(void)
{
	return rdma_res_count("mr", "mrn");
}

/* QPs on all devices, from the per-device summary of `rdma resource`. */
static inline int all_qps(void)
{
	FILE *p = popen("rdma resource show 2>/dev/null", "r");
	char line[512], *q;
	int n = 0;

	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		q = strstr(line, " qp ");
		if (q)
			n += atoi(q + 4);
	}
	return pclose(p) == 0 ? n : -1;
}

static inline void fill(unsigned char *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

/* The value of @name in a file of "name value" lines, or -1. */
static inline long long file_stat(const char *path, const char *name)
{
	FILE *f = fopen(path, "r");
	char key[64];
	long long val, ret = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &val) == 2)
		if (!strcmp(key, name))
			ret = val;
	fclose(f);
	return ret;
}

/* One counter from /proc/net/afrdma_stat, or -1. */
static inline long long afrdma_stat(const char *name)
{
	return file_stat("/proc/net/afrdma_stat", name);
}

/* Reads or writes net.afrdma.@name; -1 on error. */
static inline int afrdma_sysctl(const char *name, int set)
{
	char path[128];
	FILE *f;
	int val = -1;

	snprintf(path, sizeof(path), "/proc/sys/net/afrdma/%s", name);
	f = fopen(path, set >= 0 ? "w" : "r");
	if (!f)
		return -1;
	if (set >= 0)
		val = fprintf(f, "%d\n", set) > 0 ? set : -1;
	else if (fscanf(f, "%d", &val) != 1)
		val = -1;
	if (fclose(f))
		val = -1;
	return val;
}

#define AFRDMA_MEM_SYSCTL	"/proc/sys/net/afrdma/mem"

/* Reads (@set NULL) or writes net.afrdma.mem; 0, or -1. */
static inline int afrdma_mem_sysctl(char *get, size_t len, const char *set)
{
	FILE *f = fopen(AFRDMA_MEM_SYSCTL, set ? "w" : "r");
	int ret = 0;

	if (!f)
		return -1;
	if (set)
		ret = fputs(set, f) < 0 ? -1 : 0;
	else if (!fgets(get, (int)len, f))
		ret = -1;
	if (fclose(f))
		ret = -1;
	return ret;
}

/*
 * A plain TCP listener on @host (needs lib/afrdma_sock.h first), its port
 * in @port; -1 on error.
 */
/*
 * Binds @fd to @host on any port and listens: @fd, its port in @port; or
 * -1 with @fd closed.
 */
static inline int listen_any_port(int fd, const char *host, int backlog,
				  unsigned short *port)
{
	struct sockaddr_storage ss;
	socklen_t len;

	len = afrdma_make_addr(&ss, host, 0);
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, backlog))
		goto fail;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		goto fail;
	*port = afrdma_addr_port(&ss);
	return fd;
fail:
	close(fd);
	return -1;
}

static inline int tcp_listen_on(const char *host, unsigned short *port)
{
	struct sockaddr_storage ss;
	int one = 1, fd;

	afrdma_make_addr(&ss, host, 0);
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) {
		close(fd);
		return -1;
	}
	return listen_any_port(fd, host, 4, port);
}

/*
 * A connection's rings from /proc/net/afrdma: buffers now and at most, and
 * the payload bytes a SEND carries inline (-1U from a module without it).
 */
struct afrdma_rings {
	unsigned int	rx, rx_max, tx, tx_max, inl;
};

/* @fd's rings, found by the socket's inode; -1 if it is not listed. */
static inline int afrdma_rings(int fd, struct afrdma_rings *r)
{
	FILE *f = fopen("/proc/net/afrdma", "r");
	unsigned long ino;
	char line[512];
	struct stat st;
	int ret = -1;

	if (!f)
		return -1;
	if (fstat(fd, &st))
		goto out;
	while (fgets(line, sizeof(line), f)) {
		r->inl = -1U;
		if (sscanf(line, "%*s %*s %*s %*s %*u %*u %*u %lu %*u %*s %*u %u/%u %u/%u %u",
			   &ino, &r->rx, &r->rx_max, &r->tx, &r->tx_max, &r->inl) >= 5 &&
		    ino == st.st_ino) {
			ret = 0;
			break;
		}
	}
out:
	fclose(f);
	return ret;
}

/* A recv in a thread of its own, to be seen blocked. */
struct bg_recv {
	int fd, flags;
	size_t len;
	char buf[16];
	ssize_t n;
	int err;
	int tid, done;
};

static inline void *bg_recv_run(void *arg)
{
	struct bg_recv *r = arg;

	__atomic_store_n(&r->tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	r->n = recv(r->fd, r->buf, r->len, r->flags);
	r->err = errno;
	__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * Waits, up to 20 s, for @r's thread to sleep in its recv: 0 then, -1 if
 * the recv returned first.
 */
static inline int bg_recv_blocked(struct bg_recv *r)
{
	char path[64], st[256], *p;
	int i, tid, fd, n;

	for (i = 0; i < 2000; i++) {
		if (__atomic_load_n(&r->done, __ATOMIC_SEQ_CST))
			return -1;
		tid = __atomic_load_n(&r->tid, __ATOMIC_SEQ_CST);
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		fd = tid ? open(path, O_RDONLY) : -1;
		n = fd >= 0 ? read(fd, st, sizeof(st) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			st[n] = '\0';
			p = strrchr(st, ')');
			if (p && p[1] == ' ' && p[2] == 'S')
				return 0;
		}
		usleep(10000);
	}
	return -1;
}

/*
 * @fd's non-blocking connect to listener @lfd is under way: recv must say
 * EAGAIN, and a blocking recv started now must wait for the connect, then
 * read what the accepted end (in *@sfd) sends.  0, or -1 with @why said.
 */
static inline int recv_while_connecting(int fd, int lfd, int *sfd,
					char *why, size_t whylen)
{
	struct bg_recv r = { .fd = fd, .flags = MSG_WAITALL, .len = 4 };
	pthread_t t;
	char c;

	if (recv(fd, &c, 1, 0) != -1 || errno != EAGAIN) {
		snprintf(why, whylen, "non-blocking recv: %s", strerror(errno));
		return -1;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) ||
	    pthread_create(&t, NULL, bg_recv_run, &r)) {
		snprintf(why, whylen, "setup: %s", strerror(errno));
		return -1;
	}
	*sfd = accept(lfd, NULL, NULL);
	if (*sfd < 0 || send(*sfd, "data", 4, 0) != 4)
		snprintf(why, whylen, "accept or send: %s", strerror(errno));
	pthread_join(t, NULL);
	if (*sfd < 0)
		return -1;
	if (r.n != 4 || memcmp(r.buf, "data", 4)) {
		snprintf(why, whylen, "blocking recv: %zd, %s", r.n,
			 r.n < 0 ? strerror(r.err) : "not the data sent");
		return -1;
	}
	return 0;
}

/* Seconds on the monotonic clock. */
static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits up to @secs for @pid; its exit status, or -1 (then killed). */
static inline int wait_tool(pid_t pid, double secs)
{
	double end = now() + secs;
	int status;

	while (now() < end) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Prints what a tool wrote to the file @fd, as TAP comments. */
static inline void show_log(int fd)
{
	char line[512];
	FILE *f;

	lseek(fd, 0, SEEK_SET);
	f = fdopen(dup(fd), "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("# %s", line);
	fclose(f);
}

#endif /* _AFRDMA_SELFTEST_H */
