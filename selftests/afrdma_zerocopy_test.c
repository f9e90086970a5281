// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma MSG_ZEROCOPY, as tools/testing/selftests/net/msg_zerocopy.c drives
 * TCP: opt in with SO_ZEROCOPY (AFRDMA_ZEROCOPY where SOL_SOCKET refuses
 * it), send N buffers with MSG_ZEROCOPY, read every notification from the
 * error queue (POLLERR, recvmsg(MSG_ERRQUEUE), SOL_IP/IP_RECVERR or
 * SOL_IPV6/IPV6_RECVERR cmsgs) and check that the ranges cover each send
 * exactly once, with the copied code afrdma reports today.
 */
#include <netinet/in.h>
#include <time.h>
#include <linux/errqueue.h>

#include "kselftest_harness.h"
#include "lib/afrdma_sock.h"
#include "afrdma_selftest.h"

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY		5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED	1
#endif

#define NSENDS	200

FIXTURE(zc) {
	int lfd, cfd, sfd;
};

FIXTURE_VARIANT(zc) {
	enum afrdma_transport t;
	bool v6;
};

FIXTURE_VARIANT_ADD(zc, af_rdma_v4) { .t = AFRDMA_T_FAMILY, .v6 = false };
FIXTURE_VARIANT_ADD(zc, ipproto_v6) { .t = AFRDMA_T_IPPROTO, .v6 = true };

FIXTURE_SETUP(zc)
{
	unsigned short port;

	self->lfd = afrdma_listen_on(variant->t, test_addr(variant->v6), 0, 4, &port);
	ASSERT_LE(0, self->lfd);
	self->cfd = afrdma_connect_to(variant->t, test_addr(variant->v6), port);
	ASSERT_LE(0, self->cfd);
	self->sfd = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, self->sfd);
}

FIXTURE_TEARDOWN(zc)
{
	if (self->cfd >= 0)
		close(self->cfd);
	close(self->sfd);
	close(self->lfd);
}

/* SO_ZEROCOPY where the kernel lets the protocol take it, else SOL_RDMA. */
static int enable_zerocopy(int fd, bool *via_sol_socket)
{
	int one = 1;

	*via_sol_socket = !setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one,
				      sizeof(one));
	if (*via_sol_socket)
		return 0;
	if (errno != EOPNOTSUPP)
		return -1;
	return setsockopt(fd, SOL_RDMA, AFRDMA_ZEROCOPY, &one, sizeof(one));
}

/* Reads one notification; returns its range in @lo..@hi, or -1. */
static int read_notification(int fd, unsigned int *lo, unsigned int *hi,
			     int *code, bool v6)
{
	char control[128];
	struct msghdr msg = {
		.msg_control = control,
		.msg_controllen = sizeof(control),
	};
	struct sock_extended_err *serr;
	struct cmsghdr *cm;

	if (recvmsg(fd, &msg, MSG_ERRQUEUE) < 0)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != (v6 ? SOL_IPV6 : SOL_IP) ||
	    cm->cmsg_type != (v6 ? IPV6_RECVERR : IP_RECVERR))
		return -1;
	serr = (struct sock_extended_err *)CMSG_DATA(cm);
	if (serr->ee_origin != SO_EE_ORIGIN_ZEROCOPY || serr->ee_errno)
		return -1;
	*lo = serr->ee_info;
	*hi = serr->ee_data;
	*code = serr->ee_code;
	return 0;
}

TEST_F(zc, notifications)
{
	static char buf[NSENDS][4096];
	unsigned int lo, hi, next = 0, notes = 0;
	bool via_sol_socket;
	socklen_t len = sizeof(int);
	char in[4096];
	int i, code, val = 0;

	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via_sol_socket)) TH_LOG("%s", strerror(errno));
	TH_LOG("opted in through %s", via_sol_socket ? "SOL_SOCKET" : "SOL_RDMA");
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ZEROCOPY, &val, &len));
	ASSERT_EQ(1, val) TH_LOG("SO_ZEROCOPY does not read back");

	for (i = 0; i < NSENDS; i++) {
		fill((unsigned char *)buf[i], sizeof(buf[i]), i);
		ASSERT_EQ((ssize_t)sizeof(buf[i]),
			  send(self->cfd, buf[i], sizeof(buf[i]), MSG_ZEROCOPY));
		/* Read as we go, so that the receiver never runs dry. */
		ASSERT_EQ((ssize_t)sizeof(in), recv(self->sfd, in, sizeof(in), MSG_WAITALL));
		ASSERT_EQ(0, memcmp(in, buf[i], sizeof(in))) TH_LOG("send %d", i);
	}

	/* Every id exactly once, in order: ranges never overlap or skip. */
	while (next < NSENDS) {
		ASSERT_NE(0, wait_for(self->cfd, POLLERR, 10000) & POLLERR)
			TH_LOG("notifications stop at %u of %d", next, NSENDS);
		ASSERT_EQ(0, read_notification(self->cfd, &lo, &hi, &code, variant->v6));
		ASSERT_EQ(next, lo);
		ASSERT_LE(lo, hi);
		ASSERT_EQ(SO_EE_CODE_ZEROCOPY_COPIED, code);
		next = hi + 1;
		notes++;
	}
	ASSERT_EQ((unsigned int)NSENDS, next);
	TH_LOG("%d sends, %u notifications (consecutive ranges merged)", NSENDS, notes);
	/* Nothing left: no POLLERR, and the error queue is empty. */
	ASSERT_EQ(0, wait_for(self->cfd, POLLERR, 0) & POLLERR);
	ASSERT_EQ(-1, recv(self->cfd, in, sizeof(in), MSG_ERRQUEUE));
	ASSERT_EQ(EAGAIN, errno);
}

/* Without the opt-in, MSG_ZEROCOPY is an ordinary send, as on TCP. */
TEST_F(zc, ignored_without_opt_in)
{
	char out[100] = "x", in[100];
	int val = 1;
	socklen_t len = sizeof(val);

	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ZEROCOPY, &val, &len));
	ASSERT_EQ(0, val);
	ASSERT_EQ(100, send(self->cfd, out, sizeof(out), MSG_ZEROCOPY));
	ASSERT_EQ(100, recv(self->sfd, in, sizeof(in), MSG_WAITALL));
	ASSERT_EQ(0, wait_for(self->cfd, POLLERR, 200) & POLLERR);
	ASSERT_EQ(-1, recv(self->cfd, in, sizeof(in), MSG_ERRQUEUE));
	ASSERT_EQ(EAGAIN, errno);
}

/* Notifications nobody read go with the socket (nothing leaks, no WARN). */
TEST_F(zc, close_with_notifications_queued)
{
	bool via_sol_socket;
	char out[512] = "y", in[512];
	int i;

	ASSERT_EQ(0, enable_zerocopy(self->cfd, &via_sol_socket));
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(512, send(self->cfd, out, sizeof(out), MSG_ZEROCOPY));
		ASSERT_EQ(512, recv(self->sfd, in, sizeof(in), MSG_WAITALL));
	}
	ASSERT_NE(0, wait_for(self->cfd, POLLERR, 10000) & POLLERR);
	close(self->cfd);
	self->cfd = -1;
}

TEST_HARNESS_MAIN
