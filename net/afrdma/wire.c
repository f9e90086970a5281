// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma wire format parsing.  Everything a peer sends passes through here
 * before the data path trusts it.  Builds in the kernel and in user space.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#include <asm/byteorder.h>
#else
#include <endian.h>
#include <errno.h>
#include <string.h>
#define be16_to_cpu(x)	be16toh(x)
#define be32_to_cpu(x)	be32toh(x)
#define cpu_to_be16(x)	htobe16(x)
#define cpu_to_be32(x)	htobe32(x)
#define be64_to_cpu(x)	be64toh(x)
#define cpu_to_be64(x)	htobe64(x)
#endif

#include "wire.h"

int afrdma_parse_cm_priv(const void *buf, size_t len,
			 struct afrdma_cm_params *out)
{
	struct afrdma_cm_priv priv;

	/* IB CM pads private data with zeros, so longer is fine. */
	if (!buf || len < sizeof(priv))
		return -EPROTO;
	memcpy(&priv, buf, sizeof(priv));
	if (be16_to_cpu(priv.magic) != AFRDMA_WIRE_MAGIC ||
	    priv.version != AFRDMA_WIRE_VERSION)
		return -EPROTO;

	out->rx_slots = be16_to_cpu(priv.rx_slots);
	out->rx_slot_size = be32_to_cpu(priv.rx_slot_size);
	out->flags = priv.flags;
	if (out->rx_slots < AFRDMA_MIN_SLOTS ||
	    out->rx_slots > AFRDMA_MAX_SLOTS ||
	    out->rx_slot_size < AFRDMA_MIN_SLOT_SIZE ||
	    out->rx_slot_size > AFRDMA_MAX_SLOT_SIZE)
		return -EPROTO;
	return 0;
}

void afrdma_build_cm_priv(struct afrdma_cm_priv *priv,
			  const struct afrdma_cm_params *in)
{
	memset(priv, 0, sizeof(*priv));
	priv->magic = cpu_to_be16(AFRDMA_WIRE_MAGIC);
	priv->version = AFRDMA_WIRE_VERSION;
	priv->flags = in->flags;
	priv->rx_slots = cpu_to_be16(in->rx_slots);
	priv->rx_slot_size = cpu_to_be32(in->rx_slot_size);
}

int afrdma_parse_msg(const void *buf, size_t byte_len, struct afrdma_msg *out)
{
	struct afrdma_msg_hdr hdr;

	if (byte_len < sizeof(hdr))
		return -EPROTO;
	memcpy(&hdr, buf, sizeof(hdr));
	out->type = hdr.type;
	out->credits = be16_to_cpu(hdr.credits);
	out->len = be32_to_cpu(hdr.len);

	if (hdr.flags || out->len != byte_len - sizeof(hdr))
		return -EPROTO;
	switch (out->type) {
	case AFRDMA_MSG_DATA:
		return out->len ? 0 : -EPROTO;
	case AFRDMA_MSG_CREDIT:
	case AFRDMA_MSG_FIN:
		return out->len ? -EPROTO : 0;
	case AFRDMA_MSG_SRCAVAIL: {
		struct afrdma_srcavail sa;

		if (out->len != sizeof(sa))
			return -EPROTO;
		memcpy(&sa, (const char *)buf + sizeof(hdr), sizeof(sa));
		out->src_len = be32_to_cpu(sa.len);
		out->src_rkey = be32_to_cpu(sa.rkey);
		out->src_addr = be64_to_cpu(sa.addr);
		return out->src_len && out->src_len <= AFRDMA_MAX_SRCAVAIL ?
		       0 : -EPROTO;
	}
	case AFRDMA_MSG_RDDONE: {
		__be32 bytes;

		if (out->len != sizeof(bytes))
			return -EPROTO;
		memcpy(&bytes, (const char *)buf + sizeof(hdr), sizeof(bytes));
		out->src_len = be32_to_cpu(bytes);
		return out->src_len && out->src_len <= AFRDMA_MAX_SRCAVAIL ?
		       0 : -EPROTO;
	}
	default:
		return -EPROTO;
	}
}

void afrdma_build_msg(struct afrdma_msg_hdr *hdr, unsigned int type,
		      unsigned int credits, unsigned int len)
{
	hdr->type = type;
	hdr->flags = 0;
	hdr->credits = cpu_to_be16(credits);
	hdr->len = cpu_to_be32(len);
}

void afrdma_build_srcavail(void *payload, unsigned int len, unsigned int rkey,
			   __u64 addr)
{
	struct afrdma_srcavail sa = {
		.len	= cpu_to_be32(len),
		.rkey	= cpu_to_be32(rkey),
		.addr	= cpu_to_be64(addr),
	};

	memcpy(payload, &sa, sizeof(sa));
}

void afrdma_build_rddone(void *payload, unsigned int bytes)
{
	__be32 b = cpu_to_be32(bytes);

	memcpy(payload, &b, sizeof(b));
}
