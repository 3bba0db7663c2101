//! The kernel cost profile in the human report: the default report's tool overhead line
//! (with its kernel share and the interval its samples allow), with `-v` one line per side
//! (the honest tool overhead and both service demands), and with `--profile` the whole
//! category table and the top kernel functions.

use std::fmt::Write;

use ringperf_core::measure::profile::{CategoryCost, ProfileReport};
use ringperf_core::report::{ServiceDemand, SideReport};
use ringperf_core::TestReport;

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

/// z of a two-sided 95 % interval.
const Z95: f64 = 1.96;

/// Half the 95 % interval, in percent, of a share measured as `hits` of `n` samples: the
/// binomial error of a proportion (Agresti-Coull, so that a share of none of a few samples
/// still has its width). Samples taken by a timer are not independent draws, so this is the
/// error sampling alone would leave, not a bound on everything. `None` without samples.
pub fn share_half_width(hits: u64, n: u64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let n_adj = n as f64 + Z95 * Z95;
    let p = (hits as f64 + Z95 * Z95 / 2.0) / n_adj;
    Some(100.0 * Z95 * (p * (1.0 - p) / n_adj).sqrt())
}

/// A side's tool overhead as the default report says it.
enum Overhead {
    /// With its kernel share, from the profile.
    Measured(Measured),
    /// The user-space share alone (percent of busy CPU), and why the kernel's is missing.
    UserOnly(f64, String),
}

/// A profile's tool overhead: percent of busy CPU, the half width of its 95 % interval, its
/// parts (user space; the kernel's: io_uring machinery, syscall entry/exit, helper threads),
/// and the busy samples at the rate it rests on.
struct Measured {
    percent: f64,
    half_width: f64,
    user: f64,
    io_uring: f64,
    syscall: f64,
    helpers: f64,
    busy_samples: u64,
    hz: u32,
}

impl Measured {
    /// The share, what it is made of and the samples it rests on (the rate said apart).
    fn text(&self) -> String {
        format!(
            "{:.1} % ± {:.1} % ({}; {} busy samples)",
            self.share(),
            self.half_width,
            self.parts(),
            self.busy_samples
        )
    }

    /// The share as printed: a sum of no samples is 0, never "-0.0".
    fn share(&self) -> f64 {
        if self.percent == 0.0 {
            0.0
        } else {
            self.percent
        }
    }

    /// Its parts, which add up to it: the helper threads only where they ran.
    fn parts(&self) -> String {
        let helpers = match self.helpers {
            0.0 => String::new(),
            v => format!(", helper threads {v:.1} %"),
        };
        format!(
            "user {:.1} %, kernel io_uring {:.1} %, syscall entry/exit {:.1} %{helpers}",
            self.user, self.io_uring, self.syscall
        )
    }
}

impl Overhead {
    fn of(r: &TestReport, s: &SideReport) -> Overhead {
        use ringperf_core::measure::profile::Category as C;
        let user_only = |why: String| Overhead::UserOnly(s.cpu.tool_overhead_percent, why);
        let Some(p) = &s.profile else {
            return user_only(
                if r.spec.profile.enabled { "this side took no profile" } else { "--no-profile" }.into(),
            );
        };
        if let Some(why) = &p.unavailable {
            return user_only(format!("profile unavailable: {}", clean(why)));
        }
        let hits: u64 = p.categories.iter().filter(|c| c.category.is_tool()).map(|c| c.samples).sum();
        let Some(half_width) = share_half_width(hits, p.busy_samples) else {
            return user_only("the profile took no busy samples".into());
        };
        Overhead::Measured(Measured {
            percent: p.tool_overhead_percent,
            half_width,
            user: p.share(C::ToolUser),
            io_uring: p.share(C::IoUring),
            syscall: p.share(C::Syscall),
            helpers: p.share(C::ToolThreads),
            busy_samples: p.busy_samples,
            hz: p.hz,
        })
    }

    fn text(&self) -> String {
        match self {
            Overhead::Measured(m) => format!(
                "{:.1} % ± {:.1} % of busy CPU ({}; {} busy samples at {} Hz, 95 % interval)",
                m.share(),
                m.half_width,
                m.parts(),
                m.busy_samples,
                m.hz
            ),
            Overhead::UserOnly(pct, why) => {
                format!("{pct:.1} % of busy CPU in user space only (its kernel share not measured: {why})")
            }
        }
    }
}

/// Whether both sides' profiles are one: the embedded server's is built from the client's
/// samples (one process), so saying it twice would only repeat it.
fn one_profile(local: &SideReport, remote: &SideReport) -> bool {
    match (&local.profile, &remote.profile) {
        (Some(a), Some(b)) => {
            a.unavailable.is_none()
                && b.unavailable.is_none()
                && a.samples == b.samples
                && a.busy_samples == b.busy_samples
                && a.tool_overhead_percent == b.tool_overhead_percent
        }
        _ => false,
    }
}

/// The default report's tool overhead: what the tool costs with its kernel share, how sure
/// (the samples it rests on), one line for both sides.
pub fn overhead_line(r: &TestReport) -> String {
    let local = Overhead::of(r, &r.local);
    let Some(remote_side) = &r.remote else {
        return format!("tool overhead: local {}", local.text());
    };
    if one_profile(&r.local, remote_side) {
        return format!("tool overhead {}, both sides (one process)", local.text());
    }
    match (&local, Overhead::of(r, remote_side)) {
        (Overhead::Measured(l), Overhead::Measured(rem)) if l.hz == rem.hz => format!(
            "tool overhead of busy CPU (95 % intervals, samples at {} Hz): local {}; remote {}",
            l.hz,
            l.text(),
            rem.text()
        ),
        (Overhead::UserOnly(l, why), Overhead::UserOnly(rem, why_remote)) if *why == why_remote => format!(
            "tool overhead: local {l:.1} %, remote {rem:.1} % of busy CPU in user space only (its kernel share not measured: {why})"
        ),
        (_, remote) => format!("tool overhead: local {}; remote {}", local.text(), remote.text()),
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
    fn a_share_of_few_samples_has_a_wide_interval_and_none_without_samples() {
        assert_eq!(share_half_width(0, 0), None);
        // 5 % of 240 samples: about ±2.9 points; of 2400, about ±0.9.
        let few = share_half_width(12, 240).unwrap();
        let many = share_half_width(120, 2400).unwrap();
        assert!((2.5..3.2).contains(&few), "{few}");
        assert!((0.8..1.0).contains(&many), "{many}");
        // None of 100 samples is not a certain 0 %.
        assert!(share_half_width(0, 100).unwrap() > 1.0);
    }

    #[test]
    fn a_peers_strings_cannot_move_the_terminal() {
        assert_eq!(clean("refused\n\x1b[2Jok"), "refused??[2Jok");
        assert_eq!(clean("tcp_sendmsg"), "tcp_sendmsg");
    }
}
