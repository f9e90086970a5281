// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma: stream sockets over RDMA RC queue pairs.
 *
 * This file registers the AF_RDMA family and IPPROTO_RDMA under AF_INET and
 * AF_INET6, and implements the socket calls on top of cm.c (connection
 * setup) and tx.c/rx.c (the data path).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <asm/ioctls.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/poll.h>
#include <linux/security.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <net/inet_common.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/protocol.h>
#include <net/tcp_states.h>
#include <net/transp_v6.h>
#include <uapi/linux/afrdma.h>

#include "afrdma.h"

int afrdma_family = AFRDMA_FAMILY_DEFAULT;
module_param_named(family, afrdma_family, int, 0444);
MODULE_PARM_DESC(family, "address family number of AF_RDMA (default "
		 __stringify(AFRDMA_FAMILY_DEFAULT) ")");

int afrdma_ipproto = AFRDMA_IPPROTO_DEFAULT;
module_param_named(ipproto, afrdma_ipproto, int, 0444);
MODULE_PARM_DESC(ipproto, "IPPROTO_RDMA under AF_INET/AF_INET6, 257-261 (default "
		 __stringify(AFRDMA_IPPROTO_DEFAULT) ")");

#define AFRDMA_CLOSE_TIMEOUT	(10 * HZ)
/*
 * An orphan lives on while its peer keeps taking data, some in every
 * AFRDMA_CLOSE_TIMEOUT, but never longer than this after the close: it
 * holds a QP and pinned rings.  TCP has no such cap, but its orphan facing
 * a closed window gives up after about as long (tcp_probe_timer(): probes
 * backing off from a 200 ms RTO until one waits TCP_RTO_MAX, about 325 s).
 */
#define AFRDMA_ORPHAN_MAX	(5 * 60 * HZ)

/*
 * Fallback timers and orphans; a module-owned queue is flushed before
 * unload.  An orphan holds its socket, and so the module.
 */
struct workqueue_struct *afrdma_wq;

/*
 * IPPROTO_RDMA sockets would share sk_lock-AF_INET with the TCP sockets
 * they nest for fallback; their own class keeps lockdep's nesting exact.
 */
static struct lock_class_key afrdma_slock_key;
static struct lock_class_key afrdma_sk_lock_key;

static struct proto afrdma_prot;
#if IS_ENABLED(CONFIG_IPV6)
static struct proto afrdma6_prot;
#endif

static void afrdma_orphan_work(struct work_struct *work);

static void afrdma_sk_destruct(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	afrdma_diag_del(sk);
	afrdma_cm_destruct(sk);
	/* AF_RDMA's base destructor is not inet's, which would purge it. */
	skb_queue_purge(&sk->sk_error_queue);
	/* Nor free what IP_OPTIONS keeps: inet_sock_destruct() does that. */
	if (sk->sk_family == afrdma_family)
		kfree(rcu_dereference_protected(inet_sk(sk)->inet_opt, 1));
	if (ars->conn) {
		WARN_ON_ONCE(!ars->conn->torn);
		afrdma_conn_free(ars->conn);
		ars->conn = NULL;
	}
	if (ars->cred)
		put_cred(ars->cred);
	ars->base_destruct(sk);
}

/*
 * Fails only before it changes anything a destructor would undo: @sk still
 * has its base destructor, and its creator frees it as one never set up.
 */
static int afrdma_init_sock(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	int err;

	sock_lock_init_class_and_name(sk, "slock-AF_RDMA", &afrdma_slock_key,
				      "sk_lock-AF_RDMA", &afrdma_sk_lock_key);
	spin_lock_init(&ars->accept_lock);
	INIT_LIST_HEAD(&ars->accept_node);
	INIT_LIST_HEAD(&ars->accept_q);
	INIT_LIST_HEAD(&ars->syn_q);
	afrdma_fb_timer_init(sk);
	afrdma_cm_resolve_init(sk);
	INIT_DELAYED_WORK(&ars->orphan_work, afrdma_orphan_work);
	err = afrdma_diag_add(sk);
	if (err)
		return err;
	afrdma_zc_init(sk);
	WRITE_ONCE(ars->fallback, READ_ONCE(afrdma_net(sock_net(sk))->fallback));
	if (sk->sk_destruct != afrdma_sk_destruct)
		ars->base_destruct = sk->sk_destruct ? : inet_sock_destruct;
	sk->sk_destruct = afrdma_sk_destruct;
	WRITE_ONCE(sk->sk_state, TCP_CLOSE);
	afrdma_sockopt_init(sk);
	return 0;
}

static int afrdma_hash(struct sock *sk)
{
	return 0;
}

static void afrdma_unhash(struct sock *sk)
{
}

/*
 * sk_alloc() gave @sk the current task's LSM label, cgroup and memory
 * cgroup: a kworker's, when rdma_cm's handler makes a child.  Take the
 * listener's, as sk_clone_lock() gives TCP's children (cgroup_sk_clone()
 * and mem_cgroup_sk_alloc() are not exported; their inline parts are).
 */
static void afrdma_sk_clone_owner(struct sock *sk, const struct sock *parent)
{
#ifdef CONFIG_SOCK_CGROUP_DATA
	struct cgroup *cgrp = sock_cgroup_ptr(&sk->sk_cgrp_data);
#endif

	security_sk_clone(parent, sk);
#ifdef CONFIG_SOCK_CGROUP_DATA
	cgroup_bpf_put(cgrp);
	cgroup_put(cgrp);
	sk->sk_cgrp_data = parent->sk_cgrp_data;
	cgrp = sock_cgroup_ptr(&sk->sk_cgrp_data);
	cgroup_get(cgrp);
	cgroup_bpf_get(cgrp);
#endif
#ifdef CONFIG_MEMCG
	if (sk->sk_memcg)
		css_put(&sk->sk_memcg->css);
	sk->sk_memcg = parent->sk_memcg;
	if (sk->sk_memcg)
		css_get(&sk->sk_memcg->css);
#endif
}

/*
 * A connection accepted by @parent, before anyone has accepted it.  For a
 * REQ @parent is not locked (cm.c): as sk_clone_lock() copies TCP's
 * listener for a SYN, each option is read whole, and one that a
 * setsockopt() changes meanwhile comes old or new.
 */
struct sock *afrdma_sk_clone(struct sock *parent)
{
	struct sock *sk;

	sk = sk_alloc(sock_net(parent), parent->sk_family, GFP_KERNEL,
		      parent->sk_prot, 0);
	if (!sk)
		return NULL;
	afrdma_sk_clone_owner(sk, parent);
	sock_init_data(NULL, sk);
	sk->sk_type = parent->sk_type;
	sk->sk_protocol = parent->sk_protocol;
	sk->sk_uid = parent->sk_uid;
	sk->sk_sndbuf = READ_ONCE(parent->sk_sndbuf);
	sk->sk_rcvbuf = READ_ONCE(parent->sk_rcvbuf);
	/* A bit-field on 6.1, which data_race() cannot take as it is */
	sk->sk_userlocks = data_race((u8)parent->sk_userlocks);
	sk->sk_rcvtimeo = READ_ONCE(parent->sk_rcvtimeo);
	sk->sk_sndtimeo = READ_ONCE(parent->sk_sndtimeo);
	if (sock_flag(parent, SOCK_KEEPOPEN))
		sock_set_flag(sk, SOCK_KEEPOPEN);
	if (sock_flag(parent, SOCK_ZEROCOPY))
		sock_set_flag(sk, SOCK_ZEROCOPY);
	sk->sk_destruct = afrdma_sk(parent)->base_destruct;
#if IS_ENABLED(CONFIG_IPV6)
	/* Before anything may free it: inet6_sock_destruct() follows it. */
	if (sk->sk_family == AF_INET6)
		inet_sk(sk)->pinet6 = &((struct afrdma6_sock *)sk)->inet6;
#endif
	if (afrdma_init_sock(sk)) {
		/* Dead and closed, as inet_sock_destruct() wants it */
		sk_common_release(sk);
		return NULL;
	}
	afrdma_sockopt_clone(sk, parent);
	return sk;
}

/* Drops a connection that was never accepted.  Process context only. */
void afrdma_sk_destroy_child(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct rdma_cm_id *id;

	lock_sock(sk);
	id = afrdma_cm_take_id(sk);
	if (id && sk->sk_state == TCP_ESTABLISHED)
		afrdma_conn_disconnect(sk, id);
	if (ars->conn)
		afrdma_conn_teardown(ars->conn);
	afrdma_set_state(sk, TCP_CLOSE);
	sock_set_flag(sk, SOCK_DEAD);
	release_sock(sk);
	afrdma_cm_put_id(sk, id);
	sock_put(sk);
}

/*
 * Checks a user sockaddr the way TCP does for @sk's family and copies it
 * out, with v4-mapped IPv6 turned into IPv4 for rdma_cm.
 */
static int afrdma_get_addr(struct sock *sk, struct sockaddr *uaddr, int len,
			   struct sockaddr_storage *out)
{
	bool any_family = sk->sk_family != AF_INET && sk->sk_family != AF_INET6;
	const struct sockaddr_in6 *sin6;
	struct sockaddr_in *sin;

	if (len < (int)sizeof(sa_family_t))
		return -EINVAL;
	memset(out, 0, sizeof(*out));

	switch (uaddr->sa_family) {
	case AF_INET:
		if (!any_family && sk->sk_family != AF_INET)
			return -EAFNOSUPPORT;
		if (len < (int)sizeof(struct sockaddr_in))
			return -EINVAL;
		memcpy(out, uaddr, sizeof(struct sockaddr_in));
		return 0;
	case AF_INET6:
		if (!any_family && sk->sk_family != AF_INET6)
			return -EAFNOSUPPORT;
		if (len < SIN6_LEN_RFC2133)
			return -EINVAL;
		sin6 = (const struct sockaddr_in6 *)uaddr;
		if (ipv6_addr_v4mapped(&sin6->sin6_addr)) {
			if (sk->sk_ipv6only)
				return -ENETUNREACH;
			sin = (struct sockaddr_in *)out;
			sin->sin_family = AF_INET;
			sin->sin_port = sin6->sin6_port;
			sin->sin_addr.s_addr = sin6->sin6_addr.s6_addr32[3];
			return 0;
		}
		memcpy(out, uaddr, min_t(int, len, sizeof(struct sockaddr_in6)));
		return 0;
	default:
		return any_family ? -EINVAL : -EAFNOSUPPORT;
	}
}

int afrdma_put_addr(struct sock *sk, struct sockaddr *uaddr,
		    const struct sockaddr *src)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)src;
	struct sockaddr_in6 *out6 = (struct sockaddr_in6 *)uaddr;
	int family = src ? src->sa_family : AF_UNSPEC;

	if (sk->sk_family == AF_INET6) {
		memset(out6, 0, sizeof(*out6));
		out6->sin6_family = AF_INET6;
		if (family == AF_INET6) {
			memcpy(out6, src, sizeof(*out6));
		} else if (family == AF_INET) {
			out6->sin6_port = sin->sin_port;
			ipv6_addr_set_v4mapped(sin->sin_addr.s_addr,
					       &out6->sin6_addr);
		}
		return sizeof(*out6);
	}
	if (family == AF_INET6 && sk->sk_family != AF_INET) {
		memcpy(out6, src, sizeof(*out6));
		return sizeof(*out6);
	}
	memset(uaddr, 0, sizeof(struct sockaddr_in));
	if (family == AF_INET)
		memcpy(uaddr, src, sizeof(struct sockaddr_in));
	uaddr->sa_family = AF_INET;
	return sizeof(struct sockaddr_in);
}

static __be16 *afrdma_addr_port(struct sockaddr_storage *addr)
{
	/* sin_port and sin6_port sit at the same offset. */
	return &((struct sockaddr_in *)addr)->sin_port;
}

/*
 * Binds rdma_cm and, with fallback, the TCP side to @addr.  TCP picks an
 * ephemeral port first; rdma_cm's port space is its own, so a port TCP
 * found free may be taken there: then another one is tried.
 */
static int afrdma_do_bind(struct sock *sk, struct sockaddr_storage *addr)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	bool any_port = !*afrdma_addr_port(addr);
	int tries = any_port ? 8 : 1;
	int err;

	if (!ars->cm_id) {
		err = afrdma_cm_create_id(sk);
		if (err)
			return err;
	}
	do {
		if (ars->fallback) {
			*afrdma_addr_port(addr) = any_port ? 0 :
						  *afrdma_addr_port(addr);
			err = afrdma_fb_bind(sk, addr);
			if (err)
				return err;
		}
		err = rdma_bind_addr(ars->cm_id, (struct sockaddr *)addr);
		/* No RDMA device has the address: TCP alone may serve it. */
		if (err == -ENODEV && ars->fallback) {
			WRITE_ONCE(ars->tcp_only, true);
			err = 0;
		}
		if (err)
			afrdma_fb_unbind(sk);
	} while (err == -EADDRINUSE && --tries);
	if (err == -ENODEV)
		err = -EADDRNOTAVAIL;
	ars->bound = !err;
	if (!err) {
		/*
		 * Kept for a connect after a failed one, as TCP keeps it: a
		 * port picked for port 0 is given up.
		 */
		memcpy(&ars->saddr, addr, sizeof(*addr));
		if (any_port)
			*afrdma_addr_port(&ars->saddr) = 0;
	}
	if (!err && ars->tcp_only)
		afrdma_fb_set_names(sk);
	else if (!err)
		afrdma_diag_set_names(sk, (struct sockaddr *)
				      &ars->cm_id->route.addr.src_addr, NULL);
	return err;
}

/*
 * What a failed connect left, for a connect, bind or listen after it:
 * the cm id (rdma_cm takes no second connect on it, and no listen but on
 * an idle or bound one), connection and TCP socket.  Returns the cm id,
 * for the caller to destroy with @sk unlocked: its handler takes the
 * lock.  @sk is locked.
 */
static struct rdma_cm_id *afrdma_renew_take(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_conn *conn = ars->conn;
	struct rdma_cm_id *id;

	if (cancel_work(&ars->resolve_work))
		sock_put(sk);
	afrdma_fb_timer_stop(sk);
	if (conn) {
		afrdma_conn_teardown(conn);
		/* /proc/net/afrdma reads it under this lock alone. */
		xa_lock_bh(afrdma_diag_socks(sk));
		ars->conn = NULL;
		xa_unlock_bh(afrdma_diag_socks(sk));
		afrdma_conn_free(conn);
	}
	id = afrdma_cm_take_id(sk);
	afrdma_fb_unbind(sk);
	WRITE_ONCE(ars->transport, AFRDMA_TRANSPORT_NONE);
	WRITE_ONCE(ars->fb_reason, 0);
	WRITE_ONCE(ars->tcp_only, false);
	memset(&ars->daddr, 0, sizeof(ars->daddr));
	/* The listing names no peer for a listener. */
	xa_lock_bh(afrdma_diag_socks(sk));
	memset(&ars->diag_dst, 0, sizeof(ars->diag_dst));
	xa_unlock_bh(afrdma_diag_socks(sk));
	return id;
}

/*
 * A socket whose connect failed is in CLOSE, as TCP's, and starts afresh
 * for a connect, bind or listen: the last attempt goes, and an address
 * bind() gave is bound again, on a fresh cm id, as TCP keeps it.  Nothing
 * to do for a socket that never connected, or has not failed.  Unlocks
 * @sk meanwhile: the caller checks its state after.  @sk is locked.
 */
static int afrdma_renew(struct socket *sock)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct sockaddr_storage saddr;
	struct rdma_cm_id *id;
	bool bound;

	if (sock->state != SS_UNCONNECTED || sk->sk_state != TCP_CLOSE ||
	    !ars->daddr.ss_family)
		return 0;
	bound = ars->bound;
	memcpy(&saddr, &ars->saddr, sizeof(saddr));
	id = afrdma_renew_take(sk);
	if (id) {
		release_sock(sk);
		afrdma_cm_put_id(sk, id);
		lock_sock(sk);
	}
	/* A bound address stays, as TCP's: unless a racing call moved on. */
	ars->bound = false;
	if (bound && sk->sk_state == TCP_CLOSE && !ars->cm_id && !ars->tcp)
		return afrdma_do_bind(sk, &saddr);
	return 0;
}

static int afrdma_bind(struct socket *sock, struct sockaddr *uaddr, int len)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct sockaddr_storage addr;
	unsigned short port;
	int err;

	err = afrdma_get_addr(sk, uaddr, len, &addr);
	if (err)
		return err;
	/*
	 * As inet_bind(): net.ipv4.ip_unprivileged_port_start decides.  Below
	 * 1024 rdma_bind_addr() also wants CAP_NET_BIND_SERVICE in the initial
	 * user namespace, whatever the sysctl says.
	 */
	port = ntohs(*afrdma_addr_port(&addr));
	if (port && inet_port_requires_bind_service(sock_net(sk), port) &&
	    !ns_capable(sock_net(sk)->user_ns, CAP_NET_BIND_SERVICE))
		return -EACCES;

	lock_sock(sk);
	/* One whose connect went to TCP keeps its TCP side: see listen. */
	if (!afrdma_on_tcp(sk)) {
		err = afrdma_renew(sock);
		if (err)
			goto out;
	}
	err = -EINVAL;
	if (sk->sk_state != TCP_CLOSE || sock->state != SS_UNCONNECTED ||
	    ars->bound || ars->tcp)
		goto out;
	err = afrdma_do_bind(sk, &addr);
out:
	release_sock(sk);
	return err;
}

static int afrdma_connect(struct socket *sock, struct sockaddr *uaddr,
			  int len, int flags)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct sockaddr_storage addr;
	long timeo;
	int err;

	err = afrdma_get_addr(sk, uaddr, len, &addr);
	if (err)
		return err;

	lock_sock(sk);
	err = afrdma_renew(sock);
	if (err)
		goto out;
	switch (sock->state) {
	case SS_CONNECTED:
		err = -EISCONN;
		goto out;
	case SS_CONNECTING:
		err = -EALREADY;
		break;
	case SS_UNCONNECTED:
		err = -EISCONN;
		if (sk->sk_state != TCP_CLOSE || ars->conn)
			goto out;
		if (!ars->cm_id) {
			err = afrdma_cm_create_id(sk);
			if (err)
				goto out;
		}
		memcpy(&ars->daddr, &addr, sizeof(addr));
		afrdma_diag_set_names(sk, NULL, (struct sockaddr *)&addr);
		if (ars->fallback) {
			err = afrdma_fb_prepare(sk);
			if (err)
				goto out;
		}
		WRITE_ONCE(sk->sk_err, 0);
		ars->stale_retries = 0;
		err = ars->tcp_only ? -ENODEV :
		      afrdma_cm_resolve(sk);
		if (err == -ENODEV || err == -EADDRNOTAVAIL)
			err = -EHOSTUNREACH;
		if (err && !ars->fallback)
			goto out;
		afrdma_set_state(sk, TCP_SYN_SENT);
		sock->state = SS_CONNECTING;
		if (err) {
			if (afrdma_fb_connect(sk, AFRDMA_FB_NO_DEVICE))
				goto failed;
		} else if (ars->fallback) {
			afrdma_fb_timer_start(sk);
		}
		err = -EINPROGRESS;
		break;
	default:
		err = -EINVAL;
		goto out;
	}

	timeo = sock_sndtimeo(sk, flags & O_NONBLOCK);
	afrdma_fb_sync(sk);
	while (sk->sk_state == TCP_SYN_SENT) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);

		if (!timeo)
			goto out;	/* -EINPROGRESS or -EALREADY */
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			goto out;
		}
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_fb_connect_done(sk), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
		afrdma_fb_sync(sk);
	}

failed:
	/*
	 * Established and then closed by the peer before we looked is
	 * connected, as TCP's connect() in CLOSE_WAIT; a reset is its error.
	 */
	if (sk->sk_state != TCP_ESTABLISHED &&
	    (ars->transport != AFRDMA_TRANSPORT_RDMA || sk->sk_err)) {
		err = sock_error(sk) ? : -ECONNREFUSED;
		sock->state = SS_UNCONNECTED;
		goto out;
	}
	sock->state = SS_CONNECTED;
	err = 0;
out:
	release_sock(sk);
	return err;
}

static int afrdma_listen(struct socket *sock, int backlog)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars = afrdma_sk(sk);
	int err = -EINVAL;

	lock_sock(sk);
	/*
	 * A socket whose connect went to TCP belongs to its TCP side, which
	 * lockless readers follow: a new bind would free it under them.  One
	 * whose RDMA connect failed listens on a fresh cm id.
	 */
	if (!afrdma_on_tcp(sk)) {
		err = afrdma_renew(sock);
		if (err)
			goto out;
		err = -EINVAL;
	}
	if (sock->state != SS_UNCONNECTED || afrdma_on_tcp(sk))
		goto out;
	if (sk->sk_state == TCP_LISTEN) {
		WRITE_ONCE(sk->sk_max_ack_backlog, backlog);
		err = afrdma_fb_listen(sk, backlog);
		goto out;
	}
	if (sk->sk_state != TCP_CLOSE || ars->conn)
		goto out;
	if (!ars->bound && (ars->fallback || ars->saddr.ss_family)) {
		/*
		 * Both sides need the same port: pick it now.  After shutdown()
		 * a listener binds again where bind() said, as TCP keeps it.
		 */
		struct sockaddr_storage addr = {
			.ss_family = sk->sk_family == AF_INET6 ? AF_INET6 :
								AF_INET,
		};

		if (ars->saddr.ss_family)
			memcpy(&addr, &ars->saddr, sizeof(addr));
		err = afrdma_do_bind(sk, &addr);
		if (err)
			goto out;
	}
	if (!ars->cm_id) {
		err = afrdma_cm_create_id(sk);
		if (err)
			goto out;
	}
	err = afrdma_fb_listen(sk, backlog);
	if (err)
		goto out;
	/*
	 * Listening before rdma_listen(), whose first REQ may come at once:
	 * rdma_cm's handler reads the state without our lock (cm.c).  None
	 * comes if it fails.
	 */
	WRITE_ONCE(sk->sk_max_ack_backlog, backlog);
	afrdma_set_state(sk, TCP_LISTEN);
	err = ars->tcp_only ? 0 : rdma_listen(ars->cm_id, backlog);
	if (err) {
		afrdma_set_state(sk, TCP_CLOSE);
		afrdma_fb_unlisten(sk);
		goto out;
	}
out:
	release_sock(sk);
	return err;
}

static bool afrdma_accept_ready(struct sock *sk)
{
	return READ_ONCE(sk->sk_state) != TCP_LISTEN || READ_ONCE(sk->sk_err) ||
	       !list_empty(&afrdma_sk(sk)->accept_q) || afrdma_fb_acceptable(sk);
}

static int afrdma_accept(AFRDMA_ACCEPT_PARAMS)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_sock *child;
	struct sock *newsk;
	bool tcp = false;
	long timeo;
	int err = 0;

	lock_sock(sk);
	timeo = sock_rcvtimeo(sk, AFRDMA_ACCEPT_FLAGS & O_NONBLOCK);
	while (list_empty(&ars->accept_q)) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);

		if (sk->sk_state == TCP_LISTEN && afrdma_fb_acceptable(sk)) {
			err = afrdma_fb_accept(sk, &newsk);
			if (!err) {
				release_sock(sk);
				tcp = true;
				goto graft;
			}
			if (err != -EAGAIN)
				goto out;
		}
		if (sk->sk_state != TCP_LISTEN) {
			err = -EINVAL;
			goto out;
		}
		err = sock_error(sk);
		if (err)
			goto out;
		if (!timeo) {
			err = -EAGAIN;
			goto out;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			goto out;
		}
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_accept_ready(sk), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}
	/* Children are queued under accept_lock alone (cm.c). */
	spin_lock(&ars->accept_lock);
	child = list_first_entry(&ars->accept_q, struct afrdma_sock,
				 accept_node);
	list_del_init(&child->accept_node);
	WRITE_ONCE(ars->accept_len, ars->accept_len - 1);
	spin_unlock(&ars->accept_lock);
	release_sock(sk);

	newsk = &child->inet.sk;
graft:
	lock_sock(newsk);
	/* Not under the listener's lock: see afrdma_fb_accepted(). */
	if (tcp)
		afrdma_fb_accepted(newsk);
	sock_graft(newsk, newsock);
	afrdma_zc_own_sol_socket(newsock);
	newsock->state = SS_CONNECTED;
	release_sock(newsk);
	return 0;
out:
	release_sock(sk);
	return err;
}

static int afrdma_getname(struct socket *sock, struct sockaddr *uaddr,
			  int peer)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars = afrdma_sk(sk);
	const struct sockaddr *src = NULL;
	struct sockaddr_storage kept;
	int len;

	/* listen() after shutdown() may replace ars->tcp: hold it still. */
	lock_sock(sk);
	if (afrdma_on_tcp(sk) || (!peer && ars->tcp_only)) {
		len = afrdma_fb_getname(sock, uaddr, peer);
		release_sock(sk);
		return len;
	}
	if (peer) {
		/*
		 * As inet_getname(): a peer once connected stays named after
		 * it closed, always for accept() (@peer 2), which would
		 * otherwise fail with ECONNABORTED and drop the connection.
		 */
		if (ars->transport != AFRDMA_TRANSPORT_RDMA ||
		    (peer == 1 && ((1 << sk->sk_state) &
				   (TCPF_CLOSE | TCPF_SYN_SENT)))) {
			release_sock(sk);
			return -ENOTCONN;
		}
		if (ars->cm_id) {
			src = (struct sockaddr *)&ars->cm_id->route.addr.dst_addr;
		} else {
			/*
			 * The cm id went with its device while the connection
			 * waited for accept(): the listing kept the name.
			 */
			afrdma_diag_get_names(sk, NULL, &kept);
			if (!kept.ss_family) {
				release_sock(sk);
				return -ENOTCONN;
			}
			src = (struct sockaddr *)&kept;
		}
	} else if (ars->cm_id) {
		src = (struct sockaddr *)&ars->cm_id->route.addr.src_addr;
	} else if (ars->saddr.ss_family) {
		/* A stopped listener keeps bind()'s address, as TCP does. */
		src = (struct sockaddr *)&ars->saddr;
	} else if (ars->transport == AFRDMA_TRANSPORT_RDMA) {
		/* A connection whose cm id went with its device */
		afrdma_diag_get_names(sk, &kept, NULL);
		if (kept.ss_family)
			src = (struct sockaddr *)&kept;
	}
	len = afrdma_put_addr(sk, uaddr, src);
	release_sock(sk);
	return len;
}

static __poll_t afrdma_poll(struct file *file, struct socket *sock,
			    poll_table *wait)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct afrdma_conn *conn;
	__poll_t mask = 0;

	sock_poll_wait(file, sock, wait);

	lock_sock(sk);
	if (afrdma_on_tcp(sk)) {
		mask = afrdma_fb_poll(file, sock);
		goto out;
	}
	conn = ars->conn;
	if (sk->sk_err || !skb_queue_empty_lockless(&sk->sk_error_queue))
		mask |= EPOLLERR;
	if (sk->sk_state == TCP_LISTEN) {
		if (!list_empty(&ars->accept_q) || afrdma_fb_acceptable(sk))
			mask |= EPOLLIN | EPOLLRDNORM;
		goto out;
	}
	if (sk->sk_shutdown == SHUTDOWN_MASK || sk->sk_state == TCP_CLOSE)
		mask |= EPOLLHUP;
	if ((sk->sk_shutdown & RCV_SHUTDOWN) || (conn && conn->fin_rcvd))
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
	if (sk->sk_state == TCP_SYN_SENT || sk->sk_state == TCP_SYN_RECV)
		goto out;
	/*
	 * As TCP under memory pressure, below SO_RCVLOWAT too once the peer
	 * is out of credits: nothing more comes until the program reads.
	 */
	if (conn && READ_ONCE(conn->rx_bytes) &&
	    (READ_ONCE(conn->rx_bytes) >=
		    max_t(int, READ_ONCE(sk->sk_rcvlowat), 1) ||
	     READ_ONCE(conn->peer_credits) <= 1))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (sk->sk_shutdown & SEND_SHUTDOWN || !conn ||
	    sk->sk_state == TCP_CLOSE_WAIT || afrdma_tx_writable(conn))
		mask |= EPOLLOUT | EPOLLWRNORM;
out:
	release_sock(sk);
	return mask;
}

static int afrdma_ioctl(struct socket *sock, unsigned int cmd,
			unsigned long arg)
{
	struct sock *sk = sock->sk;
	struct afrdma_conn *conn;
	int answ;

	if (afrdma_on_tcp(sk))
		return afrdma_fb_ioctl(sock, cmd, arg);
	if (cmd != SIOCINQ && cmd != SIOCOUTQ && cmd != SIOCOUTQNSD)
		return -ENOIOCTLCMD;

	lock_sock(sk);
	if (sk->sk_state == TCP_LISTEN) {
		release_sock(sk);
		return -EINVAL;
	}
	conn = afrdma_sk(sk)->conn;
	if (!conn)
		answ = 0;
	else if (cmd == SIOCINQ)
		answ = READ_ONCE(conn->rx_bytes);
	else if (conn->torn)
		answ = 0;
	else if (cmd == SIOCOUTQ)
		/* Bytes leave the buffer only once the peer has them. */
		answ = READ_ONCE(conn->tx_unacked);
	else
		/* Not sent yet: what TCP_CORK, MSG_MORE or Nagle holds. */
		answ = READ_ONCE(conn->tx_pending);
	release_sock(sk);
	return put_user(answ, (int __user *)arg);
}

/*
 * Takes the connections not yet accepted, for afrdma_listen_drop(), in any
 * state: a listener whose device went is in TCP_CLOSE with its queue.  No
 * more come once the socket has left TCP_LISTEN (cm.c).
 */
static void afrdma_accept_q_take(struct sock *sk, struct list_head *children)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	spin_lock(&ars->accept_lock);
	list_splice_init(&ars->accept_q, children);
	WRITE_ONCE(ars->accept_len, 0);
	spin_unlock(&ars->accept_lock);
}

/*
 * Stops a listener: it takes no more connections and drops those not yet
 * accepted.  The socket is locked; afrdma_listen_drop() finishes the job
 * once it is not.  Out of TCP_LISTEN first: rdma_cm's handler queues
 * children without the socket lock, only while the listener listens.
 */
static struct rdma_cm_id *afrdma_listen_stop(struct sock *sk,
					     struct list_head *children)
{
	struct afrdma_sock *ars = afrdma_sk(sk);
	struct rdma_cm_id *id;

	afrdma_set_state(sk, TCP_CLOSE);
	afrdma_accept_q_take(sk, children);
	afrdma_cm_syn_flush(sk);
	id = afrdma_cm_take_id(sk);
	ars->bound = false;
	WRITE_ONCE(ars->tcp_only, false);
	afrdma_fb_unlisten(sk);
	return id;
}

/* Drops a stopped listener's children and destroys the cm id it held. */
static void afrdma_listen_drop(struct sock *sk, struct list_head *children,
			       struct rdma_cm_id *id)
{
	while (!list_empty(children)) {
		struct afrdma_sock *child =
			list_first_entry(children, struct afrdma_sock,
					 accept_node);

		list_del_init(&child->accept_node);
		afrdma_sk_destroy_child(&child->inet.sk);
	}
	afrdma_cm_put_id(sk, id);
}

static int afrdma_shutdown(struct socket *sock, int how)
{
	struct sock *sk = sock->sk;
	struct afrdma_conn *conn;
	struct rdma_cm_id *id;
	LIST_HEAD(children);
	int err = 0;

	if (afrdma_on_tcp(sk))
		return afrdma_fb_shutdown(sock, how);
	how++;	/* SHUT_RD..SHUT_RDWR to RCV_SHUTDOWN..SHUTDOWN_MASK */
	if ((how & ~SHUTDOWN_MASK) || !how)
		return -EINVAL;

	lock_sock(sk);
	conn = afrdma_sk(sk)->conn;
	if (sk->sk_state != TCP_ESTABLISHED && sk->sk_state != TCP_LISTEN &&
	    sk->sk_state != TCP_CLOSE_WAIT) {
		err = -ENOTCONN;
		goto out;
	}
	if (sk->sk_state == TCP_LISTEN && (how & RCV_SHUTDOWN)) {
		/* As TCP: the listener closes, a blocked accept() gets EINVAL. */
		id = afrdma_listen_stop(sk, &children);
		sk->sk_state_change(sk);
		release_sock(sk);
		afrdma_listen_drop(sk, &children, id);
		return 0;
	}
	sk->sk_shutdown |= how;
	if ((how & SEND_SHUTDOWN) && conn) {
		spin_lock_bh(&conn->lock);
		if (!conn->fin_sent)
			conn->fin_pending = true;
		spin_unlock_bh(&conn->lock);
		afrdma_tx_fin(conn);
	}
	sk->sk_state_change(sk);
out:
	release_sock(sk);
	return err;
}

static bool afrdma_close_done(struct sock *sk, struct afrdma_conn *conn)
{
	return READ_ONCE(conn->dead) ||
	       (READ_ONCE(conn->fin_sent) && afrdma_tx_idle(conn));
}

/*
 * What is left waits for the peer's reader: the FIN (behind the open slot)
 * for credits, or our SRCAVAIL for its RDDONE.  Otherwise only for the
 * completions of SENDs the peer has buffers for.
 */
static bool afrdma_close_reader_bound(const struct afrdma_conn *conn)
{
	return !READ_ONCE(conn->fin_sent) || READ_ONCE(conn->src);
}

/*
 * Sends FIN after the queued data and waits, up to @timeo, for all of it.
 * True if it all went.
 */
static bool afrdma_close_graceful(struct sock *sk, struct afrdma_conn *conn,
				  long timeo)
{
	while (!afrdma_close_done(sk, conn) && timeo) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);

		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_close_done(sk, conn), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
		if (signal_pending(current))
			break;
	}
	return !READ_ONCE(conn->dead) && READ_ONCE(conn->fin_sent) &&
	       afrdma_tx_idle(conn);
}

/* An orphan's delivery is over, one way or another: time to end it. */
static bool afrdma_orphan_due(struct sock *sk)
{
	struct afrdma_conn *conn = afrdma_sk(sk)->conn;

	return READ_ONCE(sk->sk_state) != TCP_ESTABLISHED ||
	       READ_ONCE(conn->rx_bytes) || afrdma_close_done(sk, conn);
}

/*
 * Every wake-up of an orphan (completions, the peer's data, its reset or
 * disconnect, device removal) comes here.  The queued work holds a
 * reference on the socket.  Any context.
 */
static void afrdma_orphan_wake(struct sock *sk)
{
	struct afrdma_sock *ars = afrdma_sk(sk);

	if (!READ_ONCE(ars->orphan) || !afrdma_orphan_due(sk))
		return;
	sock_hold(sk);
	if (mod_delayed_work(afrdma_wq, &ars->orphan_work, 0))
		sock_put(sk);
}

/*
 * SENDs posted, data and control.  Each takes a credit, which the peer
 * returns once its reader took data: an orphan's count moves only as the
 * peer takes its data.  Lockless reads of counters that only grow.
 */
static unsigned int afrdma_orphan_posted(const struct afrdma_conn *conn)
{
	return READ_ONCE(conn->tx_head) + READ_ONCE(conn->ctrl_head);
}

/*
 * At the end of a period of AFRDMA_CLOSE_TIMEOUT: another one if the peer
 * took data during it (a slow reader is no reason for a reset, as TCP's
 * persist timer keeps its orphan while the window opens), within
 * AFRDMA_ORPHAN_MAX of the close.  True if re-armed.  Socket lock.
 */
static bool afrdma_orphan_rearm(struct afrdma_sock *ars,
				const struct afrdma_conn *conn,
				unsigned long now)
{
	unsigned int posted = afrdma_orphan_posted(conn);

	if (posted == ars->orphan_posted ||
	    !time_before(now, ars->orphan_limit))
		return false;
	ars->orphan_posted = posted;
	ars->orphan_end = now + AFRDMA_CLOSE_TIMEOUT;
	if (time_after(ars->orphan_end, ars->orphan_limit))
		ars->orphan_end = ars->orphan_limit;
	return true;
}

/*
 * Ends an orphan: once its data and FIN all went (a graceful disconnect),
 * or as a reset when the peer sent data after the close (as TCP does),
 * when the connection broke, when a period of AFRDMA_CLOSE_TIMEOUT passed
 * in which the peer took none of its data, or AFRDMA_ORPHAN_MAX after the
 * close.
 */
static void afrdma_orphan_work(struct work_struct *work)
{
	struct afrdma_sock *ars = container_of(to_delayed_work(work),
					       struct afrdma_sock, orphan_work);
	struct sock *sk = &ars->inet.sk;
	struct afrdma_conn *conn = ars->conn;
	struct rdma_cm_id *id = NULL;
	unsigned long now;
	bool done;

	lock_sock(sk);
	if (!ars->orphan)
		goto out;
	now = jiffies;
	if (!afrdma_orphan_due(sk) &&
	    (time_before(now, ars->orphan_end) ||
	     afrdma_orphan_rearm(ars, conn, now))) {
		/* Woken early, or the peer is taking data: wait on. */
		sock_hold(sk);
		if (!queue_delayed_work(afrdma_wq, &ars->orphan_work,
					ars->orphan_end - now))
			sock_put(sk);
		goto out;
	}
	WRITE_ONCE(ars->orphan, false);
	if (sk->sk_state == TCP_ESTABLISHED && !conn->dead) {
		done = !READ_ONCE(conn->rx_bytes) && afrdma_close_done(sk, conn);
		if (done)
			/* The receives our disconnect flushes are no reset. */
			afrdma_tx_stop(conn);
		else if (!READ_ONCE(conn->rx_bytes))
			afrdma_inc_stats(sk, AFRDMA_MIB_ORPHAN_TIMEOUTS);
		if (ars->cm_id)
			rdma_disconnect(ars->cm_id);
	}
	afrdma_conn_teardown(conn);
	id = afrdma_cm_take_id(sk);
	afrdma_set_state(sk, TCP_CLOSE);
	atomic_dec(&afrdma_net(sock_net(sk))->orphans);
out:
	release_sock(sk);
	afrdma_cm_put_id(sk, id);
	sock_put(sk);
}

/*
 * close() leaves the rest of the data and the FIN to the background, as
 * TCP's orphans do: the socket lives on without its file until
 * afrdma_orphan_work() ends it, at the latest once a period of
 * AFRDMA_CLOSE_TIMEOUT passed in which the peer took none of its data, or
 * AFRDMA_ORPHAN_MAX after the close.  Past
 * net.afrdma.max_orphans (as tcp_max_orphans) false: the close is then a
 * reset.  The socket is locked.
 */
static bool afrdma_orphan(struct sock *sk)
{
	struct afrdma_net *an = afrdma_net(sock_net(sk));
	struct afrdma_sock *ars = afrdma_sk(sk);
	unsigned long now = jiffies;

	if (atomic_inc_return(&an->orphans) > READ_ONCE(an->max_orphans)) {
		atomic_dec(&an->orphans);
		afrdma_inc_stats(sk, AFRDMA_MIB_ORPHAN_DROPS);
		return false;
	}
	ars->orphan_end = now + AFRDMA_CLOSE_TIMEOUT;
	ars->orphan_limit = now + AFRDMA_ORPHAN_MAX;
	ars->orphan_posted = afrdma_orphan_posted(ars->conn);
	write_lock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(sk->sk_state_change, afrdma_orphan_wake);
	WRITE_ONCE(sk->sk_data_ready, afrdma_orphan_wake);
	WRITE_ONCE(sk->sk_write_space, afrdma_orphan_wake);
	WRITE_ONCE(sk->sk_error_report, afrdma_orphan_wake);
	write_unlock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(ars->orphan, true);
	sock_hold(sk);
	if (!queue_delayed_work(afrdma_wq, &ars->orphan_work,
				AFRDMA_CLOSE_TIMEOUT))
		sock_put(sk);
	/* It may all have gone meanwhile. */
	afrdma_orphan_wake(sk);
	return true;
}

/*
 * A graceful close of an established connection: true if the socket is
 * left as an orphan, false when the caller is to disconnect.  As TCP's,
 * close() returns at once and the rest goes in the background, unless
 * SO_LINGER asks it to wait (up to l_linger; then the rest still goes).
 * Only completions of SENDs already in the peer's buffers are waited for
 * (bounded): they depend on no program.
 */
static bool afrdma_close_established(struct sock *sk, struct afrdma_conn *conn)
{
	bool linger = sock_flag(sk, SOCK_LINGER);
	long timeo;

	spin_lock_bh(&conn->lock);
	if (!conn->fin_sent)
		conn->fin_pending = true;
	spin_unlock_bh(&conn->lock);
	afrdma_tx_fin(conn);

	if (linger)
		timeo = sk->sk_lingertime;
	else if (afrdma_close_reader_bound(conn))
		timeo = 0;
	else
		timeo = AFRDMA_CLOSE_TIMEOUT;
	if (afrdma_close_graceful(sk, conn, timeo)) {
		/* The receives our disconnect flushes are no reset. */
		afrdma_tx_stop(conn);
		return false;
	}
	if (READ_ONCE(conn->dead) ||
	    (!linger && !afrdma_close_reader_bound(conn)))
		return false;
	return afrdma_orphan(sk);
}

static int afrdma_release(struct socket *sock)
{
	struct sock *sk = sock->sk;
	struct afrdma_sock *ars;
	struct afrdma_conn *conn;
	struct rdma_cm_id *id;
	LIST_HEAD(children);

	if (!sk)
		return 0;
	ars = afrdma_sk(sk);

	lock_sock(sk);
	afrdma_fb_timer_stop(sk);
	conn = ars->conn;
	id = NULL;
	if (sk->sk_state == TCP_LISTEN) {
		id = afrdma_listen_stop(sk, &children);
	} else if (sk->sk_state == TCP_ESTABLISHED && conn && !conn->dead) {
		afrdma_trace_close(sk, conn);
		/*
		 * Unread data, or SO_LINGER with a zero time, makes close a
		 * reset, as in TCP.
		 */
		if (!READ_ONCE(conn->rx_bytes) &&
		    !(sock_flag(sk, SOCK_LINGER) && !sk->sk_lingertime) &&
		    afrdma_close_established(sk, conn)) {
			sk->sk_shutdown = SHUTDOWN_MASK;
			sock_orphan(sk);
			release_sock(sk);
			afrdma_fb_release(sk);
			sock->sk = NULL;
			sock_put(sk);
			return 0;
		}
		if (ars->cm_id)
			afrdma_conn_disconnect(sk, ars->cm_id);
	}
	if (!id)
		id = afrdma_cm_take_id(sk);
	afrdma_accept_q_take(sk, &children);
	if (conn)
		afrdma_conn_teardown(conn);
	afrdma_set_state(sk, TCP_CLOSE);
	sk->sk_shutdown = SHUTDOWN_MASK;
	sock_orphan(sk);
	release_sock(sk);
	afrdma_fb_release(sk);
	afrdma_listen_drop(sk, &children, id);
	sock->sk = NULL;
	sock_put(sk);
	return 0;
}

static bool afrdma_connected_or_tcp(struct sock *sk)
{
	return READ_ONCE(sk->sk_state) != TCP_SYN_SENT || afrdma_on_tcp(sk);
}

/*
 * Until RDMA or TCP carries a connecting socket, its calls wait, as TCP's
 * do in SYN_SENT: up to @timeo, EAGAIN at once for a non-blocking one.
 */
static int afrdma_wait_transport(struct sock *sk, long timeo)
{
	int err = 0;

	lock_sock(sk);
	while (!afrdma_connected_or_tcp(sk)) {
		DEFINE_WAIT_FUNC(wait, woken_wake_function);

		if (!timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			break;
		}
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, afrdma_connected_or_tcp(sk), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}
	release_sock(sk);
	return err;
}

static int afrdma_sock_sendmsg(struct socket *sock, struct msghdr *msg,
			       size_t len)
{
	struct sock *sk = sock->sk;
	int err;

	if (READ_ONCE(sk->sk_state) == TCP_SYN_SENT) {
		err = afrdma_wait_transport(sk, sock_sndtimeo(sk, msg->msg_flags &
							      MSG_DONTWAIT));
		if (err)
			return err;
	}
	if (afrdma_on_tcp(sk))
		return afrdma_fb_sendmsg(sock, msg, len);
	return afrdma_sendmsg(sock, msg, len);
}

static int afrdma_sock_recvmsg(struct socket *sock, struct msghdr *msg,
			       size_t len, int flags)
{
	struct sock *sk = sock->sk;
	int err;

	/* The connect's outcome decides where the data comes from. */
	if (!(flags & (MSG_ERRQUEUE | MSG_OOB)) &&
	    READ_ONCE(sk->sk_state) == TCP_SYN_SENT) {
		err = afrdma_wait_transport(sk, sock_rcvtimeo(sk, flags &
							      MSG_DONTWAIT));
		if (err)
			return err;
	}
	if (afrdma_on_tcp(sk))
		return afrdma_fb_recvmsg(sock, msg, len, flags);
	if (flags & MSG_ERRQUEUE)
		return afrdma_zc_recv(sk, msg, len);
	return afrdma_recvmsg(sock, msg, len, flags);
}

/* SO_KEEPALIVE; the core holds @sk locked and sets SOCK_KEEPOPEN after. */
static void afrdma_keepalive(struct sock *sk, int val)
{
	struct afrdma_conn *conn = afrdma_sk(sk)->conn;

	if (conn && sk->sk_state == TCP_ESTABLISHED)
		afrdma_ka_set(conn, val);
	afrdma_fb_keepalive(sk, val);
}

#define AFRDMA_PROTO_OPS(fam)				\
	.family		= fam,				\
	.owner		= THIS_MODULE,			\
	.release	= afrdma_release,		\
	.bind		= afrdma_bind,			\
	.connect	= afrdma_connect,		\
	.socketpair	= sock_no_socketpair,		\
	.accept		= afrdma_accept,		\
	.getname	= afrdma_getname,		\
	.poll		= afrdma_poll,			\
	.ioctl		= afrdma_ioctl,			\
	.listen		= afrdma_listen,		\
	.shutdown	= afrdma_shutdown,		\
	.setsockopt	= afrdma_setsockopt,		\
	.getsockopt	= afrdma_getsockopt,		\
	.sendmsg	= afrdma_sock_sendmsg,		\
	.recvmsg	= afrdma_sock_recvmsg,		\
	.mmap		= sock_no_mmap

/* Not const: the family number is a module parameter. */
static struct proto_ops afrdma_family_ops = {
	AFRDMA_PROTO_OPS(AFRDMA_FAMILY_DEFAULT),
};

static const struct proto_ops afrdma_inet_ops = {
	AFRDMA_PROTO_OPS(PF_INET),
};

static struct proto afrdma_prot = {
	.name		= "AFRDMA",
	.owner		= THIS_MODULE,
	.init		= afrdma_init_sock,
	.hash		= afrdma_hash,
	.unhash		= afrdma_unhash,
	.keepalive	= afrdma_keepalive,
	.obj_size	= sizeof(struct afrdma_sock),
};

static struct inet_protosw afrdma_inet_protosw = {
	.type		= SOCK_STREAM,
	.prot		= &afrdma_prot,
	.ops		= &afrdma_inet_ops,
};

#if IS_ENABLED(CONFIG_IPV6)
static const struct proto_ops afrdma_inet6_ops = {
	AFRDMA_PROTO_OPS(PF_INET6),
};

static struct proto afrdma6_prot = {
	.name		= "AFRDMA6",
	.owner		= THIS_MODULE,
	.init		= afrdma_init_sock,
	.hash		= afrdma_hash,
	.unhash		= afrdma_unhash,
	.keepalive	= afrdma_keepalive,
	.obj_size	= sizeof(struct afrdma6_sock),
#ifdef AFRDMA_HAVE_PROTO_IPV6_PINFO_OFFSET
	.ipv6_pinfo_offset = offsetof(struct afrdma6_sock, inet6),
#endif
};

static struct inet_protosw afrdma_inet6_protosw = {
	.type		= SOCK_STREAM,
	.prot		= &afrdma6_prot,
	.ops		= &afrdma_inet6_ops,
};
#endif

static int afrdma_create(struct net *net, struct socket *sock, int protocol,
			 int kern)
{
	struct sock *sk;
	int err;

	if (sock->type != SOCK_STREAM)
		return -ESOCKTNOSUPPORT;
	if (protocol && protocol != afrdma_ipproto)
		return -EPROTONOSUPPORT;

	sk = sk_alloc(net, afrdma_family, GFP_KERNEL, &afrdma_prot, kern);
	if (!sk)
		return -ENOMEM;
	sock->state = SS_UNCONNECTED;
	sock->ops = &afrdma_family_ops;
	sock_init_data(sock, sk);
	sk->sk_protocol = afrdma_ipproto;
	err = afrdma_init_sock(sk);
	if (err) {
		/* As inet_create() when its protocol's init fails */
		sk_common_release(sk);
		sock->sk = NULL;
		return err;
	}
	return 0;
}

static struct net_proto_family afrdma_net_family = {
	.family	= AFRDMA_FAMILY_DEFAULT,
	.create	= afrdma_create,
	.owner	= THIS_MODULE,
};

static int __init afrdma_check_params(void)
{
	if (afrdma_family <= 0 || afrdma_family >= AF_MAX ||
	    afrdma_family == AF_INET || afrdma_family == AF_INET6 ||
	    afrdma_family == AF_IB) {
		pr_err("family=%d is not usable: pick an unused number below %d, not AF_IB (%d)\n",
		       afrdma_family, AF_MAX, AF_IB);
		return -EINVAL;
	}
	if (afrdma_ipproto < AFRDMA_IPPROTO_MIN ||
	    afrdma_ipproto > AFRDMA_IPPROTO_MAX) {
		pr_err("ipproto=%d is out of range %d-%d\n", afrdma_ipproto,
		       AFRDMA_IPPROTO_MIN, AFRDMA_IPPROTO_MAX);
		return -EINVAL;
	}
	return 0;
}

static int __init afrdma_init(void)
{
	int err;

	err = afrdma_check_params();
	if (err)
		return err;
	afrdma_family_ops.family = afrdma_family;
	afrdma_net_family.family = afrdma_family;
	afrdma_inet_protosw.protocol = afrdma_ipproto;

	afrdma_wq = alloc_workqueue("afrdma", WQ_MEM_RECLAIM, 0);
	if (!afrdma_wq)
		return -ENOMEM;
	err = proto_register(&afrdma_prot, 1);
	if (err)
		goto out_wq;
#if IS_ENABLED(CONFIG_IPV6)
	err = proto_register(&afrdma6_prot, 1);
	if (err)
		goto out_prot;
#endif
	err = afrdma_sysctl_init();
	if (err)
		goto out_prot6;
	err = afrdma_device_init();
	if (err)
		goto out_sysctl;

	err = sock_register(&afrdma_net_family);
	if (err) {
		pr_err("address family %d is already registered (%d); load with family=N to pick another\n",
		       afrdma_family, err);
		goto out_device;
	}

	err = afrdma_nld_init();
	if (err) {
		pr_err("sock_diag handler for family %d: %d\n", afrdma_family, err);
		goto out_family;
	}
	err = afrdma_nls_init();
	if (err) {
		pr_err("generic netlink family %s: %d\n", AFRDMA_GENL_NAME, err);
		goto out_nld;
	}

	inet_register_protosw(&afrdma_inet_protosw);
#if IS_ENABLED(CONFIG_IPV6)
	afrdma_inet6_protosw.protocol = afrdma_ipproto;
	err = inet6_register_protosw(&afrdma_inet6_protosw);
	if (err)
		goto out_inet;
#endif
	pr_info("AF_RDMA is family %d, IPPROTO_RDMA is %d\n", afrdma_family,
		afrdma_ipproto);
	return 0;

#if IS_ENABLED(CONFIG_IPV6)
out_inet:
	inet_unregister_protosw(&afrdma_inet_protosw);
	afrdma_nls_exit();
#endif
out_nld:
	afrdma_nld_exit();
out_family:
	sock_unregister(afrdma_family);
out_device:
	afrdma_device_exit();
out_sysctl:
	afrdma_sysctl_exit();
out_prot6:
#if IS_ENABLED(CONFIG_IPV6)
	proto_unregister(&afrdma6_prot);
out_prot:
#endif
	proto_unregister(&afrdma_prot);
out_wq:
	destroy_workqueue(afrdma_wq);
	return err;
}

static void __exit afrdma_exit(void)
{
#if IS_ENABLED(CONFIG_IPV6)
	inet6_unregister_protosw(&afrdma_inet6_protosw);
#endif
	inet_unregister_protosw(&afrdma_inet_protosw);
	afrdma_nls_exit();
	afrdma_nld_exit();
	sock_unregister(afrdma_family);
	afrdma_device_exit();
	afrdma_sysctl_exit();
#if IS_ENABLED(CONFIG_IPV6)
	proto_unregister(&afrdma6_prot);
#endif
	proto_unregister(&afrdma_prot);
	destroy_workqueue(afrdma_wq);
}

module_init(afrdma_init);
module_exit(afrdma_exit);

MODULE_DESCRIPTION("AF_RDMA: stream sockets over RDMA verbs");
MODULE_LICENSE("GPL");
MODULE_ALIAS_NETPROTO(AFRDMA_FAMILY_DEFAULT);
MODULE_ALIAS_NET_PF_PROTO_TYPE(PF_INET, AFRDMA_IPPROTO_DEFAULT, SOCK_STREAM);
MODULE_ALIAS_NET_PF_PROTO_TYPE(PF_INET6, AFRDMA_IPPROTO_DEFAULT, SOCK_STREAM);
