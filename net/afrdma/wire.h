/* SPDX-License-Identifier: GPL-2.0 */
/*
 * afrdma wire format: the rdma_cm private data exchanged at connect time
 * and the header in front of every SEND.  This is the only definition of
 * the protocol; wire.c parses it and builds in user space too, for fuzzing
 * and for the hostile-peer test tool.
 */
#ifndef _AFRDMA_WIRE_H
#define _AFRDMA_WIRE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#endif

#define AFRDMA_WIRE_MAGIC	0x4152	/* "AR" */
#define AFRDMA_WIRE_VERSION	1

/* Limits any peer must respect; anything outside is a protocol error. */
#define AFRDMA_MIN_SLOTS	4
#define AFRDMA_MAX_SLOTS	4096
#define AFRDMA_MIN_SLOT_SIZE	1024
#define AFRDMA_MAX_SLOT_SIZE	(1024 * 1024)

/*
 * Carried in the connect request and in the accept reply.  Each side
 * announces the receive buffers it has posted: their number is the peer's
 * initial send credit and their size bounds the peer's SENDs.
 *
 * AFRDMA_CM_GROW in @flags: the sender's receive ring may grow past what
 * it announces, the new buffers reported as credits like reposted ones,
 * and it takes such credits from its peer (up to AFRDMA_MAX_SLOTS in all).
 * A ring grows only towards a peer that set it, since older peers check
 * credits against the announcement.  Unknown flags are ignored.
 */
struct afrdma_cm_priv {
	__be16	magic;
	__u8	version;
	__u8	flags;
	__be16	rx_slots;
	__be16	reserved;
	__be32	rx_slot_size;
} __attribute__((packed));

#define AFRDMA_CM_GROW		0x01
/*
 * AFRDMA_CM_RZC: the sender understands AFRDMA_MSG_SRCAVAIL and
 * AFRDMA_MSG_RDDONE (receive zero-copy) and accepts RDMA READs of the
 * regions it advertises.  A side sends SRCAVAIL only to a peer that set it.
 */
#define AFRDMA_CM_RZC		0x02

/* Largest region one SRCAVAIL may advertise. */
#define AFRDMA_MAX_SRCAVAIL	(16 * 1024 * 1024)

enum afrdma_msg_type {
	AFRDMA_MSG_DATA		= 1,	/* payload follows */
	AFRDMA_MSG_CREDIT	= 2,	/* only returns credits */
	AFRDMA_MSG_FIN		= 3,	/* no more data in this direction */
	AFRDMA_MSG_SRCAVAIL	= 4,	/* stream bytes to RDMA READ */
	AFRDMA_MSG_RDDONE	= 5,	/* the SRCAVAIL in flight is consumed */
};

/*
 * In front of every SEND.  @credits returns receive buffers the sender has
 * reposted since its last report, so most credit updates ride on data.
 */
struct afrdma_msg_hdr {
	__u8	type;
	__u8	flags;
	__be16	credits;
	__be32	len;
} __attribute__((packed));

/*
 * The payload of AFRDMA_MSG_SRCAVAIL: the next @len bytes of the stream
 * wait in the sender's memory at @addr under @rkey, remotely readable
 * until the receiver answers with AFRDMA_MSG_RDDONE (payload: __be32,
 * bytes consumed, always all of them).  One is outstanding at a time:
 * the sender sends nothing more of the stream until the RDDONE.
 */
struct afrdma_srcavail {
	__be32	len;
	__be32	rkey;
	__be64	addr;
} __attribute__((packed));

struct afrdma_cm_params {
	unsigned int	rx_slots;
	unsigned int	rx_slot_size;
	unsigned int	flags;		/* AFRDMA_CM_*, as received */
};

struct afrdma_msg {
	unsigned int	type;
	unsigned int	credits;
	unsigned int	len;
	/* SRCAVAIL: the region; RDDONE: @src_len is the bytes consumed */
	unsigned int	src_len;
	unsigned int	src_rkey;
	__u64		src_addr;
};

int afrdma_parse_cm_priv(const void *buf, size_t len,
			 struct afrdma_cm_params *out);
void afrdma_build_cm_priv(struct afrdma_cm_priv *priv,
			  const struct afrdma_cm_params *in);
int afrdma_parse_msg(const void *buf, size_t byte_len, struct afrdma_msg *out);
void afrdma_build_msg(struct afrdma_msg_hdr *hdr, unsigned int type,
		      unsigned int credits, unsigned int len);
void afrdma_build_srcavail(void *payload, unsigned int len, unsigned int rkey,
			   __u64 addr);
void afrdma_build_rddone(void *payload, unsigned int bytes);

#endif /* _AFRDMA_WIRE_H */
