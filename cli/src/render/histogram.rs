//! `--histogram`: the round-trip histogram as text, in power-of-two buckets.

use std::fmt::Write;

use ringperf_core::measure::latency::log_buckets;
use ringperf_core::report::LatencySummary;

pub fn render(l: &LatencySummary) -> String {
    let buckets = log_buckets(l);
    let mut o = String::new();
    let Some(peak) = buckets.iter().map(|b| b.2).max().filter(|&p| p > 0) else {
        return o;
    };
    let _ = writeln!(o, "round-trip histogram ({} transactions):", l.count);
    let us = |ns: u64| ns as f64 / 1e3;
    for (lo, hi, n) in buckets {
        let bar = "#".repeat(((n as f64 / peak as f64) * 50.0).ceil() as usize);
        let share = 100.0 * n as f64 / l.count.max(1) as f64;
        let _ = writeln!(o, "  {:>10.1} - {:>10.1} us |{bar:<50}| {n:>10} {share:>5.1} %", us(lo), us(hi));
    }
    o
}
