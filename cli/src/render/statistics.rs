//! The statistics lines the default report and `-v` share: the round trips' distribution,
//! and how sure the figures are (over iterations and within the run).

use std::fmt::Write;

use ringperf_core::measure::confidence::{ConfidenceReport, Estimate};
use ringperf_core::report::LatencySummary;
use ringperf_core::units::Units;
use ringperf_core::TestReport;

/// Confidence over iterations and the within-run estimate, a line each figure (`-v`).
pub(crate) fn statistics_lines(o: &mut String, r: &TestReport, units: Units) {
    if let Some(c) = &r.confidence {
        let _ = writeln!(o, "{}", confidence_head(c));
        for e in &c.estimates {
            let _ = writeln!(o, "  {:<16} {} (±{:.2} %)", e.name, shown(e, units), e.half_width_percent);
        }
    }
    if let Some(w) = &r.summary.within_run {
        let _ = writeln!(o, "{}", within_run(w, units));
    }
}

/// How sure the figures are, on one line for the default report: the within-run estimate,
/// then the confidence over iterations with every figure's interval. `None`: neither.
pub(crate) fn sure_line(r: &TestReport, units: Units) -> Option<String> {
    let within = r.summary.within_run.as_ref().map(|w| within_run(w, units));
    let iterated = r.confidence.as_ref().map(|c| {
        let each: Vec<String> = c
            .estimates
            .iter()
            .map(|e| format!("{} {} (±{:.2} %)", e.name, shown(e, units), e.half_width_percent))
            .collect();
        format!("{}: {}", confidence_head(c), each.join(", "))
    });
    match (within, iterated) {
        (Some(w), Some(c)) => Some(format!("{w}; {c}")),
        (w, c) => w.or(c),
    }
}

fn confidence_head(c: &ConfidenceReport) -> String {
    format!(
        "confidence: {} iterations, {:.1} % level, target ±{:.2} %: {}",
        c.iterations,
        100.0 * c.target.level,
        c.target.width_percent / 2.0,
        if c.met { "met" } else { "NOT met" }
    )
}

fn within_run(w: &Estimate, units: Units) -> String {
    format!(
        "within run: {} = {} (±{:.2} %, {} batch means after warm-up)",
        w.name,
        shown(w, units),
        w.half_width_percent,
        w.samples
    )
}

/// An estimate's mean ± half-width, a throughput in the report's units.
fn shown(e: &Estimate, units: Units) -> String {
    if e.name.starts_with("throughput") {
        format!("{:.2} ± {:.2} {}", units.convert(e.mean), units.convert(e.half_width), units.label())
    } else {
        format!("{:.2} ± {:.2}", e.mean, e.half_width)
    }
}

pub(crate) fn latency_lines(o: &mut String, l: &LatencySummary) {
    let us = |ns: u64| ns as f64 / 1e3;
    let _ = writeln!(
        o,
        "round trip (us, {} transactions): min {:.1} mean {:.1} p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} p99.99 {:.1} max {:.1}",
        l.count,
        us(l.min_ns),
        l.mean_ns / 1e3,
        us(l.p50_ns),
        us(l.p90_ns),
        us(l.p99_ns),
        us(l.p999_ns),
        us(l.p9999_ns),
        us(l.max_ns)
    );
}
