// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma TCP fallback.  A connection that RDMA cannot carry goes over a
 * kernel TCP socket to the same address and port, behind the same fd and
 * with TCP's own semantics; a listener keeps a TCP listener on its port, so
 * that clients without RDMA are served too.  SMC-R does the same with its
 * clcsock, but needs a TCP handshake first; here RDMA is tried first and
 * TCP only when it fails.
 *
 * Waiters (poll, epoll, blocking calls) sleep on the afrdma socket, so the
 * TCP socket's wakeups are forwarded to it.  Locking: ars->tcp and the saved
 * callbacks change only under the afrdma socket's lock, and ars->tcp stays
 * until release once the transport is TCP, so the data path reads it
 * without that lock.  The TCP socket's sk_callback_lock orders the callback
 * swap against the forwarders, which run in softirq.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/tcp.h>
#include <net/inet_connection_sock.h>
#include <net/ipv6.h>
#include <net/tcp_states.h>

#include "afrdma.h"

/* The afrdma socket that owns @tsk; the caller holds sk_callback_lock. */
static struct sock *afrdma_fb_owner(const struct sock *tsk)
{
	return (struct sock *)((uintptr_t)tsk->sk_user_data &
			       SK_USER_DATA_PTRMASK);
}

/*
 * The forwarders: TCP's own callback, then the afrdma socket's, which wakes
 * its waiters.  A listener's TCP children inherit these but not
 * sk_user_data (SK_USER_DATA_NOCOPY); nobody waits on them before they are
 * accepted, so an ownerless call has nothing to do.
 */
#define AFRDMA_FB_FORWARDER(cb)						\
static void afrdma_fb_##cb(struct sock *tsk)				\
{									\
	struct sock *sk;						\
									\
	read_lock_bh(&tsk->sk_callback_lock);				\
	sk = afrdma_fb_owner(tsk);					\
	if (sk) {							\
		afrdma_sk(sk)->tcp_##cb(tsk);				\
		sk->sk_##cb(sk);					\
	}								\
	read_unlock_bh(&tsk->sk_callback_lock);				\
}

AFRDMA_FB_FORWARDER(state_change)
AFRDMA_FB_FORWARDER(data_ready)
AFRDMA_FB_FORWARDER(write_space)
AFRDMA_FB_FORWARDER(error_report)

/*
 * Makes @tcp carry @sk.  @orig, a listener, gives the original callbacks
 * for a TCP child that inherited the listener's forwarders.
 */
static void afrdma_fb_attach(struct sock *sk, struct socket *tcp,
			     const struct afrdma_sock *orig)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct sock *tsk = tcp->sk;

	write_lock_bh(&tsk->sk_callback_lock);
	if (orig) {
		ars->tcp_state_change = orig->tcp_state_change;
		ars->tcp_data_ready = orig->tcp_data_ready;
		ars->tcp_write_space = orig->tcp_write_space;
		ars->tcp_error_report = orig->tcp_error_report;
	} else {
		ars->tcp_state_change = tsk->sk_state_change;
		ars->tcp_data_ready = tsk->sk_data_ready;
		ars->tcp_write_space = tsk->sk_write_space;
		ars->tcp_error_report = tsk->sk_error_report;
	}
	__rcu_assign_sk_user_data_with_flags(tsk, sk, SK_USER_DATA_NOCOPY);
	tsk->sk_state_change = afrdma_fb_state_change;
	tsk->sk_data_ready = afrdma_fb_data_ready;
	tsk->sk_write_space = afrdma_fb_write_space;
	tsk->sk_error_report = afrdma_fb_error_report;
	write_unlock_bh(&tsk->sk_callback_lock);
	afrdma_diag_set_tcp(sk, tcp);
}

static struct socket *afrdma_fb_detach(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct socket *tcp = ars->tcp;
	struct sock *tsk;

	if (!tcp)
		return NULL;
	tsk = tcp->sk;
	write_lock_bh(&tsk->sk_callback_lock);
	rcu_assign_sk_user_data(tsk, NULL);
	tsk->sk_state_change = ars->tcp_state_change;
	tsk->sk_data_ready = ars->tcp_data_ready;
	tsk->sk_write_space = ars->tcp_write_space;
	tsk->sk_error_report = ars->tcp_error_report;
	write_unlock_bh(&tsk->sk_callback_lock);
	afrdma_diag_set_tcp(sk, NULL);
	return tcp;
}

static void afrdma_fb_destroy(struct sock *sk);

/*
 * A TCP socket on behalf of @sk's owner: same netns, uid and LSM checks.
 * One a stopped listener kept goes first.
 */
static int afrdma_fb_create(struct sock *sk, int family)
{
	struct socket *tcp;
	int err;

	afrdma_fb_destroy(sk);
	err = __sock_create(sock_net(sk), family, SOCK_STREAM, IPPROTO_TCP,
			    &tcp, 0);
	if (err)
		return err;
	tcp->sk->sk_uid = sk->sk_uid;
	tcp->sk->sk_reuse = sk->sk_reuse;
	if (family == AF_INET6 && sk->sk_ipv6only)
		ip6_sock_set_v6only(tcp->sk);
	afrdma_fb_attach(sk, tcp, NULL);
	return 0;
}

static void afrdma_fb_destroy(struct sock *sk)
{
	struct socket *tcp = afrdma_fb_detach(sk);

	if (tcp)
		sock_release(tcp);
}

/*
 * bind(): the TCP side takes the port first, so that an ephemeral port is
 * one TCP agrees is free; @addr's port is updated to it.
 */
int afrdma_fb_bind(struct sock *sk, struct sockaddr_storage *addr)
{
	struct sockaddr_storage bound;
	int len, err;

	err = afrdma_fb_create(sk, addr->ss_family);
	if (err)
		return err;
	len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					    sizeof(struct sockaddr_in);
	err = kernel_bind(afrdma_sk(sk)->tcp, (struct sockaddr *)addr, len);
	if (!err)
		err = kernel_getsockname(afrdma_sk(sk)->tcp,
					 (struct sockaddr *)&bound);
	if (err < 0) {
		afrdma_fb_destroy(sk);
		return err;
	}
	/* sin_port and sin6_port sit at the same offset. */
	((struct sockaddr_in *)addr)->sin_port =
		((struct sockaddr_in *)&bound)->sin_port;
	return 0;
}

void afrdma_fb_unbind(struct sock *sk)
{
	afrdma_fb_destroy(sk);
}

/* connect(): have a TCP socket ready before RDMA is tried. */
int afrdma_fb_prepare(struct sock *sk)
{
	if (afrdma_sk(sk)->tcp)
		return 0;
	return afrdma_fb_create(sk, afrdma_sk(sk)->daddr.ss_family);
}

/* RDMA carries the connection: a TCP socket made only for connect goes. */
void afrdma_fb_rdma_up(struct sock *sk)
{
	if (!afrdma_sk(sk)->bound)
		afrdma_fb_destroy(sk);
}

/* Socket-level state the program set on @sk, for the TCP socket. */
static void afrdma_fb_copy_sockopts(struct sock *sk, struct socket *tcp)
{
	struct sock *tsk = tcp->sk;

	lock_sock(tsk);
	if (sk->sk_userlocks & SOCK_SNDBUF_LOCK) {
		WRITE_ONCE(tsk->sk_sndbuf, READ_ONCE(sk->sk_sndbuf));
		tsk->sk_userlocks |= SOCK_SNDBUF_LOCK;
	}
	if (sk->sk_userlocks & SOCK_RCVBUF_LOCK) {
		WRITE_ONCE(tsk->sk_rcvbuf, READ_ONCE(sk->sk_rcvbuf));
		tsk->sk_userlocks |= SOCK_RCVBUF_LOCK;
	}
	WRITE_ONCE(tsk->sk_priority, READ_ONCE(sk->sk_priority));
	if (sock_flag(sk, SOCK_ZEROCOPY))
		sock_set_flag(tsk, SOCK_ZEROCOPY);
	WRITE_ONCE(tsk->sk_mark, READ_ONCE(sk->sk_mark));
	if (sock_flag(sk, SOCK_LINGER)) {
		sock_set_flag(tsk, SOCK_LINGER);
		WRITE_ONCE(tsk->sk_lingertime, READ_ONCE(sk->sk_lingertime));
	}
	release_sock(tsk);
	if (sock_flag(sk, SOCK_KEEPOPEN))
		sock_set_keepalive(tsk);
	afrdma_sockopt_to_tcp(sk, tcp);
}

/* Values the core changes on @sk without telling the protocol. */
static void afrdma_fb_sync_timeouts(struct sock *sk, struct sock *tsk)
{
	WRITE_ONCE(tsk->sk_rcvtimeo, READ_ONCE(sk->sk_rcvtimeo));
	WRITE_ONCE(tsk->sk_sndtimeo, READ_ONCE(sk->sk_sndtimeo));
	WRITE_ONCE(tsk->sk_rcvlowat, READ_ONCE(sk->sk_rcvlowat));
}

static int afrdma_fb_addr(const struct socket *tcp,
			  const struct sockaddr_storage *in,
			  struct sockaddr_storage *out)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)in;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;

	if (in->ss_family == AF_INET6) {
		memcpy(out, in, sizeof(struct sockaddr_in6));
		return sizeof(struct sockaddr_in6);
	}
	if (tcp->sk->sk_family == AF_INET6) {
		memset(sin6, 0, sizeof(*sin6));
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = sin->sin_port;
		ipv6_addr_set_v4mapped(sin->sin_addr.s_addr, &sin6->sin6_addr);
		return sizeof(*sin6);
	}
	memcpy(out, in, sizeof(*sin));
	return sizeof(*sin);
}

/*
 * Moves a connecting @sk to TCP, to connect()'s address.  The socket stays
 * in SYN_SENT until afrdma_fb_sync() sees the TCP handshake end.  Called
 * with @sk locked, in process context.
 */
int afrdma_fb_connect(struct sock *sk, int reason)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct sockaddr_storage addr;
	const struct cred *old;
	int len, err;

	trace_afrdma_fallback(sk, reason);
	afrdma_inc_stats(sk, AFRDMA_MIB_FALLBACK_ACTIVE);
	afrdma_inc_stats(sk, AFRDMA_MIB_FALLBACK_REASON + reason - 1);
	/*
	 * Often in a work item: with the owner's credentials, not the
	 * worker's, which would pass TCP_CONGESTION's CAP_NET_ADMIN check
	 * and load modules.  kernel_connect() calls no LSM hook (and
	 * security_socket_connect() is not exported); connect() on @sk did.
	 */
	old = override_creds(ars->cred);
	err = afrdma_fb_prepare(sk);
	if (err)
		goto fail;
	afrdma_fb_copy_sockopts(sk, ars->tcp);
	WRITE_ONCE(ars->fb_reason, reason);
	WRITE_ONCE(ars->transport, AFRDMA_TRANSPORT_TCP);
	len = afrdma_fb_addr(ars->tcp, &ars->daddr, &addr);
	err = kernel_connect(ars->tcp, (struct sockaddr *)&addr, len,
			     O_NONBLOCK);
	if (err && err != -EINPROGRESS)
		goto fail;
	revert_creds(old);
	sk->sk_state_change(sk);
	return 0;

fail:
	revert_creds(old);
	WRITE_ONCE(sk->sk_err, -err);
	afrdma_set_state(sk, TCP_CLOSE);
	sk_error_report(sk);
	return err;
}

/* Lockless: connect() may stop waiting. */
bool afrdma_fb_connect_done(const struct sock *sk)
{
	if (READ_ONCE(sk->sk_state) != TCP_SYN_SENT)
		return true;
	return afrdma_on_tcp(sk) &&
	       READ_ONCE(afrdma_sk(sk)->tcp->sk->sk_state) != TCP_SYN_SENT;
}

static void afrdma_fb_diag_names(struct sock *sk)
{
	struct sockaddr_storage src, dst;
	struct socket *tcp = afrdma_sk(sk)->tcp;

	if (kernel_getsockname(tcp, (struct sockaddr *)&src) >= 0 &&
	    kernel_getpeername(tcp, (struct sockaddr *)&dst) >= 0)
		afrdma_diag_set_names(sk, (struct sockaddr *)&src,
				      (struct sockaddr *)&dst);
}

/* Carries the end of a TCP handshake over to @sk.  @sk is locked. */
void afrdma_fb_sync(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct sock *tsk;
	int err;

	if (!afrdma_on_tcp(sk) || sk->sk_state != TCP_SYN_SENT)
		return;
	tsk = ars->tcp->sk;
	switch (READ_ONCE(tsk->sk_state)) {
	case TCP_SYN_SENT:
		return;
	case TCP_CLOSE:
		/* SO_ERROR is read from @sk: move the error there. */
		err = sock_error(tsk) ? : -ECONNREFUSED;
		WRITE_ONCE(sk->sk_err, -err);
		afrdma_set_state(sk, TCP_CLOSE);
		afrdma_inc_stats(sk, AFRDMA_MIB_CONNECT_FAILED);
		return;
	default:
		afrdma_set_state(sk, TCP_ESTABLISHED);
		afrdma_fb_diag_names(sk);
		return;
	}
}

static void afrdma_fb_timeout(struct work_struct *work)
{
	struct afrdma_sock *ars = container_of(to_delayed_work(work),
					       struct afrdma_sock, fb_timer);
	struct sock *sk = &ars->inet.sk;
	struct rdma_cm_id *id = NULL;
	int reason;

	lock_sock(sk);
	reason = ars->fb_deferred;
	ars->fb_deferred = 0;
	/* AFRDMA_FALLBACK may have been turned off since connect(). */
	if (sk->sk_state != TCP_SYN_SENT || sock_flag(sk, SOCK_DEAD) ||
	    !ars->fallback || ars->transport != AFRDMA_TRANSPORT_NONE)
		goto out;
	if (reason) {
		/* afrdma_fb_defer()'s: its cm id is gone already. */
		afrdma_fb_connect(sk, reason);
	} else if (ars->cm_id) {
		/* The cm handler ignores events for an id that is not ours. */
		id = afrdma_cm_take_id(sk);
		if (ars->conn)
			afrdma_conn_teardown(ars->conn);
		afrdma_fb_connect(sk, AFRDMA_FB_TIMEOUT);
	}
out:
	release_sock(sk);
	afrdma_cm_put_id(sk, id);
	sock_put(sk);
}

void afrdma_fb_timer_init(struct sock *sk)
{
	INIT_DELAYED_WORK(&afrdma_sk(sk)->fb_timer, afrdma_fb_timeout);
}

static void afrdma_fb_timer_queue(struct sock *sk, unsigned long delay)
{
	sock_hold(sk);
	if (!queue_delayed_work(afrdma_wq, &afrdma_sk(sk)->fb_timer, delay))
		sock_put(sk);
}

/*
 * RDMA gets fallback_timeout_ms to come up before TCP takes over.  Only for
 * a socket that may fall back: without, RDMA's own errors end a connect.
 */
void afrdma_fb_timer_start(struct sock *sk)
{
	unsigned int ms = READ_ONCE(afrdma_net(sock_net(sk))->fallback_timeout_ms);

	afrdma_fb_timer_queue(sk, msecs_to_jiffies(ms));
}

/*
 * Never waits: a running timer finds the socket settled and does nothing.
 * A deferred fallback goes with it.
 */
void afrdma_fb_timer_stop(struct sock *sk)
{
	afrdma_sk(sk)->fb_deferred = 0;
	if (cancel_delayed_work(&afrdma_sk(sk)->fb_timer))
		sock_put(sk);
}

/*
 * A fallback to TCP that rdma_cm's handler decided (a REJ, say), for
 * afrdma_wq to make at once: rdma_cm calls the handler on work queues every
 * RDMA user shares (cm.c), and the replay of the options may wait for
 * user space as long as it likes (a TCP_CONGESTION name loads its module
 * through modprobe, a user-mode helper).  The socket stays in SYN_SENT
 * meanwhile, so connect(), poll() and the data calls go on waiting, and
 * see TCP only once it has the options.  @sk is locked, its cm id let go.
 */
void afrdma_fb_defer(struct sock *sk, int reason)
{
	afrdma_fb_timer_stop(sk);
	afrdma_sk(sk)->fb_deferred = reason;
	afrdma_fb_timer_queue(sk, 0);
}

int afrdma_fb_listen(struct sock *sk, int backlog)
{
	struct socket *tcp = afrdma_sk(sk)->tcp;

	return tcp ? kernel_listen(tcp, backlog) : 0;
}

void afrdma_fb_unlisten(struct sock *sk)
{
	struct socket *tcp = afrdma_sk(sk)->tcp;

	if (tcp)
		kernel_sock_shutdown(tcp, SHUT_RDWR);
}

/*
 * A plain TCP client waits on the listener's TCP side.  Without the socket
 * lock (poll, accept's wait): the diag socks lock keeps ars->tcp alive.
 */
bool afrdma_fb_acceptable(const struct sock *sk)
{
	struct xarray *socks = afrdma_diag_socks(sk);
	struct socket *tcp;
	bool ready = false;

	xa_lock_bh(socks);
	tcp = afrdma_sk(sk)->tcp;
	if (tcp && READ_ONCE(tcp->sk->sk_state) == TCP_LISTEN)
		ready = !reqsk_queue_empty(&inet_csk(tcp->sk)->icsk_accept_queue);
	xa_unlock_bh(socks);
	return ready;
}

/*
 * Takes one TCP client off listener @lsk's TCP side, as a new afrdma socket
 * in @newsk, for afrdma_fb_accepted() to finish.  -EAGAIN when another
 * accept took it first.  @lsk is locked: only what needs the listener
 * happens here (its options are copied by the clone).
 */
int afrdma_fb_accept(struct sock *lsk, struct sock **newsk)
{
	struct afrdma_sock *lars = afrdma_sk(lsk);
	struct socket *tcp;
	struct sock *sk;
	int err;

	err = kernel_accept(lars->tcp, &tcp, O_NONBLOCK);
	if (err)
		return err;
	sk = afrdma_sk_clone(lsk);
	if (!sk) {
		sock_release(tcp);
		return -ENOMEM;
	}
	afrdma_fb_attach(sk, tcp, lars);
	*newsk = sk;
	return 0;
}

/*
 * The rest of afrdma_fb_accept(), with the listener unlocked: the replay
 * of the options may sleep long (a TCP_CONGESTION name may load a module,
 * which runs a user-mode helper), and every other call on the listener
 * (accept, poll, close) needs its lock.  @sk, the new socket, is locked.
 */
void afrdma_fb_accepted(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	const struct cred *old;

	/* The listener's options, with its owner's rights, as TCP's child. */
	old = override_creds(ars->cred);
	afrdma_fb_copy_sockopts(sk, ars->tcp);
	revert_creds(old);
	WRITE_ONCE(ars->fb_reason, AFRDMA_FB_PEER_TCP);
	WRITE_ONCE(ars->transport, AFRDMA_TRANSPORT_TCP);
	afrdma_set_state(sk, TCP_ESTABLISHED);
	afrdma_fb_diag_names(sk);
	afrdma_inc_stats(sk, AFRDMA_MIB_FALLBACK_PASSIVE);
	afrdma_inc_stats(sk, AFRDMA_MIB_FALLBACK_REASON +
			 AFRDMA_FB_PEER_TCP - 1);
}

/* close(): SO_LINGER goes with it, and TCP closes as TCP does. */
void afrdma_fb_release(struct sock *sk)
{
	struct socket *tcp = afrdma_fb_detach(sk);

	if (!tcp)
		return;
	if (sock_flag(sk, SOCK_LINGER)) {
		lock_sock(tcp->sk);
		sock_set_flag(tcp->sk, SOCK_LINGER);
		WRITE_ONCE(tcp->sk->sk_lingertime, READ_ONCE(sk->sk_lingertime));
		release_sock(tcp->sk);
	}
	sock_release(tcp);
}

int afrdma_fb_sendmsg(struct socket *sock, struct msghdr *msg, size_t len)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;

	afrdma_fb_sync_timeouts(sock->sk, tcp->sk);
	return tcp->ops->sendmsg(tcp, msg, len);
}

int afrdma_fb_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
		      int flags)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;

	afrdma_fb_sync_timeouts(sock->sk, tcp->sk);
	return tcp->ops->recvmsg(tcp, msg, len, flags);
}

/* @sk is locked; the caller has registered the wait on @sk. */
__poll_t afrdma_fb_poll(struct file *file, struct socket *sock)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;
	__poll_t mask;

	afrdma_fb_sync(sock->sk);
	mask = tcp->ops->poll(file, tcp, NULL);
	if (sock->sk->sk_err)
		mask |= EPOLLERR;
	return mask;
}

/* /proc/net/afrdma's local address for a socket bound on TCP alone. */
void afrdma_fb_set_names(struct sock *sk)
{
	struct sockaddr_storage addr;

	if (kernel_getsockname(afrdma_sk(sk)->tcp, (struct sockaddr *)&addr) >= 0)
		afrdma_diag_set_names(sk, (struct sockaddr *)&addr, NULL);
}

int afrdma_fb_getname(struct socket *sock, struct sockaddr *uaddr, int peer)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;
	struct sockaddr_storage addr;
	int len;

	len = peer ? kernel_getpeername(tcp, (struct sockaddr *)&addr) :
		     kernel_getsockname(tcp, (struct sockaddr *)&addr);
	if (len < 0)
		return len;
	return afrdma_put_addr(sock->sk, uaddr, (struct sockaddr *)&addr);
}

int afrdma_fb_ioctl(struct socket *sock, unsigned int cmd, unsigned long arg)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;

	return tcp->ops->ioctl(tcp, cmd, arg);
}

int afrdma_fb_shutdown(struct socket *sock, int how)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;

	return tcp->ops->shutdown(tcp, how);
}

int afrdma_fb_setsockopt(struct socket *sock, int level, int optname,
			 sockptr_t optval, unsigned int optlen)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;

	return tcp->ops->setsockopt(tcp, level, optname, optval, optlen);
}

int afrdma_fb_getsockopt(struct socket *sock, int level, int optname,
			 char __user *optval, int __user *optlen)
{
	struct socket *tcp = afrdma_sk(sock->sk)->tcp;

	return tcp->ops->getsockopt(tcp, level, optname, optval, optlen);
}

/* SO_KEEPALIVE on @sk, which the core holds locked. */
void afrdma_fb_keepalive(struct sock *sk, int val)
{
	struct socket *tcp = afrdma_sk(sk)->tcp;
	struct sock *tsk;

	if (!tcp)
		return;
	tsk = tcp->sk;
	lock_sock(tsk);
	if (tsk->sk_prot->keepalive)
		tsk->sk_prot->keepalive(tsk, val);
	if (val)
		sock_set_flag(tsk, SOCK_KEEPOPEN);
	else
		sock_reset_flag(tsk, SOCK_KEEPOPEN);
	release_sock(tsk);
}
