// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma-sysfuzz: random sequences of socket calls from several threads on
 * shared afrdma sockets, against live RDMA peers, to find what a program
 * can do to the kernel.  Not a test by itself: selftests/sysfuzz.sh runs it
 * (make check, make check-debug, make fuzz-kernel) and judges the kernel
 * afterwards (its log, leftover sockets and QPs, the module's unload).
 *
 *	afrdma-sysfuzz [-t SECONDS] [-j THREADS] [-s SEED] [-a ADDR] [-A ADDR6]
 *
 * The sockets live in a table of slots shared by all threads, so one thread
 * closes, shuts down, listens on or connects a socket while another sends
 * on it; listeners on ADDR and ADDR6 accept into the same table, so data
 * crosses RDMA between slots.  Every call is picked at random: socket
 * (both ways in, and wrong types), bind, listen, connect (to the live
 * listeners, a closed port, AF_UNSPEC), accept4, send and recv with every
 * flag, shutdown, close, setsockopt and getsockopt with random levels,
 * names, lengths and values, poll, ioctl, fcntl, dup, and fork (the child
 * calls on inherited sockets and exits).
 *
 * The fuzzer bounds its own waits so that any call that does not return is
 * the kernel's: every socket gets SO_RCVTIMEO and SO_SNDTIMEO of 200 ms
 * (set again after a random SOL_SOCKET option), and SO_LINGER is capped at
 * 1 s.  A watchdog prints any call that has run for longer than the stuck
 * bound (-S, 120 s) with its thread's kernel stack, and exits 2.  At the
 * end it prints one "# sysfuzz:" line of counts and exits 0.  The seed is
 * printed first; threads make runs differ, but a seed repeats the mix.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/afrdma_sock.h"

#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY	0x4000000
#endif
#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY	60
#endif
#ifndef SIOCOUTQ
#define SIOCOUTQ	0x5411
#endif

#define SLOTS		64
#define MAX_THREADS	32
#define BUF_LEN		(256 * 1024)
#define CHILD_CALLS	32

enum fuzz_op {
	OP_SOCKET, OP_BIND, OP_LISTEN, OP_CONNECT, OP_ACCEPT, OP_SEND,
	OP_SENDMSG, OP_RECV, OP_RECVMSG, OP_SHUTDOWN, OP_CLOSE, OP_SETSOCKOPT,
	OP_GETSOCKOPT, OP_POLL, OP_IOCTL, OP_FCNTL, OP_DUP, OP_NAME, OP_FORK,
	OP_NR
};

static const char *const op_names[OP_NR] = {
	"socket", "bind", "listen", "connect", "accept4", "send", "sendmsg",
	"recv", "recvmsg", "shutdown", "close", "setsockopt", "getsockopt",
	"poll", "ioctl", "fcntl", "dup", "getname", "fork",
};

/* How often each call is picked, out of the sum. */
static const unsigned int op_weight[OP_NR] = {
	[OP_SOCKET] = 8, [OP_BIND] = 3, [OP_LISTEN] = 2, [OP_CONNECT] = 8,
	[OP_ACCEPT] = 4, [OP_SEND] = 14, [OP_SENDMSG] = 6, [OP_RECV] = 14,
	[OP_RECVMSG] = 6, [OP_SHUTDOWN] = 3, [OP_CLOSE] = 5,
	[OP_SETSOCKOPT] = 10, [OP_GETSOCKOPT] = 6, [OP_POLL] = 4,
	[OP_IOCTL] = 2, [OP_FCNTL] = 2, [OP_DUP] = 1, [OP_NAME] = 2,
	[OP_FORK] = 1,
};

struct worker {
	pthread_t	thread;
	int		tid;
	uint64_t	rng;
	/* What the thread is in now, for the watchdog. */
	_Atomic int	op;		/* -1: between calls */
	_Atomic long	op_start_ms;
	unsigned char	*buf;
};

static _Atomic int slots[SLOTS];
static struct sockaddr_storage live[2];	/* the listeners, v4 and v6 */
static socklen_t live_len[2];
static int family_nr, ipproto_nr;
static _Atomic bool stop;
static _Atomic unsigned long calls[OP_NR], rdma_connects, bytes_sent;
static _Atomic unsigned long forks, accepted;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: each thread has its own state, forked children a copy. */
static uint64_t rnd(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 2685821657736338717ULL;
}

static unsigned int rnd_below(struct worker *w, unsigned int n)
{
	return n ? (unsigned int)(rnd(w) % n) : 0;
}

static bool one_in(struct worker *w, unsigned int n)
{
	return rnd_below(w, n) == 0;
}

/* Bounds every wait of ours: a call that never returns is the kernel's. */
static void bound_waits(int fd)
{
	struct timeval tv = { .tv_usec = 200 * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int pick_slot(struct worker *w)
{
	return (int)rnd_below(w, SLOTS);
}

static int slot_fd(struct worker *w)
{
	return atomic_load(&slots[pick_slot(w)]);
}

/* Puts @fd in a random slot; the socket there before is closed. */
static void slot_put(struct worker *w, int fd)
{
	int old = atomic_exchange(&slots[pick_slot(w)], fd);

	if (old >= 0)
		close(old);
}

static int new_socket(struct worker *w)
{
	static const int extra[] = { 0, SOCK_NONBLOCK, SOCK_CLOEXEC };
	int type = SOCK_STREAM | extra[rnd_below(w, 3)];
	int fd;

	switch (rnd_below(w, 8)) {
	case 0:
	case 1:
	case 2:
		fd = socket(family_nr, type, 0);
		break;
	case 3:
	case 4:
		fd = socket(AF_INET, type, ipproto_nr);
		break;
	case 5:
	case 6:
		fd = socket(AF_INET6, type, ipproto_nr);
		break;
	default:
		/* What the module must refuse: other types and protocols. */
		fd = socket(one_in(w, 2) ? family_nr : AF_INET,
			    one_in(w, 2) ? SOCK_DGRAM : SOCK_SEQPACKET,
			    one_in(w, 2) ? ipproto_nr : (int)rnd_below(w, 300));
		break;
	}
	if (fd >= 0)
		bound_waits(fd);
	return fd;
}

/* A destination: mostly a live listener, else a closed port or nonsense. */
static socklen_t pick_addr(struct worker *w, struct sockaddr_storage *ss)
{
	unsigned int v = rnd_below(w, 2);
	socklen_t len = live_len[v];

	*ss = live[v];
	switch (rnd_below(w, 12)) {
	case 0:		/* nobody listens on port 1 */
		((struct sockaddr_in *)ss)->sin_port = htons(1);
		break;
	case 1:		/* disconnect, or EAFNOSUPPORT */
		ss->ss_family = AF_UNSPEC;
		break;
	case 2:		/* short, long and odd lengths */
		len = rnd_below(w, sizeof(*ss) + 1);
		break;
	case 3:		/* the other family's length */
		len = live_len[!v];
		break;
	default:
		break;
	}
	return len;
}

static void do_connect(struct worker *w)
{
	struct sockaddr_storage ss;
	int fd = slot_fd(w), t = 0;
	socklen_t len = sizeof(t);

	if (fd < 0 || one_in(w, 3)) {
		fd = new_socket(w);
		if (fd < 0)
			return;
		slot_put(w, fd);
	}
	len = pick_addr(w, &ss);
	if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
		len = sizeof(t);
		if (!getsockopt(fd, SOL_RDMA, AFRDMA_TRANSPORT, &t, &len) &&
		    t == AFRDMA_TRANSPORT_RDMA)
			atomic_fetch_add(&rdma_connects, 1);
	}
}

static void do_bind(struct worker *w)
{
	struct sockaddr_storage ss;
	socklen_t len;

	len = pick_addr(w, &ss);
	if (one_in(w, 2))
		((struct sockaddr_in *)&ss)->sin_port = 0;
	bind(slot_fd(w), (struct sockaddr *)&ss, len);
}

static int msg_flags(struct worker *w, bool tx)
{
	static const int tx_flags[] = {
		MSG_DONTWAIT, MSG_MORE, MSG_OOB, MSG_ZEROCOPY, MSG_EOR,
		MSG_WAITALL, MSG_CONFIRM, MSG_FASTOPEN, MSG_PEEK, MSG_TRUNC,
	};
	static const int rx_flags[] = {
		MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL, MSG_TRUNC, MSG_OOB,
		MSG_ERRQUEUE, MSG_CMSG_CLOEXEC, MSG_ZEROCOPY, MSG_MORE,
	};
	const int *set = tx ? tx_flags : rx_flags;
	unsigned int n = tx ? 10 : 9, i;
	int flags = 0;

	for (i = 0; i < n; i++)
		if (one_in(w, 4))
			flags |= set[i];
	if (one_in(w, 50))
		flags |= (int)rnd(w);
	/* SIGPIPE would end the fuzzer, not test the kernel. */
	return tx ? flags | MSG_NOSIGNAL : flags;
}

static size_t msg_len(struct worker *w)
{
	switch (rnd_below(w, 4)) {
	case 0:
		return rnd_below(w, 16);
	case 1:
		return rnd_below(w, 4096);
	case 2:
		return rnd_below(w, 65536);
	default:
		return rnd_below(w, BUF_LEN + 1);
	}
}

static void do_send(struct worker *w, bool msg)
{
	int fd = slot_fd(w), flags = msg_flags(w, true);
	struct iovec iov[8];
	struct msghdr mh = { .msg_iov = iov };
	size_t len = msg_len(w), off = 0;
	ssize_t n;
	unsigned int i;

	if (!msg) {
		n = send(fd, w->buf, len, flags);
	} else {
		mh.msg_iovlen = 1 + rnd_below(w, 8);
		for (i = 0; i < mh.msg_iovlen; i++) {
			iov[i].iov_base = w->buf + off;
			iov[i].iov_len = rnd_below(w, (unsigned int)(BUF_LEN - off) / 4 + 1);
			off += iov[i].iov_len;
		}
		if (one_in(w, 8)) {	/* a destination on a stream socket */
			mh.msg_name = &live[0];
			mh.msg_namelen = live_len[0];
		}
		n = sendmsg(fd, &mh, flags);
	}
	if (n > 0)
		atomic_fetch_add(&bytes_sent, (unsigned long)n);
}

static void do_recv(struct worker *w, bool msg)
{
	int fd = slot_fd(w), flags = msg_flags(w, false);
	char cbuf[256];
	struct iovec iov[4];
	struct msghdr mh = { .msg_iov = iov };
	unsigned int i;

	if (!msg) {
		recv(fd, one_in(w, 20) ? NULL : w->buf, msg_len(w), flags);
		return;
	}
	mh.msg_iovlen = 1 + rnd_below(w, 4);
	for (i = 0; i < mh.msg_iovlen; i++) {
		iov[i].iov_base = w->buf + i * (BUF_LEN / 4);
		iov[i].iov_len = rnd_below(w, BUF_LEN / 4);
	}
	if (one_in(w, 2)) {
		mh.msg_control = cbuf;
		mh.msg_controllen = rnd_below(w, sizeof(cbuf) + 1);
	}
	recvmsg(fd, &mh, flags);
}

/* SO_RCVTIMEO and SO_SNDTIMEO, in their old and their 64-bit forms */
static bool is_timeout_opt(int name)
{
	return name == 20 || name == 21 || name == 66 || name == 67;
}

static const int levels[] = {
	SOL_SOCKET, SOL_IP, SOL_IPV6, SOL_TCP, SOL_RDMA, SOL_SOCKET, SOL_TCP,
};

static void do_setsockopt(struct worker *w)
{
	int fd = slot_fd(w), level, name, i;
	unsigned char val[64];
	socklen_t len;

	level = one_in(w, 30) ? (int)rnd(w) : levels[rnd_below(w, 7)];
	name = one_in(w, 30) ? (int)rnd(w) : (int)rnd_below(w, 80);
	for (i = 0; i < (int)sizeof(val); i++)
		val[i] = (unsigned char)rnd(w);
	/* Small values are the ones options take. */
	if (one_in(w, 2))
		memset(val + 1, 0, 3);
	switch (rnd_below(w, 4)) {
	case 0:
		len = sizeof(int);
		break;
	case 1:
		len = rnd_below(w, 9);
		break;
	default:
		len = rnd_below(w, sizeof(val) + 1);
		break;
	}
	/*
	 * Waits stay bounded even for a call another thread starts before
	 * bound_waits() below: timeouts of at most 200 ms (0 is none at
	 * all), a linger of at most 1 s.
	 */
	if (level == SOL_SOCKET && is_timeout_opt(name) && len >= sizeof(struct timeval)) {
		struct timeval tv = { .tv_usec = 1 + (long)rnd_below(w, 200000) };

		memcpy(val, &tv, sizeof(tv));
	}
	if (level == SOL_SOCKET && name == SO_LINGER && len >= sizeof(struct linger)) {
		struct linger *l = (struct linger *)val;

		l->l_linger &= 1;
	}
	setsockopt(fd, level, name, one_in(w, 40) ? NULL : val, len);
	if (level == SOL_SOCKET)
		bound_waits(fd);
}

static void do_getsockopt(struct worker *w)
{
	int level = one_in(w, 30) ? (int)rnd(w) : levels[rnd_below(w, 7)];
	unsigned char val[256];
	socklen_t len = rnd_below(w, sizeof(val) + 1);

	getsockopt(slot_fd(w), level, (int)rnd_below(w, 80),
		   one_in(w, 40) ? NULL : val, &len);
}

static void do_poll(struct worker *w)
{
	struct pollfd p[4];
	unsigned int i, n = 1 + rnd_below(w, 4);

	for (i = 0; i < n; i++) {
		p[i].fd = slot_fd(w);
		p[i].events = (short)rnd_below(w, 0x800);
	}
	poll(p, n, (int)rnd_below(w, 50));
}

static void do_ioctl(struct worker *w)
{
	static const unsigned long reqs[] = { FIONREAD, SIOCOUTQ, FIONBIO, SIOCATMARK };
	int val = (int)rnd_below(w, 2);

	ioctl(slot_fd(w), one_in(w, 10) ? (unsigned long)rnd(w) : reqs[rnd_below(w, 4)],
	      &val);
}

static void do_fcntl(struct worker *w)
{
	int fd = slot_fd(w), fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl ^ O_NONBLOCK);
}

static void do_name(struct worker *w)
{
	struct sockaddr_storage ss;
	socklen_t len = rnd_below(w, sizeof(ss) + 1);

	if (one_in(w, 2))
		getsockname(slot_fd(w), (struct sockaddr *)&ss, &len);
	else
		getpeername(slot_fd(w), (struct sockaddr *)&ss, &len);
}

static void do_op(struct worker *w, enum fuzz_op op, bool in_child);

/*
 * A child calls on the sockets it inherited, as a forked server does, and
 * exits: async-signal-safe calls only (the parent has other threads).
 */
static void do_fork(struct worker *w)
{
	pid_t pid;
	int i;

	pid = fork();
	if (pid == 0) {
		for (i = 0; i < CHILD_CALLS; i++)
			do_op(w, (enum fuzz_op)rnd_below(w, OP_FORK), true);
		_exit(0);
	}
	if (pid > 0) {
		atomic_fetch_add(&forks, 1);
		waitpid(pid, NULL, 0);
	}
}

static void do_op(struct worker *w, enum fuzz_op op, bool in_child)
{
	int fd;

	switch (op) {
	case OP_SOCKET:
		fd = new_socket(w);
		if (fd >= 0 && !in_child)
			slot_put(w, fd);
		else if (fd >= 0)
			close(fd);
		break;
	case OP_BIND:
		do_bind(w);
		break;
	case OP_LISTEN:
		listen(slot_fd(w), (int)rnd_below(w, 130) - 1);
		break;
	case OP_CONNECT:
		if (!in_child)
			do_connect(w);
		break;
	case OP_ACCEPT:
		fd = accept4(slot_fd(w), NULL, NULL,
			     SOCK_NONBLOCK * (int)rnd_below(w, 2));
		if (fd >= 0) {
			bound_waits(fd);
			if (in_child)
				close(fd);
			else
				slot_put(w, fd);
		}
		break;
	case OP_SEND:
	case OP_SENDMSG:
		do_send(w, op == OP_SENDMSG);
		break;
	case OP_RECV:
	case OP_RECVMSG:
		do_recv(w, op == OP_RECVMSG);
		break;
	case OP_SHUTDOWN:
		shutdown(slot_fd(w), (int)rnd_below(w, 4));
		break;
	case OP_CLOSE:
		if (in_child) {
			close(slot_fd(w));
			break;
		}
		fd = atomic_exchange(&slots[pick_slot(w)], -1);
		if (fd >= 0)
			close(fd);
		break;
	case OP_SETSOCKOPT:
		do_setsockopt(w);
		break;
	case OP_GETSOCKOPT:
		do_getsockopt(w);
		break;
	case OP_POLL:
		do_poll(w);
		break;
	case OP_IOCTL:
		do_ioctl(w);
		break;
	case OP_FCNTL:
		do_fcntl(w);
		break;
	case OP_DUP:
		fd = slot_fd(w);
		fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
		if (fd >= 0 && !in_child)
			slot_put(w, fd);
		else if (fd >= 0)
			close(fd);
		break;
	case OP_NAME:
		do_name(w);
		break;
	case OP_FORK:
		do_fork(w);
		break;
	case OP_NR:
		break;
	}
}

static unsigned int op_total;	/* the weights' sum, set before the threads */

static enum fuzz_op pick_op(struct worker *w)
{
	unsigned int r = rnd_below(w, op_total), i;

	for (i = 0; i < OP_NR; i++) {
		if (r < op_weight[i])
			return (enum fuzz_op)i;
		r -= op_weight[i];
	}
	return OP_SEND;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	enum fuzz_op op;

	w->tid = gettid();
	while (!atomic_load(&stop)) {
		op = pick_op(w);
		atomic_store(&w->op_start_ms, now_ms());
		atomic_store(&w->op, (int)op);
		do_op(w, op, false);
		atomic_store(&w->op, -1);
		atomic_fetch_add(&calls[op], 1);
	}
	return NULL;
}

/* The listeners accept into the slots, so that the fuzz has peers. */
struct listener {
	pthread_t	thread;
	int		fd[2];
};

static void *acceptor_run(void *arg)
{
	struct listener *l = arg;
	struct worker w = { .rng = 0x9e3779b97f4a7c15ULL };
	struct pollfd p[2] = {
		{ .fd = l->fd[0], .events = POLLIN },
		{ .fd = l->fd[1], .events = POLLIN },
	};
	int i, fd;

	while (!atomic_load(&stop)) {
		if (poll(p, 2, 100) <= 0)
			continue;
		for (i = 0; i < 2; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			fd = accept4(p[i].fd, NULL, NULL, 0);
			if (fd < 0)
				continue;
			bound_waits(fd);
			slot_put(&w, fd);
			atomic_fetch_add(&accepted, 1);
		}
	}
	return NULL;
}

static int live_listener(const char *host, struct sockaddr_storage *ss,
			 socklen_t *len)
{
	int fd, one = 1;

	*len = afrdma_make_addr(ss, host, 0);
	if (!*len)
		return -1;
	fd = socket(family_nr, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)ss, *len) || listen(fd, 128) ||
	    getsockname(fd, (struct sockaddr *)ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Prints a call that has not returned, with its kernel stack. */
static void report_stuck(struct worker *w, long ms)
{
	char path[64], line[256];
	FILE *f;

	printf("# sysfuzz: %s in thread %d has not returned for %ld s\n",
	       op_names[atomic_load(&w->op)], w->tid, ms / 1000);
	snprintf(path, sizeof(path), "/proc/self/task/%d/stack", w->tid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		printf("#   %s", line);
	if (f)
		fclose(f);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *addr = "10.99.0.1", *addr6 = "fd99::1";
	unsigned int seconds = 20, nthreads = 4, stuck_s = 120, i;
	struct worker workers[MAX_THREADS] = { 0 };
	uint64_t seed = (uint64_t)time(NULL);
	struct listener l;
	unsigned long total = 0;
	long start, t;
	int opt, op;

	if (getenv("AFRDMA_ADDR"))
		addr = getenv("AFRDMA_ADDR");
	if (getenv("AFRDMA_ADDR6"))
		addr6 = getenv("AFRDMA_ADDR6");
	while ((opt = getopt(argc, argv, "t:j:s:a:A:S:")) != -1) {
		switch (opt) {
		case 't':
			seconds = (unsigned int)atoi(optarg);
			break;
		case 'j':
			nthreads = (unsigned int)atoi(optarg);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			addr = optarg;
			break;
		case 'A':
			addr6 = optarg;
			break;
		case 'S':
			stuck_s = (unsigned int)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-j THREADS] [-s SEED] [-a ADDR] [-A ADDR6] [-S STUCK_SECONDS]\n",
				argv[0]);
			return 1;
		}
	}
	if (!nthreads || nthreads > MAX_THREADS) {
		fprintf(stderr, "sysfuzz: 1 to %d threads\n", MAX_THREADS);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	family_nr = afrdma_family_nr();
	ipproto_nr = afrdma_ipproto_nr();
	printf("# sysfuzz: seed %llu, %u threads, %u s, on %s and %s\n",
	       (unsigned long long)seed, nthreads, seconds, addr, addr6);
	fflush(stdout);

	l.fd[0] = live_listener(addr, &live[0], &live_len[0]);
	l.fd[1] = live_listener(addr6, &live[1], &live_len[1]);
	if (l.fd[0] < 0 || l.fd[1] < 0) {
		perror("sysfuzz: listen");
		return 1;
	}
	for (i = 0; i < SLOTS; i++)
		atomic_store(&slots[i], -1);
	for (i = 0; i < OP_NR; i++)
		op_total += op_weight[i];
	if (pthread_create(&l.thread, NULL, acceptor_run, &l))
		return 1;
	for (i = 0; i < nthreads; i++) {
		workers[i].rng = seed * 0x100000001b3ULL + i + 1;
		atomic_store(&workers[i].op, -1);
		workers[i].buf = malloc(BUF_LEN);
		if (!workers[i].buf ||
		    pthread_create(&workers[i].thread, NULL, worker_run, &workers[i]))
			return 1;
	}

	start = now_ms();
	while (now_ms() - start < (long)seconds * 1000) {
		sleep(1);
		for (i = 0; i < nthreads; i++) {
			op = atomic_load(&workers[i].op);
			t = now_ms() - atomic_load(&workers[i].op_start_ms);
			if (op >= 0 && t > (long)stuck_s * 1000) {
				report_stuck(&workers[i], t);
				_exit(2);
			}
		}
	}
	atomic_store(&stop, true);
	/* Past the end, a worker still gets the stuck bound to return. */
	for (i = 0; i < nthreads; i++) {
		while (pthread_tryjoin_np(workers[i].thread, NULL)) {
			t = now_ms() - atomic_load(&workers[i].op_start_ms);
			if (t > (long)stuck_s * 1000) {
				report_stuck(&workers[i], t);
				_exit(2);
			}
			usleep(100 * 1000);
		}
	}
	pthread_join(l.thread, NULL);
	for (i = 0; i < SLOTS; i++)
		if (atomic_load(&slots[i]) >= 0)
			close(atomic_load(&slots[i]));
	close(l.fd[0]);
	close(l.fd[1]);

	for (i = 0; i < OP_NR; i++)
		total += atomic_load(&calls[i]);
	printf("# sysfuzz: %lu calls in %ld s, %lu connects on RDMA, %lu accepted, %lu forks, %lu bytes sent\n",
	       total, (now_ms() - start) / 1000, atomic_load(&rdma_connects),
	       atomic_load(&accepted), atomic_load(&forks), atomic_load(&bytes_sent));
	printf("# sysfuzz: calls:");
	for (i = 0; i < OP_NR; i++)
		printf(" %s %lu", op_names[i], atomic_load(&calls[i]));
	printf("\n");
	return 0;
}
