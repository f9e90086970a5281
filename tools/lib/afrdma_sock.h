/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space helpers shared by tools/ and selftests/: open a stream socket
 * on one of the transports afrdma offers (or plain TCP, for comparison) and
 * parse the addresses they take.  Header-only, so each program stays one
 * file to build.
 */
#ifndef _AFRDMA_SOCK_H
#define _AFRDMA_SOCK_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/afrdma.h>

enum afrdma_transport {
	AFRDMA_T_FAMILY,	/* socket(AF_RDMA, SOCK_STREAM, 0) */
	AFRDMA_T_IPPROTO,	/* socket(AF_INET[6], SOCK_STREAM, IPPROTO_RDMA) */
	AFRDMA_T_TCP,		/* socket(AF_INET[6], SOCK_STREAM, 0) */
	AFRDMA_T_SMC,		/* SMC-R, the in-tree peer (make bench) */
};

/* SMC's numbers, for headers older than them */
#define AFRDMA_IPPROTO_SMC	256	/* since 6.11 */
#define AFRDMA_AF_SMC		43
#define AFRDMA_SMCPROTO_SMC6	1

static inline const char *afrdma_transport_name(enum afrdma_transport t)
{
	switch (t) {
	case AFRDMA_T_FAMILY:	return "af_rdma";
	case AFRDMA_T_IPPROTO:	return "ipproto_rdma";
	case AFRDMA_T_SMC:	return "smc";
	default:		return "tcp";
	}
}

static inline int afrdma_parse_transport(const char *s,
					 enum afrdma_transport *t)
{
	if (!strcmp(s, "af_rdma") || !strcmp(s, "rdma"))
		*t = AFRDMA_T_FAMILY;
	else if (!strcmp(s, "ipproto_rdma") || !strcmp(s, "ipproto"))
		*t = AFRDMA_T_IPPROTO;
	else if (!strcmp(s, "tcp"))
		*t = AFRDMA_T_TCP;
	else if (!strcmp(s, "smc"))
		*t = AFRDMA_T_SMC;
	else
		return -1;
	return 0;
}

/* A loaded module's parameter, or @def when the module is not loaded. */
static inline int afrdma_param(const char *name, int def)
{
	char path[128];
	FILE *f;
	int val;

	snprintf(path, sizeof(path), "/sys/module/afrdma/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return def;
	if (fscanf(f, "%d", &val) != 1)
		val = def;
	fclose(f);
	return val;
}

/* Writes a loaded module's writable parameter; 0, or -1 with errno. */
static inline int afrdma_param_set(const char *name, unsigned int val)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/module/afrdma/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fprintf(f, "%u\n", val) > 0 ? 0 : -1;
	if (fclose(f))
		ret = -1;
	return ret;
}

static inline int afrdma_family_nr(void)
{
	return afrdma_param("family", AFRDMA_FAMILY_DEFAULT);
}

static inline int afrdma_ipproto_nr(void)
{
	return afrdma_param("ipproto", AFRDMA_IPPROTO_DEFAULT);
}

/* Fills @ss from a numeric IPv4 or IPv6 address and a port. */
static inline socklen_t afrdma_make_addr(struct sockaddr_storage *ss,
					 const char *host, unsigned short port)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return sizeof(*sin);
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return sizeof(*sin6);
	}
	return 0;
}

static inline unsigned short afrdma_addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* A stream socket on @t for addresses of family @af (AF_INET or AF_INET6). */
static inline int afrdma_socket(enum afrdma_transport t, int af, int flags)
{
	int fd;

	switch (t) {
	case AFRDMA_T_FAMILY:
		return socket(afrdma_family_nr(), SOCK_STREAM | flags, 0);
	case AFRDMA_T_IPPROTO:
		return socket(af, SOCK_STREAM | flags, afrdma_ipproto_nr());
	case AFRDMA_T_SMC:
		/* IPPROTO_SMC where the kernel has it, else AF_SMC (6.1) */
		fd = socket(af, SOCK_STREAM | flags, AFRDMA_IPPROTO_SMC);
		if (fd >= 0 || (errno != EPROTONOSUPPORT && errno != EINVAL))
			return fd;
		return socket(AFRDMA_AF_SMC, SOCK_STREAM | flags,
			      af == AF_INET6 ? AFRDMA_SMCPROTO_SMC6 : 0);
	default:
		break;
	}
	/*
	 * Plain TCP: the flags by fcntl, as rsockets' preload (librspreload,
	 * which make bench runs afrdma-perf under) takes only a socket asked
	 * for as exactly SOCK_STREAM.  Not atomic, which these tools do not
	 * need; fcntl can fail on an rsocket, which is harmless here.
	 */
	fd = socket(af, SOCK_STREAM, 0);
	if (fd >= 0 && (flags & SOCK_CLOEXEC))
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (fd >= 0 && (flags & SOCK_NONBLOCK))
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* Bound to @host port @port (0: any), listening; returns the fd or -1. */
static inline int afrdma_listen_on(enum afrdma_transport t, const char *host,
				   unsigned short port, int backlog,
				   unsigned short *bound_port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	len = afrdma_make_addr(&ss, host, port);
	if (!len) {
		errno = EINVAL;
		return -1;
	}
	fd = afrdma_socket(t, ss.ss_family, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, backlog))
		goto fail;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		goto fail;
	if (bound_port)
		*bound_port = afrdma_addr_port(&ss);
	return fd;
fail:
	{
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return -1;
}

/* Connected to @host:@port; returns the fd or -1 with errno set. */
static inline int afrdma_connect_to(enum afrdma_transport t, const char *host,
				    unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	len = afrdma_make_addr(&ss, host, port);
	if (!len) {
		errno = EINVAL;
		return -1;
	}
	fd = afrdma_socket(t, ss.ss_family, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/*
 * A checksum over a byte stream that does not depend on how the stream was
 * cut into reads or writes: 8-byte words, the tail carried between calls.
 */
struct afrdma_csum {
	unsigned long long	h;
	unsigned long long	bytes;
	unsigned char		carry[8];
	unsigned int		ncarry;
};

static inline void afrdma_csum_word(struct afrdma_csum *c, unsigned long long w)
{
	c->h ^= w;
	c->h *= 0x100000001b3ULL;
	c->h ^= c->h >> 29;
}

static inline void afrdma_csum_update(struct afrdma_csum *c, const void *buf,
				      size_t len)
{
	const unsigned char *p = buf;
	unsigned long long w;

	c->bytes += len;
	while (len && c->ncarry) {
		c->carry[c->ncarry++] = *p++;
		len--;
		if (c->ncarry == 8) {
			memcpy(&w, c->carry, 8);
			afrdma_csum_word(c, w);
			c->ncarry = 0;
		}
	}
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		afrdma_csum_word(c, w);
	}
	while (len--)
		c->carry[c->ncarry++] = *p++;
}

static inline unsigned long long afrdma_csum_final(const struct afrdma_csum *c)
{
	unsigned long long w = 0, h;
	struct afrdma_csum t = *c;

	memcpy(&w, t.carry, t.ncarry);
	afrdma_csum_word(&t, w ^ ((unsigned long long)t.ncarry << 56));
	h = t.h ^ t.bytes;
	return h;
}

/* Reads and drops every MSG_ZEROCOPY notification queued on @fd now. */
static inline void afrdma_drain_errqueue(int fd)
{
	char control[256];
	struct msghdr msg;

	do {
		memset(&msg, 0, sizeof(msg));
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
	} while (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) >= 0);
}

#endif /* _AFRDMA_SOCK_H */
