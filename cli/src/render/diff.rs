//! The `ringperf diff` table: each figure in the unit the human report uses.

use std::fmt::Write;

use ringperf_core::compare::{Comparison, Method};
use ringperf_core::figures::{self, Unit};
use ringperf_core::TestReport;

use ringperf_core::units::Units;

/// One of the two reports and where it came from.
pub struct Side<'a> {
    pub path: String,
    pub report: &'a TestReport,
}

/// A figure's value as the human report shows it, and its unit.
fn shown(name: &str, v: f64, units: Units, transactional: bool) -> (String, &'static str) {
    match figures::by_name(name).map(|f| f.unit) {
        Some(Unit::BitsPerSec) => (format!("{:.2}", units.convert(v)), units.label()),
        Some(Unit::TransPerSec) => (format!("{v:.2}"), "trans/s"),
        Some(Unit::CpuPercent) => (format!("{v:.2}"), "% busy"),
        Some(Unit::ServiceDemand) if transactional => (format!("{v:.3}"), "us/Tr"),
        Some(Unit::ServiceDemand) => (format!("{v:.3}"), "us/KB"),
        Some(Unit::LatencyNs) => (format!("{:.1}", v / 1e3), "us"),
        Some(Unit::WindowPercent) => (format!("{v:.2}"), "% window"),
        Some(Unit::Count) => (format!("{v:.0}"), ""),
        _ => (format!("{v:.4}"), ""),
    }
}

pub fn render(c: &Comparison, sides: &[Side; 2], units: Units) -> String {
    let mut o = String::new();
    for (label, s) in ["A", "B"].iter().zip(sides) {
        let _ = write!(o, "{label} = {} ({})", s.path, s.report.test);
        if s.report.partial {
            let why = s.report.partial_reason.as_deref().unwrap_or("the run did not finish");
            let _ = write!(o, "  PARTIAL: {why}");
        }
        o.push('\n');
    }
    o.push('\n');
    let transactional = sides[0].report.spec.workload.is_transactional();
    // Wide enough for the profile's names (remote_cost_other_kernel) when there are any.
    let w = c.figures.iter().map(|f| f.name.len()).max().unwrap_or(0).max(13);
    let _ = writeln!(
        o,
        "{:<w$} {:>14} {:>14} {:<10} {:>9} {:>10} {:>11}  verdict at {:.1} %",
        "figure",
        "A",
        "B",
        "unit",
        "change",
        "p-value",
        "by",
        100.0 * c.level
    );
    for f in c.figures.iter().filter(|f| f.a.is_some() || f.b.is_some()) {
        let unit = shown(f.name, 0.0, units, transactional).1;
        let num = |v: Option<f64>| {
            v.map_or_else(
                || super::human::NOT_REPORTED.to_string(),
                |v| shown(f.name, v, units, transactional).0,
            )
        };
        let verdict = match (f.method, f.significant, f.worse) {
            (Method::NoSamples, ..) => "cannot judge: no spread measured (run both with -i)",
            (_, true, true) => "WORSE (significant)",
            (_, true, false) => "better (significant)",
            (_, false, _) => "within noise",
        };
        let by = match f.method {
            Method::Iterations => "iterations",
            Method::Intervals => "intervals",
            Method::NoSamples => "-",
        };
        let _ = writeln!(
            o,
            "{:<w$} {:>14} {:>14} {:<10} {:>9} {:>10} {:>11}  {verdict}",
            f.name,
            num(f.a),
            num(f.b),
            unit,
            f.change_percent.map_or("-".into(), |c| format!("{c:+.2}%")),
            f.p_value.map_or("-".into(), |p| format!("{p:.2e}")),
            by
        );
    }
    let partial: Vec<&str> =
        ["A", "B"].iter().zip(sides).filter(|(_, s)| s.report.partial).map(|(l, _)| *l).collect();
    if !partial.is_empty() {
        let _ = writeln!(
            o,
            "\n!!! {} {} partial: the run stopped early, so its figures cover only part of the test and a figure it never reported is {}",
            partial.join(" and "),
            if partial.len() == 1 { "is" } else { "are" },
            super::human::NOT_REPORTED
        );
    }
    if !c.spec_differences.is_empty() {
        let _ = writeln!(o, "\nthe two tests differ:");
        for d in &c.spec_differences {
            let _ = writeln!(o, "  {d}");
        }
    }
    if !c.environment_differences.is_empty() {
        let _ = writeln!(o, "\nthe environments differ (results may not be comparable):");
        for d in &c.environment_differences {
            let _ = writeln!(o, "  {d}");
        }
    }
    o
}
