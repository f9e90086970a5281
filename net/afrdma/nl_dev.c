// SPDX-License-Identifier: GPL-2.0
/*
 * AFRDMA_CMD_GET_DEVICES of afrdma's generic netlink family (nl_stats.c):
 * a dump of the RDMA devices afrdma uses (device.c) that the requester's
 * namespace may see, with their ports and the namespace's connections on
 * each (<linux/afrdma.h>).
 *
 * A message per device.  No lock is held across devices: device.c hands
 * out the next one held, so its removal waits for the message to be
 * written, and the dump goes on from the device's id in the next chunk.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/genetlink.h>
#include <rdma/ib_cache.h>

#include "afrdma.h"

/* cb->args[] of a dump */
enum {
	AFRDMA_NLDEV_NEXT,	/* the id of the device the next chunk starts at */
};

/* The port's netdev, if it is in @net: another namespace's stays hidden. */
static int afrdma_nldev_put_netdev(struct sk_buff *skb, struct ib_device *ibdev,
				   u32 port, const struct net *net)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;
	int err = 0;

	attr = rdma_get_gid_attr(ibdev, port, 0);
	if (IS_ERR(attr))
		return 0;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR_OR_NULL(ndev) && net_eq(dev_net(ndev), net))
		err = nla_put_string(skb, AFRDMA_A_PORT_NETDEV, ndev->name) ?:
		      nla_put_u32(skb, AFRDMA_A_PORT_IFINDEX, ndev->ifindex);
	rcu_read_unlock();
	rdma_put_gid_attr(attr);
	return err;
}

static int afrdma_nldev_put_port(struct sk_buff *skb, struct ib_device *ibdev,
				 u32 port, const struct net *net)
{
	struct ib_port_attr pa;
	struct nlattr *nest;

	/* may sleep (a RoCE port's speed takes RTNL): no lock of ours held */
	if (ib_query_port(ibdev, port, &pa))
		return 0;
	nest = nla_nest_start(skb, AFRDMA_A_DEV_PORT);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, AFRDMA_A_PORT_NUM, port) ||
	    nla_put_u8(skb, AFRDMA_A_PORT_STATE, pa.state) ||
	    nla_put_u8(skb, AFRDMA_A_PORT_LINK_LAYER,
		       rdma_port_get_link_layer(ibdev, port)) ||
	    nla_put_u32(skb, AFRDMA_A_PORT_ACTIVE_MTU,
			ib_mtu_enum_to_int(pa.active_mtu)) ||
	    afrdma_nldev_put_netdev(skb, ibdev, port, net)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int afrdma_nldev_fill(struct sk_buff *skb, struct netlink_callback *cb,
			     struct afrdma_device *dev, const struct net *net)
{
	struct ib_device *ibdev = dev->ibdev;
	struct nlattr *nest;
	void *hdr;
	u32 port;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &afrdma_nls_family, NLM_F_MULTI, AFRDMA_CMD_GET_DEVICES);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, AFRDMA_A_DEVICE);
	if (!nest)
		goto cancel;
	if (nla_put_string(skb, AFRDMA_A_DEV_NAME, dev_name(&ibdev->dev)) ||
	    nla_put_u32(skb, AFRDMA_A_DEV_INDEX, ibdev->index) ||
	    nla_put_u64_64bit(skb, AFRDMA_A_DEV_NODE_GUID,
			      be64_to_cpu(ibdev->node_guid), AFRDMA_A_DEV_PAD) ||
	    nla_put_u32(skb, AFRDMA_A_DEV_CONNS, afrdma_device_conns(dev, net)))
		goto cancel;
	rdma_for_each_port(ibdev, port)
		if (afrdma_nldev_put_port(skb, ibdev, port, net))
			goto cancel;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

int afrdma_nldev_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct net *net = sock_net(skb->sk);
	struct afrdma_device *dev;
	int err = 0;
	u32 id;

	while ((dev = afrdma_device_next(cb->args[AFRDMA_NLDEV_NEXT]))) {
		id = dev->id;
		/* a namespace sees an exclusive-mode device only if it has it */
		if (rdma_dev_access_netns(dev->ibdev, net))
			err = afrdma_nldev_fill(skb, cb, dev, net);
		afrdma_device_put(dev);
		if (err)
			break;
		cb->args[AFRDMA_NLDEV_NEXT] = id + 1;
	}
	/* a device alone too big for a message is an error, not the end */
	return err && !skb->len ? err : skb->len;
}
