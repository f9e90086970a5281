// SPDX-License-Identifier: GPL-2.0
/*
 * libafrdma-preload.so: turns a program's AF_INET and AF_INET6 stream
 * sockets into IPPROTO_RDMA ones, so that unmodified programs run over
 * afrdma.  Loaded by tools/afrdma-run.
 *
 * Environment, read at every call:
 *   AFRDMA_PRELOAD=0	turns it off: sockets stay TCP.
 *   AFRDMA_PORTS=LIST	only these ports ("5201,6379,8000-9000"); default all.
 *   AFRDMA_ADDRS=LIST	only these addresses ("10.99.0.0/24,fd99::/64"; a
 *			bare address is a /32 or /128); default all.  IPv4
 *			entries also match IPv4-mapped IPv6 addresses.
 *
 * The shim keeps no state: the kernel fd is the socket, so fork, exec, dup,
 * SCM_RIGHTS and epoll behave as usual.  That decides how the filters work.
 * socket() cannot know where a socket will go, and a table of "sockets still
 * to be decided" is exactly the state rsockets' preload keeps and gets wrong
 * across fork and dup.  So socket() creates an IPPROTO_RDMA socket as
 * before, and the filters act when the endpoint is known:
 *
 *   connect(): the peer's address and port decide;
 *   bind():    the local address and port decide (that is the service a
 *		listener offers).  A wildcard address (0.0.0.0, ::) matches
 *		any AFRDMA_ADDRS; port 0 matches no AFRDMA_PORTS list, as an
 *		ephemeral port cannot be named in advance.  A client that binds
 *		before connecting is decided again at connect().
 *
 * When the socket is of the other kind, a new socket of the right kind
 * replaces it under the same fd number (dup3), so nothing the program holds
 * changes.  Carried over: the file status flags (O_NONBLOCK, O_ASYNC), the
 * owner, close-on-exec, the local address if it was bound, and every option
 * in replayed_opts[] whose value differs from a fresh socket of the old
 * kind, i.e. what the program set (copying defaults would, for one, lock
 * TCP's buffer sizes and turn autotuning off).  A replayed option the new
 * socket refuses is dropped silently.
 *
 * What the replacement cannot carry: registrations made before connect()
 * on the old socket (an epoll set drops it when it closes, so add the fd
 * to epoll after connect() returns, as most programs do) and copies of the
 * fd made before connect() in other processes (fork, SCM_RIGHTS), which
 * keep the old socket.  Without AFRDMA_PORTS and AFRDMA_ADDRS nothing is
 * ever replaced.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdbool.h>

#include "lib/afrdma_sock.h"

typedef int (*socket_fn)(int, int, int);
typedef int (*addr_fn)(int, const struct sockaddr *, socklen_t);

static socket_fn real_socket;
static addr_fn real_connect, real_bind;

static bool afrdma_preload_on(void)
{
	const char *v = getenv("AFRDMA_PRELOAD");

	return !v || strcmp(v, "0");
}

static const char *filter_var(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static bool afrdma_filtering(void)
{
	return filter_var("AFRDMA_PORTS") || filter_var("AFRDMA_ADDRS");
}

/* An address as 16 bytes: IPv4 as IPv4-mapped IPv6. */
struct afrdma_ip {
	unsigned char	a[16];
};

static void ip_from_v4(struct afrdma_ip *ip, const struct in_addr *in)
{
	memset(ip->a, 0, 10);
	ip->a[10] = ip->a[11] = 0xff;
	memcpy(ip->a + 12, in, 4);
}

/* The address and port of @sa; false if it is not AF_INET or AF_INET6. */
static bool sockaddr_ip(const struct sockaddr *sa, socklen_t len,
			struct afrdma_ip *ip, unsigned int *port)
{
	const struct sockaddr_in6 *sin6 = (const void *)sa;
	const struct sockaddr_in *sin = (const void *)sa;

	if (!sa)
		return false;
	if (sa->sa_family == AF_INET && len >= sizeof(*sin)) {
		ip_from_v4(ip, &sin->sin_addr);
		*port = ntohs(sin->sin_port);
		return true;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(*sin6)) {
		memcpy(ip->a, &sin6->sin6_addr, 16);
		*port = ntohs(sin6->sin6_port);
		return true;
	}
	return false;
}

static bool ip_is_any(const struct afrdma_ip *ip)
{
	static const unsigned char v4any[16] = { [10] = 0xff, [11] = 0xff };
	static const unsigned char v6any[16];

	return !memcmp(ip->a, v4any, 16) || !memcmp(ip->a, v6any, 16);
}

/*
 * Each parses one list entry and says whether @arg matches it: 1 yes, 0 no,
 * -1 the entry is malformed.  @arg NULL only checks the syntax.
 */
static int port_entry(const char *tok, const void *arg)
{
	unsigned long lo, hi;
	char *end;

	lo = strtoul(tok, &end, 10);
	hi = lo;
	if (end != tok && *end == '-') {
		tok = end + 1;
		hi = strtoul(tok, &end, 10);
	}
	if (end == tok || *end || lo > hi || hi > 65535)
		return -1;
	return arg && *(const unsigned int *)arg >= lo &&
	       *(const unsigned int *)arg <= hi;
}

static int addr_entry(const char *tok, const void *arg)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	struct afrdma_ip net;
	struct in_addr in;
	unsigned long bits, max;
	unsigned int i;

	if (strlen(tok) >= sizeof(buf))
		return -1;
	strcpy(buf, tok);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	if (inet_pton(AF_INET, buf, &in) == 1) {
		ip_from_v4(&net, &in);
		max = 32;
	} else if (inet_pton(AF_INET6, buf, net.a) == 1) {
		max = 128;
	} else {
		return -1;
	}
	bits = max;
	if (slash) {
		bits = strtoul(slash, &end, 10);
		if (end == slash || *end || bits > max)
			return -1;
	}
	if (!arg)
		return 0;
	bits += 128 - max;
	for (i = 0; i < bits; i++) {
		unsigned char m = 0x80 >> (i % 8);

		if ((net.a[i / 8] ^ ((const struct afrdma_ip *)arg)->a[i / 8]) & m)
			return 0;
	}
	return 1;
}

/*
 * Whether any entry of the comma-separated list in $@var matches @arg.
 * With @warn, malformed entries are reported on stderr.
 */
static bool list_match(const char *var, int (*entry)(const char *, const void *),
		       const void *arg, bool warn)
{
	const char *p = filter_var(var);
	char tok[64];
	size_t n;
	int r;

	while (p && *p) {
		n = strcspn(p, ", \t");
		if (n && n < sizeof(tok)) {
			memcpy(tok, p, n);
			tok[n] = '\0';
			r = entry(tok, arg);
			if (r > 0)
				return true;
			if (r < 0 && warn)
				fprintf(stderr, "libafrdma-preload: %s: ignoring \"%s\"\n",
					var, tok);
		} else if (n && warn) {
			fprintf(stderr, "libafrdma-preload: %s: ignoring an entry of %zu characters\n",
				var, n);
		}
		p += n;
		p += strspn(p, ", \t");
	}
	return false;
}

/* Whether the endpoint @sa, as bound (@bind) or connected to, gets RDMA. */
static bool afrdma_wanted(const struct sockaddr *sa, socklen_t len, bool bind)
{
	struct afrdma_ip ip;
	unsigned int port;

	if (!sockaddr_ip(sa, len, &ip, &port))
		return true;
	if (filter_var("AFRDMA_PORTS") &&
	    ((bind && !port) || !list_match("AFRDMA_PORTS", port_entry, &port, false)))
		return false;
	if (filter_var("AFRDMA_ADDRS") && !(bind && ip_is_any(&ip)) &&
	    !list_match("AFRDMA_ADDRS", addr_entry, &ip, false))
		return false;
	return true;
}

static void afrdma_resolve(void)
{
	real_socket = (socket_fn)dlsym(RTLD_NEXT, "socket");
	real_connect = (addr_fn)dlsym(RTLD_NEXT, "connect");
	real_bind = (addr_fn)dlsym(RTLD_NEXT, "bind");
}

__attribute__((constructor)) static void afrdma_preload_init(void)
{
	afrdma_resolve();
	if (afrdma_preload_on()) {
		list_match("AFRDMA_PORTS", port_entry, NULL, true);
		list_match("AFRDMA_ADDRS", addr_entry, NULL, true);
	}
}

/* Options a program commonly sets before connect() or bind(). */
static const struct {
	int level, name;
} replayed_opts[] = {
	{ SOL_SOCKET, SO_REUSEADDR },	{ SOL_SOCKET, SO_REUSEPORT },
	{ SOL_SOCKET, SO_KEEPALIVE },	{ SOL_SOCKET, SO_RCVBUF },
	{ SOL_SOCKET, SO_SNDBUF },	{ SOL_SOCKET, SO_RCVLOWAT },
	{ SOL_SOCKET, SO_RCVTIMEO },	{ SOL_SOCKET, SO_SNDTIMEO },
	{ SOL_SOCKET, SO_LINGER },	{ SOL_SOCKET, SO_PRIORITY },
	{ SOL_SOCKET, SO_MARK },	{ SOL_SOCKET, SO_BINDTODEVICE },
	{ SOL_SOCKET, SO_OOBINLINE },
	{ IPPROTO_TCP, TCP_NODELAY },	{ IPPROTO_TCP, TCP_CORK },
	{ IPPROTO_TCP, TCP_KEEPIDLE },	{ IPPROTO_TCP, TCP_KEEPINTVL },
	{ IPPROTO_TCP, TCP_KEEPCNT },	{ IPPROTO_TCP, TCP_SYNCNT },
	{ IPPROTO_TCP, TCP_USER_TIMEOUT }, { IPPROTO_TCP, TCP_LINGER2 },
	{ IPPROTO_TCP, TCP_DEFER_ACCEPT }, { IPPROTO_TCP, TCP_WINDOW_CLAMP },
	{ IPPROTO_TCP, TCP_NOTSENT_LOWAT }, { IPPROTO_TCP, TCP_MAXSEG },
	{ IPPROTO_TCP, TCP_FASTOPEN },	{ IPPROTO_TCP, TCP_CONGESTION },
	{ IPPROTO_IP, IP_TOS },		{ IPPROTO_IP, IP_TTL },
	{ IPPROTO_IP, IP_FREEBIND },	{ IPPROTO_IP, IP_TRANSPARENT },
	{ IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT },
	{ IPPROTO_IPV6, IPV6_V6ONLY },	{ IPPROTO_IPV6, IPV6_TCLASS },
	{ IPPROTO_IPV6, IPV6_UNICAST_HOPS },
};

/* Copies to @to the options @from has that a fresh socket @fresh has not. */
static void replay_options(int from, int fresh, int to)
{
	unsigned char val[64], def[64];
	socklen_t len, dlen;
	unsigned int i;
	int half;

	for (i = 0; i < sizeof(replayed_opts) / sizeof(replayed_opts[0]); i++) {
		int level = replayed_opts[i].level, name = replayed_opts[i].name;

		len = sizeof(val);
		dlen = sizeof(def);
		if (getsockopt(from, level, name, val, &len))
			continue;
		if (!getsockopt(fresh, level, name, def, &dlen) &&
		    dlen == len && !memcmp(val, def, len))
			continue;
		/* The kernel doubles what it is given and reports that. */
		if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_SNDBUF) &&
		    len == sizeof(int)) {
			memcpy(&half, val, sizeof(int));
			half /= 2;
			memcpy(val, &half, sizeof(int));
		}
		setsockopt(to, level, name, val, len);
	}
}

/*
 * Replaces socket @fd (of @domain and protocol @old) by a new one of
 * protocol @proto under the same fd number; see the comment at the top.
 */
static int afrdma_replace(int fd, int domain, int old, int proto)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int nfd, fresh, fl, fdfl, owner;

	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	owner = fcntl(fd, F_GETOWN);
	if (fl < 0 || fdfl < 0)
		return -1;
	nfd = real_socket(domain, SOCK_STREAM | SOCK_CLOEXEC, proto);
	if (nfd < 0)
		return -1;
	fresh = real_socket(domain, SOCK_STREAM | SOCK_CLOEXEC, old);
	replay_options(fd, fresh, nfd);
	if (fresh >= 0)
		close(fresh);
	if (fcntl(nfd, F_SETFL, fl) || (owner > 0 && fcntl(nfd, F_SETOWN, owner)))
		goto fail;
	/* Bound already (a client that binds, then connects): bind the same. */
	if (!getsockname(fd, (struct sockaddr *)&ss, &len) &&
	    afrdma_addr_port(&ss) &&
	    real_bind(nfd, (struct sockaddr *)&ss, len)) {
		/* The port is taken in the other port space: any will do. */
		if (ss.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		else
			((struct sockaddr_in *)&ss)->sin_port = 0;
		if (real_bind(nfd, (struct sockaddr *)&ss, len))
			goto fail;
	}
	if (dup3(nfd, fd, fdfl & FD_CLOEXEC ? O_CLOEXEC : 0) < 0)
		goto fail;
	close(nfd);
	return 0;
fail:
	{
		int saved = errno;

		close(nfd);
		errno = saved;
	}
	return -1;
}

/* Whether @fd is neither listening nor connected nor, for @bind, bound. */
static bool afrdma_unused(int fd, bool bind)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(int);
	int acc;

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) || acc)
		return false;
	len = sizeof(ss);
	if (!getpeername(fd, (struct sockaddr *)&ss, &len) || errno != ENOTCONN)
		return false;
	len = sizeof(ss);
	return !bind || getsockname(fd, (struct sockaddr *)&ss, &len) ||
	       !afrdma_addr_port(&ss);
}

/*
 * Before connect() or bind() on @fd to @sa: makes @fd the kind of socket
 * the filters want there.  Returns -1 with errno set if that failed.
 */
static int afrdma_filter(int fd, const struct sockaddr *sa, socklen_t salen,
			 bool bind)
{
	int domain, type, proto, rdma, want, saved = errno;
	socklen_t len = sizeof(int);

	if (!afrdma_preload_on() || !afrdma_filtering() || !sa ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) ||
	    (domain != AF_INET && domain != AF_INET6) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len))
		goto out;
	rdma = afrdma_ipproto_nr();
	if (proto != rdma && proto != IPPROTO_TCP)
		goto out;
	want = afrdma_wanted(sa, salen, bind) ? rdma : IPPROTO_TCP;
	if (want != proto && afrdma_unused(fd, bind) &&
	    afrdma_replace(fd, domain, proto, want))
		return -1;
out:
	errno = saved;
	return 0;
}

int socket(int domain, int type, int protocol)
{
	if (!real_socket)
		afrdma_resolve();
	if ((domain == AF_INET || domain == AF_INET6) &&
	    (type & 0xf) == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP) && afrdma_preload_on())
		protocol = afrdma_ipproto_nr();
	return real_socket(domain, type, protocol);
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (!real_connect)
		afrdma_resolve();
	if (afrdma_filter(fd, sa, len, false))
		return -1;
	return real_connect(fd, sa, len);
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (!real_bind)
		afrdma_resolve();
	if (afrdma_filter(fd, sa, len, true))
		return -1;
	return real_bind(fd, sa, len);
}
