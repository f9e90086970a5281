// SPDX-License-Identifier: GPL-2.0
/*
 * libafrdma-preload.so: turns a program's AF_INET and AF_INET6 stream
 * sockets into IPPROTO_RDMA ones at socket() time.  It keeps no state: the
 * kernel fd is the socket, so fork, exec, dup and epoll behave as usual.
 *
 * AFRDMA_PRELOAD=0 turns it off.  Loaded by tools/afrdma-run.
 */
#include <dlfcn.h>
#include <stdbool.h>

#include "lib/afrdma_sock.h"

typedef int (*socket_fn)(int, int, int);

static bool afrdma_preload_on(void)
{
	const char *v = getenv("AFRDMA_PRELOAD");

	return !v || strcmp(v, "0");
}

int socket(int domain, int type, int protocol)
{
	static socket_fn real_socket;

	if (!real_socket)
		real_socket = (socket_fn)dlsym(RTLD_NEXT, "socket");
	if ((domain == AF_INET || domain == AF_INET6) &&
	    (type & 0xf) == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP) && afrdma_preload_on())
		protocol = afrdma_ipproto_nr();
	return real_socket(domain, type, protocol);
}
