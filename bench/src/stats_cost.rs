//! `stats`: what ringperf's own statistics cost. rr with latency histograms and interval
//! samples on (the defaults plus `-D 1`) against both off (`--no-latency --no-intervals`),
//! same pinning, taking turns, every run's CPU measured the same way from /proc/stat.
//!
//! Issue 4's target: transactions/s within 2 %, tool overhead reported for both. With
//! `--json`, `-D 1` samples an interval every second into the report but prints no live
//! line, so stdout stays one JSON document.

use std::fmt::Write as _;
use std::io::Write as _;

use crate::bench;
use crate::error::Result;
use crate::peers::ringperf::{self, Expect, Ringperf};
use crate::peers::{Config, RunResult, Tool, Work, Workload};
use crate::plan::{Host, Plan};
use crate::report::{commands, opt, runs_and_host, sd, Table};
use crate::stats::{median, min_max, ratio};

pub const ON: &str = "stats on";
pub const OFF: &str = "stats off";
/// The bound on what the statistics may cost in transactions/s.
pub const TARGET_PERCENT: f64 = 2.0;

/// ringperf rr with histograms and a 1 s interval series.
pub fn on(bin: std::path::PathBuf) -> Ringperf {
    Ringperf {
        label: ON,
        extra: vec!["-D".into(), "1".into()],
        expect: Expect { interval_ms: Some(1000), record_latency: Some(true), ..Expect::default() },
        ..Ringperf::new(bin)
    }
}

/// ringperf rr with neither.
pub fn off(bin: std::path::PathBuf) -> Ringperf {
    Ringperf {
        label: OFF,
        extra: vec!["--no-latency".into(), "--no-intervals".into()],
        expect: Expect { interval_ms: Some(0), record_latency: Some(false), ..Expect::default() },
        ..Ringperf::new(bin)
    }
}

pub fn config(secs: u32, cpus: (usize, usize), size: u32) -> Config {
    Config::new(Workload::Rr, secs, cpus, size, None)
}

pub fn run(plan: &Plan) -> Result<()> {
    let host = bench::check_host(&plan.cfg)?;
    let bin = ringperf::locate(plan.ringperf.as_deref())?;
    let (a, b) = (on(bin.clone()), off(bin));
    let tools: [&dyn Tool; 2] = [&a, &b];
    print!("{}", header(plan, &host, &tools));
    let _ = std::io::stdout().flush();
    let (results, failures) = bench::alternate_retrying(plan, &tools, 1)?;
    print!("{}", runs_table(&results));
    print!("{}", bench::failures_note(&failures));
    print!("{}", summary(&host, &results));
    Ok(())
}

fn header(plan: &Plan, host: &Host, tools: &[&dyn Tool]) -> String {
    let cfg = &plan.cfg;
    let mut s = String::new();
    let _ = writeln!(s, "# ringperf-bench stats (rr: latency histograms and intervals on vs off)\n");
    runs_and_host(&mut s, &format!("{ON} vs {OFF}"), plan, host);
    let _ = writeln!(
        s,
        "- request = response = {} bytes; congestion control: the system default ({})",
        cfg.size, host.default_cc
    );
    let _ = writeln!(
        s,
        "- {ON}: a clock read per transaction edge into an HDR histogram, an interval sample every second (JSON: the series, no live lines); {OFF}: neither (each report is checked to show which)"
    );
    let _ = writeln!(
        s,
        "- transactions/s: ringperf's count / its window; CPU, the same for both: per-CPU /proc/stat deltas around each run, service demand = busy µs over all CPUs per transaction; tool overhead = ringperf's own figure (its user-space CPU / all busy CPU, per side)"
    );
    commands(&mut s, tools, cfg);
    s
}

fn tps(r: &RunResult) -> Option<f64> {
    match r.work {
        Work::Rr { tps_by_count, .. } => Some(tps_by_count),
        Work::Stream { .. } | Work::Udp { .. } => None,
    }
}

fn runs_table(results: &[RunResult]) -> String {
    let mut t = Table::new(&[
        "run",
        "setting",
        "transactions/s",
        "transactions",
        "window s",
        "busy CPU %",
        "SD us/tx (bench)",
        "SD us/tx (ringperf)",
        "tool overhead local %",
        "remote %",
        "intervals",
        "histogram count",
    ]);
    let mut seen = Vec::new();
    for r in results {
        seen.push(r.tool);
        let n = seen.iter().filter(|t| **t == r.tool).count();
        let f = r.ringperf.clone().unwrap_or_default();
        let transactions = match r.work {
            Work::Rr { transactions, .. } => transactions.to_string(),
            Work::Stream { .. } | Work::Udp { .. } => "-".into(),
        };
        t.row(vec![
            n.to_string(),
            r.tool.to_string(),
            opt(tps(r), 0),
            transactions,
            format!("{:.2}", r.cpu.wall_secs()),
            format!("{:.1}", r.cpu.busy_percent()),
            sd(r.service_demand()),
            sd(r.own_service_demand),
            format!("{:.2}", f.local_overhead_percent),
            format!("{:.2}", f.remote_overhead_percent),
            f.local_intervals.to_string(),
            f.latency_count.map_or_else(|| "-".into(), |c| c.to_string()),
        ]);
    }
    format!("## Runs\n\n{}\n", t.render())
}

/// Medians of one setting.
#[derive(Clone, Debug, Default)]
pub struct Side {
    pub runs: usize,
    pub tps: Option<f64>,
    pub range: Option<(f64, f64)>,
    pub sd: Option<f64>,
    pub own_sd: Option<f64>,
    pub local_overhead: Option<f64>,
    pub remote_overhead: Option<f64>,
}

pub fn side(results: &[RunResult], tool: &str) -> Side {
    let mine: Vec<&RunResult> = results.iter().filter(|r| r.tool == tool).collect();
    let med = |f: &dyn Fn(&RunResult) -> Option<f64>| {
        let v: Vec<f64> = mine.iter().filter_map(|r| f(r)).collect();
        median(&v)
    };
    let rates: Vec<f64> = mine.iter().filter_map(|r| tps(r)).collect();
    Side {
        runs: mine.len(),
        tps: median(&rates),
        range: min_max(&rates),
        sd: med(&|r| r.service_demand()),
        own_sd: med(&|r| r.own_service_demand),
        local_overhead: med(&|r| r.ringperf.as_ref().map(|f| f.local_overhead_percent)),
        remote_overhead: med(&|r| r.ringperf.as_ref().map(|f| f.remote_overhead_percent)),
    }
}

pub fn summary(host: &Host, results: &[RunResult]) -> String {
    let (a, b) = (side(results, ON), side(results, OFF));
    let mut t = Table::new(&[
        "setting",
        "runs",
        "transactions/s (median)",
        "min..max",
        "SD us/tx (bench, median)",
        "SD us/tx (ringperf)",
        "tool overhead local %",
        "remote %",
    ]);
    for (name, s) in [(ON, &a), (OFF, &b)] {
        t.row(vec![
            name.into(),
            s.runs.to_string(),
            opt(s.tps, 0),
            s.range.map_or_else(|| "-".into(), |(lo, hi)| format!("{lo:.0}..{hi:.0}")),
            sd(s.sd),
            sd(s.own_sd),
            opt(s.local_overhead, 2),
            opt(s.remote_overhead, 2),
        ]);
    }
    let mut out = format!("## Medians\n\n{}\n", t.render());
    let q = ratio(a.tps, b.tps);
    let verdict = match q {
        Some(q) if ((q - 1.0) * 100.0).abs() <= TARGET_PERCENT => "within",
        Some(_) => "OUTSIDE",
        None => "not measured",
    };
    let x = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.3}x"));
    let _ = writeln!(
        out,
        "on/off: transactions/s {} ({} %; target: within {TARGET_PERCENT} %: {verdict})",
        x(q),
        opt(q.map(|q| (q - 1.0) * 100.0), 2)
    );
    let _ = writeln!(
        out,
        "on/off: service demand per transaction {} (bench, /proc/stat), {} (ringperf's own)",
        x(ratio(a.sd, b.sd)),
        x(ratio(a.own_sd, b.own_sd))
    );
    let _ = writeln!(
        out,
        "tool overhead: on local {} % remote {} %; off local {} % remote {} %",
        opt(a.local_overhead, 2),
        opt(a.remote_overhead, 2),
        opt(b.local_overhead, 2),
        opt(b.remote_overhead, 2)
    );
    let _ = writeln!(
        out,
        "  (SD = busy CPU µs over all {} CPUs per transaction, the same /proc/stat window for both settings; lower is cheaper)",
        host.cpus
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::ringperf::Figures;

    fn run(tool: &'static str, tps: f64, ovh: f64) -> RunResult {
        RunResult {
            own_service_demand: Some(40.0),
            ringperf: Some(Figures {
                local_overhead_percent: ovh,
                remote_overhead_percent: ovh / 2.0,
                ..Figures::default()
            }),
            ..RunResult::one_second_rr(tool, tps, 50)
        }
    }

    #[test]
    fn flags_and_expectations() {
        let cfg = config(3, (0, 1), 1);
        assert_eq!(on("rp".into()).describe(&cfg), "rp rr -l 3 -r 1,1 -T 0,1 --no-profile -D 1 --json");
        assert_eq!(
            off("rp".into()).describe(&cfg),
            "rp rr -l 3 -r 1,1 -T 0,1 --no-profile --no-latency --no-intervals --json"
        );
    }

    #[test]
    fn ratio_line_and_verdict() {
        let results = vec![
            run(ON, 9900.0, 1.0),
            run(OFF, 10000.0, 0.5),
            run(ON, 9700.0, 3.0),
            run(OFF, 10100.0, 0.5),
            run(ON, 9850.0, 2.0),
            run(OFF, 9900.0, 0.5),
        ];
        let host = Host { kernel: "k".into(), cpus: 2, default_cc: "cubic".into(), available_cc: vec![] };
        let text = summary(&host, &results);
        assert!(
            text.contains("on/off: transactions/s 0.985x (-1.50 %; target: within 2 %: within)"),
            "{text}"
        );
        assert!(
            text.contains("tool overhead: on local 2.00 % remote 1.00 %; off local 0.50 % remote 0.25 %"),
            "{text}"
        );
        assert!(text.contains("service demand per transaction 1.015x"), "{text}");
        let runs = runs_table(&results);
        assert_eq!(runs.lines().filter(|l| l.starts_with("| ")).count(), 7, "{runs}");
    }
}
