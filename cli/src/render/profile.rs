//! The kernel cost profile in the human report: one line per side (the honest tool
//! overhead and both service demands), and with `--profile` the whole category table and
//! the top kernel functions.

use std::fmt::Write;

use ringperf_core::measure::profile::{CategoryCost, ProfileReport};
use ringperf_core::report::{ServiceDemand, SideReport};

/// The side's cost unit for the table: per transaction for rr, per KB otherwise, with
/// per segment and per datagram beside it where the side counted them.
struct Units {
    per_transaction: bool,
    segments: bool,
    datagrams: bool,
}

impl Units {
    fn of(s: &SideReport, p: &ProfileReport) -> Units {
        let any = |f: fn(&CategoryCost) -> Option<f64>| p.categories.iter().any(|c| f(c).is_some());
        Units {
            per_transaction: s.role.is_transactional() && any(|c| c.us_per_transaction),
            segments: any(|c| c.ns_per_segment),
            datagrams: any(|c| c.ns_per_datagram),
        }
    }

    fn main_sd(&self, sd: &ServiceDemand) -> String {
        let v = if self.per_transaction { sd.us_per_transaction } else { sd.us_per_kb };
        let unit = if self.per_transaction { "us/Tr" } else { "us/KB" };
        v.map_or_else(|| "-".to_string(), |v| format!("{v:.3} {unit}"))
    }
}

/// A string the peer sent, fit for a terminal: control characters (escapes, newlines) from
/// a hostile or broken server are shown as '?'.
fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// The compact line: honest tool overhead, plain and network-path service demand.
pub fn side_line(o: &mut String, name: &str, s: &SideReport) {
    let Some(p) = &s.profile else {
        let _ = writeln!(
            o,
            "{name}  tool overhead with its kernel share: not profiled (--profile samples the window; below, user space only)"
        );
        return;
    };
    if let Some(why) = &p.unavailable {
        let _ = writeln!(o, "{name}  tool overhead: profile unavailable: {}", clean(why));
        return;
    }
    let u = Units::of(s, p);
    let share = |c| p.share(c);
    use ringperf_core::measure::profile::Category as C;
    let mut seg = String::new();
    if let (Some(a), Some(b)) = (s.service_demand.ns_per_segment, p.network_service_demand.ns_per_segment) {
        seg = format!(" ({a:.0} and {b:.0} ns/segment)");
    }
    if let (Some(a), Some(b)) = (s.udp.as_ref().and_then(|u| u.us_per_datagram), p.network_ns_per_datagram) {
        seg = format!(" ({:.0} and {b:.0} ns/datagram)", a * 1000.0);
    }
    // The helper threads (watcher, sampler, control) are a trace: named only when they ran.
    let helpers = match share(C::ToolThreads) {
        0.0 => String::new(),
        v => format!(" + helper threads {v:.2} %"),
    };
    let _ = writeln!(
        o,
        "{name}  tool overhead {:>5.2} % of busy CPU (user space {:.2} % + io_uring {:.2} % + syscall entry/exit {:.2} %{helpers}); service demand {}, network path {}{seg} [{} profile, {} Hz, {} samples]",
        p.tool_overhead_percent,
        share(C::ToolUser),
        share(C::IoUring),
        share(C::Syscall),
        u.main_sd(&s.service_demand),
        u.main_sd(&p.network_service_demand),
        clean(&p.event),
        p.hz,
        p.samples
    );
    if let Some(note) = &p.note {
        let _ = writeln!(o, "{name}  profile note: {}", clean(note));
    }
}

/// The whole profile of a side: categories with their costs, and the top functions.
pub fn tables(o: &mut String, name: &str, s: &SideReport) {
    let Some(p) = s.profile.as_ref().filter(|p| p.unavailable.is_none()) else { return };
    let u = Units::of(s, p);
    let _ = writeln!(
        o,
        "{name}  kernel cost profile: {} at {} Hz on {} CPUs, {} samples ({} busy, {} idle, {} lost)",
        clean(&p.event),
        p.hz,
        p.cpus,
        p.samples,
        p.busy_samples,
        p.idle_samples,
        p.lost
    );
    let mut head = format!("{:8}{:<26}{:>8}", "", "category", "busy %");
    head.push_str(if u.per_transaction { "     us/Tr" } else { "     us/KB" });
    if u.segments {
        head.push_str("    ns/seg");
    }
    if u.datagrams {
        head.push_str("  ns/dgram");
    }
    let _ = writeln!(o, "{head}");
    let num = |v: Option<f64>, prec: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.prec$}"));
    for c in &p.categories {
        let main = if u.per_transaction { c.us_per_transaction } else { c.us_per_kb };
        let mut line =
            format!("{:8}{:<26}{:>8.1}{:>10}", "", c.category.label(), c.share_percent, num(main, 3));
        if u.segments {
            let _ = write!(line, "{:>10}", num(c.ns_per_segment, 0));
        }
        if u.datagrams {
            let _ = write!(line, "{:>10}", num(c.ns_per_datagram, 0));
        }
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o, "{:8}top kernel functions (own samples, % of busy):", "");
    for f in &p.top_functions {
        let what = if f.generic {
            format!("generic, charged to its callers (else {})", f.category.label())
        } else {
            f.category.label().to_string()
        };
        let _ = writeln!(o, "{:8}{:>6.1}  {}  [{what}]", "", f.share_percent, clean(&f.function));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_strings_cannot_move_the_terminal() {
        assert_eq!(clean("refused\n\x1b[2Jok"), "refused??[2Jok");
        assert_eq!(clean("tcp_sendmsg"), "tcp_sendmsg");
    }
}
