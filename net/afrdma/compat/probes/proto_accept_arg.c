// SPDX-License-Identifier: GPL-2.0
/* proto_ops.accept takes struct proto_accept_arg (6.10+). */
#include <linux/net.h>
#include <net/sock.h>

int probe(struct socket *sock, struct socket *newsock,
	  struct proto_accept_arg *arg);
int probe(struct socket *sock, struct socket *newsock,
	  struct proto_accept_arg *arg)
{
	struct proto_ops ops = { .accept = probe };

	return ops.accept == probe ? arg->flags : 0;
}
