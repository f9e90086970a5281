// SPDX-License-Identifier: GPL-2.0
/*
 * A program that stalls inside a socket call must stall no one else
 * (issue 17, item 1).  rdma_cm calls afrdma's handler from work queues
 * every RDMA user of the host shares (ib_cm's runs one item at a time): a
 * handler that waited there for a socket lock held by a stalled program
 * stopped connection management host-wide.  The stall here is a
 * userfaultfd page nobody resolves, as the source of a socket call:
 *
 * stall.connected: a connected AF_RDMA socket's call stalls (per variant:
 *   setsockopt(IP_OPTIONS), which the IP layer copies under the socket
 *   lock; send(), which afrdma copies under it); meanwhile its peer
 *   closes, so that a DISCONNECTED is due for the stalled socket, and a
 *   new AF_RDMA pair (fallback off) must connect and carry data both ways
 *   within CONNECT_S, and rping, if installed, must finish within
 *   RPING_S.  Released, the stalled socket sees its peer's close.
 * listener_stall.ip_options: a listener's setsockopt(IP_OPTIONS) stalls,
 *   which afrdma copies in before it locks; a client's connect to it, and
 *   the accept, must still complete, and carry data, within CONNECT_S.
 * listener_stall.attach_filter, .linger: a listener's setsockopt stalls
 *   with the listener's lock held: SO_ATTACH_FILTER, whose program the
 *   core reads from the user's pointer under the lock (6.1 and 6.12), and
 *   SO_LINGER, whose struct 6.1's core copies under it after the first int
 *   (the stall is the struct's second half; 6.12 hands afrdma its
 *   SOL_SOCKET options, copied first).  A client's connect to it must
 *   still complete, the connection reach the listener's accept queue (as
 *   /proc/net/afrdma lists it), and a new AF_RDMA pair on another listener
 *   and rping must work, within the bounds.  accept() and poll() on the
 *   stalled listener need its lock, as TCP's do, so the accept comes once
 *   the stall is released, with the data the client sent before it.  While
 *   a listener's REQ waited for its lock, the connect never completed.
 * modstall.accept: a listener's accept() of a plain TCP client replays the
 *   listener's TCP_CONGESTION on the new TCP socket, and the name's module
 *   is loaded by a modprobe that waits (kernel.modprobe is a script until
 *   the test lets it go); meanwhile an AF_RDMA client's connect to the same
 *   listener must complete, and carry data, within CONNECT_S.  Released,
 *   the accepted socket is on TCP with that congestion control.
 * modstall.connect: a connect() with TCP_CONGESTION set, to a plain TCP
 *   listener, whose REJ makes it fall back; the fallback replays the
 *   option, and modprobe waits as above.  Meanwhile a new AF_RDMA pair
 *   must connect, and carry data, within CONNECT_S, and the connect must
 *   not have returned.  Released, it returns on TCP, for the REJ, with
 *   that congestion control.
 *
 * Bounds scale by AFRDMA_TIME_SCALE.  Needs userfaultfd for kernel faults
 * (root).  Prints TAP.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/userfaultfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

/* A connect and a small exchange; rping's three pings; a close seen */
#define CONNECT_S	10.0
#define RPING_S		20.0
#define CLOSE_S		10.0
#define XFER_LEN	(64 * 1024)

static double scale(double secs)
{
	const char *s = getenv("AFRDMA_TIME_SCALE");

	return secs * (s && atoi(s) > 0 ? atoi(s) : 1);
}

static int ms_left(double end)
{
	double left = end - now();

	return left > 0 ? (int)(left * 1000) + 1 : 0;
}

/* An AF_RDMA socket that may not fall back to TCP. */
static int rdma_socket(void)
{
	int fd = socket(afrdma_family_nr(), SOCK_STREAM | SOCK_CLOEXEC, 0);
	int zero = 0;

	if (fd >= 0 &&
	    setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &zero, sizeof(zero))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int rdma_listener(unsigned short *port)
{
	int fd = rdma_socket();

	return fd < 0 ? -1 : listen_any_port(fd, test_addr(false), 8, port);
}

/*
 * Connects to @port by @end, without blocking past it: 0 with *@cfd, still
 * non-blocking; -1 with @why.
 */
static int rdma_connect_by(unsigned short port, double end, int *cfd,
			   const char **why)
{
	struct sockaddr_storage ss;
	int err = 0, fd;
	socklen_t len;

	*cfd = -1;
	fd = rdma_socket();
	if (fd < 0) {
		*why = "socket";
		return -1;
	}
	*cfd = fd;
	len = afrdma_make_addr(&ss, test_addr(false), port);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		*why = "connect";
		return -1;
	}
	if (!(wait_for(fd, POLLOUT, ms_left(end)) & POLLOUT)) {
		*why = "connect: not done in time";
		return -1;
	}
	len = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		errno = err;
		*why = "connect failed";
		return -1;
	}
	return 0;
}

/*
 * Connects to @port and accepts from @lfd by @end, without blocking past
 * it: 0 with *@cfd and *@sfd, blocking again; -1 with @why.
 */
static int rdma_pair(int lfd, unsigned short port, double end, int *cfd,
		     int *sfd, const char **why)
{
	*sfd = -1;
	if (rdma_connect_by(port, end, cfd, why))
		return -1;
	if (!(wait_for(lfd, POLLIN, ms_left(end)) & POLLIN)) {
		*why = "accept: nothing in time";
		return -1;
	}
	*sfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (*sfd < 0) {
		*why = "accept";
		return -1;
	}
	fcntl(*cfd, F_SETFL, 0);
	return 0;
}

/* XFER_LEN bytes from @from to @to by @end: 0, or -1 with @why. */
static int xfer(int from, int to, double end, const char **why)
{
	static unsigned char out[XFER_LEN], in[XFER_LEN];
	size_t sent = 0, got = 0;
	ssize_t n;

	fill(out, sizeof(out), (unsigned int)from);
	while (got < sizeof(in)) {
		if (sent < sizeof(out) &&
		    (wait_for(from, POLLOUT, 0) & POLLOUT)) {
			n = send(from, out + sent, sizeof(out) - sent,
				 MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN) {
				*why = "send";
				return -1;
			}
			sent += n > 0 ? n : 0;
		}
		if (!(wait_for(to, POLLIN, sent < sizeof(out) ? 10 :
					   ms_left(end)) & POLLIN)) {
			if (now() < end)
				continue;
			*why = "data not through in time";
			return -1;
		}
		n = recv(to, in + got, sizeof(in) - got, MSG_DONTWAIT);
		if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
			*why = n ? "recv" : "recv: early EOF";
			return -1;
		}
		got += n > 0 ? n : 0;
	}
	if (memcmp(in, out, sizeof(in))) {
		*why = "data differ";
		return -1;
	}
	return 0;
}

/*
 * rping's client against its server on a port of our own, each bounded by
 * @secs: 0, 1 when rping is not installed, -1 with @why.
 */
static int rping_ok(double secs, const char **why)
{
	char port[16], match[64], count[] = "3";
	pid_t srv, cli;
	double end;

	if (system("command -v rping >/dev/null 2>&1"))
		return 1;
	snprintf(port, sizeof(port), "%d", 20000 + getpid() % 20000);
	srv = fork();
	if (!srv) {
		execlp("rping", "rping", "-s", "-a", test_addr(false), "-p",
		       port, "-C", count, (char *)NULL);
		_exit(127);
	}
	/* Its listener is up once rdma_cm lists it (five digits: no prefix). */
	snprintf(match, sizeof(match), "%s:%s", test_addr(false), port);
	end = now() + secs;
	while (rdma_res_count("cm_id", match) <= 0 && now() < end)
		usleep(20000);
	cli = fork();
	if (!cli) {
		execlp("rping", "rping", "-c", "-a", test_addr(false), "-p",
		       port, "-C", count, (char *)NULL);
		_exit(127);
	}
	if (wait_tool(cli, secs)) {
		*why = "rping's client failed or took too long";
		wait_tool(srv, 0);
		return -1;
	}
	if (wait_tool(srv, secs)) {
		*why = "rping's server failed or took too long";
		return -1;
	}
	return 0;
}

enum stall_call {
	STALL_SETSOCKOPT,	/* IP_OPTIONS: the IP layer copies under the lock */
	STALL_SEND,		/* afrdma's send copies under the lock */
	STALL_ATTACH_FILTER,	/* the core reads the program under the lock */
	STALL_LINGER,		/* 6.1's core copies all but an int under it */
};

/*
 * A socket call in a thread of its own, its source a userfaultfd page.
 * The page before it is an ordinary one.
 */
struct stall {
	int uffd;
	void *map;
	void *page;
	size_t pagelen;
	bool released;
	enum stall_call call;
	int fd;
	struct sock_fprog fprog;
	pthread_t thread;
	bool running;
	long ret;
	int err;
};

static void *stall_run(void *arg)
{
	struct stall *st = arg;

	switch (st->call) {
	case STALL_SETSOCKOPT:
		st->ret = setsockopt(st->fd, SOL_IP, IP_OPTIONS, st->page, 4);
		break;
	case STALL_SEND:
		st->ret = send(st->fd, st->page, 100, MSG_NOSIGNAL);
		break;
	case STALL_ATTACH_FILTER:
		/* The struct is ours; the program it points at is the page. */
		st->fprog.len = 1;
		st->fprog.filter = st->page;
		st->ret = setsockopt(st->fd, SOL_SOCKET, SO_ATTACH_FILTER,
				     &st->fprog, sizeof(st->fprog));
		break;
	case STALL_LINGER:
		/* l_onoff, read before the lock, on the page before; l_linger */
		st->ret = setsockopt(st->fd, SOL_SOCKET, SO_LINGER,
				     (char *)st->page - sizeof(int),
				     sizeof(struct linger));
		break;
	}
	st->err = errno;
	return NULL;
}

/* The page; 1 if userfaultfd cannot serve kernel faults here, -1 error. */
static int stall_init(struct stall *st)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

	memset(st, 0, sizeof(*st));
	st->pagelen = (size_t)sysconf(_SC_PAGESIZE);
	st->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (st->uffd < 0)
		return errno == ENOSYS || errno == EPERM ? 1 : -1;
	if (ioctl(st->uffd, UFFDIO_API, &api))
		return -1;
	st->map = mmap(NULL, 2 * st->pagelen, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (st->map == MAP_FAILED) {
		st->map = NULL;
		return -1;
	}
	/* Present: only the second page faults. */
	memset(st->map, 0, st->pagelen);
	st->page = (char *)st->map + st->pagelen;
	reg.range.start = (unsigned long)st->page;
	reg.range.len = st->pagelen;
	return ioctl(st->uffd, UFFDIO_REGISTER, &reg) ? -1 : 0;
}

/* Starts @call on @fd and waits for it to fault on the page: 0, or -1. */
static int stall_start(struct stall *st, enum stall_call call, int fd,
		       double secs)
{
	struct uffd_msg msg;

	st->call = call;
	st->fd = fd;
	if (pthread_create(&st->thread, NULL, stall_run, st))
		return -1;
	st->running = true;
	if (!(wait_for(st->uffd, POLLIN, (int)(secs * 1000)) & POLLIN) ||
	    read(st->uffd, &msg, sizeof(msg)) != sizeof(msg))
		return -1;
	return msg.event == UFFD_EVENT_PAGEFAULT &&
	       msg.arg.pagefault.address - (unsigned long)st->page <
			st->pagelen ? 0 : -1;
}

/*
 * Resolves the fault and waits for the call to return.  The page comes
 * zeroed, or for a filter with a program that takes every packet.
 */
static void stall_release(struct stall *st)
{
	struct uffdio_zeropage zp = {
		.range = { (unsigned long)st->page, st->pagelen },
	};
	struct sock_filter *prog = NULL;
	struct uffdio_copy cp = {
		.dst = (unsigned long)st->page,
		.len = st->pagelen,
	};

	if (st->page && !st->released) {
		st->released = true;
		if (st->call == STALL_ATTACH_FILTER)
			prog = calloc(1, st->pagelen);
		if (prog) {
			prog[0] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
							       0xffffffff);
			cp.src = (unsigned long)prog;
			ioctl(st->uffd, UFFDIO_COPY, &cp);
			free(prog);
		} else {
			ioctl(st->uffd, UFFDIO_ZEROPAGE, &zp);
		}
	}
	if (st->running) {
		st->running = false;
		pthread_join(st->thread, NULL);
	}
}

static void stall_fini(struct stall *st)
{
	stall_release(st);
	if (st->map)
		munmap(st->map, 2 * st->pagelen);
	if (st->uffd > 0)
		close(st->uffd);
}

/* A close in a thread: with a stalled host it could wait in the kernel. */
struct bg_close {
	int fd;
	pthread_t thread;
	bool running;
	int done;
};

static void *bg_close_run(void *arg)
{
	struct bg_close *c = arg;

	close(c->fd);
	__atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

FIXTURE(stall) {
	struct stall st;
	struct bg_close peer_close;
	int fds[6];
};

FIXTURE_VARIANT(stall) {
	enum stall_call call;
};

FIXTURE_VARIANT_ADD(stall, setsockopt) { .call = STALL_SETSOCKOPT };
FIXTURE_VARIANT_ADD(stall, send) { .call = STALL_SEND };

/* Both fixtures' setup: 0, or 1 when userfaultfd cannot stall the kernel */
static int stall_fixture_init(struct stall *st, int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	return stall_init(st);
}

/* After stall_fini(): whatever waits behind the stall needs it gone. */
static void stall_fixture_close(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

FIXTURE_SETUP(stall)
{
	int ret;

	memset(&self->peer_close, 0, sizeof(self->peer_close));
	ret = stall_fixture_init(&self->st, self->fds, ARRAY_SIZE(self->fds));
	if (ret > 0)
		SKIP(return, "userfaultfd cannot stall kernel copies here");
	ASSERT_EQ(0, ret) TH_LOG("userfaultfd: %s", strerror(errno));
}

FIXTURE_TEARDOWN(stall)
{
	/* The peer's close may wait behind the stall: join it after. */
	stall_fini(&self->st);
	if (self->peer_close.running)
		pthread_join(self->peer_close.thread, NULL);
	stall_fixture_close(self->fds, ARRAY_SIZE(self->fds));
}

/* A listener's calls stall where they copy: setsockopt only. */
FIXTURE(listener_stall) {
	struct stall st;
	int fds[6];
};

FIXTURE_VARIANT(listener_stall) {
	enum stall_call call;
	/* The listener's lock may be held: its accept waits for the stall. */
	bool locked;
};

FIXTURE_VARIANT_ADD(listener_stall, ip_options) {
	.call = STALL_SETSOCKOPT,
};

FIXTURE_VARIANT_ADD(listener_stall, attach_filter) {
	.call = STALL_ATTACH_FILTER,
	.locked = true,
};

FIXTURE_VARIANT_ADD(listener_stall, linger) {
	.call = STALL_LINGER,
	.locked = true,
};

FIXTURE_SETUP(listener_stall)
{
	int ret;

	ret = stall_fixture_init(&self->st, self->fds, ARRAY_SIZE(self->fds));
	if (ret > 0)
		SKIP(return, "userfaultfd cannot stall kernel copies here");
	ASSERT_EQ(0, ret) TH_LOG("userfaultfd: %s", strerror(errno));
}

FIXTURE_TEARDOWN(listener_stall)
{
	stall_fini(&self->st);
	stall_fixture_close(self->fds, ARRAY_SIZE(self->fds));
}

/* The harness's own timeout: all the bounds above, scaled, and slack */
#define TEST_S		300

TEST_F_TIMEOUT(stall, connected, TEST_S)
{
	int *lfd = &self->fds[0], *cfd = &self->fds[1], *sfd = &self->fds[2];
	int *lfd2 = &self->fds[3], *cfd2 = &self->fds[4], *sfd2 = &self->fds[5];
	const char *why = "";
	unsigned short port;
	int ret, rping;
	double end;
	char c;

	*lfd = rdma_listener(&port);
	ASSERT_LE(0, *lfd) TH_LOG("listener: %s", strerror(errno));
	ASSERT_EQ(0, rdma_pair(*lfd, port, now() + scale(CONNECT_S), cfd, sfd,
			       &why)) TH_LOG("first pair: %s: %s", why,
					     strerror(errno));
	*lfd2 = rdma_listener(&port);
	ASSERT_LE(0, *lfd2) TH_LOG("second listener: %s", strerror(errno));

	ASSERT_EQ(0, stall_start(&self->st, variant->call, *cfd,
				 scale(CONNECT_S)))
		TH_LOG("the call did not reach the page");

	/* The peer closes: a DISCONNECTED is due for the stalled socket. */
	self->peer_close.fd = *sfd;
	*sfd = -1;
	ASSERT_EQ(0, pthread_create(&self->peer_close.thread, NULL,
				    bg_close_run, &self->peer_close));
	self->peer_close.running = true;
	end = now() + scale(CLOSE_S);
	while (!__atomic_load_n(&self->peer_close.done, __ATOMIC_SEQ_CST) &&
	       now() < end)
		usleep(10000);
	EXPECT_TRUE(__atomic_load_n(&self->peer_close.done, __ATOMIC_SEQ_CST))
		TH_LOG("the peer's close did not return in time");

	/* Everyone else goes on. */
	end = now() + scale(CONNECT_S);
	ret = rdma_pair(*lfd2, port, end, cfd2, sfd2, &why);
	ASSERT_EQ(0, ret) TH_LOG("pair during the stall: %s: %s", why,
				 strerror(errno));
	ASSERT_EQ(0, xfer(*cfd2, *sfd2, end, &why)) TH_LOG("%s", why);
	ASSERT_EQ(0, xfer(*sfd2, *cfd2, end, &why)) TH_LOG("%s", why);
	rping = rping_ok(scale(RPING_S), &why);
	ASSERT_GE(0, rping) TH_LOG("during the stall: %s", why);

	/* Released, the call returns and the socket sees the close. */
	stall_release(&self->st);
	if (variant->call == STALL_SETSOCKOPT)
		EXPECT_EQ(0, self->st.ret) TH_LOG("setsockopt: %s",
						  strerror(self->st.err));
	ASSERT_TRUE(wait_for(*cfd, POLLIN | POLLRDHUP,
			     (int)(scale(CLOSE_S) * 1000)) & (POLLIN | POLLRDHUP))
		TH_LOG("the stalled socket never saw its peer's close");
	ret = (int)recv(*cfd, &c, 1, MSG_DONTWAIT);
	EXPECT_TRUE(ret == 0 || (ret < 0 && errno == ECONNRESET))
		TH_LOG("recv after the peer's close: %d, %s", ret,
		       strerror(errno));
	/* All else passed; what did not run is said, not counted as run. */
	if (rping > 0 && !_metadata->exit_code)
		SKIP(return, "rping (rdmacm-utils) is not installed");
}

/*
 * The accept queue of listener @fd, as /proc/net/afrdma lists it without
 * the listener's lock; -1 if it is not listed.
 */
static int listener_queue(int fd)
{
	unsigned long ino, want;
	char line[512], state[16];
	struct stat stb;
	unsigned int q;
	int ret = -1;
	FILE *f;

	if (fstat(fd, &stb))
		return -1;
	want = stb.st_ino;
	f = fopen("/proc/net/afrdma", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%15s %*s %*s %*s %u %*u %*u %lu", state, &q,
			   &ino) == 3 && ino == want &&
		    !strcmp(state, "LISTEN"))
			ret = (int)q;
	fclose(f);
	return ret;
}

TEST_F_TIMEOUT(listener_stall, setsockopt, TEST_S)
{
	int *lfd = &self->fds[0], *cfd = &self->fds[1], *sfd = &self->fds[2];
	int *lfd2 = &self->fds[3], *cfd2 = &self->fds[4], *sfd2 = &self->fds[5];
	unsigned short port, port2;
	const char *why = "";
	char msg[] = "early";
	char got[sizeof(msg)];
	int queued, rping;
	double end;

	*lfd = rdma_listener(&port);
	ASSERT_LE(0, *lfd) TH_LOG("listener: %s", strerror(errno));
	*lfd2 = rdma_listener(&port2);
	ASSERT_LE(0, *lfd2) TH_LOG("second listener: %s", strerror(errno));
	ASSERT_EQ(0, stall_start(&self->st, variant->call, *lfd,
				 scale(CONNECT_S)))
		TH_LOG("the call did not reach the page");

	end = now() + scale(CONNECT_S);
	if (!variant->locked) {
		ASSERT_EQ(0, rdma_pair(*lfd, port, end, cfd, sfd, &why))
			TH_LOG("connect to the stalled listener: %s: %s", why,
			       strerror(errno));
		ASSERT_EQ(0, xfer(*cfd, *sfd, end, &why)) TH_LOG("%s", why);
		stall_release(&self->st);
		EXPECT_EQ(0, self->st.ret) TH_LOG("setsockopt: %s",
						  strerror(self->st.err));
		return;
	}

	/*
	 * Neither poll() nor accept() on the listener: they would wait for
	 * its lock.  The connect completes, and the connection is queued,
	 * without it; data sent now waits in the new socket.
	 */
	ASSERT_EQ(0, rdma_connect_by(port, end, cfd, &why))
		TH_LOG("connect to the stalled listener: %s: %s", why,
		       strerror(errno));
	ASSERT_EQ((ssize_t)sizeof(msg), send(*cfd, msg, sizeof(msg),
					     MSG_DONTWAIT | MSG_NOSIGNAL))
		TH_LOG("send before the accept: %s", strerror(errno));
	while ((queued = listener_queue(*lfd)) < 1 && now() < end)
		usleep(10000);
	ASSERT_EQ(1, queued) TH_LOG("the accept queue of the stalled listener");

	/* Everyone else goes on. */
	end = now() + scale(CONNECT_S);
	ASSERT_EQ(0, rdma_pair(*lfd2, port2, end, cfd2, sfd2, &why))
		TH_LOG("pair during the stall: %s: %s", why, strerror(errno));
	ASSERT_EQ(0, xfer(*cfd2, *sfd2, end, &why)) TH_LOG("%s", why);
	rping = rping_ok(scale(RPING_S), &why);
	ASSERT_GE(0, rping) TH_LOG("during the stall: %s", why);

	/* Released, the listener hands over the connection and its data. */
	stall_release(&self->st);
	EXPECT_EQ(0, self->st.ret) TH_LOG("setsockopt: %s",
					  strerror(self->st.err));
	end = now() + scale(CONNECT_S);
	ASSERT_TRUE(wait_for(*lfd, POLLIN, ms_left(end)) & POLLIN)
		TH_LOG("nothing to accept once released");
	*sfd = accept4(*lfd, NULL, NULL, SOCK_CLOEXEC);
	ASSERT_LE(0, *sfd) TH_LOG("accept: %s", strerror(errno));
	fcntl(*cfd, F_SETFL, 0);
	ASSERT_TRUE(wait_for(*sfd, POLLIN, ms_left(end)) & POLLIN)
		TH_LOG("the data sent before the accept never came");
	ASSERT_EQ((ssize_t)sizeof(got), recv(*sfd, got, sizeof(got),
					     MSG_WAITALL));
	EXPECT_EQ(0, memcmp(got, msg, sizeof(msg)));
	ASSERT_EQ(0, xfer(*cfd, *sfd, end, &why)) TH_LOG("%s", why);
	ASSERT_EQ(0, xfer(*sfd, *cfd, end, &why)) TH_LOG("%s", why);
	if (rping > 0 && !_metadata->exit_code)
		SKIP(return, "rping (rdmacm-utils) is not installed");
}

/*
 * An accept() that waits in modprobe.  The congestion control is a module
 * that is not loaded when the accept replays it, so that TCP asks for it
 * (with CAP_NET_ADMIN, which the listener's owner has here).
 */
static const char *const cc_modules[] = {
	"highspeed", "scalable", "hybla", "veno", "westwood", "lp", "yeah",
	"illinois", "htcp", "vegas",
};

/* accept() on @fd, or connect() of @fd to @ss if @sslen, in a thread */
struct bg_call {
	int fd;
	struct sockaddr_storage ss;
	socklen_t sslen;
	pthread_t thread;
	bool running;
	bool done;
	int ret;
	int err;
};

static void *bg_call_run(void *arg)
{
	struct bg_call *a = arg;
	int ret;

	if (a->sslen)
		ret = connect(a->fd, (struct sockaddr *)&a->ss, a->sslen);
	else
		ret = accept4(a->fd, NULL, NULL, SOCK_CLOEXEC);
	a->err = errno;
	a->ret = ret;
	__atomic_store_n(&a->done, true, __ATOMIC_RELEASE);
	return NULL;
}

FIXTURE(modstall) {
	char dir[64];
	char modprobe[256];
	const char *cc;
	struct bg_call call;
	int fb_timeout;
	int fds[5];
};

/* kernel.modprobe: @buf gets it, or it is set to @set.  0 or -1. */
static int modprobe_path(char *buf, size_t len, const char *set)
{
	FILE *f = fopen("/proc/sys/kernel/modprobe", set ? "w" : "r");
	int ret = 0;

	if (!f)
		return -1;
	if (set)
		ret = fputs(set, f) < 0 ? -1 : 0;
	else if (!fgets(buf, (int)len, f))
		ret = -1;
	else
		buf[strcspn(buf, "\n")] = '\0';
	if (fclose(f))
		ret = -1;
	return ret;
}

/* Lets the waiting modprobe go on, and waits for the call. */
static void modstall_release(FIXTURE_DATA(modstall) *self)
{
	char path[96];
	int fd;

	if (!self->dir[0])
		return;
	snprintf(path, sizeof(path), "%s/go", self->dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	if (self->call.running) {
		self->call.running = false;
		pthread_join(self->call.thread, NULL);
	}
}

FIXTURE_SETUP(modstall)
{
	char cmd[256];
	unsigned int i;

	memset(&self->call, 0, sizeof(self->call));
	self->call.ret = -1;
	for (i = 0; i < ARRAY_SIZE(self->fds); i++)
		self->fds[i] = -1;
	self->dir[0] = '\0';
	self->modprobe[0] = '\0';
	self->cc = NULL;
	self->fb_timeout = -1;
	if (modprobe_path(self->modprobe, sizeof(self->modprobe), NULL) ||
	    !self->modprobe[0])
		SKIP(return, "no kernel.modprobe to stand in for");
	/* One that is a module and can be unloaded now */
	for (i = 0; i < ARRAY_SIZE(cc_modules) && !self->cc; i++) {
		snprintf(cmd, sizeof(cmd), "modinfo -F filename tcp_%s 2>/dev/null | grep -q '[.]ko'",
			 cc_modules[i]);
		if (system(cmd))
			continue;
		snprintf(cmd, sizeof(cmd), "! test -e /sys/module/tcp_%s || rmmod tcp_%s",
			 cc_modules[i], cc_modules[i]);
		if (!system(cmd))
			self->cc = cc_modules[i];
	}
	if (!self->cc)
		SKIP(return, "no TCP congestion control module to load (a kernel with them built in, as the debug kernel, loads none at accept or fallback)");
}

FIXTURE_TEARDOWN(modstall)
{
	char path[96];
	unsigned int i;

	modstall_release(self);
	if (self->dir[0]) {
		modprobe_path(NULL, 0, self->modprobe);
		snprintf(path, sizeof(path), "rm -rf %s", self->dir);
		if (system(path))
			ksft_print_msg("could not remove %s\n", self->dir);
	}
	if (self->fb_timeout >= 0)
		afrdma_sysctl("fallback_timeout_ms", self->fb_timeout);
	if (!self->call.sslen && self->call.ret >= 0)
		close(self->call.ret);
	for (i = 0; i < ARRAY_SIZE(self->fds); i++)
		if (self->fds[i] >= 0)
			close(self->fds[i]);
}

/*
 * Sets @fd's TCP_CONGESTION to the fixture's module, which loads it once,
 * unloads it again, and makes kernel.modprobe a script that waits for
 * DIR/go (a minute at most), then runs the real one.
 */
static void modstall_arm(struct __test_metadata *_metadata,
			 FIXTURE_DATA(modstall) *self, int fd)
{
	char path[96];
	FILE *f;

	ASSERT_EQ(0, setsockopt(fd, SOL_TCP, TCP_CONGESTION, self->cc,
				strlen(self->cc)))
		TH_LOG("TCP_CONGESTION %s: %s", self->cc, strerror(errno));
	snprintf(path, sizeof(path), "rmmod tcp_%s", self->cc);
	ASSERT_EQ(0, system(path)) TH_LOG("%s failed", path);

	snprintf(self->dir, sizeof(self->dir), "/tmp/afrdma-modstall.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir)) TH_LOG("mkdtemp: %s",
						   strerror(errno));
	snprintf(path, sizeof(path), "%s/modprobe", self->dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "#!/bin/sh\ntouch %s/started\nn=0\n"
		"while [ ! -e %s/go ] && [ $n -lt 1200 ]; do\n"
		"\tsleep 0.05\n\tn=$((n + 1))\ndone\nexec %s \"$@\"\n",
		self->dir, self->dir, self->modprobe);
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, chmod(path, 0755));
	ASSERT_EQ(0, modprobe_path(NULL, 0, path));
}

/* Starts the fixture's call, and waits for it to ask for the module. */
static void modstall_call(struct __test_metadata *_metadata,
			  FIXTURE_DATA(modstall) *self, const char *what)
{
	char path[96];
	double end;

	ASSERT_EQ(0, pthread_create(&self->call.thread, NULL, bg_call_run,
				    &self->call));
	self->call.running = true;
	snprintf(path, sizeof(path), "%s/started", self->dir);
	end = now() + scale(CONNECT_S);
	while (access(path, F_OK) && now() < end)
		usleep(10000);
	ASSERT_EQ(0, access(path, F_OK))
		TH_LOG("the %s never asked for tcp_%s", what, self->cc);
}

/* What @fd's TCP side got: the transport and the congestion control. */
static void modstall_check(struct __test_metadata *_metadata,
			   FIXTURE_DATA(modstall) *self, int fd)
{
	char cc[16] = "";
	socklen_t len;
	int val;

	len = sizeof(val);
	ASSERT_EQ(0, getsockopt(fd, SOL_RDMA, AFRDMA_TRANSPORT, &val, &len));
	EXPECT_EQ(AFRDMA_TRANSPORT_TCP, val);
	len = sizeof(cc) - 1;
	ASSERT_EQ(0, getsockopt(fd, SOL_TCP, TCP_CONGESTION, cc, &len));
	EXPECT_STREQ(self->cc, cc);
}

TEST_F_TIMEOUT(modstall, accept, TEST_S)
{
	int *lfd = &self->fds[0], *tfd = &self->fds[1], *cfd = &self->fds[2];
	int *sfd = &self->fds[3];
	struct sockaddr_storage ss;
	const char *why = "";
	int one = 1, fd, val;
	unsigned short port;
	socklen_t len;
	char c = 'x';
	double end;

	/* A listener that serves TCP clients too */
	fd = socket(afrdma_family_nr(), SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, fd) TH_LOG("socket: %s", strerror(errno));
	ASSERT_EQ(0, setsockopt(fd, SOL_RDMA, AFRDMA_FALLBACK, &one,
				sizeof(one)));
	*lfd = listen_any_port(fd, test_addr(false), 8, &port);
	ASSERT_LE(0, *lfd) TH_LOG("listener: %s", strerror(errno));
	modstall_arm(_metadata, self, *lfd);

	/* A plain TCP client, and an accept that replays the option */
	len = afrdma_make_addr(&ss, test_addr(false), port);
	*tfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, *tfd);
	ASSERT_EQ(0, connect(*tfd, (struct sockaddr *)&ss, len))
		TH_LOG("TCP connect: %s", strerror(errno));
	self->call.fd = *lfd;
	modstall_call(_metadata, self, "accept");

	/* Everyone else goes on: an RDMA client of the same listener too. */
	end = now() + scale(CONNECT_S);
	ASSERT_EQ(0, rdma_pair(*lfd, port, end, cfd, sfd, &why))
		TH_LOG("connect while accept() loads a module: %s: %s", why,
		       strerror(errno));
	ASSERT_EQ(0, xfer(*cfd, *sfd, end, &why)) TH_LOG("%s", why);
	len = sizeof(val);
	ASSERT_EQ(0, getsockopt(*sfd, SOL_RDMA, AFRDMA_TRANSPORT, &val, &len));
	EXPECT_EQ(AFRDMA_TRANSPORT_RDMA, val);
	EXPECT_FALSE(__atomic_load_n(&self->call.done, __ATOMIC_ACQUIRE))
		TH_LOG("the accept returned before modprobe was let go");

	/* Released, the TCP client's socket has the listener's option. */
	modstall_release(self);
	ASSERT_LE(0, self->call.ret) TH_LOG("accept: %s",
					    strerror(self->call.err));
	modstall_check(_metadata, self, self->call.ret);
	ASSERT_EQ(1, send(*tfd, &c, 1, 0));
	ASSERT_EQ(1, recv(self->call.ret, &c, 1, MSG_WAITALL));
}

/*
 * A connect that falls back to TCP when the peer's CM refuses RDMA: the
 * REJ reaches afrdma's handler on ib_cm's work queue, which every RDMA
 * connection of the host needs, and the fallback replays the socket's
 * TCP_CONGESTION, which waits in modprobe.  That replay ran in the handler,
 * and the new pair below never connected while it waited.
 */
TEST_F_TIMEOUT(modstall, connect, TEST_S)
{
	int *tl = &self->fds[0], *fd = &self->fds[1], *lfd = &self->fds[2];
	int *cfd = &self->fds[3], *sfd = &self->fds[4];
	const char *why = "";
	unsigned short port;
	int one = 1, val, ts;
	socklen_t len;
	char c = 'x';
	double end;

	/* The REJ, not the fallback timer, must decide it (at most 60 s). */
	self->fb_timeout = afrdma_sysctl("fallback_timeout_ms", -1);
	ASSERT_LE(0, self->fb_timeout);
	val = scale(CONNECT_S) < 60 ? (int)(scale(CONNECT_S) * 1000) : 60000;
	ASSERT_EQ(val, afrdma_sysctl("fallback_timeout_ms", val));

	/* A plain TCP listener: no afrdma listener on its port */
	*tl = tcp_listen_on(test_addr(false), &port);
	ASSERT_LE(0, *tl) TH_LOG("TCP listener: %s", strerror(errno));
	*fd = socket(afrdma_family_nr(), SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, *fd) TH_LOG("socket: %s", strerror(errno));
	ASSERT_EQ(0, setsockopt(*fd, SOL_RDMA, AFRDMA_FALLBACK, &one,
				sizeof(one)));
	modstall_arm(_metadata, self, *fd);
	self->call.fd = *fd;
	self->call.sslen = afrdma_make_addr(&self->call.ss, test_addr(false),
					    port);
	modstall_call(_metadata, self, "fallback");

	/* Everyone else goes on: a new RDMA pair connects. */
	*lfd = rdma_listener(&port);
	ASSERT_LE(0, *lfd) TH_LOG("listener: %s", strerror(errno));
	end = now() + scale(CONNECT_S);
	ASSERT_EQ(0, rdma_pair(*lfd, port, end, cfd, sfd, &why))
		TH_LOG("connect while a fallback loads a module: %s: %s", why,
		       strerror(errno));
	ASSERT_EQ(0, xfer(*cfd, *sfd, end, &why)) TH_LOG("%s", why);
	/* Its result is not visible before the options are in effect. */
	EXPECT_FALSE(__atomic_load_n(&self->call.done, __ATOMIC_ACQUIRE))
		TH_LOG("the connect returned before modprobe was let go");

	/* Released, the connect is on TCP, with its congestion control. */
	modstall_release(self);
	ASSERT_EQ(0, self->call.ret) TH_LOG("connect: %s",
					    strerror(self->call.err));
	modstall_check(_metadata, self, *fd);
	len = sizeof(val);
	ASSERT_EQ(0, getsockopt(*fd, SOL_RDMA, AFRDMA_FALLBACK_REASON, &val,
				&len));
	EXPECT_EQ(AFRDMA_FB_REJECTED, val);
	ts = accept(*tl, NULL, NULL);
	ASSERT_LE(0, ts);
	EXPECT_EQ(1, send(*fd, &c, 1, 0));
	EXPECT_EQ(1, recv(ts, &c, 1, MSG_WAITALL));
	close(ts);
}

TEST_HARNESS_MAIN
