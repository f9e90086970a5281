// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma socket options at the TCP, IP and IPv6 levels.  Programs written
 * for TCP set many of these blindly; afrdma accepts them and reads them
 * back rather than breaking those programs.  Options with a meaning here
 * (TCP_NODELAY, TCP_CORK, TCP_INFO, IPV6_V6ONLY) are honoured; the IP and
 * IPv6 levels go to the IP layer where the socket has the state it needs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/sockptr.h>
#include <linux/tcp.h>
#include <linux/uaccess.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/tcp_states.h>

#include "afrdma.h"

/*
 * TCP options stored and read back, with TCP's defaults; the keepalive
 * ones start from net.afrdma.keepalive_* instead (afrdma_sockopt_init).
 */
static const struct {
	int	name;
	int	def;
	int	min;
	int	max;
} afrdma_tcp_opts[] = {
	{ TCP_NODELAY,		0,	0,	1 },
	{ TCP_CORK,		0,	0,	1 },
	{ TCP_QUICKACK,		1,	0,	1 },
	{ TCP_KEEPIDLE,	AFRDMA_KEEPALIVE_TIME,	1,	MAX_TCP_KEEPIDLE },
	{ TCP_KEEPINTVL, AFRDMA_KEEPALIVE_INTVL, 1,	MAX_TCP_KEEPINTVL },
	{ TCP_KEEPCNT,	AFRDMA_KEEPALIVE_PROBES, 1,	MAX_TCP_KEEPCNT },
	{ TCP_SYNCNT,		6,	1,	MAX_TCP_SYNCNT },
	{ TCP_LINGER2,		60,	INT_MIN, INT_MAX },
	{ TCP_DEFER_ACCEPT,	0,	INT_MIN, INT_MAX },
	{ TCP_WINDOW_CLAMP,	0,	0,	INT_MAX },
	{ TCP_USER_TIMEOUT,	0,	0,	INT_MAX },
	{ TCP_NOTSENT_LOWAT,	0,	INT_MIN, INT_MAX },
	{ TCP_FASTOPEN,		0,	INT_MIN, INT_MAX },
	{ TCP_THIN_LINEAR_TIMEOUTS, 0,	0,	1 },
	{ TCP_MAXSEG,		0,	0,	MAX_TCP_WINDOW },
};

static_assert(ARRAY_SIZE(afrdma_tcp_opts) <= AFRDMA_TCP_OPTS);

/* Options copied in (afrdma_setsockopt()): at most, and on the stack */
#define AFRDMA_SOCKOPT_MAX	(64 * 1024)
#define AFRDMA_SOCKOPT_SMALL	64

int afrdma_tcp_opt_index(int name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(afrdma_tcp_opts); i++)
		if (afrdma_tcp_opts[i].name == name)
			return i;
	return -1;
}

static bool afrdma_tcp_opt_is_ka(unsigned int i)
{
	int name = afrdma_tcp_opts[i].name;

	return name == TCP_KEEPIDLE || name == TCP_KEEPINTVL ||
	       name == TCP_KEEPCNT;
}

/* A TCP option's value for the data path; socket lock held. */
int afrdma_sockopt_tcp(const struct sock *sk, int optname)
{
	int i = afrdma_tcp_opt_index(optname);

	return i < 0 ? 0 : afrdma_sk(sk)->tcp_opt[i];
}

void afrdma_sockopt_init(struct sock *sk)
{
	const struct afrdma_net *an = afrdma_net(sock_net(sk));
	struct afrdma_sock *ars = afrdma_sk(sk);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(afrdma_tcp_opts); i++)
		ars->tcp_opt[i] = afrdma_tcp_opts[i].def;
	/* Read once: a later sysctl write never reaches this socket. */
	ars->tcp_opt[afrdma_tcp_opt_index(TCP_KEEPIDLE)] =
		READ_ONCE(an->keepalive_time);
	ars->tcp_opt[afrdma_tcp_opt_index(TCP_KEEPINTVL)] =
		READ_ONCE(an->keepalive_intvl);
	ars->tcp_opt[afrdma_tcp_opt_index(TCP_KEEPCNT)] =
		READ_ONCE(an->keepalive_probes);
	strscpy(ars->tcp_congestion, "cubic", sizeof(ars->tcp_congestion));
	afrdma_sockopt_set_cred(sk, current_cred());
}

/* @sk not yet visible: a REQ reads a listener's under accept_lock. */
void afrdma_sockopt_set_cred(struct sock *sk, const struct cred *cred)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	const struct cred *old = ars->cred;

	ars->cred = get_cred(cred);
	if (old)
		put_cred(old);
}

/* The stored TCP options, for the TCP socket a fallback connection uses. */
void afrdma_sockopt_to_tcp(struct sock *sk, struct socket *tcp)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	unsigned int i;
	int val;

	for (i = 0; i < ARRAY_SIZE(afrdma_tcp_opts); i++) {
		val = READ_ONCE(ars->tcp_opt[i]);
		/*
		 * The keepalive values always go: TCP's own defaults come
		 * from net.ipv4.tcp_keepalive_*, not from ours.
		 */
		if (val == afrdma_tcp_opts[i].def && !afrdma_tcp_opt_is_ka(i))
			continue;
		/* Best effort: TCP checked nothing stricter than we did. */
		tcp->ops->setsockopt(tcp, SOL_TCP, afrdma_tcp_opts[i].name,
				     KERNEL_SOCKPTR(&val), sizeof(val));
	}
	if (strcmp(ars->tcp_congestion, "cubic"))
		tcp->ops->setsockopt(tcp, SOL_TCP, TCP_CONGESTION,
				     KERNEL_SOCKPTR(ars->tcp_congestion),
				     strlen(ars->tcp_congestion));
}

/*
 * An accepted socket inherits its listener's options, as in TCP.  For a
 * REQ the listener is not locked (cm.c): accept_lock keeps its options
 * whole, and its cred alive.  @sk is not visible yet.
 */
void afrdma_sockopt_clone(struct sock *sk, struct sock *parent)
{
	struct afrdma_sock *pars = afrdma_sk(parent);
	struct afrdma_sock *ars = afrdma_sk(sk);
	const struct cred *cred;

	spin_lock(&pars->accept_lock);
	memcpy(ars->tcp_opt, pars->tcp_opt, sizeof(ars->tcp_opt));
	memcpy(ars->tcp_congestion, pars->tcp_congestion,
	       sizeof(ars->tcp_congestion));
	cred = get_cred(pars->cred);
	spin_unlock(&pars->accept_lock);
	afrdma_sockopt_set_cred(sk, cred);
	put_cred(cred);
	/* Either value, if IPV6_V6ONLY races a REQ: the id has its own. */
	sk->sk_ipv6only = data_race(!!parent->sk_ipv6only);
	/* Fixed once the listener has its cm id (afrdma_set_rdma()) */
	WRITE_ONCE(ars->fallback, READ_ONCE(pars->fallback));
}

static int afrdma_get_int(sockptr_t optval, unsigned int optlen, int *val)
{
	if (optlen < sizeof(int))
		return -EINVAL;
	return copy_from_sockptr(val, optval, sizeof(*val)) ? -EFAULT : 0;
}

static int afrdma_get_len(int __user *optlen, int *len)
{
	if (get_user(*len, optlen))
		return -EFAULT;
	return *len < 0 ? -EINVAL : 0;
}

/* An int option, cut to the caller's length as TCP does. */
static int afrdma_put_int(char __user *optval, int __user *optlen, int len,
			  int val)
{
	len = min_t(unsigned int, len, sizeof(int));
	if (put_user(len, optlen) || copy_to_user(optval, &val, len))
		return -EFAULT;
	return 0;
}

static int afrdma_set_rdma(struct sock *sk, int optname, sockptr_t optval,
			   unsigned int optlen)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	int val, err = 0;

	if (optname != AFRDMA_FALLBACK && optname != AFRDMA_ZEROCOPY)
		return -ENOPROTOOPT;
	err = afrdma_get_int(optval, optlen, &val);
	if (err)
		return err;
	if (optname == AFRDMA_ZEROCOPY)
		return afrdma_zc_set(sk, val);
	lock_sock(sk);
	/* The TCP side is made at bind, connect or listen time. */
	if (ars->cm_id || ars->tcp || sk->sk_state != TCP_CLOSE)
		err = -EISCONN;
	else
		WRITE_ONCE(ars->fallback, !!val);
	release_sock(sk);
	return err;
}

static int afrdma_get_rdma(struct sock *sk, int optname, char __user *optval,
			   int __user *optlen)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	int len, val, err;

	switch (optname) {
	case AFRDMA_FALLBACK:
		val = READ_ONCE(ars->fallback);
		break;
	case AFRDMA_TRANSPORT:
		val = READ_ONCE(ars->transport);
		break;
	case AFRDMA_FALLBACK_REASON:
		val = READ_ONCE(ars->fb_reason);
		break;
	case AFRDMA_ZEROCOPY:
		val = sock_flag(sk, SOCK_ZEROCOPY);
		break;
	default:
		return -ENOPROTOOPT;
	}
	err = afrdma_get_len(optlen, &len);
	return err ? : afrdma_put_int(optval, optlen, len, val);
}

/*
 * TCP_CONGESTION as TCP would take it from this caller, now: its
 * CAP_NET_ADMIN, net.ipv4.tcp_allowed_congestion_control and module
 * autoload checks run on a TCP socket of our own, made by the caller (so
 * LSMs see the caller too).  A fallback applies the name later, perhaps
 * from a work item, with the caller's credentials (fallback.c).
 */
static int afrdma_congestion_check(struct sock *sk, char *name,
				   unsigned int len)
{
	int family = sk->sk_family == AF_INET6 ? AF_INET6 : AF_INET;
	struct socket *tcp;
	int err;

	err = __sock_create(sock_net(sk), family, SOCK_STREAM, IPPROTO_TCP,
			    &tcp, 0);
	if (err)
		return err;
	err = tcp->ops->setsockopt(tcp, SOL_TCP, TCP_CONGESTION,
				   KERNEL_SOCKPTR(name), len);
	sock_release(tcp);
	return err;
}

static int afrdma_set_tcp(struct sock *sk, int optname, sockptr_t optval,
			  unsigned int optlen)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	const struct cred *cred;
	int i, val, err;

	if (optname == TCP_CONGESTION) {
		char name[TCP_CA_NAME_MAX];

		/* No choice to make: RC transport does its own. */
		if (!optlen)
			return -EINVAL;
		optlen = min_t(unsigned int, optlen, sizeof(name) - 1);
		if (copy_from_sockptr(name, optval, optlen))
			return -EFAULT;
		name[optlen] = '\0';
		err = afrdma_congestion_check(sk, name, optlen);
		if (err)
			return err;
		cred = get_current_cred();
		lock_sock(sk);
		/* A REQ copies both without the socket lock. */
		spin_lock(&ars->accept_lock);
		strscpy(ars->tcp_congestion, name, sizeof(ars->tcp_congestion));
		swap(ars->cred, cred);
		spin_unlock(&ars->accept_lock);
		release_sock(sk);
		put_cred(cred);
		return 0;
	}

	i = afrdma_tcp_opt_index(optname);
	if (i < 0)
		return -ENOPROTOOPT;
	err = afrdma_get_int(optval, optlen, &val);
	if (err)
		return err;
	if (val < afrdma_tcp_opts[i].min || val > afrdma_tcp_opts[i].max)
		return -EINVAL;
	if (afrdma_tcp_opts[i].max == 1)
		val = !!val;
	lock_sock(sk);
	spin_lock(&ars->accept_lock);
	WRITE_ONCE(ars->tcp_opt[i], val);
	spin_unlock(&ars->accept_lock);
	/* These two change what the send path holds back, at once. */
	if ((optname == TCP_CORK || optname == TCP_NODELAY) && ars->conn &&
	    !ars->conn->torn)
		afrdma_tx_set_opt(ars->conn, optname, val);
	release_sock(sk);
	return 0;
}

static void afrdma_tcp_info(struct sock *sk, struct tcp_info *info)
{
	struct afrdma_conn *conn = afrdma_sk(sk)->conn;

	memset(info, 0, sizeof(*info));
	lock_sock(sk);
	info->tcpi_state = sk->sk_state;
	if (conn && !conn->torn) {
		info->tcpi_snd_mss = conn->tx_payload;
		info->tcpi_rcv_mss = conn->rx_slot_size -
				     sizeof(struct afrdma_msg_hdr);
		info->tcpi_unacked = conn->tx_head - conn->tx_tail;
		/* A SEND is a segment: what coalescing saves shows here. */
		info->tcpi_data_segs_out = conn->tx_head;
		info->tcpi_segs_out = conn->tx_head + conn->ctrl_head;
		info->tcpi_notsent_bytes = conn->tx_pending;
		info->tcpi_snd_cwnd = conn->tx_credits;
		info->tcpi_rcv_space = conn->rx_slots * conn->rx_slot_size;
	}
	release_sock(sk);
}

static int afrdma_get_tcp(struct sock *sk, int optname, char __user *optval,
			  int __user *optlen, int len)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct tcp_info info;
	int i, val;

	switch (optname) {
	case TCP_INFO:
		afrdma_tcp_info(sk, &info);
		len = min_t(unsigned int, len, sizeof(info));
		if (put_user(len, optlen) || copy_to_user(optval, &info, len))
			return -EFAULT;
		return 0;
	case TCP_CONGESTION: {
		/* A stack copy: the sock slab is not usercopy-whitelisted. */
		char name[TCP_CA_NAME_MAX];

		lock_sock(sk);
		memcpy(name, ars->tcp_congestion, sizeof(name));
		release_sock(sk);
		len = min_t(unsigned int, len, sizeof(name));
		if (put_user(len, optlen) || copy_to_user(optval, name, len))
			return -EFAULT;
		return 0;
	}
	}

	i = afrdma_tcp_opt_index(optname);
	if (i < 0)
		return -ENOPROTOOPT;
	val = READ_ONCE(ars->tcp_opt[i]);
	if (optname == TCP_MAXSEG && !val && ars->conn)
		val = READ_ONCE(ars->conn->tx_payload);
	return afrdma_put_int(optval, optlen, len, val);
}

/* Only IPPROTO_RDMA sockets under AF_INET6 have an ipv6_pinfo. */
static bool afrdma_has_ipv6(const struct sock *sk)
{
	return IS_ENABLED(CONFIG_IPV6) && sk->sk_family == AF_INET6;
}

/*
 * Joining a multicast or anycast group.  TCP refuses IP_ADD_MEMBERSHIP and
 * IPV6_ADD_MEMBERSHIP with EPROTO; afrdma refuses every way to join, the
 * MCAST_* ones too, because only inet_release() and inet6_release() drop a
 * socket's memberships (ip_mc_drop_socket(), ipv6_sock_mc_close(), neither
 * exported), and afrdma's sockets are released by afrdma_release().  A
 * stream socket has no use for a group.
 */
static bool afrdma_ip_membership(int level, int optname)
{
	switch (optname) {
	case MCAST_JOIN_GROUP:
	case MCAST_LEAVE_GROUP:
	case MCAST_JOIN_SOURCE_GROUP:
	case MCAST_LEAVE_SOURCE_GROUP:
	case MCAST_BLOCK_SOURCE:
	case MCAST_UNBLOCK_SOURCE:
	case MCAST_MSFILTER:
		return true;
	}
	if (level == SOL_IP)
		return optname == IP_ADD_MEMBERSHIP ||
		       optname == IP_DROP_MEMBERSHIP ||
		       optname == IP_ADD_SOURCE_MEMBERSHIP ||
		       optname == IP_DROP_SOURCE_MEMBERSHIP ||
		       optname == IP_BLOCK_SOURCE ||
		       optname == IP_UNBLOCK_SOURCE ||
		       optname == IP_MSFILTER;
	return optname == IPV6_ADD_MEMBERSHIP ||
	       optname == IPV6_DROP_MEMBERSHIP ||
	       optname == IPV6_JOIN_ANYCAST ||
	       optname == IPV6_LEAVE_ANYCAST;
}

static int afrdma_do_setsockopt(struct socket *sock, int level, int optname,
				sockptr_t optval, unsigned int optlen)
{
	struct sock *sk = sock->sk;
	int val, err;

	if (level == SOL_RDMA)
		return afrdma_set_rdma(sk, optname, optval, optlen);
	/* Only where SOCK_CUSTOM_SOCKOPT routes SOL_SOCKET here. */
	if (level == SOL_SOCKET) {
		if (optname != SO_ZEROCOPY)
			return sock_setsockopt(sock, level, optname, optval,
					       optlen);
		err = afrdma_get_int(optval, optlen, &val);
		return err ? : afrdma_zc_set(sk, val);
	}
	if (afrdma_on_tcp(sk))
		return afrdma_fb_setsockopt(sock, level, optname, optval,
					    optlen);

	if ((level == SOL_IP || level == SOL_IPV6) &&
	    afrdma_ip_membership(level, optname))
		return -EPROTO;
	switch (level) {
	case SOL_TCP:
		return afrdma_set_tcp(sk, optname, optval, optlen);
	case SOL_IP:
		return ip_setsockopt(sk, level, optname, optval, optlen);
	case SOL_IPV6:
		if (afrdma_has_ipv6(sk))
			return ipv6_setsockopt(sk, level, optname, optval,
					       optlen);
		if (optname != IPV6_V6ONLY)
			return -ENOPROTOOPT;
		/* AF_RDMA sockets speak IPv6 too: only this one matters. */
		err = afrdma_get_int(optval, optlen, &val);
		if (err)
			return err;
		lock_sock(sk);
		if (afrdma_sk(sk)->cm_id) {
			release_sock(sk);
			return -EINVAL;
		}
		sk->sk_ipv6only = !!val;
		release_sock(sk);
		return 0;
	default:
		return -ENOPROTOOPT;
	}
}

static bool afrdma_ipv6_sticky(int optname)
{
	return optname == IPV6_HOPOPTS || optname == IPV6_RTHDRDSTOPTS ||
	       optname == IPV6_RTHDR || optname == IPV6_DSTOPTS;
}

/*
 * IPv6's sticky extension headers, as ipv6_getsockopt() answers, but
 * copied out once the socket is unlocked: it copies under the lock.
 */
static int afrdma_ipv6_get_sticky(struct sock *sk, int optname,
				  char __user *optval, int __user *optlen)
{
	struct ipv6_opt_hdr *hdr = NULL;
	struct ipv6_txoptions *opt;
	void *buf = NULL;
	int len, err;

	err = afrdma_get_len(optlen, &len);
	if (err)
		return err;
	lock_sock(sk);
	opt = rcu_dereference_protected(inet6_sk(sk)->opt,
					lockdep_sock_is_held(sk));
	if (opt && optname == IPV6_HOPOPTS)
		hdr = opt->hopopt;
	else if (opt && optname == IPV6_RTHDRDSTOPTS)
		hdr = opt->dst0opt;
	else if (opt && optname == IPV6_RTHDR)
		hdr = (struct ipv6_opt_hdr *)opt->srcrt;
	else if (opt)
		hdr = opt->dst1opt;
	if (hdr) {
		len = min_t(unsigned int, len, ipv6_optlen(hdr));
		buf = kmemdup(hdr, len, GFP_KERNEL);
	}
	release_sock(sk);
	if (!hdr)
		len = 0;
	else if (!buf)
		return -ENOMEM;
	if (copy_to_user(optval, buf, len) || put_user(len, optlen))
		err = -EFAULT;
	kfree(buf);
	return err;
}

/*
 * Every option is copied in before any lock is taken.  A program can stall
 * a copy from its memory for as long as it likes (userfaultfd, FUSE), and
 * the socket's lock should not be held meanwhile: the socket's deferred
 * rdma_cm events, and a device's removal, wait for it (cm.c), and
 * ip_setsockopt(), ipv6_setsockopt() and sock_setsockopt() copy under
 * the lock (SO_ATTACH_FILTER's program still is: a listener's REQs do
 * not need its lock).  Longer than any option the IP layers take
 * (IPV6_2292PKTOPTIONS, 64 KiB), an option is not copied whole.
 *
 * TCP reads only the bytes an option needs (an int's 4), so a program may
 * pass an optlen longer than its buffer, and its memory may end (unmapped,
 * PROT_NONE) within optlen.  Such a call, and one past 64 KiB, is handed
 * the program's pointer and optlen as they came, as TCP is, with page
 * faults disabled: the copy above has just made resident what it could
 * read, and a read of anything that is not resident fails with -EFAULT at
 * once instead of waiting under a lock (a userfaultfd page stalled the
 * copy itself, with nothing locked).  So an option answers as on TCP, and
 * no lock waits for the program.
 */
int afrdma_setsockopt(struct socket *sock, int level, int optname,
		      sockptr_t optval, unsigned int optlen)
{
	u8 small[AFRDMA_SOCKOPT_SMALL];
	unsigned int len;
	void *buf = small;
	int err;

	if (sockptr_is_kernel(optval) || !optlen)
		return afrdma_do_setsockopt(sock, level, optname, optval,
					    optlen);
	len = min_t(unsigned int, optlen, AFRDMA_SOCKOPT_MAX);
	if (len > sizeof(small)) {
		buf = kvmalloc(len, GFP_KERNEL_ACCOUNT);
		if (!buf)
			return -ENOMEM;
	}
	if (!copy_from_sockptr(buf, optval, len) && len == optlen) {
		err = afrdma_do_setsockopt(sock, level, optname,
					   KERNEL_SOCKPTR(buf), len);
	} else {
		pagefault_disable();
		err = afrdma_do_setsockopt(sock, level, optname, optval,
					   optlen);
		pagefault_enable();
	}
	if (buf != small)
		kvfree(buf);
	return err;
}

int afrdma_getsockopt(struct socket *sock, int level, int optname,
		      char __user *optval, int __user *optlen)
{
	struct sock *sk = sock->sk;
	int len, err;

	if (level == SOL_RDMA)
		return afrdma_get_rdma(sk, optname, optval, optlen);
	if (afrdma_on_tcp(sk))
		return afrdma_fb_getsockopt(sock, level, optname, optval,
					    optlen);

	/*
	 * The IP layers copy these under the socket lock, which must never
	 * wait for a program's memory (afrdma_setsockopt()).  A source filter
	 * belongs to a group, and afrdma's sockets join none.
	 */
	if ((level == SOL_IP || level == SOL_IPV6) &&
	    (optname == MCAST_MSFILTER ||
	     (level == SOL_IP && optname == IP_MSFILTER)))
		return -EADDRNOTAVAIL;
	switch (level) {
	case SOL_TCP:
		err = afrdma_get_len(optlen, &len);
		return err ? : afrdma_get_tcp(sk, optname, optval, optlen, len);
	case SOL_IP:
		return ip_getsockopt(sk, level, optname, optval, optlen);
	case SOL_IPV6:
		if (afrdma_has_ipv6(sk) && afrdma_ipv6_sticky(optname))
			return afrdma_ipv6_get_sticky(sk, optname, optval,
						      optlen);
		if (afrdma_has_ipv6(sk))
			return ipv6_getsockopt(sk, level, optname, optval,
					       optlen);
		if (optname != IPV6_V6ONLY)
			return -ENOPROTOOPT;
		err = afrdma_get_len(optlen, &len);
		return err ? : afrdma_put_int(optval, optlen, len,
					      sk->sk_ipv6only);
	default:
		return -ENOPROTOOPT;
	}
}
