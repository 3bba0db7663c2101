//! The queueing discipline on an interface's egress, from an RTM_GETQDISC dump: what
//! `tc qdisc show dev DEV` prints, read natively. The root qdisc decides how packets
//! queue (noqueue on lo and veth, mq over per-queue fq_codel on a multi-queue NIC, netem
//! or tbf in a shaped lab).

use std::io;

use super::netlink::{attr_str, attributes, Netlink, NLM_F_DUMP, RTM_GETQDISC, RTM_NEWQDISC};

const TCA_KIND: u16 = 1;
/// tcm_parent of a root qdisc.
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
/// tcm_parent of the ingress and clsact qdiscs: not on the egress path.
const TC_H_INGRESS: u32 = 0xFFFF_FFF1;
/// struct tcmsg: family u8, pad u8, pad u16, ifindex i32, handle u32, parent u32, info u32.
const TCMSG_LEN: usize = 20;

/// One qdisc of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qdisc {
    pub ifindex: u32,
    pub handle: u32,
    pub parent: u32,
    pub kind: String,
}

/// The egress qdiscs of one interface: the root's kind and the distinct kinds below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Egress {
    pub root: Option<String>,
    pub children: Vec<String>,
}

/// Every qdisc in this network namespace.
pub fn dump(nl: &mut Netlink) -> io::Result<Vec<Qdisc>> {
    let tcmsg = [0u8; TCMSG_LEN]; // AF_UNSPEC, every interface
    let replies = nl.request(RTM_GETQDISC, NLM_F_DUMP, &tcmsg, RTM_NEWQDISC)?;
    Ok(replies.iter().filter_map(|p| parse(p)).collect())
}

/// One RTM_NEWQDISC payload; None if it is too short to be one.
pub fn parse(payload: &[u8]) -> Option<Qdisc> {
    let word =
        |at: usize| -> Option<u32> { Some(u32::from_ne_bytes(payload.get(at..at + 4)?.try_into().ok()?)) };
    let ifindex = word(4)?;
    let handle = word(8)?;
    let parent = word(12)?;
    let kind =
        attributes(payload.get(TCMSG_LEN..)?).find(|(k, _)| *k == TCA_KIND).map(|(_, v)| attr_str(v))?;
    Some(Qdisc { ifindex, handle, parent, kind })
}

/// The egress qdiscs of `ifindex` among `all`.
pub fn egress(all: &[Qdisc], ifindex: u32) -> Egress {
    let mine = all.iter().filter(|q| q.ifindex == ifindex);
    let mut e = Egress::default();
    for q in mine {
        match q.parent {
            TC_H_ROOT => e.root = Some(q.kind.clone()),
            TC_H_INGRESS => {}
            _ if !e.children.contains(&q.kind) => e.children.push(q.kind.clone()),
            _ => {}
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RTM_NEWQDISC payloads (tcmsg and attributes) as this kernel (6.18) sent them in a
    /// dump: lo's noqueue root in the host namespace, and the tbf root that
    /// `tools/lab up --rate a=100mbit` put on host a's lab0 (ifindex 2, handle 8005:), whose
    /// TCA_KIND is followed by nested TCA_OPTIONS and the stats attributes.
    const LO_NOQUEUE: &[&str] = &[
        "00 00 00 00 01 00 00 00 00 00 00 00 ff ff ff ff 02 00 00 00 0c 00 01 00",
        "6e 6f 71 75 65 75 65 00 05 00 0c 00 00 00 00 00 30 00 07 00 14 00 01 00",
        "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 18 00 03 00 00 00 00 00",
        "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 2c 00 03 00 00 00 00 00",
        "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        "00 00 00 00 00 00 00 00 00 00 00 00 00 00",
    ];
    const LAB_TBF: &[&str] = &[
        "00 00 00 00 02 00 00 00 00 00 05 80 ff ff ff ff 03 00 00 00 08 00 01 00",
        "74 62 66 00 2c 00 02 00 28 00 01 00 00 01 00 00 00 00 00 00 20 bc be 00",
        "00 00 00 00 00 00 00 00 00 00 00 00 68 89 0d 00 00 00 05 00 00 00 00 00",
        "05 00 0c 00 00 00 00 00 30 00 07 00 14 00 01 00 5a 00 00 00 00 00 00 00",
        "01 00 00 00 00 00 00 00 18 00 03 00 00 00 00 00 00 00 00 00 00 00 00 00",
        "00 00 00 00 00 00 00 00 2c 00 03 00 5a 00 00 00 00 00 00 00 01 00 00 00",
        "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        "00 00 00 00 00 00",
    ];

    fn bytes(hex: &[&str]) -> Vec<u8> {
        hex.iter()
            .flat_map(|l| l.split_whitespace())
            .map(|b| u8::from_str_radix(b, 16).expect("hex"))
            .collect()
    }

    #[test]
    fn parses_captured_qdisc_messages() {
        let lo = bytes(LO_NOQUEUE);
        assert_eq!(
            parse(&lo),
            Some(Qdisc { ifindex: 1, handle: 0, parent: TC_H_ROOT, kind: "noqueue".into() })
        );
        let tbf = bytes(LAB_TBF);
        assert_eq!(
            parse(&tbf),
            Some(Qdisc { ifindex: 2, handle: 0x8005_0000, parent: TC_H_ROOT, kind: "tbf".into() })
        );
        assert_eq!(parse(&lo[..12]), None, "a truncated tcmsg");
        assert_eq!(parse(&lo[..20]), None, "no TCA_KIND");
        // Cut inside the attributes: the kind before the cut still parses.
        assert_eq!(parse(&tbf[..40]).map(|q| q.kind), Some("tbf".into()));
    }

    #[test]
    fn egress_keeps_root_and_distinct_children_and_skips_ingress() {
        let q = |ifindex, parent, kind: &str| Qdisc { ifindex, handle: 0, parent, kind: kind.into() };
        let all = vec![
            q(2, TC_H_ROOT, "mq"),
            q(2, 0x8001_0001, "fq_codel"),
            q(2, 0x8001_0002, "fq_codel"),
            q(2, TC_H_INGRESS, "clsact"),
            q(1, TC_H_ROOT, "noqueue"),
        ];
        assert_eq!(egress(&all, 2), Egress { root: Some("mq".into()), children: vec!["fq_codel".into()] });
        assert_eq!(egress(&all, 1), Egress { root: Some("noqueue".into()), children: vec![] });
        assert_eq!(egress(&all, 9), Egress::default());
    }

    #[test]
    fn lo_has_a_root_qdisc_in_a_live_dump() {
        let mut nl = Netlink::open().expect("netlink");
        let all = dump(&mut nl).expect("a qdisc dump");
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert!(egress(&all, lo).root.is_some(), "no root qdisc on lo in {all:?}");
    }
}
