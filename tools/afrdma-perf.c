// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma-perf: afrdma's own load tool.  A server and a client that move a
 * checksummed stream, echo, or ping-pong over AF_RDMA, IPPROTO_RDMA or
 * plain TCP (and SMC-R, the in-tree peer), so the same program measures
 * them all.
 *
 *   afrdma-perf server [-t T] [-a ADDR] [-p PORT] [-1]
 *   afrdma-perf client [-t T] -a ADDR -p PORT [-m MODE] [-s SIZE] [-n BYTES]
 *                      [-i ITERS] [-d SECS] [-P STREAMS] [-z] [-j] [-v]
 *
 * Modes connect and hold serve make bench: the connection setup rate, and
 * idle connections held open while memory is read from outside.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "lib/afrdma_sock.h"

#define PERF_MAGIC	0x41525046u	/* "ARPF" */
#define PATTERN_LEN	(1024 * 1024 + 61)	/* odd: the pattern drifts */

enum perf_mode { MODE_STREAM = 1, MODE_ECHO, MODE_PINGPONG, MODE_CONNECT, MODE_HOLD };

/* The client's request, first on every connection (host byte order). */
struct perf_req {
	uint32_t	magic;
	uint32_t	mode;
	uint32_t	size;
	uint32_t	pad;
};

/* The server's reply to a stream: what it received. */
struct perf_reply {
	uint64_t	bytes;
	uint64_t	csum;
};

struct perf_opts {
	enum afrdma_transport	transport;
	const char		*addr;
	unsigned short		port;
	enum perf_mode		mode;
	size_t			size;
	unsigned long long	bytes;
	unsigned long		iters;
	double			duration;	/* seconds, 0: by -n or -i */
	int			streams;
	bool			once;
	bool			json;
	bool			verbose;
	bool			zerocopy;	/* stream: MSG_ZEROCOPY sends */
};

struct perf_result {
	int			err;		/* 0 or an errno */
	const char		*what;
	unsigned long long	bytes;
	unsigned long		conns;		/* connect mode */
	double			secs;
	double			*lat;		/* one-way microseconds */
	unsigned long		nlat;
	bool			csum_ok;
};

static unsigned char *pattern;

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void make_pattern(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t i;

	pattern = malloc(PATTERN_LEN + 16 * 1024 * 1024);
	if (!pattern) {
		perror("malloc");
		exit(1);
	}
	/*
	 * splitmix64, extended so any offset has SIZE bytes after it.  A word
	 * at a time: byte by byte this took about a second under QEMU TCG,
	 * which skewed short benchmark runs.  Only the client reads it, so
	 * the host's byte order does not matter.
	 */
	for (i = 0; i < PATTERN_LEN + 16 * 1024 * 1024; i += 8) {
		x += 0x9e3779b97f4a7c15ULL;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
		x ^= x >> 31;
		memcpy(pattern + i, &x, 8);
	}
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = recv(fd, (char *)buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return done ? -EPIPE : 0;
		done += n;
	}
	return 1;
}

static int write_full_flags(int fd, const void *buf, size_t len, int flags)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = send(fd, (const char *)buf + done, len - done,
			 MSG_NOSIGNAL | flags);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	return write_full_flags(fd, buf, len, 0);
}

/*
 * -z: MSG_ZEROCOPY from the (never rewritten) pattern.  SO_ZEROCOPY, or
 * AFRDMA_ZEROCOPY where SOL_SOCKET refuses it (6.1).
 */
static int zerocopy_on(int fd)
{
	int one = 1;

	if (!setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		return 0;
	return setsockopt(fd, SOL_RDMA, AFRDMA_ZEROCOPY, &one, sizeof(one));
}

/* Server side of one connection. */
static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct perf_reply reply = {};
	struct afrdma_csum csum = {};
	struct perf_req req;
	char *buf = NULL;
	ssize_t n;
	int ret;

	if (read_full(fd, &req, sizeof(req)) != 1 || req.magic != PERF_MAGIC ||
	    !req.size || req.size > 16 * 1024 * 1024) {
		fprintf(stderr, "afrdma-perf: server: no valid request\n");
		goto out;
	}
	buf = malloc(req.size);
	if (!buf)
		goto out;

	switch (req.mode) {
	case MODE_STREAM:
		for (;;) {
			n = recv(fd, buf, req.size, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			afrdma_csum_update(&csum, buf, n);
		}
		if (n < 0) {
			/* Said, so that a client's missing reply is explained. */
			perror("afrdma-perf: server: recv");
			break;
		}
		reply.bytes = csum.bytes;
		reply.csum = afrdma_csum_final(&csum);
		write_full(fd, &reply, sizeof(reply));
		break;
	case MODE_ECHO:
		for (;;) {
			n = recv(fd, buf, req.size, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || write_full(fd, buf, n))
				break;
		}
		break;
	case MODE_PINGPONG:
		while ((ret = read_full(fd, buf, req.size)) == 1)
			if (write_full(fd, buf, req.size))
				break;
		break;
	case MODE_CONNECT:	/* closing is the answer */
		break;
	case MODE_HOLD:		/* idle until the client goes */
		do
			n = recv(fd, buf, req.size, 0);
		while (n > 0 || (n < 0 && errno == EINTR));
		break;
	}
out:
	free(buf);
	close(fd);
	return NULL;
}

static int run_server(const struct perf_opts *o)
{
	unsigned short port;
	int lfd, fd;

	lfd = afrdma_listen_on(o->transport, o->addr, o->port, 1024, &port);
	if (lfd < 0) {
		fprintf(stderr, "afrdma-perf: listen on %s:%u: %s\n", o->addr,
			o->port, strerror(errno));
		return 1;
	}
	printf("listening on %s port %u (%s)\n", o->addr, port,
	       afrdma_transport_name(o->transport));
	fflush(stdout);

	for (;;) {
		pthread_t t;

		fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("afrdma-perf: accept");
			return 1;
		}
		if (o->once) {
			serve_conn((void *)(intptr_t)fd);
			break;
		}
		if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd)) {
			close(fd);
			continue;
		}
		pthread_detach(t);
	}
	close(lfd);
	return 0;
}

static int client_stream(int fd, const struct perf_opts *o,
			 struct perf_result *r)
{
	struct afrdma_csum csum = {};
	unsigned long long left = o->duration ? ~0ULL : o->bytes;
	struct perf_reply reply;
	size_t off = 0;
	unsigned int n = 0;
	int flags = 0;
	double t0;
	int err;

	if (o->zerocopy) {
		if (zerocopy_on(fd)) {
			r->what = "SO_ZEROCOPY";
			return errno;
		}
		flags = MSG_ZEROCOPY;
	}
	t0 = now_sec();
	while (left) {
		size_t chunk = left < o->size ? left : o->size;

		/* the clock every 64 small sends, every large one */
		if (o->duration && (!(++n & 63) || o->size >= 4096) &&
		    now_sec() - t0 >= o->duration)
			break;

		err = write_full_flags(fd, pattern + off, chunk, flags);
		if (err) {
			r->what = "send";
			return -err;
		}
		if (flags)
			afrdma_drain_errqueue(fd);
		afrdma_csum_update(&csum, pattern + off, chunk);
		off = (off + chunk) % PATTERN_LEN;
		left -= chunk;
	}
	if (shutdown(fd, SHUT_WR)) {
		r->what = "shutdown";
		return errno;
	}
	err = read_full(fd, &reply, sizeof(reply));
	if (err != 1) {
		r->what = "reply";
		return err ? -err : EPIPE;
	}
	r->secs = now_sec() - t0;
	r->bytes = csum.bytes;
	r->csum_ok = reply.bytes == csum.bytes &&
		     reply.csum == afrdma_csum_final(&csum);
	if (!r->csum_ok) {
		fprintf(stderr, "afrdma-perf: checksum mismatch: sent %llu bytes %016llx, server got %llu bytes %016llx\n",
			csum.bytes, afrdma_csum_final(&csum),
			(unsigned long long)reply.bytes,
			(unsigned long long)reply.csum);
		r->what = "checksum";
		return EIO;
	}
	return 0;
}

static int client_echo(int fd, const struct perf_opts *o, struct perf_result *r,
		       bool pingpong)
{
	char *back = malloc(o->size);
	size_t off = 0;
	unsigned long i;
	double t0, t;
	int err = 0;

	r->lat = calloc(o->iters, sizeof(*r->lat));
	if (!back || !r->lat)
		return ENOMEM;
	t0 = now_sec();
	for (i = 0; i < o->iters; i++) {
		t = now_sec();
		err = write_full(fd, pattern + off, o->size);
		if (err) {
			r->what = "send";
			err = -err;
			break;
		}
		err = read_full(fd, back, o->size);
		if (err != 1) {
			r->what = "recv";
			err = err ? -err : EPIPE;
			break;
		}
		err = 0;
		if (memcmp(back, pattern + off, o->size)) {
			r->what = pingpong ? "pingpong data" : "echo data";
			err = EIO;
			break;
		}
		r->lat[r->nlat++] = (now_sec() - t) * 1e6 / 2;
		r->bytes += o->size;
		off = (off + o->size) % PATTERN_LEN;
		if (o->duration && now_sec() - t0 >= o->duration)
			break;
	}
	r->secs = now_sec() - t0;
	r->csum_ok = !err;
	free(back);
	return err;
}

/*
 * -v: say what carries a connected socket, so a test can tell RDMA from
 * the TCP fallback (AFRDMA_TRANSPORT; a plain TCP socket has no SOL_RDMA).
 */
static void print_carrier(int fd)
{
	int t = -1;
	socklen_t len = sizeof(t);

	if (getsockopt(fd, SOL_RDMA, AFRDMA_TRANSPORT, &t, &len))
		t = -1;
	printf("carried by %s\n", t == AFRDMA_TRANSPORT_RDMA ? "rdma" :
	       t == AFRDMA_TRANSPORT_TCP ? "tcp-fallback" :
	       t == AFRDMA_TRANSPORT_NONE ? "nothing" : "plain-tcp");
	fflush(stdout);
}

/*
 * Connections per second: connect, ask for nothing, and wait for the
 * server's close, so each counts a full setup and teardown (as netperf's
 * TCP_CRR does, without the data).
 */
static int client_connect(const struct perf_opts *o, struct perf_result *r)
{
	struct perf_req req = {
		.magic = PERF_MAGIC, .mode = MODE_CONNECT, .size = 1,
	};
	double t0 = now_sec();
	char c;
	int fd, err;

	while (r->conns < o->iters &&
	       (!o->duration || now_sec() - t0 < o->duration)) {
		fd = afrdma_connect_to(o->transport, o->addr, o->port);
		if (fd < 0) {
			r->what = "connect";
			return errno;
		}
		err = write_full(fd, &req, sizeof(req));
		if (!err && recv(fd, &c, 1, 0) < 0)
			err = -errno;
		close(fd);
		if (err) {
			r->what = "connect exchange";
			return -err;
		}
		r->conns++;
	}
	r->secs = now_sec() - t0;
	r->csum_ok = true;
	return 0;
}

/*
 * Open ITERS idle connections, say so on stdout, keep them for -d seconds
 * (until killed without -d), then close them: the caller reads the
 * memory they cost meanwhile.
 */
static int client_hold(const struct perf_opts *o)
{
	struct perf_req req = {
		.magic = PERF_MAGIC, .mode = MODE_HOLD, .size = 64,
	};
	int *fds = calloc(o->iters, sizeof(*fds));
	unsigned long i, n = 0;
	int err = 0;

	if (!fds)
		return 1;
	for (i = 0; i < o->iters; i++) {
		fds[n] = afrdma_connect_to(o->transport, o->addr, o->port);
		if (fds[n] < 0 || write_full(fds[n], &req, sizeof(req))) {
			err = errno;
			if (fds[n] >= 0)
				close(fds[n]);
			break;
		}
		n++;
	}
	if (err)
		fprintf(stderr, "afrdma-perf: hold: connection %lu: %s\n", n + 1,
			strerror(err));
	else
		printf("holding %lu connections\n", n);
	fflush(stdout);
	if (!err) {
		if (o->duration)
			usleep(o->duration * 1e6);
		else
			pause();
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return err ? 1 : 0;
}

struct client_arg {
	const struct perf_opts	*o;
	struct perf_result	r;
};

static void *client_thread(void *p)
{
	struct client_arg *a = p;
	const struct perf_opts *o = a->o;
	struct perf_req req = {
		.magic = PERF_MAGIC, .mode = o->mode, .size = o->size,
	};
	int fd;

	fd = afrdma_connect_to(o->transport, o->addr, o->port);
	if (fd < 0) {
		a->r.err = errno;
		a->r.what = "connect";
		return NULL;
	}
	if (o->verbose)
		print_carrier(fd);
	a->r.err = write_full(fd, &req, sizeof(req));
	if (a->r.err) {
		a->r.err = -a->r.err;
		a->r.what = "send";
	} else if (o->mode == MODE_STREAM) {
		a->r.err = client_stream(fd, o, &a->r);
	} else if (o->mode == MODE_CONNECT) {
		close(fd);
		fd = -1;
		a->r.err = client_connect(o, &a->r);
	} else {
		a->r.err = client_echo(fd, o, &a->r, o->mode == MODE_PINGPONG);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const char *mode_name(enum perf_mode m)
{
	static const char *const names[] = {
		[MODE_STREAM] = "stream", [MODE_ECHO] = "echo",
		[MODE_PINGPONG] = "pingpong", [MODE_CONNECT] = "connect",
		[MODE_HOLD] = "hold",
	};

	return names[m];
}

static int run_client(const struct perf_opts *o)
{
	struct client_arg *args = calloc(o->streams, sizeof(*args));
	pthread_t *threads = calloc(o->streams, sizeof(*threads));
	unsigned long long bytes = 0, conns = 0;
	double secs = 0, *lat = NULL, p50 = 0, p99 = 0;
	unsigned long nlat = 0;
	int i, failed = 0;

	if (!args || !threads)
		return 1;
	for (i = 0; i < o->streams; i++) {
		args[i].o = o;
		if (pthread_create(&threads[i], NULL, client_thread, &args[i])) {
			perror("pthread_create");
			return 1;
		}
	}
	for (i = 0; i < o->streams; i++) {
		struct perf_result *r = &args[i].r;

		pthread_join(threads[i], NULL);
		if (r->err) {
			fprintf(stderr, "afrdma-perf: stream %d: %s: %s\n", i,
				r->what, strerror(r->err));
			failed++;
			continue;
		}
		bytes += r->bytes;
		conns += r->conns;
		if (r->secs > secs)
			secs = r->secs;
		lat = realloc(lat, (nlat + r->nlat) * sizeof(*lat));
		if (r->nlat && !lat)
			return 1;
		memcpy(lat + nlat, r->lat, r->nlat * sizeof(*lat));
		nlat += r->nlat;
		free(r->lat);
	}
	if (nlat) {
		qsort(lat, nlat, sizeof(*lat), cmp_double);
		p50 = lat[nlat / 2];
		p99 = lat[(nlat * 99) / 100];
	}
	if (o->json) {
		printf("{\"transport\":\"%s\",\"mode\":\"%s\",\"size\":%zu,\"streams\":%d,"
		       "\"bytes\":%llu,\"seconds\":%.6f,\"mbps\":%.3f,\"msgs_per_sec\":%.1f,"
		       "\"lat_p50_us\":%.3f,\"lat_p99_us\":%.3f,\"conns_per_sec\":%.1f,"
		       "\"failed\":%d}\n",
		       afrdma_transport_name(o->transport), mode_name(o->mode), o->size,
		       o->streams, bytes, secs, secs ? bytes * 8 / secs / 1e6 : 0,
		       secs ? bytes / (double)o->size / secs : 0, p50, p99,
		       secs ? conns / secs : 0, failed);
	} else {
		printf("%s %s size=%zu streams=%d: %llu bytes in %.3f s, %.1f Mbit/s, %.0f msg/s",
		       afrdma_transport_name(o->transport), mode_name(o->mode), o->size,
		       o->streams, bytes, secs, secs ? bytes * 8 / secs / 1e6 : 0,
		       secs ? bytes / (double)o->size / secs : 0);
		if (nlat)
			printf(", one-way p50 %.1f us p99 %.1f us", p50, p99);
		if (o->mode == MODE_CONNECT)
			printf(", %llu connections, %.1f conn/s", conns,
			       secs ? conns / secs : 0);
		printf("%s\n", o->mode == MODE_STREAM && !failed ?
		       ", checksums match" : "");
	}
	free(lat);
	free(args);
	free(threads);
	return failed ? 1 : 0;
}

static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	case '\0': break;
	default:
		fprintf(stderr, "afrdma-perf: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: afrdma-perf server [-t T] [-a ADDR] [-p PORT] [-1]\n"
		"       afrdma-perf client [-t T] -a ADDR -p PORT [-m MODE] [-s SIZE]\n"
		"                          [-n BYTES] [-i ITERS] [-d SECS] [-P STREAMS] [-z] [-j] [-v]\n"
		"\n"
		"  -t T        transport: af_rdma (default), ipproto_rdma, tcp, or smc\n"
		"              (SMC-R: IPPROTO_SMC, or AF_SMC where that is missing)\n"
		"  -a ADDR     numeric IPv4 or IPv6 address (server default 0.0.0.0)\n"
		"  -p PORT     port (server default 0: any, printed)\n"
		"  -1          server: serve one connection, then exit\n"
		"  -m MODE     stream (default; checksummed), echo, pingpong, connect\n"
		"              (setups per second) or hold (-i idle connections)\n"
		"  -s SIZE     bytes per send (default 64K; k, M, G suffixes)\n"
		"  -n BYTES    stream: bytes per stream (default 64M)\n"
		"  -i ITERS    echo and pingpong: round trips (default 1000); connect:\n"
		"              connections per stream; hold: connections\n"
		"  -d SECS     stream, echo, pingpong, connect: stop after SECS (as\n"
		"              well as -i); hold: keep them SECS (default: until killed)\n"
		"  -P STREAMS  parallel connections, one thread each (default 1)\n"
		"  -z          stream: send with MSG_ZEROCOPY (SO_ZEROCOPY set)\n"
		"  -j          one JSON object instead of a line of text\n"
		"  -v          client: print what carries each connection once it is\n"
		"              up (\"carried by rdma\", \"tcp-fallback\" or \"plain-tcp\")\n");
}

int main(int argc, char **argv)
{
	struct perf_opts o = {
		.transport = AFRDMA_T_FAMILY, .addr = NULL, .mode = MODE_STREAM,
		.size = 64 * 1024, .bytes = 64ULL << 20, .iters = 1000,
		.streams = 1,
	};
	bool server;
	int c;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	server = !strcmp(argv[1], "server");
	if (!server && strcmp(argv[1], "client")) {
		usage(stderr);
		return 2;
	}
	optind = 2;
	while ((c = getopt(argc, argv, "t:a:p:1m:s:n:i:d:P:zjvh")) != -1) {
		switch (c) {
		case 't':
			if (afrdma_parse_transport(optarg, &o.transport)) {
				fprintf(stderr, "afrdma-perf: bad transport '%s'\n", optarg);
				return 2;
			}
			break;
		case 'a': o.addr = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case '1': o.once = true; break;
		case 'm':
			if (!strcmp(optarg, "stream"))
				o.mode = MODE_STREAM;
			else if (!strcmp(optarg, "echo"))
				o.mode = MODE_ECHO;
			else if (!strcmp(optarg, "pingpong"))
				o.mode = MODE_PINGPONG;
			else if (!strcmp(optarg, "connect"))
				o.mode = MODE_CONNECT;
			else if (!strcmp(optarg, "hold"))
				o.mode = MODE_HOLD;
			else {
				fprintf(stderr, "afrdma-perf: bad mode '%s'\n", optarg);
				return 2;
			}
			break;
		case 's': o.size = parse_size(optarg); break;
		case 'n': o.bytes = parse_size(optarg); break;
		case 'i': o.iters = strtoul(optarg, NULL, 0); break;
		case 'd': o.duration = atof(optarg); break;
		case 'P': o.streams = atoi(optarg); break;
		case 'j': o.json = true; break;
		case 'v': o.verbose = true; break;
		case 'z': o.zerocopy = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.size || o.size > 16 * 1024 * 1024 || o.streams < 1 || !o.iters) {
		fprintf(stderr, "afrdma-perf: -s must be 1..16M, -P and -i at least 1\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (server) {
		if (!o.addr)
			o.addr = "0.0.0.0";
		return run_server(&o);
	}
	if (!o.addr || !o.port) {
		fprintf(stderr, "afrdma-perf: client needs -a ADDR and -p PORT\n");
		return 2;
	}
	if (o.mode == MODE_HOLD)
		return client_hold(&o);
	make_pattern();
	return run_client(&o);
}
