//! The default report below netperf's table: the round trips (rr), how sure the figures
//! are, what the tool cost with its kernel share, the kernel's proof of zero copy, and the
//! one line of doubts, each at most one line, so that no combination (iterations, a
//! partial run, a zero-copy engine, warnings) takes the report over its length (the header
//! and the table, then at most five lines). The rest comes with `-v`; all of it is in
//! `--json`.

use std::fmt::Write;

use ringperf_core::report::ZeroCopyReport;
use ringperf_core::TestReport;

use ringperf_core::units::Units;

use super::format::HumanOptions;
use super::sides::sides;
use super::statistics::{latency_lines, sure_line};

pub fn lines(o: &mut String, r: &TestReport, units: Units, opts: &HumanOptions) {
    if let Some(l) = &r.local.latency {
        latency_lines(o, l);
    }
    if let Some(l) = sure_line(r, units) {
        let _ = writeln!(o, "{l}");
    }
    let _ = writeln!(o, "{}", super::profile::overhead_line(r));
    if let Some(z) = zero_copy_proof(r) {
        let _ = writeln!(o, "{z}");
    }
    if let Some(m) = super::mptcp::summary_line(r) {
        let _ = writeln!(o, "{m}");
    }
    if let Some(d) = super::doubt::line(r) {
        let _ = writeln!(o, "{d}");
    }
    // What was asked for by name comes after, whatever its length.
    if let (Some(l), true) = (&r.local.latency, opts.histogram) {
        o.push_str(&super::histogram::render(l));
    }
    if opts.profile {
        for (name, s) in sides(r) {
            super::profile::tables(o, name, s);
        }
    }
}

/// What the kernel said of each zero-copy engine that ran, on one line: the share of bytes
/// each zero-copy send engine sent without a copy (its notifications' word), and the share
/// of bytes each zerocopy receive mapped. `None` where no zero-copy engine ran.
pub fn zero_copy_proof(r: &TestReport) -> Option<String> {
    let mut parts = Vec::new();
    for (name, s) in sides(r) {
        let name = name.trim();
        if let Some(z) = s.send.as_ref().and_then(|x| x.zero_copy.as_ref()) {
            parts.push(format!("{name} {} {}", s.send_engine.name(), send_verdict(z)));
        }
        if let Some(rv) = &s.recv {
            if let Some(z) = &rv.zero_copy {
                parts.push(format!(
                    "{name} {} mapped {:.1} % of bytes ({} receives)",
                    rv.engine.name(),
                    100.0 * z.mapped_fraction(),
                    z.receives
                ));
            }
        }
    }
    (!parts.is_empty()).then(|| format!("zero copy: {}", parts.join("; ")))
}

/// A zero-copy sender's share of bytes sent without a copy, and what its notifications say.
fn send_verdict(z: &ZeroCopyReport) -> String {
    let share = 100.0 * z.zero_copy_fraction();
    match (z.copied, z.notifications) {
        (_, 0) => format!("{share:.1} % of bytes sent without a copy (no notification arrived)"),
        (0, n) => format!("{share:.1} % of bytes sent without a copy, confirmed by all {n} notifications"),
        (c, n) => format!("{share:.1} % of bytes sent without a copy: the kernel copied {c} of {n} sends"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_copy_verdict_is_what_the_notifications_say() {
        let mut z =
            ZeroCopyReport { sends: 8, notifications: 8, copied: 8, bytes_copied: 800, ..Default::default() };
        assert_eq!(send_verdict(&z), "0.0 % of bytes sent without a copy: the kernel copied 8 of 8 sends");
        (z.copied, z.bytes_copied, z.bytes_zero_copy) = (0, 0, 800);
        assert_eq!(
            send_verdict(&z),
            "100.0 % of bytes sent without a copy, confirmed by all 8 notifications"
        );
        z.notifications = 0;
        assert!(send_verdict(&z).ends_with("(no notification arrived)"), "{}", send_verdict(&z));
    }
}
