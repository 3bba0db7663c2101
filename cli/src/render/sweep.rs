//! The `ringperf sweep` table: a row per point, the swept parameters first, then the
//! figures (means over iterations when -i/-I iterated each point).

use std::fmt::Write;

use ringperf_core::figures::{by_name, Figure};

use crate::sweep_file::Entry;

use ringperf_core::units::Units;

fn mean(e: &Entry, name: &str) -> Option<f64> {
    let f = by_name(name)?;
    f.of(e.report.as_ref()?).map(|v| v.mean)
}

fn cell(v: Option<f64>, prec: usize) -> String {
    v.map(|v| format!("{v:.prec$}")).unwrap_or_else(|| "-".into())
}

/// "yes" / "no" with the rate's achieved half-width, or "-" without -i/-I.
fn confidence(e: &Entry) -> String {
    let Some(c) = e.report.as_ref().and_then(|r| r.confidence.as_ref()) else { return "-".into() };
    let width = c.estimates.first().map(|x| format!(" ±{:.1}%", x.half_width_percent)).unwrap_or_default();
    format!("{} ({} it{width})", if c.met { "yes" } else { "no" }, c.iterations)
}

/// The figures the table always has a column for; a --figure among them adds none.
const COLUMNS: [&str; 8] = [
    "throughput",
    "transactions",
    "local_cpu",
    "remote_cpu",
    "local_sd",
    "remote_sd",
    "local_ns_per_segment",
    "remote_ns_per_segment",
];

/// The table; `figure` (the sweep's --figure) gets a column of its own, headed by its
/// name, when the fixed columns do not already show it.
pub fn render(entries: &[Entry], units: Units, banner: bool, figure: Option<&Figure>) -> String {
    let extra = figure.and_then(|f| f.name).filter(|name| !COLUMNS.contains(name));
    let extra_width = extra.map_or(0, |name| name.len().max(9));
    let mut o = String::new();
    let Some(first) = entries.first() else { return o };
    let names: Vec<&str> = first.point.0.iter().map(|(n, _)| n.as_str()).collect();
    let widths: Vec<usize> = names
        .iter()
        .map(|n| {
            entries.iter().filter_map(|e| e.point.get(n)).map(str::len).chain([n.len()]).max().unwrap_or(0)
        })
        .collect();
    let rr =
        entries.iter().filter_map(|e| e.report.as_ref()).any(|r| r.summary.transactions_per_sec.is_some());
    let (rate, sd) = if rr { ("trans/s", "us/Tr") } else { (units.label(), "us/KB") };
    if banner {
        let mut head = String::new();
        for (n, w) in names.iter().zip(&widths) {
            let _ = write!(head, "{n:<w$} ");
        }
        let _ = writeln!(
            o,
            "{head}{rate:>12} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}{}  confidence",
            "CPU% loc",
            "CPU% rem",
            &format!("{sd} loc"),
            &format!("{sd} rem"),
            "ns/seg l",
            "ns/seg r",
            extra.map_or(String::new(), |name| format!(" {name:>extra_width$}"))
        );
    }
    for e in entries {
        let mut row = String::new();
        for (n, w) in names.iter().zip(&widths) {
            let _ = write!(row, "{:<w$} ", e.point.get(n).unwrap_or("-"));
        }
        if let Some(err) = &e.error {
            let _ = writeln!(o, "{row}failed: {err}");
            continue;
        }
        let rate_v =
            if rr { mean(e, "transactions") } else { mean(e, "throughput").map(|m| units.convert(m * 1e6)) };
        let _ = writeln!(
            o,
            "{row}{:>12} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}{}  {}",
            cell(rate_v, 2),
            cell(mean(e, "local_cpu"), 2),
            cell(mean(e, "remote_cpu"), 2),
            cell(mean(e, "local_sd"), 3),
            cell(mean(e, "remote_sd"), 3),
            cell(mean(e, "local_ns_per_segment"), 0),
            cell(mean(e, "remote_ns_per_segment"), 0),
            extra.map_or(String::new(), |name| format!(" {:>extra_width$}", cell(mean(e, name), 4))),
            confidence(e)
        );
        if e.report.as_ref().is_some_and(|r| r.partial) {
            // The row above covers the point until it stopped.
            o.pop();
            o.push_str("  PARTIAL\n");
        }
    }
    o
}
