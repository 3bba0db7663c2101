//! The `ringperf diff` table.

use std::fmt::Write;

use ringperf_engine::compare::{Comparison, Method};

pub fn render(c: &Comparison, a: &str, b: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "A = {a}\nB = {b}\n");
    let _ = writeln!(
        o,
        "{:<13} {:>16} {:>16} {:>9} {:>10} {:>11}  verdict at {:.1} %",
        "figure",
        "A",
        "B",
        "change",
        "p-value",
        "by",
        100.0 * c.level
    );
    for f in &c.figures {
        let num = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.4}"));
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
            "{:<13} {:>16} {:>16} {:>9} {:>10} {:>11}  {verdict}",
            f.name,
            num(f.a),
            num(f.b),
            f.change_percent.map_or("-".into(), |c| format!("{c:+.2}%")),
            f.p_value.map_or("-".into(), |p| format!("{p:.2e}")),
            by
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
