//! What held the flows back, as the kernel's chronographs tell it: the default report's one
//! verdict line for a stream's sender (when one cause held half its flows' time or more),
//! and each side's shares and end figures with `-v`.

use std::fmt::Write;

use ringperf_core::measure::tcp_limits::Limits;
use ringperf_core::report::SideReport;
use ringperf_core::spec::Role;
use ringperf_core::TestReport;

use super::sides::sides;

/// The verdict on the sides that sent a stream's data, when a cause dominated: `limited
/// by: the receiver's window 62 % of the window (sending 30 %, send buffer 8 %)`. `None`
/// for request/response (its sides wait on each other by design), without TCP_INFO's
/// chronographs, or when no cause held half of the window.
pub fn verdict(r: &TestReport) -> Option<String> {
    let senders: Vec<(&str, &Limits)> = sides(r)
        .into_iter()
        .filter(|(_, s)| matches!(s.role, Role::StreamSender | Role::StreamBidir))
        .filter_map(|(name, s)| Some((name.trim(), s.tcp.as_ref()?.limits.as_ref()?)))
        .collect();
    let named = senders.len() > 1;
    let parts: Vec<String> = senders
        .into_iter()
        .filter_map(|(name, l)| {
            let text = dominant_text(l)?;
            Some(if named { format!("{name} {text}") } else { text })
        })
        .collect();
    (!parts.is_empty()).then(|| format!("limited by: {}", parts.join("; ")))
}

/// The dominant cause with its share and the other shares of 1 % or more.
pub fn dominant_text(l: &Limits) -> Option<String> {
    let (cause, share) = l.dominant()?;
    let others: Vec<String> = l
        .shares()
        .into_iter()
        .filter(|(c, p)| *c != cause && p.round() >= 1.0)
        .map(|(c, p)| format!("{} {p:.0} %", c.short()))
        .collect();
    let others = if others.is_empty() { String::new() } else { format!(" ({})", others.join(", ")) };
    Some(format!("{} {share:.0} % of the window{others}", cause.label()))
}

/// One side's shares of its flows' time and what TCP_INFO said at the end (`-v`).
pub fn side_line(o: &mut String, name: &str, s: &SideReport) {
    let Some(t) = &s.tcp else { return };
    let mut line = format!("{name}  limits: ");
    match &t.limits {
        Some(l) => {
            let _ = write!(
                line,
                "busy {:.1} % of the window (receiver's window {:.1} %, send buffer {:.1} %, sending {:.1} %), nothing queued {:.1} %, over {} flow{}",
                l.busy_percent,
                l.rwnd_limited_percent,
                l.sndbuf_limited_percent,
                l.sending_percent,
                l.idle_percent,
                l.flows,
                if l.flows == 1 { "" } else { "s" }
            );
        }
        None => line.push_str("no chronographs"),
    }
    let n = |v: Option<u64>| v.map_or_else(|| "missing".to_string(), |v| v.to_string());
    let _ = write!(
        line,
        "; delivered {} (CE {}), reordering seen {}, min rtt {}, not sent {} bytes",
        n(t.delivered),
        n(t.delivered_ce),
        n(t.reord_seen),
        t.min_rtt_us.map_or_else(|| "missing".to_string(), |us| format!("{us} us")),
        n(t.notsent_bytes)
    );
    if !t.missing.is_empty() {
        let _ = write!(line, "; the kernel lacks {}", t.missing.join(", "));
    }
    let _ = writeln!(o, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_the_dominant_cause_and_the_others() {
        let l = Limits::from_sums(1, 1_000_000, 1_000_000, 620_000, 80_000);
        assert_eq!(
            dominant_text(&l).as_deref(),
            Some("the receiver's window 62 % of the window (send buffer 8 %, sending 30 %)")
        );
        let idle = Limits::from_sums(1, 1_000_000, 200_000, 0, 0);
        assert_eq!(
            dominant_text(&idle).as_deref(),
            Some("the application (nothing queued to send) 80 % of the window (sending 20 %)")
        );
        let mixed = Limits::from_sums(1, 1_000_000, 800_000, 400_000, 0);
        assert_eq!(dominant_text(&mixed), None, "40 % each: nothing dominates");
    }
}
