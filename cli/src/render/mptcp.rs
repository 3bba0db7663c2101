//! What the report says of Multipath TCP: in the default report one line (only when MPTCP
//! was asked for), with `-v` every flow and each of its subflows, and the fallbacks for the
//! doubt line.

use std::fmt::Write;

use ringperf_core::measure::mptcp::{MptcpFlowInfo, MptcpReport};
use ringperf_core::report::SideReport;
use ringperf_core::TestReport;

use super::sides::sides;

/// "mptcp: ..." for the default report: per side, how many connections stayed MPTCP, their
/// subflows and each subflow's share of the bytes; `None` unless MPTCP was asked for.
pub fn summary_line(r: &TestReport) -> Option<String> {
    if !r.spec.socket.mptcp {
        return None;
    }
    let parts: Vec<(&str, String)> = sides(r)
        .into_iter()
        .map(|(n, s)| (n.trim(), side_summary(s.mptcp.as_ref(), s.crr.is_some())))
        .collect();
    let text = match parts.as_slice() {
        [(_, a), (_, b)] if a == b => format!("both sides {a}"),
        _ => parts.iter().map(|(n, t)| format!("{n} {t}")).collect::<Vec<_>>().join("; "),
    };
    Some(format!("mptcp: {text}"))
}

/// One side's summary, without its name.
fn side_summary(m: Option<&MptcpReport>, crr: bool) -> String {
    let Some(m) = m else {
        return match crr {
            true => "not read: crr's connections close within their cycle".to_string(),
            false => "not read".to_string(),
        };
    };
    if let Some(h) = m.handshakes {
        let fell = if h.fallback > 0 { format!(", {} fell back to TCP", h.fallback) } else { String::new() };
        return format!("{} connections MPTCP{fell} (handshakes, from the MPTcpExt counters)", h.mptcp);
    }
    let total = m.flows.len();
    let mut t = match (m.mptcp, m.fallback) {
        (n, 0) => format!("{n} of {total} connections MPTCP"),
        (0, f) => format!("all {f} of {total} connections fell back to TCP"),
        (n, f) => format!("{n} of {total} connections MPTCP, {f} fell back to TCP"),
    };
    if m.mptcp > 0 {
        let _ = write!(t, ", {}", subflows_text(m));
    }
    t
}

/// "2 subflows carried 51.2 % / 48.8 % of bytes", or "1 subflow".
fn subflows_text(m: &MptcpReport) -> String {
    let bytes = m.subflow_bytes();
    let sum: u64 = bytes.iter().sum();
    let most = m.max_subflows;
    if most <= 1 || sum == 0 {
        return format!("{most} subflow{}", if most == 1 { "" } else { "s" });
    }
    let shares: Vec<String> =
        bytes.iter().map(|&b| format!("{:.1} %", 100.0 * b as f64 / sum as f64)).collect();
    format!("{most} subflows carried {} of bytes", shares.join(" / "))
}

/// `-v`: each flow's MPTCP state, then one line per subflow.
pub fn lines(o: &mut String, name: &str, s: &SideReport) {
    let Some(m) = &s.mptcp else { return };
    if let Some(h) = m.handshakes {
        let _ = writeln!(
            o,
            "{name}  mptcp: {} handshakes ended MPTCP, {} fell back to TCP (MPTcpExt counters of the namespace over the window)",
            h.mptcp, h.fallback
        );
    }
    for (i, f) in m.flows.iter().enumerate() {
        let _ = writeln!(o, "{name}  mptcp flow {i}: {}", flow_text(f.as_ref()));
        for sf in f.iter().flat_map(|f| &f.subflow) {
            let _ = writeln!(
                o,
                "{name}    subflow {} {} -> {}: {} bytes sent ({} acked), {} received, {} retransmits, rtt {} us",
                sf.id, sf.local, sf.remote, sf.bytes_sent, sf.bytes_acked, sf.bytes_received, sf.total_retrans, sf.rtt_us
            );
        }
    }
}

fn flow_text(f: Option<&MptcpFlowInfo>) -> String {
    let Some(f) = f else { return "the kernel did not say".to_string() };
    if f.fallback {
        return "fell back to TCP".to_string();
    }
    let shown = |v: Option<u64>| v.map_or_else(|| "missing".to_string(), |v| v.to_string());
    format!(
        "MPTCP, {} subflow(s), {} bytes sent, {} received, {} retransmitted (MPTCP level)",
        f.subflows.map_or_else(|| "?".to_string(), |n| n.to_string()),
        shown(f.bytes_sent),
        shown(f.bytes_received),
        shown(f.bytes_retrans)
    )
}

/// The doubt a fallback raises: MPTCP was asked for and some connections are plain TCP.
pub fn fallback_doubt(s: &SideReport) -> Option<String> {
    fallback_text(s.mptcp.as_ref()?)
}

fn fallback_text(m: &MptcpReport) -> Option<String> {
    if m.fallback == 0 {
        return None;
    }
    let of = match m.handshakes {
        Some(h) => h.mptcp + h.fallback,
        None => m.flows.len() as u64,
    };
    Some(format!(
        "MPTCP fell back to plain TCP on {} of {of} connections (the peer or the path refused it)",
        m.fallback
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::measure::mptcp::MptcpSubflow;

    fn flow(bytes: &[u64]) -> Option<MptcpFlowInfo> {
        Some(MptcpFlowInfo {
            subflows: Some(bytes.len() as u32),
            subflow: bytes.iter().map(|&b| MptcpSubflow { bytes_acked: b, ..Default::default() }).collect(),
            ..Default::default()
        })
    }

    #[test]
    fn the_summary_gives_each_subflows_share_and_the_fallbacks() {
        let m = MptcpReport::new(vec![flow(&[300, 100])]);
        assert_eq!(subflows_text(&m), "2 subflows carried 75.0 % / 25.0 % of bytes");
        assert_eq!(
            side_summary(Some(&m), false),
            "1 of 1 connections MPTCP, 2 subflows carried 75.0 % / 25.0 % of bytes"
        );
        assert!(fallback_text(&m).is_none());
        let fb = Some(MptcpFlowInfo { fallback: true, ..Default::default() });
        let m = MptcpReport::new(vec![fb, flow(&[5])]);
        assert_eq!(side_summary(Some(&m), false), "1 of 2 connections MPTCP, 1 fell back to TCP, 1 subflow");
        assert!(fallback_text(&m).unwrap().contains("1 of 2 connections"));
        let crr = MptcpReport::of_handshakes(ringperf_core::measure::mptcp::MptcpHandshakes {
            mptcp: 9,
            fallback: 1,
        });
        assert!(side_summary(Some(&crr), true).starts_with("9 connections MPTCP, 1 fell back to TCP"));
        assert!(fallback_text(&crr).unwrap().contains("1 of 10 connections"));
    }
}
