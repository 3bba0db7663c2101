#!/usr/bin/env python3
"""Reads and sets a device's GSO/GRO size limits (BIG TCP's knobs) over rtnetlink.

    link_sizes.py get DEV                 prints NAME=VALUE for each limit the kernel reports
    link_sizes.py set DEV NAME=VALUE...   sets them in one message, then reads them back

The names are gso_max_size, gro_max_size, gso_ipv4_max_size and gro_ipv4_max_size (get also
prints tso_max_size and tso_max_segs, the ceiling of the GSO limits). It acts on DEV in the
network namespace it runs in (tools/lab runs it under `ip netns exec`).

Why not `ip link set`: iproute2 before 6.3 (Debian 12 ships 6.1) knows neither IPv4 limit,
and an IPv4 flow is held to gso_ipv4_max_size whatever gso_max_size says. Exit 1 with the
kernel's own reason when it refuses a value, 2 on bad usage.
"""
import errno
import os
import socket
import struct
import sys

RTM_NEWLINK, RTM_GETLINK = 16, 18
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR, NLMSG_DONE = 2, 3
NETLINK_EXT_ACK = 11
NLMSGERR_ATTR_MSG = 1
NLM_F_CAPPED, NLM_F_ACK_TLVS = 0x100, 0x200
# enum IFLA_* of linux/if_link.h
ATTRS = {
    "gso_max_size": 41,
    "gro_max_size": 58,
    "tso_max_size": 59,
    "tso_max_segs": 60,
    "gso_ipv4_max_size": 63,
    "gro_ipv4_max_size": 64,
}
SETTABLE = ("gso_max_size", "gro_max_size", "gso_ipv4_max_size", "gro_ipv4_max_size")


def die(msg, code=1):
    print(f"link_sizes: {msg}", file=sys.stderr)
    sys.exit(code)


def attrs_of(buf):
    """(type, value) of each rtattr packed in buf."""
    at = 0
    while at + 4 <= len(buf):
        length, kind = struct.unpack_from("=HH", buf, at)
        if length < 4 or at + length > len(buf):
            return
        yield kind & 0x3FFF, buf[at + 4:at + length]
        at += (length + 3) & ~3


def request(sock, kind, flags, body):
    """Sends one request; returns the payloads of its RTM_NEWLINK replies, or raises
    OSError(errno, the kernel's extended-ack message or strerror)."""
    seq = 1
    msg = struct.pack("=IHHII", 16 + len(body), kind, flags | NLM_F_REQUEST, seq, 0) + body
    sock.send(msg)
    out = []
    while True:
        data = sock.recv(65536)
        at = 0
        while at + 16 <= len(data):
            length, mtype, mflags, mseq, _ = struct.unpack_from("=IHHII", data, at)
            if length < 16:
                raise OSError(errno.EPROTO, "malformed netlink reply")
            payload = data[at + 16:at + length]
            at += (length + 3) & ~3
            if mseq != seq:
                continue
            if mtype == NLMSG_ERROR:
                code = -struct.unpack_from("=i", payload)[0]
                if code == 0:
                    return out
                why = os.strerror(code)
                if mflags & NLM_F_ACK_TLVS:
                    # The errno, then the request's header, then (unless capped) its
                    # body: the TLVs follow.
                    skip = 16 if mflags & NLM_F_CAPPED else struct.unpack_from("=I", payload, 4)[0]
                    for k, v in attrs_of(payload[4 + ((skip + 3) & ~3):]):
                        if k == NLMSGERR_ATTR_MSG:
                            why = v.rstrip(b"\0").decode(errors="replace")
                raise OSError(code, why)
            if mtype == NLMSG_DONE:
                return out
            if mtype == RTM_NEWLINK:
                out.append(payload)
                if kind == RTM_GETLINK:
                    return out


def ifinfomsg(index):
    return struct.pack("=BxHiII", socket.AF_UNSPEC, 0, index, 0, 0)


def open_socket():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.NETLINK_ROUTE)
    s.settimeout(2)
    try:
        s.setsockopt(270, NETLINK_EXT_ACK, 1)  # SOL_NETLINK: the kernel says why it refused
    except OSError:
        pass
    s.bind((0, 0))
    return s


def get(sock, index):
    replies = request(sock, RTM_GETLINK, 0, ifinfomsg(index))
    if not replies:
        raise OSError(errno.ENODEV, "no link message")
    names = {v: k for k, v in ATTRS.items()}
    got = {}
    for k, v in attrs_of(replies[0][16:]):
        if k in names and len(v) >= 4:
            got[names[k]] = struct.unpack_from("=I", v)[0]
    return got


def main(argv):
    if len(argv) < 2 or argv[0] not in ("get", "set") or (argv[0] == "set" and len(argv) < 3):
        die(__doc__.split("\n\n")[1].strip(), 2)
    cmd, dev = argv[0], argv[1]
    try:
        index = socket.if_nametoindex(dev)
    except OSError:
        die(f"no device '{dev}' in this network namespace")
    sock = open_socket()
    before = get(sock, index)
    if cmd == "get":
        print(" ".join(f"{k}={before[k]}" for k in ATTRS if k in before))
        return
    want = {}
    for arg in argv[2:]:
        name, _, value = arg.partition("=")
        if name not in SETTABLE:
            die(f"'{name}' is not one of {', '.join(SETTABLE)}", 2)
        if not value.isdigit() or int(value) == 0 or int(value) > 0xFFFFFFFF:
            die(f"{name} takes a size in bytes, not '{value}'", 2)
        if name not in before:
            die(f"this kernel does not report {name} on {dev} (the IPv4 limits need Linux 6.3+): cannot set it")
        want[name] = int(value)
    # One message in the kernel's own order: gso_max_size (which also lowers the IPv4 limit
    # when it is smaller), then the IPv4 limits, so the values given are the values left.
    body = ifinfomsg(index)
    for name in SETTABLE:
        if name in want:
            body += struct.pack("=HHI", 8, ATTRS[name], want[name])
    try:
        request(sock, RTM_NEWLINK, NLM_F_ACK, body)
    except OSError as e:
        gso = any(k.startswith("gso") for k in want)
        ceiling = f" ({dev}'s tso_max_size is {before['tso_max_size']})" if gso and "tso_max_size" in before else ""
        die(f"the kernel refused {' '.join(f'{k}={v}' for k, v in want.items())} on {dev}: {e.strerror}{ceiling}")
    after = get(sock, index)
    wrong = [f"{k} is {after.get(k, 'missing')}, not {v}" for k, v in want.items() if after.get(k) != v]
    if wrong:
        die(f"{dev}: after setting, {'; '.join(wrong)}")


if __name__ == "__main__":
    main(sys.argv[1:])
