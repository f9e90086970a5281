// SPDX-License-Identifier: GPL-2.0
/*
 * rds-perf: RDS (AF_RDS over rds_rdma), the in-tree message peer, measured
 * for make bench the way afrdma-perf measures the stream sockets, and
 * printing the same JSON.  RDS has no streams and no connections per
 * socket (one per pair of addresses, set up by the first message), so it
 * has three modes: a one-way message stream, a ping-pong, and N sockets
 * that have each exchanged a message and then stay idle.
 *
 *   rds-perf server -a ADDR -p PORT
 *   rds-perf client -a ADDR -p PORT [-m stream|pingpong|hold] [-s SIZE]
 *                   [-d SECS] [-i ITERS] [-j]
 *
 * Sockets are bound to ADDR (an address of an RDMA device) and asked for
 * the IB transport, so nothing falls back to RDS over TCP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/rds.h>

#ifndef AF_RDS
#define AF_RDS		21
#endif
#ifndef SOL_RDS
#define SOL_RDS		276
#endif

#define RP_MAGIC	0x52445350u	/* "RDSP" */
#define RP_MAX		(1u << 20)	/* RDS_MAX_MSG_SIZE */
#define RP_BUF		(16 << 20)	/* socket buffers, forced */

enum rp_type { RP_DATA = 1, RP_PING, RP_END, RP_HELLO };

/* First in every message; the rest of a message is padding. */
struct rp_hdr {
	uint32_t	magic;
	uint32_t	type;
	uint64_t	bytes;		/* RP_END's reply: DATA bytes received */
	uint64_t	msgs;		/* and messages */
};

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int make_addr(struct sockaddr_in *sin, const char *host, unsigned short port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

/* An AF_RDS socket on the IB transport bound to @host:@port (0: any). */
static int rds_socket(const char *host, unsigned short port)
{
	int fd, t = RDS_TRANS_IB, buf = RP_BUF;
	struct sockaddr_in sin;
	struct timeval tv = { .tv_sec = 30 };

	if (make_addr(&sin, host, port)) {
		fprintf(stderr, "rds-perf: bad IPv4 address '%s'\n", host);
		return -1;
	}
	fd = socket(AF_RDS, SOCK_SEQPACKET, 0);
	if (fd < 0) {
		perror("rds-perf: socket(AF_RDS) (rds_rdma not loaded?)");
		return -1;
	}
	/* RDS takes a message up to half of SO_SNDBUF; a 1 MiB one needs more */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		perror("rds-perf: SO_SNDBUFFORCE/SO_RCVBUFFORCE");
	/* a lost peer must not hang the bench */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (setsockopt(fd, SOL_RDS, SO_RDS_TRANSPORT, &t, sizeof(t))) {
		perror("rds-perf: SO_RDS_TRANSPORT IB");
		goto fail;
	}
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("rds-perf: bind");
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

static ssize_t send_to(int fd, const struct sockaddr_in *to, const void *buf, size_t len)
{
	ssize_t n;

	for (;;) {
		n = sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
		if (n >= 0 || (errno != EINTR && errno != ENOBUFS))
			return n;
		/* the peer's port is congested: wait for its map to clear */
		if (errno == ENOBUFS)
			usleep(100);
	}
}

static ssize_t recv_from(int fd, void *buf, size_t len, struct sockaddr_in *from)
{
	socklen_t alen = sizeof(*from);
	ssize_t n;

	do
		n = recvfrom(fd, buf, len, 0, (struct sockaddr *)from, &alen);
	while (n < 0 && errno == EINTR);
	return n;
}

static int run_server(const char *addr, unsigned short port)
{
	uint64_t bytes = 0, msgs = 0;
	struct sockaddr_in from;
	struct rp_hdr *h;
	char *buf;
	ssize_t n;
	int fd;

	fd = rds_socket(addr, port);
	buf = malloc(RP_MAX);
	if (fd < 0 || !buf)
		return 1;
	/* idle sockets wait for their clients as long as those hold them */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 0 }, sizeof(struct timeval));
	printf("rds-perf: serving on %s:%u\n", addr, port);
	fflush(stdout);
	h = (struct rp_hdr *)buf;
	for (;;) {
		n = recv_from(fd, buf, RP_MAX, &from);
		if (n < 0) {
			perror("rds-perf: recvfrom");
			return 1;
		}
		if ((size_t)n < sizeof(*h) || h->magic != RP_MAGIC)
			continue;
		switch (h->type) {
		case RP_DATA:
			bytes += n;
			msgs++;
			break;
		case RP_PING:
		case RP_HELLO:
			if (send_to(fd, &from, buf, n) < 0)
				perror("rds-perf: reply");
			break;
		case RP_END:
			h->bytes = bytes;
			h->msgs = msgs;
			bytes = 0;
			msgs = 0;
			if (send_to(fd, &from, h, sizeof(*h)) < 0)
				perror("rds-perf: reply");
			break;
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct rp_opts {
	const char	*addr;
	unsigned short	port;
	const char	*mode;
	size_t		size;
	double		duration;
	unsigned long	iters;
	bool		json;
};

/* Sends @o->size messages for @o->duration; the server's count is the result. */
static int client_stream(const struct rp_opts *o, int fd, const struct sockaddr_in *srv,
			 char *buf, uint64_t *bytes, double *secs)
{
	struct rp_hdr *h = (struct rp_hdr *)buf;
	struct sockaddr_in from;
	double t0 = now_sec();
	unsigned long i;

	h->magic = RP_MAGIC;
	h->type = RP_DATA;
	for (i = 0; ; i++) {
		if (!(i & 15) && now_sec() - t0 >= o->duration)
			break;
		if (send_to(fd, srv, buf, o->size) < 0) {
			perror("rds-perf: send");
			return 1;
		}
	}
	h->type = RP_END;
	if (send_to(fd, srv, h, sizeof(*h)) < 0 ||
	    recv_from(fd, buf, RP_MAX, &from) < (ssize_t)sizeof(*h) ||
	    h->magic != RP_MAGIC || h->type != RP_END) {
		perror("rds-perf: the server's count");
		return 1;
	}
	*secs = now_sec() - t0;
	*bytes = h->bytes;
	if (h->msgs != i) {
		fprintf(stderr, "rds-perf: sent %lu messages, the server got %" PRIu64 "\n",
			i, (uint64_t)h->msgs);
		return 1;
	}
	return 0;
}

static int client_pingpong(const struct rp_opts *o, int fd, const struct sockaddr_in *srv,
			   char *buf, double *lat, unsigned long *nlat, double *secs)
{
	struct rp_hdr *h = (struct rp_hdr *)buf;
	struct sockaddr_in from;
	double t0 = now_sec(), t;
	unsigned long i;

	for (i = 0; i < o->iters; i++) {
		t = now_sec();
		if (o->duration && t - t0 >= o->duration)
			break;
		h->magic = RP_MAGIC;
		h->type = RP_PING;
		if (send_to(fd, srv, buf, o->size) < 0 ||
		    recv_from(fd, buf, RP_MAX, &from) != (ssize_t)o->size) {
			perror("rds-perf: ping-pong");
			return 1;
		}
		lat[i] = (now_sec() - t) * 1e6 / 2;
	}
	*nlat = i;
	*secs = now_sec() - t0;
	return 0;
}

/* -i sockets, each bound and having exchanged one message, held until killed. */
static int client_hold(const struct rp_opts *o, const struct sockaddr_in *srv)
{
	struct rp_hdr h = { .magic = RP_MAGIC, .type = RP_HELLO };
	struct sockaddr_in from;
	unsigned long i;
	int fd;

	for (i = 0; i < o->iters; i++) {
		fd = rds_socket(o->addr, 0);
		if (fd < 0)
			return 1;
		if (send_to(fd, srv, &h, sizeof(h)) < 0 ||
		    recv_from(fd, &h, sizeof(h), &from) != sizeof(h)) {
			perror("rds-perf: hello");
			return 1;
		}
	}
	printf("holding %lu sockets\n", i);
	fflush(stdout);
	if (o->duration)
		sleep((unsigned int)o->duration);
	else
		pause();
	return 0;
}

static int run_client(const struct rp_opts *o)
{
	double secs = 0, p50 = 0, p99 = 0, *lat = NULL;
	unsigned long nlat = 0;
	struct sockaddr_in srv;
	uint64_t bytes = 0;
	char *buf;
	int fd, ret;

	if (make_addr(&srv, o->addr, o->port))
		return 2;
	if (!strcmp(o->mode, "hold"))
		return client_hold(o, &srv);
	fd = rds_socket(o->addr, 0);
	buf = calloc(1, RP_MAX);
	if (fd < 0 || !buf)
		return 1;
	if (!strcmp(o->mode, "stream")) {
		ret = client_stream(o, fd, &srv, buf, &bytes, &secs);
	} else {
		lat = calloc(o->iters, sizeof(*lat));
		if (!lat)
			return 1;
		ret = client_pingpong(o, fd, &srv, buf, lat, &nlat, &secs);
		bytes = (uint64_t)nlat * o->size;
		if (nlat) {
			qsort(lat, nlat, sizeof(*lat), cmp_double);
			p50 = lat[nlat / 2];
			p99 = lat[(nlat * 99) / 100];
		}
	}
	if (o->json)
		printf("{\"transport\":\"rds\",\"mode\":\"%s\",\"size\":%zu,\"streams\":1,"
		       "\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"mbps\":%.3f,"
		       "\"msgs_per_sec\":%.1f,\"lat_p50_us\":%.3f,\"lat_p99_us\":%.3f,"
		       "\"failed\":%d}\n", o->mode, o->size, bytes, secs,
		       secs ? bytes * 8 / secs / 1e6 : 0,
		       secs ? bytes / (double)o->size / secs : 0, p50, p99, ret != 0);
	else
		printf("rds %s size=%zu: %" PRIu64 " bytes in %.3f s, %.1f Mbit/s, "
		       "one-way p50 %.1f us p99 %.1f us\n", o->mode, o->size, bytes,
		       secs, secs ? bytes * 8 / secs / 1e6 : 0, p50, p99);
	free(lat);
	free(buf);
	close(fd);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rds-perf server -a ADDR -p PORT\n"
		"       rds-perf client -a ADDR -p PORT [-m MODE] [-s SIZE] [-d SECS]\n"
		"                       [-i ITERS] [-j]\n"
		"\n"
		"  -m MODE   stream (default: one-way messages, counted by the server),\n"
		"            pingpong, or hold (-i sockets, one message each, then idle)\n"
		"  -s SIZE   bytes per message, %zu to %u (default 65536)\n"
		"  -d SECS   stream and pingpong: run SECS (default 4; hold: until killed)\n"
		"  -i ITERS  pingpong: at most ITERS round trips; hold: sockets\n"
		"  -j        one JSON object, as afrdma-perf prints\n",
		sizeof(struct rp_hdr), RP_MAX);
}

int main(int argc, char **argv)
{
	struct rp_opts o = { .mode = "stream", .size = 65536, .iters = 1000 };
	bool server, dur = false;
	int c;

	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		usage(stderr);
		return 2;
	}
	server = !strcmp(argv[1], "server");
	optind = 2;
	while ((c = getopt(argc, argv, "a:p:m:s:d:i:jh")) != -1) {
		switch (c) {
		case 'a': o.addr = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'm': o.mode = optarg; break;
		case 's': o.size = strtoul(optarg, NULL, 0); break;
		case 'd': o.duration = atof(optarg); dur = true; break;
		case 'i': o.iters = strtoul(optarg, NULL, 0); break;
		case 'j': o.json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.addr || !o.port || o.size < sizeof(struct rp_hdr) || o.size > RP_MAX ||
	    !o.iters || o.iters > 100000000 ||
	    (strcmp(o.mode, "stream") && strcmp(o.mode, "pingpong") &&
	     strcmp(o.mode, "hold"))) {
		usage(stderr);
		return 2;
	}
	if (!dur && strcmp(o.mode, "hold"))
		o.duration = 4;
	signal(SIGPIPE, SIG_IGN);
	return server ? run_server(o.addr, o.port) : run_client(&o);
}
