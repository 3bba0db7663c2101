"""The BIG TCP section of tools/tso-study's RESULTS.md: one stream per GSO limit, read from the
JSON reports the study wrote (OUT/bigtcp-SIZE.json), and the sweep-shaped JSON its charts are
drawn from (OUT/bigtcp-sweep.json).

    python3 bigtcp_table.py OUT QUICK SIZE...     (prints markdown)

Segments per super-packet come from the kernel's own counters over the measured window, never
from what the script asked for: the sender's payload bytes (bytes_sent) divided by its MSS
(tcp_info snd_mss) is the segments TCP sent; divided by the packets host a's lab0 transmitted
(rtnetlink IFLA_STATS64 tx_packets, which veth counts per skb, so a GSO super-packet is one)
it is the segments each super-packet carried. The receiver's column is the same over host b's
lab0 rx_packets. Bytes per packet is lab0's tx_bytes / tx_packets, headers included.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iterations import fig  # noqa: E402


def load(out, size):
    with open(f"{out}/bigtcp-{size}.json") as f:
        return json.load(f)


def link(side):
    """(tx_packets, tx_bytes, rx_packets) of the side's egress device over the window, or None."""
    nic = ((side or {}).get("kernel") or {}).get("nic") or {}
    l = nic.get("link")
    if not l:
        return None
    return l["tx_packets"], l["tx_bytes"], l["rx_packets"]


def mss(side):
    flows = ((side or {}).get("tcp") or {}).get("flows") or []
    m = [f["snd_mss"] for f in flows if f.get("snd_mss")]
    return max(m) if m else None


def sizes(side, *names):
    s = ((side or {}).get("network") or {}).get("sizes") or {}
    return "/".join("?" if s.get(n) is None else str(s[n]) for n in names)


def per(a, b, prec):
    return "-" if not a or not b else f"{a / b:.{prec}f}"


def row(size, r):
    local, remote = r["local"], r.get("remote")
    m = mss(local)
    segs = local["bytes_sent"] / m if m else None
    a, b = link(local), link(remote)
    segs_rx = remote["bytes_received"] / m if m and remote else None
    return [
        f"gso_max_size {size}",
        f"a gso {sizes(local, 'gso_max_size', 'gso_ipv4_max_size')}, "
        f"b gro {sizes(remote, 'gro_max_size', 'gro_ipv4_max_size')}",
        fig(r, "throughput_bits_per_sec", 1e-6, 0),
        fig(r, "local_cpu_percent", 1, 1),
        fig(r, "local_sd_us", 1, 3),
        fig(r, "remote_sd_us", 1, 3),
        per(segs, a and a[0], 1),
        per(a and a[1], a and a[0], 0),
        per(segs_rx, b and b[2], 1),
        str(m or "-"),
        str(len(r["iterations"])),
    ]


def main(out, quick, sizes_):
    reports = [(s, load(out, s)) for s in sizes_]
    head = ["GSO limit (host a)", "captured (gso/ipv4, gro/ipv4)", "stream 10^6bits/s", "CPU %",
            "sender us/KB", "receiver us/KB", "segs per super-packet (a tx)", "bytes per packet (a tx)",
            "segs per packet (b rx)", "MSS", "iterations"]
    lines = ["## BIG TCP: the GSO limit from 64 KiB to 512 KiB", "",
             "A stream of 1 MiB writes (`-m 1M`: a super-packet seldom outgrows the write that filled "
             "it, so the study's 128 KiB writes would hide every limit above 128 KiB) from host a to "
             "host b with TSO+GSO on, host a's lab0 `gso_max_size` and "
             "`gso_ipv4_max_size` (an IPv4 flow is held to the latter) at each size, host b's "
             "`gro_max_size` and `gro_ipv4_max_size` set to match (`tools/lab up --gso-max-size a=N "
             "--gso-ipv4-max-size a=N --gro-max-size b=N --gro-ipv4-max-size b=N`). The captured "
             "column is what each report's environment read back from the kernel "
             "(`network.sizes`). Service demand is each side's busy CPU per KB it moved; both "
             "hosts share this machine's CPUs, so each side's CPU is the whole machine's. "
             "Segments per super-packet: the sender's payload bytes / its MSS (tcp_info snd_mss) / "
             "the packets host a's lab0 sent (IFLA_STATS64 tx_packets; veth counts a GSO packet "
             "once); per packet on b: the same payload segments / the packets b's lab0 received. "
             "Bytes per packet: a's lab0 tx_bytes / tx_packets, headers included. veth's GRO is "
             "off by default, so b takes a's super-packets whole and its GRO limit has nothing "
             "to coalesce here"
             + ("" if quick else "; the counter columns are the last iteration's") + ".", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row(s, r)) + " |" for s, r in reports]
    print("\n".join(lines))
    entries = [{"point": {"gso_max_size": s}, "report": r} for s, r in reports]
    with open(f"{out}/bigtcp-sweep.json", "w") as f:
        json.dump(entries, f)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("\n\n")[1].strip())
    main(sys.argv[1], sys.argv[2] == "1", [int(s) for s in sys.argv[3:]])
