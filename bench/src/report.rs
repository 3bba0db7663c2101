//! Rendering: the header that says exactly what ran, every run, the medians and the ratios.

use std::fmt::Write;

use crate::bench::{Host, Plan};
use crate::peers::{sockperf, Config, RunResult, Tool, Work, Workload};
use crate::stats::{interval_text, median, min_max, ratio, RATIO_LEVEL};

/// A left-aligned markdown table with padded columns.
pub(crate) struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(head: &[&str]) -> Table {
        Table { head: head.iter().map(|s| s.to_string()).collect(), rows: Vec::new() }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn render(&self) -> String {
        let n = self.head.len();
        let width = |i: usize| {
            self.rows
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .chain([self.head[i].len()])
                .max()
        };
        let widths: Vec<usize> = (0..n).map(|i| width(i).unwrap_or(0).max(3)).collect();
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for (i, w) in widths.iter().enumerate() {
                let c = cells.get(i).map_or("", String::as_str);
                let pad = w - c.chars().count().min(*w);
                let _ = write!(s, " {c}{} |", " ".repeat(pad));
            }
            s.push('\n');
            s
        };
        let mut out = line(&self.head);
        out.push('|');
        for w in &widths {
            let _ = write!(out, "{}|", "-".repeat(w + 2));
        }
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

pub(crate) fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.decimals$}"))
}

fn sd_unit(cfg: &Config) -> &'static str {
    if cfg.workload.is_stream() {
        "us/KB"
    } else {
        "us/tx"
    }
}

/// Decimals that keep three or so significant digits for a service demand.
pub(crate) fn sd(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() < 1.0 => format!("{v:.4}"),
        Some(v) if v.abs() < 100.0 => format!("{v:.2}"),
        other => opt(other, 1),
    }
}

/// The progress line printed after each run.
pub fn one_line(cfg: &Config, r: &RunResult) -> String {
    let rate = if cfg.workload.is_stream() {
        format!("{:.2} Gbit/s", r.rate() / 1e9)
    } else {
        format!("{:.0} transactions/s", r.rate())
    };
    format!(
        "{rate}, busy {:.1} %, service demand {} {}",
        r.cpu.busy_percent(),
        sd(r.service_demand()),
        sd_unit(cfg)
    )
}

/// What was compared, how, and with which exact commands.
pub fn header(plan: &Plan, host: &Host, tools: &[&dyn Tool]) -> String {
    let cfg = &plan.cfg;
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    let mut s = String::new();
    let test = match cfg.workload {
        Workload::Stream => "stream (TCP bulk transfer, client to server)",
        Workload::Rr => "rr (TCP request/response, one transaction in flight)",
        Workload::Crr => "crr (TCP connect, request, response, close)",
        Workload::UdpRr => "udp-rr (UDP request/response, one transaction in flight)",
    };
    let _ = writeln!(s, "# ringperf-bench {test}");
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "- tools: {}, alternating, {} run(s) each, {} s per run, {:.1} s pause between runs",
        names.join(" vs "),
        plan.runs,
        cfg.secs,
        plan.pause.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "- host: Linux {}, {} CPUs; client pinned to CPU {}, server to CPU {}; traffic on 127.0.0.1 only",
        host.kernel, host.cpus, cfg.client_cpu, cfg.server_cpu
    );
    match cfg.workload {
        Workload::Stream => {
            let _ = writeln!(
                s,
                "- writes of {} bytes on every tool (receives of {} bytes on ringperf)",
                cfg.size, cfg.size
            );
            match &cfg.cc {
                Some(cc) => {
                    let _ = writeln!(
                        s,
                        "- congestion control: {cc} on every tool (system default: {})",
                        host.default_cc
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "- congestion control: the system default ({}) on every tool",
                        host.default_cc
                    );
                }
            }
        }
        Workload::Rr | Workload::Crr | Workload::UdpRr => {
            let _ = writeln!(s, "- request = response = {} bytes on every tool", cfg.size);
            match cfg.cc.as_ref().filter(|_| cfg.workload.is_tcp()) {
                Some(cc) => {
                    let _ = writeln!(
                        s,
                        "- congestion control: {cc} on every tool (system default: {}); sockperf cannot set one, so it is left out (--cc system includes it)",
                        host.default_cc
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "- congestion control: the system default ({}) on every tool",
                        host.default_cc
                    );
                }
            }
            let _ = writeln!(
                s,
                "- transactions/s: ringperf = transactions / its window (its JSON); netperf = its TRANSACTION_RATE; neper = its throughput; sockperf = 1 / mean round trip (avg-rtt with --full-rtt); the runs table shows both definitions for every tool"
            );
        }
    }
    let per = if cfg.workload.is_stream() { "KB (1024 bytes) received" } else { "transaction" };
    let _ = writeln!(
        s,
        "- CPU, the same for every tool: per-CPU /proc/stat deltas from just before the client starts (server already listening) to just after it exits; busy = user+nice+system+irq+softirq; service demand = busy µs summed over all CPUs per {per}"
    );
    let _ = writeln!(
        s,
        "- procs-only: user+system CPU of the tool's own client and server processes (getrusage after they are reaped) per {per}: a cross-check that other load on a shared host cannot inflate, but blind to kernel work done outside those processes (ksoftirqd, kworkers)"
    );
    if cfg.workload == Workload::Rr && names.contains(&sockperf::NAME) {
        let _ = writeln!(
            s,
            "- sockperf's window opens at its 'Starting test...' line: it idles ~2 s after connecting; its transactions are its [Total Run] ReceivedMessages (the whole timed run, warm-up included)"
        );
    }
    let _ = writeln!(s, "- commands:");
    for t in tools {
        let _ = writeln!(s, "  - {}: `{}`", t.name(), t.describe(cfg));
    }
    let _ = writeln!(s);
    s
}

/// Every run, in the order it ran.
pub fn runs_table(cfg: &Config, results: &[RunResult]) -> String {
    let unit = sd_unit(cfg);
    let sd_head = format!("service demand {unit}");
    let own_head = format!("tool-reported SD {unit}");
    let procs_sd_head = format!("procs-only SD {unit}");
    let client_head = format!("CPU{} (client) %", cfg.client_cpu);
    let server_head = format!("CPU{} (server) %", cfg.server_cpu);
    let mut t = match cfg.workload {
        Workload::Stream => Table::new(&[
            "run",
            "tool",
            "Gbit/s",
            "GB received",
            "window s",
            "busy CPU %",
            &client_head,
            &server_head,
            "steal %",
            &sd_head,
            &own_head,
            "procs CPU s",
            &procs_sd_head,
        ]),
        Workload::Rr | Workload::Crr | Workload::UdpRr => Table::new(&[
            "run",
            "tool",
            "tps (count/time)",
            "tps (1/mean RTT)",
            "mean RTT us",
            "transactions",
            "window s",
            "busy CPU %",
            &client_head,
            &server_head,
            "steal %",
            &sd_head,
            &own_head,
            "procs CPU s",
            &procs_sd_head,
        ]),
    };
    let mut seen = Vec::new();
    for r in results {
        seen.push(r.tool);
        let run = seen.iter().filter(|t| **t == r.tool).count().to_string();
        let cpu_cols = [
            format!("{:.2}", r.cpu.wall_secs()),
            format!("{:.1}", r.cpu.busy_percent()),
            opt(r.cpu.cpu_busy_percent(cfg.client_cpu), 1),
            opt(r.cpu.cpu_busy_percent(cfg.server_cpu), 1),
            format!("{:.1}", r.cpu.system.steal_percent),
            sd(r.service_demand()),
            sd(r.own_service_demand),
            opt(r.process_cpu_us.map(|us| us / 1e6), 2),
            sd(r.process_service_demand()),
        ];
        let mut row = vec![run, r.tool.to_string()];
        match &r.work {
            Work::Stream { bytes, bits_per_sec } => {
                row.extend([format!("{:.2}", bits_per_sec / 1e9), format!("{:.2}", *bytes as f64 / 1e9)]);
            }
            Work::Rr { transactions, tps_by_count, tps_by_rtt, mean_rtt_us } => row.extend([
                format!("{tps_by_count:.0}"),
                format!("{tps_by_rtt:.0}"),
                format!("{mean_rtt_us:.1}"),
                transactions.to_string(),
            ]),
        }
        row.extend(cpu_cols);
        t.row(row);
    }
    format!("## Runs\n\n{}\n", t.render())
}

/// Medians of one tool's runs.
#[derive(Clone, Debug)]
pub struct ToolSummary {
    pub tool: &'static str,
    pub runs: usize,
    pub rate: Option<f64>,
    pub rate_range: Option<(f64, f64)>,
    pub busy_percent: Option<f64>,
    pub service_demand: Option<f64>,
    pub own_service_demand: Option<f64>,
    pub process_service_demand: Option<f64>,
    pub tps_by_count: Option<f64>,
    pub tps_by_rtt: Option<f64>,
    pub mean_rtt_us: Option<f64>,
}

pub fn summarize(tool: &'static str, results: &[RunResult]) -> ToolSummary {
    let mine: Vec<&RunResult> = results.iter().filter(|r| r.tool == tool).collect();
    let med = |f: &dyn Fn(&RunResult) -> Option<f64>| {
        let v: Vec<f64> = mine.iter().filter_map(|r| f(r)).collect();
        median(&v)
    };
    let rr = |pick: fn(f64, f64, f64) -> f64| {
        move |r: &RunResult| match r.work {
            Work::Rr { tps_by_count, tps_by_rtt, mean_rtt_us, .. } => {
                Some(pick(tps_by_count, tps_by_rtt, mean_rtt_us))
            }
            Work::Stream { .. } => None,
        }
    };
    let rates: Vec<f64> = mine.iter().map(|r| r.rate()).collect();
    ToolSummary {
        tool,
        runs: mine.len(),
        rate: median(&rates),
        rate_range: min_max(&rates),
        busy_percent: med(&|r| Some(r.cpu.busy_percent())),
        service_demand: med(&|r| r.service_demand()),
        own_service_demand: med(&|r| r.own_service_demand),
        process_service_demand: med(&|r| r.process_service_demand()),
        tps_by_count: med(&rr(|c, _, _| c)),
        tps_by_rtt: med(&rr(|_, t, _| t)),
        mean_rtt_us: med(&rr(|_, _, m| m)),
    }
}

/// ringperf (the first tool) against one peer: ratios of medians and their intervals.
#[derive(Clone, Debug)]
pub struct RatioRow {
    pub peer: &'static str,
    pub rate: Option<f64>,
    pub rate_interval: Option<String>,
    pub service_demand: Option<f64>,
    pub sd_interval: Option<String>,
}

/// A row for each peer after the first tool of `sums`.
pub fn ratio_rows(results: &[RunResult], sums: &[ToolSummary]) -> Vec<RatioRow> {
    let Some((ours, peers)) = sums.split_first() else {
        return Vec::new();
    };
    let per_run = |tool: &str, f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<f64> {
        results.iter().filter(|r| r.tool == tool).filter_map(f).collect()
    };
    let interval = |f: &dyn Fn(&RunResult) -> Option<f64>, peer: &str| {
        interval_text(&per_run(ours.tool, f), &per_run(peer, f))
    };
    peers
        .iter()
        .map(|peer| RatioRow {
            peer: peer.tool,
            rate: ratio(ours.rate, peer.rate),
            rate_interval: interval(&|r| Some(r.rate()), peer.tool),
            service_demand: ratio(ours.service_demand, peer.service_demand),
            sd_interval: interval(&|r| r.service_demand(), peer.tool),
        })
        .collect()
}

/// The medians table and a ratio line for ringperf against each peer.
pub fn summary(cfg: &Config, host: &Host, results: &[RunResult], tools: &[&dyn Tool]) -> String {
    let sums: Vec<ToolSummary> = tools.iter().map(|t| summarize(t.name(), results)).collect();
    let unit = sd_unit(cfg);
    let busy_head = format!("busy CPU % of {} (median)", host.cpus);
    let sd_head = format!("service demand {unit} (median)");
    let own_head = format!("tool-reported SD {unit}");
    let procs_head = format!("procs-only SD {unit}");
    let mut t = match cfg.workload {
        Workload::Stream => Table::new(&[
            "tool",
            "runs",
            "throughput Gbit/s (median)",
            "min..max",
            &busy_head,
            &sd_head,
            &own_head,
            &procs_head,
        ]),
        Workload::Rr | Workload::Crr | Workload::UdpRr => Table::new(&[
            "tool",
            "runs",
            "transactions/s (median)",
            "min..max",
            "mean RTT us",
            &busy_head,
            &sd_head,
            &own_head,
            &procs_head,
        ]),
    };
    for s in &sums {
        let (scale, decimals) = match cfg.workload {
            Workload::Stream => (1e9, 2),
            Workload::Rr | Workload::Crr | Workload::UdpRr => (1.0, 0),
        };
        let range = s.rate_range.map_or_else(
            || "-".into(),
            |(lo, hi)| format!("{:.decimals$}..{:.decimals$}", lo / scale, hi / scale),
        );
        let mut row =
            vec![s.tool.to_string(), s.runs.to_string(), opt(s.rate.map(|r| r / scale), decimals), range];
        if !cfg.workload.is_stream() {
            row.push(opt(s.mean_rtt_us, 1));
        }
        row.extend([
            opt(s.busy_percent, 1),
            sd(s.service_demand),
            sd(s.own_service_demand),
            sd(s.process_service_demand),
        ]);
        t.row(row);
    }
    let mut out = format!("## Medians\n\n{}\n", t.render());
    let Some((ours, peers)) = sums.split_first() else {
        return out;
    };
    let what = if cfg.workload.is_stream() { "throughput" } else { "transactions/s" };
    let x = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"));
    for (peer, row) in peers.iter().zip(ratio_rows(results, &sums)) {
        let _ = writeln!(
            out,
            "{}/{}: {what} {}{}, service demand {}{}",
            ours.tool,
            peer.tool,
            x(row.rate),
            row.rate_interval.map(|t| format!(" ({t})")).unwrap_or_default(),
            x(row.service_demand),
            row.sd_interval.map(|t| format!(" ({t})")).unwrap_or_default(),
        );
        if !cfg.workload.is_stream() {
            let _ = writeln!(
                out,
                "  same definition on both sides: transactions/s by count/time {}, by 1/mean RTT {}",
                x(ratio(ours.tps_by_count, peer.tps_by_count)),
                x(ratio(ours.tps_by_rtt, peer.tps_by_rtt))
            );
        }
        if ours.process_service_demand.is_some() && peer.process_service_demand.is_some() {
            let _ = writeln!(
                out,
                "  cross-check, the tools' own processes' CPU only (getrusage; blind to other load on the host): service demand {}",
                x(ratio(ours.process_service_demand, peer.process_service_demand))
            );
        }
    }
    let _ = writeln!(
        out,
        "  (ratios of medians, with the {:.0} % interval of each ratio over the runs (Welch's t on their logarithms); service demand is busy CPU µs over all {} CPUs per {}, measured by this bench the same way for every tool; lower is cheaper)",
        RATIO_LEVEL * 100.0,
        host.cpus,
        if cfg.workload == Workload::Stream { "KB" } else { "transaction" }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuWindow;
    use ringperf_engine::measure::cpu::ProcStat;

    fn window(busy_ticks: u64) -> CpuWindow {
        let b = ProcStat::parse("cpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n").unwrap();
        let a = ProcStat::parse(&format!(
            "cpu0 {busy_ticks} 0 0 {} 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0\n",
            100 - busy_ticks
        ))
        .unwrap();
        CpuWindow::from_stats(&b, &a, 1_000_000_000)
    }

    fn stream(tool: &'static str, gbit: f64, busy_ticks: u64) -> RunResult {
        RunResult {
            tool,
            cpu: window(busy_ticks),
            work: Work::Stream { bytes: 1024 * 1000, bits_per_sec: gbit * 1e9 },
            own_service_demand: None,
            process_cpu_us: Some(250_000.0),
            ringperf: None,
        }
    }

    #[test]
    fn medians_and_ratio_line() {
        let results = vec![
            stream("ringperf", 30.0, 50),
            stream("iperf3", 20.0, 100),
            stream("ringperf", 40.0, 50),
            stream("iperf3", 25.0, 100),
            stream("ringperf", 35.0, 50),
            stream("iperf3", 15.0, 100),
        ];
        let s = summarize("ringperf", &results);
        assert_eq!(s.runs, 3);
        assert_eq!(s.rate, Some(35e9));
        assert_eq!(s.rate_range, Some((30e9, 40e9)));
        // 50 of 200 ticks busy over 1 s of 2 CPUs = 0.5 s = 500000 µs per 1000 KB.
        assert!((s.service_demand.unwrap() - 500.0).abs() < 1e-6);
        let p = summarize("iperf3", &results);
        assert!((p.service_demand.unwrap() - 1000.0).abs() < 1e-6);

        struct Named(&'static str);
        impl Tool for Named {
            fn name(&self) -> &'static str {
                self.0
            }
            fn describe(&self, _: &Config) -> String {
                String::new()
            }
            fn run(&self, _: &Config) -> crate::error::Result<RunResult> {
                unreachable!()
            }
        }
        let cfg = Config {
            workload: Workload::Stream,
            secs: 1,
            client_cpu: 0,
            server_cpu: 1,
            size: 131072,
            cc: None,
        };
        let host = Host { kernel: "k".into(), cpus: 2, default_cc: "bbr".into(), available_cc: vec![] };
        let (a, b) = (Named("ringperf"), Named("iperf3"));
        let text = summary(&cfg, &host, &results, &[&a, &b]);
        assert!(
            text.contains(
                "ringperf/iperf3: throughput 1.75x (95 % interval 1.05x-3.00x), service demand 0.50x (95 % interval 0.50x-0.50x)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "processes' CPU only (getrusage; blind to other load on the host): service demand 1.00x"
            ),
            "{text}"
        );
        assert!((s.process_service_demand.unwrap() - 250.0).abs() < 1e-9);
        let runs = runs_table(&cfg, &results);
        assert_eq!(runs.lines().filter(|l| l.starts_with("| ")).count(), 7, "{runs}");
    }

    #[test]
    fn table_columns_line_up() {
        let mut t = Table::new(&["a", "long header"]);
        t.row(vec!["wide cell".into(), "x".into()]);
        let text = t.render();
        let widths: Vec<usize> = text.lines().map(|l| l.chars().count()).collect();
        assert!(widths.windows(2).all(|w| w[0] == w[1]), "{text}");
    }
}
