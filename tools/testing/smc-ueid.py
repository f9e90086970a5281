#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# smc-ueid.py add|remove EID: set or drop an SMC user EID through SMC's
# generic netlink family (SMC_NETLINK_ADD_UEID / _REMOVE_UEID), as smc-tools'
# "smcr ueid add" does.  SMC proposes SMC-Rv2, the only SMC-R that runs on
# soft-RoCE (RoCEv2 GIDs only), once a user EID is set.  make bench uses it.

import errno
import os
import socket
import struct
import sys

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2
SMC_NETLINK_ADD_UEID = 10          # include/uapi/linux/smc.h
SMC_NETLINK_REMOVE_UEID = 11
SMC_NLA_EID_TABLE_ENTRY = 1
SMC_MAX_EID_LEN = 32


def attr(typ, data):
    n = 4 + len(data)
    return struct.pack("=HH", n, typ) + data + b"\0" * ((4 - n % 4) % 4)


def request(sk, typ, cmd, attrs, seq):
    body = struct.pack("=BBH", cmd, 1, 0) + attrs
    sk.send(struct.pack("=IHHII", 16 + len(body), typ,
                        NLM_F_REQUEST | NLM_F_ACK, seq, 0) + body)
    family = None
    while True:
        data = sk.recv(65536)
        off = 0
        while off + 16 <= len(data):
            n, t, _, s, _ = struct.unpack_from("=IHHII", data, off)
            if s == seq and t == NLMSG_ERROR:
                err = -struct.unpack_from("=i", data, off + 16)[0]
                return err, family
            if s == seq and t == GENL_ID_CTRL:
                a = off + 20
                while a + 4 <= off + n:
                    alen, atyp = struct.unpack_from("=HH", data, a)
                    if atyp == CTRL_ATTR_FAMILY_ID:
                        family = struct.unpack_from("=H", data, a + 4)[0]
                    a += (alen + 3) & ~3
            off += (n + 3) & ~3


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("add", "remove"):
        print("usage: smc-ueid.py add|remove EID", file=sys.stderr)
        return 2
    eid = sys.argv[2].upper()
    if len(eid) > SMC_MAX_EID_LEN:
        print("smc-ueid.py: an EID has at most 32 characters", file=sys.stderr)
        return 2
    sk = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    err, fam = request(sk, GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                       attr(CTRL_ATTR_FAMILY_NAME, b"SMC_GEN_NETLINK\0"), 1)
    if err or fam is None:
        print("smc-ueid.py: no SMC_GEN_NETLINK family (smc not loaded?): %s"
              % os.strerror(err or errno.ENOENT), file=sys.stderr)
        return 1
    # The kernel takes exactly 32 characters, blank-padded, and a NUL.
    ent = eid.ljust(SMC_MAX_EID_LEN).encode() + b"\0"
    cmd = SMC_NETLINK_ADD_UEID if sys.argv[1] == "add" else SMC_NETLINK_REMOVE_UEID
    err, _ = request(sk, fam, cmd, attr(SMC_NLA_EID_TABLE_ENTRY, ent), 2)
    # EEXIST: already set, which is what was asked
    if err and err != errno.EEXIST:
        print("smc-ueid.py: %s %s: %s" % (sys.argv[1], eid, os.strerror(err)),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
