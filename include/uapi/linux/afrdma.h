/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * afrdma user API: stream sockets carried over RDMA reliable-connected
 * queue pairs.
 *
 * Two ways in, both taking struct sockaddr_in / sockaddr_in6 whose family
 * field is AF_INET or AF_INET6:
 *
 *	socket(AF_RDMA, SOCK_STREAM, 0);
 *	socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_RDMA);
 *
 * The second form needs no header at all, so any language can use it.
 * Both numbers are module parameters; the values below are the defaults.
 * The values in effect are in /sys/module/afrdma/parameters/{family,ipproto}.
 */
#ifndef _UAPI_LINUX_AFRDMA_H
#define _UAPI_LINUX_AFRDMA_H

#include <linux/types.h>

/*
 * AF_WANPIPE's number: reserved in linux/socket.h, but no mainline module
 * registers it.  Never AF_IB (27), which rdma_cm addresses use.
 */
#define AFRDMA_FAMILY_DEFAULT	25
#ifndef AF_RDMA
#define AF_RDMA			AFRDMA_FAMILY_DEFAULT
#define PF_RDMA			AF_RDMA
#endif

/* 256 is IPPROTO_SMC, 262 IPPROTO_MPTCP: the module takes 257-261. */
#define AFRDMA_IPPROTO_MIN	257
#define AFRDMA_IPPROTO_MAX	261
#define AFRDMA_IPPROTO_DEFAULT	257
#ifndef IPPROTO_RDMA
#define IPPROTO_RDMA		AFRDMA_IPPROTO_DEFAULT
#endif

/* Socket level for afrdma's own options. */
#ifndef SOL_RDMA
#define SOL_RDMA		299
#endif

/*
 * SOL_RDMA options, all int-valued.
 *
 * AFRDMA_FALLBACK: 1 lets the socket carry its connection over TCP when
 * RDMA cannot (the default is net.afrdma.fallback).  Set it before connect()
 * or listen().  A listener with fallback also accepts plain TCP clients on
 * its port.
 *
 * AFRDMA_TRANSPORT (read only): AFRDMA_TRANSPORT_*, what carries the
 * socket now.
 *
 * AFRDMA_FALLBACK_REASON (read only): AFRDMA_FB_*, why a socket whose
 * transport is AFRDMA_TRANSPORT_TCP is not on RDMA.
 *
 * AFRDMA_ZEROCOPY: the same switch as SO_ZEROCOPY, for kernels that refuse
 * SO_ZEROCOPY at SOL_SOCKET for anything but TCP, UDP and RDS (6.1).
 * Notifications then arrive on the error queue exactly as TCP sends them.
 */
#define AFRDMA_FALLBACK		1
#define AFRDMA_TRANSPORT	2
#define AFRDMA_FALLBACK_REASON	3
#define AFRDMA_ZEROCOPY		4

enum {
	AFRDMA_TRANSPORT_NONE	= 0,	/* not connected yet */
	AFRDMA_TRANSPORT_RDMA	= 1,
	AFRDMA_TRANSPORT_TCP	= 2,
};

enum {
	AFRDMA_FB_NONE		= 0,
	AFRDMA_FB_NO_DEVICE	= 1,	/* no RDMA device reaches the peer */
	AFRDMA_FB_NO_ROUTE	= 2,	/* RDMA route resolution failed */
	AFRDMA_FB_UNREACHABLE	= 3,	/* the peer's RDMA CM did not answer */
	AFRDMA_FB_REJECTED	= 4,	/* the peer refused RDMA (no afrdma listener) */
	AFRDMA_FB_RESOURCES	= 5,	/* local QP or buffer setup failed */
	AFRDMA_FB_PROTOCOL	= 6,	/* the peer answered, but not as afrdma */
	AFRDMA_FB_TIMEOUT	= 7,	/* RDMA setup outlasted fallback_timeout_ms */
	AFRDMA_FB_PEER_TCP	= 8,	/* accepted: the client came over plain TCP */
	AFRDMA_FB_MAX
};

#endif /* _UAPI_LINUX_AFRDMA_H */
