// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma MSG_ZEROCOPY, as TCP's (Documentation/networking/msg_zerocopy.rst):
 * the SO_ZEROCOPY opt-in, user pages sent without a copy, and completion
 * notifications on the error queue.
 *
 * A send of at least net.afrdma.zerocopy_min bytes from user memory pins
 * the caller's pages and posts them as gather entries behind a header
 * from the send slot, so the HCA reads the payload where the program
 * left it.  The PD's local DMA lkey covers those reads as it covers the
 * send slots: the pages are only ever read locally, never exposed to the
 * peer, so they need no memory region of their own.  Every SEND of the
 * call holds a reference on the call's notification; the last completion
 * (success or flush) unmaps and unpins the pages, and the kernel's
 * msg_zerocopy machinery (as TCP uses it) queues the notification, merged
 * with the previous range, and returns the RLIMIT_MEMLOCK charge.  Its
 * skb is allocated at send time, so completions (softirq) never allocate.
 *
 * Smaller sends, and iterators not backed by user memory, are copied into
 * the send slots as before and notified at once with
 * SO_EE_CODE_ZEROCOPY_COPIED, as TCP reports a send it had to copy.
 *
 * Opt-in: SO_ZEROCOPY at SOL_SOCKET where the kernel routes SOL_SOCKET to
 * the protocol (SOCK_CUSTOM_SOCKOPT, as vsock); elsewhere (6.1 refuses
 * SO_ZEROCOPY for a protocol that is not TCP, UDP or RDS) AFRDMA_ZEROCOPY
 * at SOL_RDMA, or net.afrdma.zerocopy for every new socket.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errqueue.h>
#include <linux/in6.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "afrdma.h"

/* New sockets: net.afrdma.zerocopy, and SOL_SOCKET routed to us. */
void afrdma_zc_init(struct sock *sk)
{
	if (READ_ONCE(afrdma_net(sock_net(sk))->zerocopy))
		sock_set_flag(sk, SOCK_ZEROCOPY);
	afrdma_zc_own_sol_socket(sk->sk_socket);
}

void afrdma_zc_own_sol_socket(struct socket *sock)
{
#ifdef SOCK_CUSTOM_SOCKOPT
	if (sock)
		set_bit(SOCK_CUSTOM_SOCKOPT, &sock->flags);
#endif
}

/* SO_ZEROCOPY (or AFRDMA_ZEROCOPY): TCP's rules, 0 or 1, at any time. */
int afrdma_zc_set(struct sock *sk, int val)
{
	struct socket *tcp = NULL;

	if (val < 0 || val > 1)
		return -EINVAL;
	lock_sock(sk);
	sock_valbool_flag(sk, SOCK_ZEROCOPY, val);
	if (afrdma_on_tcp(sk))
		tcp = afrdma_sk(sk)->tcp;
	release_sock(sk);
	/* TCP carries the connection: its own MSG_ZEROCOPY takes over. */
	if (tcp) {
		lock_sock(tcp->sk);
		sock_valbool_flag(tcp->sk, SOCK_ZEROCOPY, val);
		release_sock(tcp->sk);
	}
	return 0;
}

/*
 * The user pages of one zero-copy SEND.  Owned by the sender until posted,
 * then by the send slot until its completion.
 */
struct afrdma_zc_send {
	struct ubuf_info	*uarg;		/* the call's notification */
	struct page		**pages;
	unsigned int		nr_pages;
	size_t			len;		/* payload bytes */
	struct ib_sge		sge[];		/* the header, then the pages */
};

/*
 * At the start of a send with MSG_ZEROCOPY on an opted-in socket: the
 * notification, charged to RLIMIT_MEMLOCK for @len when the pages will be
 * pinned (as TCP charges, CAP_IPC_LOCK exempt).  Returns 1 for zero-copy,
 * 0 for a copy (a copied send charges nothing), -ENOBUFS past the limit
 * or optmem_max.  Called with the socket locked, which orders the ids.
 */
int afrdma_zc_begin(struct sock *sk, const struct afrdma_conn *conn,
		    const struct msghdr *msg, size_t len,
		    struct ubuf_info **uargp)
{
	struct ubuf_info *uarg;
	bool zc;

	*uargp = NULL;
	if (!(msg->msg_flags & MSG_ZEROCOPY) || !sock_flag(sk, SOCK_ZEROCOPY) ||
	    !len)
		return 0;
	/* The netns lookup only here: every copied send comes through. */
	zc = conn && READ_ONCE(conn->zc_pages) &&
	     len >= READ_ONCE(afrdma_net(sock_net(sk))->zerocopy_min) &&
	     user_backed_iter(&msg->msg_iter);
	uarg = msg_zerocopy_realloc(sk, zc ? len : 0, NULL);
	if (!uarg)
		return -ENOBUFS;
	if (!zc)
		uarg_to_msgzc(uarg)->zerocopy = 0;
	afrdma_inc_stats(sk, zc ? AFRDMA_MIB_ZEROCOPY_SENDS :
				  AFRDMA_MIB_ZEROCOPY_COPIED);
	*uargp = uarg;
	return zc;
}

/*
 * The call is done: drop its own reference, so that the last SEND's
 * completion notifies (at once if none is in flight).  A call that sent
 * nothing gives its id back and notifies nothing, as TCP's.
 */
void afrdma_zc_end(struct ubuf_info *uarg, size_t sent)
{
	if (!uarg)
		return;
	if (sent)
		net_zcopy_put(uarg);
	else
		net_zcopy_put_abort(uarg, true);
}

/*
 * Pins pages of @from's first segment with data, up to @max bytes and
 * @max_pages pages, and advances it past them; writable ones for a
 * receive.  The bytes, or 0 or an error.
 */
#ifdef AFRDMA_HAVE_IOV_ITER_EXTRACT_PAGES
ssize_t afrdma_zc_extract(struct iov_iter *from, struct page **pages,
			  size_t max, unsigned int max_pages, size_t *off)
{
	/*
	 * A user-backed iterator: FOLL_PIN (FOLL_WRITE for a destination),
	 * undone by unpin_user_pages().
	 */
	return iov_iter_extract_pages(from, &pages, max, max_pages, 0, off);
}
#else
/* What iov_iter_extract_pages() does for user memory, on older kernels. */
ssize_t afrdma_zc_extract(struct iov_iter *from, struct page **pages,
			  size_t max, unsigned int max_pages, size_t *off)
{
	unsigned long addr;
	size_t seg;
	int n;

	/* Steps over empty segments, so that the first has data. */
	iov_iter_advance(from, 0);
	if (!iov_iter_count(from))
		return 0;
	if (iter_is_ubuf(from)) {
		addr = (unsigned long)from->ubuf + from->iov_offset;
		seg = iov_iter_count(from);
	} else {
		addr = (unsigned long)from->iov->iov_base + from->iov_offset;
		seg = from->iov->iov_len - from->iov_offset;
	}
	max = min3(max, seg, iov_iter_count(from));
	*off = offset_in_page(addr);
	max_pages = min_t(size_t, max_pages, DIV_ROUND_UP(*off + max, PAGE_SIZE));
	n = pin_user_pages_fast(addr - *off, max_pages,
				iov_iter_rw(from) == READ ? FOLL_WRITE : 0, pages);
	if (n <= 0)
		return n ? : -EFAULT;
	max = min_t(size_t, max, (size_t)n * PAGE_SIZE - *off);
	iov_iter_advance(from, max);
	return max;
}
#endif

/*
 * Pins up to @max bytes from @from, at most @max_pages pages, across its
 * segments, into @pages, with each page's offset (not yet an address) and
 * length in @sge, and advances @from past them.  Process context.  The
 * number of pages, *@bytes their bytes; 0 and an error in *@bytes' place
 * (-EFAULT where a copy would fault too) if not one byte could be pinned.
 */
unsigned int afrdma_zc_pin_pages(struct iov_iter *from, size_t max,
				 struct page **pages, struct ib_sge *sge,
				 unsigned int max_pages, ssize_t *bytes)
{
	unsigned int n = 0, end;
	size_t off, total = 0;
	ssize_t len = 0;

	while (total < max && n < max_pages && iov_iter_count(from)) {
		len = afrdma_zc_extract(from, pages + n, max - total,
					max_pages - n, &off);
		if (len <= 0)
			break;
		total += len;
		end = n + DIV_ROUND_UP(off + len, PAGE_SIZE);
		for (; n < end; n++, off = 0) {
			sge[n].addr = off;
			sge[n].length = min_t(size_t, len, PAGE_SIZE - off);
			len -= sge[n].length;
		}
	}
	*bytes = total ? total : len < 0 ? len : -EFAULT;
	return n;
}

/*
 * The pages of one SEND (a SEND takes a whole receive buffer, however
 * little it carries, so they are gathered across segments).  An ERR_PTR
 * if not one byte could be pinned.
 */
struct afrdma_zc_send *afrdma_zc_pin(struct iov_iter *from, size_t max,
				     unsigned int max_pages)
{
	struct afrdma_zc_send *zs;
	ssize_t total;
	unsigned int n;

	zs = kmalloc(struct_size(zs, sge, max_pages + 1) +
		     max_pages * sizeof(*zs->pages), GFP_KERNEL);
	if (!zs)
		return ERR_PTR(-ENOMEM);
	zs->pages = (struct page **)&zs->sge[max_pages + 1];
	n = afrdma_zc_pin_pages(from, max, zs->pages, zs->sge + 1, max_pages,
				&total);
	if (!n) {
		kfree(zs);
		return ERR_PTR(total);
	}
	zs->uarg = NULL;
	zs->len = total;
	zs->nr_pages = n;
	return zs;
}

size_t afrdma_zc_len(const struct afrdma_zc_send *zs)
{
	return zs->len;
}

static void afrdma_zc_unmap(struct ib_device *ibdev,
			    struct afrdma_zc_send *zs, unsigned int n)
{
	while (n--)
		ib_dma_unmap_page(ibdev, zs->sge[n + 1].addr,
				  zs->sge[n + 1].length, DMA_TO_DEVICE);
}

/*
 * Maps @zs and posts it as one SEND: the header already built in @slot,
 * then the user pages.  Called with conn->lock held and room checked; on
 * success the slot owns @zs and @zs a reference on @uarg.  Mapping does
 * not sleep, and a connection that is not dead still has its device.
 */
int afrdma_zc_post(struct afrdma_conn *conn, struct afrdma_tx_slot *slot,
		   struct afrdma_zc_send *zs, struct ubuf_info *uarg,
		   unsigned int hdr_len)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	struct ib_send_wr wr = {
		.wr_cqe		= &slot->cqe,
		.sg_list	= zs->sge,
		.num_sge	= zs->nr_pages + 1,
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED,
	};
	unsigned int i;
	u64 dma;
	int err;

	for (i = 0; i < zs->nr_pages; i++) {
		struct ib_sge *sge = &zs->sge[i + 1];

		dma = ib_dma_map_page(ibdev, zs->pages[i], sge->addr,
				      sge->length, DMA_TO_DEVICE);
		if (ib_dma_mapping_error(ibdev, dma)) {
			err = -ENOMEM;
			goto unmap;
		}
		sge->addr = dma;
		sge->lkey = conn->pd->local_dma_lkey;
	}
	zs->sge[0].addr = slot->dma;
	zs->sge[0].length = hdr_len;
	zs->sge[0].lkey = conn->pd->local_dma_lkey;
	ib_dma_sync_single_for_device(ibdev, slot->dma, hdr_len,
				      DMA_TO_DEVICE);
	/* The completion may run on another CPU before the post returns. */
	zs->uarg = uarg;
	net_zcopy_get(uarg);
	slot->zc = zs;
	err = ib_post_send(conn->qp, &wr, NULL);
	if (!err)
		return 0;
	/* Never posted: the call still holds its own reference. */
	slot->zc = NULL;
	zs->uarg = NULL;
	net_zcopy_put(uarg);
	err = -EPIPE;

unmap:
	/* The caller drops @zs: a refused post means a dead QP. */
	afrdma_zc_unmap(ibdev, zs, i);
	return err;
}

/* A pinned SEND that was never posted: unpin, and give the bytes back. */
void afrdma_zc_drop(struct afrdma_zc_send *zs, struct iov_iter *from)
{
	iov_iter_revert(from, zs->len);
	unpin_user_pages(zs->pages, zs->nr_pages);
	kfree(zs);
}

/*
 * A zero-copy SEND completed, or was flushed: the HCA is done with the
 * pages.  The last SEND of a call queues its notification.  Softirq, or
 * the drain in process context.
 */
void afrdma_zc_done(struct afrdma_conn *conn, struct afrdma_zc_send *zs)
{
	afrdma_zc_unmap(conn->dev->ibdev, zs, zs->nr_pages);
	unpin_user_pages(zs->pages, zs->nr_pages);
	net_zcopy_put(zs->uarg);
	kfree(zs);
}

/* recvmsg(MSG_ERRQUEUE): the cmsg TCP would give for the peer's family. */
int afrdma_zc_recv(struct sock *sk, struct msghdr *msg, size_t len)
{
	bool v6 = sk->sk_family == AF_INET6 ||
		  afrdma_sk(sk)->daddr.ss_family == AF_INET6 ||
		  afrdma_sk(sk)->diag_dst.ss_family == AF_INET6;

	return sock_recv_errqueue(sk, msg, len, v6 ? SOL_IPV6 : SOL_IP,
				  v6 ? IPV6_RECVERR : IP_RECVERR);
}
