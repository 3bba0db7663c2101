//! Rendering: the header that says exactly what ran, every run, the medians and the ratios.

use std::fmt::Write;

use crate::peers::{sockperf, Config, RunResult, Tool, Work, Workload};
use crate::plan::{Host, Plan};
use crate::stats::{bimodal_text, interval_text, median, min_max, ratio, RATIO_LEVEL};

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
    match cfg.workload {
        Workload::Stream => "us/KB",
        Workload::UdpStream => "us/datagram",
        Workload::Rr | Workload::Crr | Workload::UdpRr => "us/tx",
    }
}

/// The headline rate's column name, and how it is shown: divisor and decimals.
fn rate_column(cfg: &Config) -> (&'static str, f64, usize) {
    match cfg.workload {
        Workload::Stream => ("Gbit/s", 1e9, 2),
        Workload::UdpStream => ("datagrams/s received", 1.0, 0),
        Workload::Rr | Workload::Crr | Workload::UdpRr => ("transactions/s", 1.0, 0),
    }
}

/// What the headline rate is, in words.
fn rate_words(cfg: &Config) -> &'static str {
    match cfg.workload {
        Workload::Stream => "throughput",
        Workload::UdpStream => "datagrams/s received",
        Workload::Rr | Workload::Crr | Workload::UdpRr => "transactions/s",
    }
}

/// What service demand is per, in words.
fn per_unit(cfg: &Config) -> &'static str {
    match cfg.workload {
        Workload::Stream => "KB (1024 bytes) received",
        Workload::UdpStream => "datagram received",
        Workload::Rr | Workload::Crr | Workload::UdpRr => "transaction",
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
    let (name, div, decimals) = rate_column(cfg);
    let rate = format!("{:.decimals$} {name}", r.rate() / div);
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
        Workload::UdpStream => "udp-stream (UDP bulk transfer, client to server)",
    };
    let _ = writeln!(s, "# ringperf-bench {test}");
    let _ = writeln!(s);
    runs_and_host(&mut s, &format!("tools: {}", names.join(" vs ")), plan, host);
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
        Workload::UdpStream => {
            let _ = writeln!(
                s,
                "- {}-byte datagrams{}{}; datagrams received per second = each tool's receiver count over its window; loss = (sent - received) / sent from each tool's own counts",
                cfg.size,
                cfg.udp.rate.as_ref().map(|r| format!(", sent at {r}")).unwrap_or_else(|| ", unpaced".into()),
                cfg.udp.socket_buffer.as_ref().map(|b| format!(", {b} socket buffers on both sides")).unwrap_or_default()
            );
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
    let per = per_unit(cfg);
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
    commands(&mut s, tools, cfg);
    s
}

/// A header's lines on how the runs went (`who`, alternating) and on the host they ran on.
pub fn runs_and_host(s: &mut String, who: &str, plan: &Plan, host: &Host) {
    let cfg = &plan.cfg;
    let _ = writeln!(
        s,
        "- {who}, alternating, {} run(s) each, {} s per run, {:.1} s pause between runs",
        plan.runs,
        cfg.secs,
        plan.pause.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "- host: Linux {}, {} CPUs; client pinned to CPU {}, server to CPU {}; traffic on 127.0.0.1 only",
        host.kernel, host.cpus, cfg.client_cpu, cfg.server_cpu
    );
}

/// A header's closing list: each tool's command line for `cfg`.
pub fn commands(s: &mut String, tools: &[&dyn Tool], cfg: &Config) {
    let _ = writeln!(s, "- commands:");
    for t in tools {
        let _ = writeln!(s, "  - {}: `{}`", t.name(), t.describe(cfg));
    }
    let _ = writeln!(s);
}

/// The columns particular to a workload: their names and each run's cells.
fn work_columns(cfg: &Config) -> Vec<&'static str> {
    match cfg.workload {
        Workload::Stream => vec!["Gbit/s", "GB received"],
        Workload::UdpStream => {
            vec!["datagrams/s received", "payload Mbit/s", "sent/s (window)", "loss %", "SD us/KB"]
        }
        Workload::Rr | Workload::Crr | Workload::UdpRr => {
            vec!["tps (count/time)", "tps (1/mean RTT)", "mean RTT us", "transactions"]
        }
    }
}

fn work_cells(r: &RunResult) -> Vec<String> {
    match &r.work {
        Work::Stream { bytes, bits_per_sec } => {
            vec![format!("{:.2}", bits_per_sec / 1e9), format!("{:.2}", *bytes as f64 / 1e9)]
        }
        Work::Rr { transactions, tps_by_count, tps_by_rtt, mean_rtt_us } => vec![
            format!("{tps_by_count:.0}"),
            format!("{tps_by_rtt:.0}"),
            format!("{mean_rtt_us:.1}"),
            transactions.to_string(),
        ],
        Work::Udp { received_per_sec, .. } => vec![
            format!("{received_per_sec:.0}"),
            opt(r.payload_bps().map(|b| b / 1e6), 1),
            opt(r.sent_per_sec(), 0),
            opt(r.loss_percent(), 2),
            sd(r.service_demand_per_kb()),
        ],
    }
}

/// Every run, in the order it ran.
pub fn runs_table(cfg: &Config, results: &[RunResult]) -> String {
    let unit = sd_unit(cfg);
    let sd_head = format!("service demand {unit}");
    let own_head = format!("tool-reported SD {unit}");
    let procs_sd_head = format!("procs-only SD {unit}");
    let client_head = format!("CPU{} (client) %", cfg.client_cpu);
    let server_head = format!("CPU{} (server) %", cfg.server_cpu);
    let mut head = vec!["run", "tool"];
    head.extend(work_columns(cfg));
    head.extend([
        "window s",
        "busy CPU %",
        &client_head,
        &server_head,
        "steal %",
        &sd_head,
        &own_head,
        "procs CPU s",
        &procs_sd_head,
    ]);
    let mut t = Table::new(&head);
    let mut seen = Vec::new();
    for r in results {
        seen.push(r.tool);
        let run = seen.iter().filter(|t| **t == r.tool).count().to_string();
        let mut row = vec![run, r.tool.to_string()];
        row.extend(work_cells(r));
        row.extend([
            format!("{:.2}", r.cpu.wall_secs()),
            format!("{:.1}", r.cpu.busy_percent()),
            opt(r.cpu.cpu_busy_percent(cfg.client_cpu), 1),
            opt(r.cpu.cpu_busy_percent(cfg.server_cpu), 1),
            format!("{:.1}", r.cpu.system.steal_percent),
            sd(r.service_demand()),
            sd(r.own_service_demand),
            opt(r.process_cpu_us.map(|us| us / 1e6), 2),
            sd(r.process_service_demand()),
        ]);
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
    /// UDP: loss %, payload bits/s received, service demand per KB received.
    pub loss_percent: Option<f64>,
    pub payload_bps: Option<f64>,
    pub service_demand_per_kb: Option<f64>,
    /// With `--profile`: the network path's service demand (`RunResult::network_service_demand`).
    pub network_service_demand: Option<f64>,
}

pub fn summarize(tool: &'static str, results: &[RunResult]) -> ToolSummary {
    let mine: Vec<&RunResult> = results.iter().filter(|r| r.tool == tool).collect();
    let med = |f: &dyn Fn(&RunResult) -> Option<f64>| {
        let v: Vec<f64> = mine.iter().filter_map(|r| f(r)).collect();
        median(&v)
    };
    let rr = |pick: fn(f64, f64) -> f64| {
        move |r: &RunResult| match r.work {
            Work::Rr { tps_by_count, tps_by_rtt, .. } => Some(pick(tps_by_count, tps_by_rtt)),
            Work::Stream { .. } | Work::Udp { .. } => None,
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
        tps_by_count: med(&rr(|c, _| c)),
        tps_by_rtt: med(&rr(|_, t| t)),
        mean_rtt_us: med(&|r| r.mean_rtt_us()),
        loss_percent: med(&|r| r.loss_percent()),
        payload_bps: med(&|r| r.payload_bps()),
        service_demand_per_kb: med(&|r| r.service_demand_per_kb()),
        network_service_demand: med(&|r| r.network_service_demand()),
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
    /// The network path's service demand (with `--profile`): the ratio and its interval.
    pub network_sd: Option<f64>,
    pub network_sd_interval: Option<String>,
}

/// A row for each peer after the first tool of `sums`.
pub fn ratio_rows(results: &[RunResult], sums: &[ToolSummary]) -> Vec<RatioRow> {
    let Some((ours, peers)) = sums.split_first() else {
        return Vec::new();
    };
    let per_run = |tool: &str, f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<f64> {
        results.iter().filter(|r| r.tool == tool).filter_map(f).collect()
    };
    // The interval, and after it either tool whose runs fall in two clusters: then the
    // medians' ratio stands for neither placement, and the runs table shows both.
    let interval = |f: &dyn Fn(&RunResult) -> Option<f64>, peer: &str| {
        let (a, b) = (per_run(ours.tool, f), per_run(peer, f));
        let notes = [interval_text(&a, &b), bimodal_text(ours.tool, &a), bimodal_text(peer, &b)];
        let text: Vec<String> = notes.into_iter().flatten().collect();
        (!text.is_empty()).then(|| text.join("; "))
    };
    peers
        .iter()
        .map(|peer| RatioRow {
            peer: peer.tool,
            rate: ratio(ours.rate, peer.rate),
            rate_interval: interval(&|r| Some(r.rate()), peer.tool),
            service_demand: ratio(ours.service_demand, peer.service_demand),
            sd_interval: interval(&|r| r.service_demand(), peer.tool),
            network_sd: ratio(ours.network_service_demand, peer.network_service_demand),
            network_sd_interval: interval(&|r| r.network_service_demand(), peer.tool),
        })
        .collect()
}

/// Members that run ringperf the way one peer does, compared with that peer directly:
/// (member, peer, the label of the row in `all`'s table).
const MATCHED: [(&str, &str, &str); 1] =
    [(crate::plan::CLIENT_FIRST, "neper", "neper (vs ringperf --close-first client)")];

/// Each matched member against its peer, where both ran: the member's and the peer's
/// names, and the row (labelled for `all`'s table).
pub fn matched_rows(
    results: &[RunResult],
    sums: &[ToolSummary],
) -> Vec<(&'static str, &'static str, RatioRow)> {
    MATCHED
        .iter()
        .filter_map(|&(member, peer, label)| {
            let find = |name: &str| sums.iter().find(|s| s.tool == name).cloned();
            let pair = [find(member)?, find(peer)?];
            let row = ratio_rows(results, &pair).into_iter().next()?;
            Some((member, peer, RatioRow { peer: label, ..row }))
        })
        .collect()
}

/// The medians of every tool, one row each.
pub fn medians_table(cfg: &Config, host: &Host, sums: &[ToolSummary]) -> String {
    let unit = sd_unit(cfg);
    let (rate_name, div, decimals) = rate_column(cfg);
    let rate_head = format!("{rate_name} (median)");
    let busy_head = format!("busy CPU % of {} (median)", host.cpus);
    let sd_head = format!("service demand {unit} (median)");
    let own_head = format!("tool-reported SD {unit}");
    let procs_head = format!("procs-only SD {unit}");
    let mut head = vec!["tool", "runs", &rate_head, "min..max"];
    match cfg.workload {
        Workload::Stream => {}
        Workload::UdpStream => head.extend(["payload Mbit/s", "loss %", "SD us/KB"]),
        Workload::Rr | Workload::Crr | Workload::UdpRr => head.push("mean RTT us"),
    }
    head.extend([busy_head.as_str(), &sd_head, &own_head, &procs_head]);
    let mut t = Table::new(&head);
    for s in sums {
        let range = s.rate_range.map_or_else(
            || "-".into(),
            |(lo, hi)| format!("{:.decimals$}..{:.decimals$}", lo / div, hi / div),
        );
        let mut row =
            vec![s.tool.to_string(), s.runs.to_string(), opt(s.rate.map(|r| r / div), decimals), range];
        match cfg.workload {
            Workload::Stream => {}
            Workload::UdpStream => row.extend([
                opt(s.payload_bps.map(|b| b / 1e6), 1),
                opt(s.loss_percent, 2),
                sd(s.service_demand_per_kb),
            ]),
            Workload::Rr | Workload::Crr | Workload::UdpRr => row.push(opt(s.mean_rtt_us, 1)),
        }
        row.extend([
            opt(s.busy_percent, 1),
            sd(s.service_demand),
            sd(s.own_service_demand),
            sd(s.process_service_demand),
        ]);
        t.row(row);
    }
    format!("## Medians\n\n{}\n", t.render())
}

/// The medians table and a ratio line for the first tool against each of the others.
pub fn summary(cfg: &Config, host: &Host, results: &[RunResult], tools: &[&dyn Tool]) -> String {
    let sums: Vec<ToolSummary> = tools.iter().map(|t| summarize(t.name(), results)).collect();
    let mut out = medians_table(cfg, host, &sums);
    let Some((ours, peers)) = sums.split_first() else {
        return out;
    };
    let what = rate_words(cfg);
    let x = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"));
    for (peer, row) in peers.iter().zip(ratio_rows(results, &sums)) {
        let _ = write!(
            out,
            "{}/{}: {what} {}{}, service demand {}{}",
            ours.tool,
            peer.tool,
            x(row.rate),
            row.rate_interval.map(|t| format!(" ({t})")).unwrap_or_default(),
            x(row.service_demand),
            row.sd_interval.map(|t| format!(" ({t})")).unwrap_or_default(),
        );
        if cfg.workload == Workload::UdpStream {
            let _ = write!(
                out,
                " per datagram, {} per KB",
                x(ratio(ours.service_demand_per_kb, peer.service_demand_per_kb))
            );
        }
        let _ = writeln!(out);
        if cfg.workload.is_transactional() {
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
    for (member, peer, row) in matched_rows(results, &sums) {
        let _ = writeln!(
            out,
            "{member}/{peer} (the same close order): {what} {}{}, service demand {}{}",
            x(row.rate),
            row.rate_interval.map(|t| format!(" ({t})")).unwrap_or_default(),
            x(row.service_demand),
            row.sd_interval.map(|t| format!(" ({t})")).unwrap_or_default(),
        );
    }
    let _ = writeln!(
        out,
        "  (ratios of medians, with the {:.0} % interval of each ratio over the runs (Welch's t on their logarithms) and any tool whose runs are bimodal (two clusters 10 % or more apart, the jump over three times the spread within either); service demand is busy CPU µs over all {} CPUs per {}, measured by this bench the same way for every tool; lower is cheaper)",
        RATIO_LEVEL * 100.0,
        host.cpus,
        per_unit(cfg)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuWindow;
    use ringperf_core::measure::cpu::ProcStat;

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
            profile: None,
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
        let cfg = Config::new(Workload::Stream, 1, (0, 1), 131072, None);
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

    /// A member that runs ringperf as one peer does is compared with that peer on a row of
    /// its own; without the member there is no such row.
    #[test]
    fn a_matched_member_is_compared_with_its_peer() {
        let client_first = crate::plan::CLIENT_FIRST;
        let results = vec![
            stream("ringperf", 40.0, 50),
            stream(client_first, 30.0, 50),
            stream("neper", 20.0, 100),
            stream("ringperf", 40.0, 50),
            stream(client_first, 30.0, 50),
            stream("neper", 20.0, 100),
        ];
        let sums: Vec<ToolSummary> =
            ["ringperf", client_first, "neper"].iter().map(|t| summarize(t, &results)).collect();
        let rows = matched_rows(&results, &sums);
        assert_eq!(rows.len(), 1);
        let (member, peer, row) = &rows[0];
        assert_eq!((*member, *peer), (client_first, "neper"));
        assert_eq!(row.rate, Some(1.5), "30 against 20");
        assert_eq!(row.service_demand, Some(0.5), "half the busy CPU per KB: {row:?}");
        assert!(row.peer.contains("--close-first client"), "{}", row.peer);
        let without: Vec<ToolSummary> = vec![sums[0].clone(), sums[2].clone()];
        assert!(matched_rows(&results, &without).is_empty());
    }

    /// A tool whose runs fall in two clusters is named next to the ratio it makes.
    #[test]
    fn a_bimodal_tool_is_named_beside_its_ratio() {
        let mut results = Vec::new();
        for gbit in [20.0, 36.0, 21.0, 35.0] {
            results.push(stream("ringperf", gbit, 50));
            results.push(stream("iperf3", 25.0 + gbit / 100.0, 100));
        }
        let sums: Vec<ToolSummary> = ["ringperf", "iperf3"].iter().map(|t| summarize(t, &results)).collect();
        let row = &ratio_rows(&results, &sums)[0];
        let rate = row.rate_interval.as_deref().unwrap_or_default();
        assert!(rate.starts_with("95 % interval "), "{rate}");
        assert!(rate.ends_with("; ringperf's runs bimodal: 2 near 20.50G, 2 near 35.50G"), "{rate}");
        assert!(!rate.contains("iperf3's"), "iperf3's runs are one cluster: {rate}");
        // Service demand is per KB moved: the same bytes and busy time every run, one value.
        assert!(!row.sd_interval.as_deref().unwrap_or_default().contains("bimodal"), "{row:?}");
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
