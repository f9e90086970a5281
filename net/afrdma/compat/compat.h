/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences between the kernels afrdma supports, keyed on
 * build-time probes (generated.h) rather than version numbers.
 */
#ifndef _AFRDMA_COMPAT_H
#define _AFRDMA_COMPAT_H

#include "generated.h"

#ifdef AFRDMA_HAVE_PROTO_ACCEPT_ARG
#define AFRDMA_ACCEPT_PARAMS	struct socket *sock, struct socket *newsock, \
				struct proto_accept_arg *arg
#define AFRDMA_ACCEPT_FLAGS	(arg->flags)
#else
#define AFRDMA_ACCEPT_PARAMS	struct socket *sock, struct socket *newsock, \
				int flags, bool kern
#define AFRDMA_ACCEPT_FLAGS	(flags)
#endif

/* The table a sysctl's proc_handler is given */
#ifdef AFRDMA_HAVE_CTL_TABLE_CONST_HANDLER
#define AFRDMA_CTL_TABLE	const struct ctl_table
#else
#define AFRDMA_CTL_TABLE	struct ctl_table
#endif

#endif /* _AFRDMA_COMPAT_H */
