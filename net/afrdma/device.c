// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma RDMA device tracking: an ib_client that knows the devices in use
 * (each connection has a PD of its own, conn.c, and so has each link,
 * link.c), and on removal resets every connection and tears down every
 * link that uses the device before the device may go.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>

#include "afrdma.h"

/* Serialises lookups against the ib_client add and remove callbacks. */
static DEFINE_MUTEX(afrdma_devices_mutex);
static LIST_HEAD(afrdma_devices);
static u32 afrdma_devices_next_id;

static struct ib_client afrdma_ib_client;

static void afrdma_device_release(struct kref *ref)
{
	struct afrdma_device *dev = container_of(ref, struct afrdma_device, ref);

	complete(&dev->released);
}

void afrdma_device_put(struct afrdma_device *dev)
{
	kref_put(&dev->ref, afrdma_device_release);
}

struct afrdma_device *afrdma_device_get(struct ib_device *ibdev)
{
	struct afrdma_device *dev;

	mutex_lock(&afrdma_devices_mutex);
	dev = ib_get_client_data(ibdev, &afrdma_ib_client);
	if (dev && !READ_ONCE(dev->removing))
		kref_get(&dev->ref);
	else
		dev = NULL;
	mutex_unlock(&afrdma_devices_mutex);
	return dev;
}

/*
 * The first listed device whose id is @id or more, held; NULL past the end.
 * Ids grow in list order, so a walk that drops the lock between devices
 * goes on from the last id it saw, whatever came or went meanwhile.
 */
struct afrdma_device *afrdma_device_next(u32 id)
{
	struct afrdma_device *dev;

	mutex_lock(&afrdma_devices_mutex);
	list_for_each_entry(dev, &afrdma_devices, node) {
		/* listed: not removing, its last reference not yet dropped */
		if (dev->id >= id) {
			kref_get(&dev->ref);
			mutex_unlock(&afrdma_devices_mutex);
			return dev;
		}
	}
	mutex_unlock(&afrdma_devices_mutex);
	return NULL;
}

/* Connections of namespace @net on @dev now. */
unsigned int afrdma_device_conns(struct afrdma_device *dev, const struct net *net)
{
	struct afrdma_conn *conn;
	unsigned int n = 0;

	spin_lock_bh(&dev->lock);
	list_for_each_entry(conn, &dev->conns, dev_node)
		n += net_eq(sock_net(conn->sk), net);
	spin_unlock_bh(&dev->lock);
	return n;
}

/* False once removal has begun: the connection must not start. */
bool afrdma_device_attach(struct afrdma_device *dev, struct afrdma_conn *conn)
{
	bool ok;

	spin_lock_bh(&dev->lock);
	ok = !dev->removing;
	if (ok)
		list_add_tail(&conn->dev_node, &dev->conns);
	spin_unlock_bh(&dev->lock);
	return ok;
}

void afrdma_device_detach(struct afrdma_conn *conn)
{
	struct afrdma_device *dev = conn->dev;

	spin_lock_bh(&dev->lock);
	list_del_init(&conn->dev_node);
	spin_unlock_bh(&dev->lock);
}

static int afrdma_add_one(struct ib_device *ibdev)
{
	struct afrdma_device *dev;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;

	dev->ibdev = ibdev;
	spin_lock_init(&dev->lock);
	INIT_LIST_HEAD(&dev->conns);
	INIT_LIST_HEAD(&dev->links);
	kref_init(&dev->ref);
	init_completion(&dev->released);

	mutex_lock(&afrdma_devices_mutex);
	dev->id = afrdma_devices_next_id++;
	list_add_tail(&dev->node, &afrdma_devices);
	ib_set_client_data(ibdev, &afrdma_ib_client, dev);
	mutex_unlock(&afrdma_devices_mutex);
	pr_debug("using device %s\n", dev_name(&ibdev->dev));
	trace_afrdma_device_add(ibdev);
	return 0;
}

static void afrdma_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct afrdma_device *dev = client_data;
	struct afrdma_conn *conn;

	trace_afrdma_device_remove(ibdev);
	/*
	 * Unpublished under the mutex: afrdma_device_get() must not find
	 * @dev once it is freed below (ib_core clears its slot only after we
	 * return).
	 */
	mutex_lock(&afrdma_devices_mutex);
	WRITE_ONCE(dev->removing, true);
	list_del(&dev->node);
	ib_set_client_data(ibdev, &afrdma_ib_client, NULL);
	mutex_unlock(&afrdma_devices_mutex);

	/*
	 * Our client sits above rdma_cm, so we are told first and the cm ids
	 * are still alive: reset each connection, which detaches it.
	 */
	spin_lock_bh(&dev->lock);
	while (!list_empty(&dev->conns)) {
		struct sock *sk;

		conn = list_first_entry(&dev->conns, struct afrdma_conn,
					dev_node);
		sk = conn->sk;
		sock_hold(sk);
		list_del_init(&conn->dev_node);
		spin_unlock_bh(&dev->lock);

		afrdma_conn_abort(sk, ECONNRESET);
		sock_put(sk);

		spin_lock_bh(&dev->lock);
	}
	spin_unlock_bh(&dev->lock);
	afrdma_link_device_removed(dev);

	afrdma_device_put(dev);
	wait_for_completion(&dev->released);
	kfree(dev);
}

static struct ib_client afrdma_ib_client = {
	.name	= "afrdma",
	.add	= afrdma_add_one,
	.remove	= afrdma_remove_one,
};

int afrdma_device_init(void)
{
	return ib_register_client(&afrdma_ib_client);
}

void afrdma_device_exit(void)
{
	ib_unregister_client(&afrdma_ib_client);
}
