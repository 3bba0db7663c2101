//! The statistics lines the default report and `-v` share: the round trips' distribution,
//! and how sure the figures are (over iterations and within the run).

use std::fmt::Write;

use ringperf_core::report::LatencySummary;
use ringperf_core::units::Units;
use ringperf_core::TestReport;

/// Confidence over iterations and the within-run estimate.
pub(crate) fn statistics_lines(o: &mut String, r: &TestReport, units: Units) {
    if let Some(c) = &r.confidence {
        let _ = writeln!(
            o,
            "confidence: {} iterations, {:.1} % level, target ±{:.2} %: {}",
            c.iterations,
            100.0 * c.target.level,
            c.target.width_percent / 2.0,
            if c.met { "met" } else { "NOT met" }
        );
        for e in &c.estimates {
            let shown = if e.name == "throughput" {
                format!("{:.2} ± {:.2} {}", units.convert(e.mean), units.convert(e.half_width), units.label())
            } else {
                format!("{:.2} ± {:.2}", e.mean, e.half_width)
            };
            let _ = writeln!(o, "  {:<16} {shown} (±{:.2} %)", e.name, e.half_width_percent);
        }
    }
    if let Some(w) = &r.summary.within_run {
        let shown = if w.name.starts_with("throughput") {
            format!("{:.2} ± {:.2} {}", units.convert(w.mean), units.convert(w.half_width), units.label())
        } else {
            format!("{:.2} ± {:.2}", w.mean, w.half_width)
        };
        let _ = writeln!(
            o,
            "within run: {} = {shown} (±{:.2} %, {} batch means after warm-up)",
            w.name, w.half_width_percent, w.samples
        );
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
