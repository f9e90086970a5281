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

#endif /* _UAPI_LINUX_AFRDMA_H */
