//! `scale`: ringperf with many flows over two threads, and UDP, against the peers of each
//! layout, on the shared peer types: every part is a list of tools, each with its own
//! settings (flows, threads, CPU set, UDP options), alternated and reported like every
//! other comparison, with the 95 % interval of each ratio.
//!
//! 1. stream, 8 flows over 2 threads: `ringperf stream --flows 8 --threads 2 --cpus 0,1`
//!    against `iperf3 -P 8` and `tcp_stream -F 8 -T 2` (all under the same CPU set, same
//!    write size and congestion control).
//! 2. rr, 100 flows over 2 threads, 64-byte request and response: against iperf 2's TCP
//!    bounceback with `-P 100` and neper's `tcp_rr -F 100 -T 2`.
//! 3. UDP 64-byte datagrams unpaced, every socket buffer 8 MiB: `ringperf udp-stream -m 64
//!    --flows 2 --threads 2 --cpus 0,1` (one pinned ring per CPU on each side) against
//!    `iperf3 -u -b 0 -l 64 -w 8M` (iperf3 3.12 runs every stream on one thread, so one flow
//!    is its best) and netperf UDP_STREAM, plus ringperf with one flow, and ringperf's
//!    batched path `--gso 64 --gro` (one send carries 64 datagrams, one receive takes the
//!    coalesced batch; each datagram still has its own sequence number) with one flow and
//!    with the scaled flows: the 1.5x target is evaluated for the fastest ringperf row
//!    that sends one datagram per send, as iperf3 and netperf do (the batched rows change
//!    the kernel's path, so they are reported beside it with no target);
//!    then `ringperf udp-stream --gso 1400` against `-m 1400`: service demand per
//!    datagram and per KB received.
//!
//! `--parts` runs a subset (e.g. `--parts udp64` for the UDP rows alone).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::bench::{self, find_peer, Entry};
use crate::error::{BenchError, Result};
use crate::peers::iperf2::Iperf2;
use crate::peers::iperf3::Iperf3;
use crate::peers::neper::Neper;
use crate::peers::netperf::Netperf;
use crate::peers::ringperf::{self, Ringperf};
use crate::peers::{Config, Layout, RunResult, Tool, Workload};
use crate::plan::Host;
use crate::report::{self, opt, ToolSummary};
use crate::stats::ratio;

/// Flows and threads of the stream part.
pub const STREAM_FLOWS: u32 = 8;
/// Flows of the rr part.
pub const RR_FLOWS: u32 = 100;
/// Worker threads per side in the TCP parts.
pub const THREADS: u32 = 2;
/// Request and response bytes of the rr part.
pub const RR_SIZE: u32 = 64;
/// Datagram bytes of the small-datagram part.
pub const SMALL_DATAGRAM: u32 = 64;
/// Datagram bytes of the GSO part.
pub const GSO_SEGMENT: u32 = 1400;
/// ringperf's flows (and threads, one per CPU) in the small-datagram part.
pub const UDP_FLOWS: u32 = 2;
/// SO_SNDBUF and SO_RCVBUF on every UDP socket of both tools in the small-datagram part:
/// a bursty unpaced sender otherwise overflows the kernel's default receive buffer and
/// the loss measures the buffer, not the tool.
pub const UDP_SOCKET_BUFFER: &str = "8M";

/// The ringperf labels the targets look for.
const RINGPERF_UDP_SCALED: &str = "ringperf 2 flows";
const RINGPERF_UDP_ONE: &str = "ringperf 1 flow";
const RINGPERF_UDP_BATCHED: &str = "ringperf --gso 64 --gro 1 flow";
const RINGPERF_UDP_BATCHED_SCALED: &str = "ringperf --gso 64 --gro 2 flows";
/// Every ringperf row of the small-datagram part, the candidates for its target.
#[cfg(test)]
const RINGPERF_UDP_ROWS: [&str; 4] =
    [RINGPERF_UDP_SCALED, RINGPERF_UDP_ONE, RINGPERF_UDP_BATCHED, RINGPERF_UDP_BATCHED_SCALED];
/// The rows that send one datagram per send, like the peers: the ones the target is for.
const RINGPERF_UDP_PLAIN_ROWS: [&str; 2] = [RINGPERF_UDP_SCALED, RINGPERF_UDP_ONE];
const RINGPERF_GSO: &str = "ringperf --gso 1400";
const RINGPERF_PLAIN: &str = "ringperf -m 1400";

#[derive(Clone, Debug)]
pub struct ScalePlan {
    pub secs: u32,
    pub runs: u32,
    pub pause: Duration,
    /// Client (sender) and server (receiver) CPU for the single-flow UDP parts; the TCP
    /// parts give both tools both CPUs.
    pub cpus: (usize, usize),
    /// Bytes per write in the stream part.
    pub size: u32,
    pub cc: String,
    /// -b for both GSO-part runs; None runs them unpaced.
    pub gso_rate: Option<String>,
    pub ringperf: Option<PathBuf>,
    /// The parts to run, in their fixed order.
    pub parts: Vec<Part>,
}

impl ScalePlan {
    fn cpu_set(&self) -> String {
        let (a, b) = self.cpus;
        if a == b {
            a.to_string()
        } else {
            format!("{a},{b}")
        }
    }

    /// Both sides' threads over both CPUs.
    fn spread(&self, flows: u32, threads: u32) -> Layout {
        Layout { flows, threads, cpu_set: Some(self.cpu_set()) }
    }

    pub fn stream_config(&self) -> Config {
        let mut c = Config::new(Workload::Stream, self.secs, self.cpus, self.size, Some(self.cc.clone()));
        c.layout = self.spread(STREAM_FLOWS, THREADS);
        c
    }

    /// iperf 2 always sets TCP_NODELAY, so every tool gets it.
    pub fn rr_config(&self) -> Config {
        let mut c = Config::new(Workload::Rr, self.secs, self.cpus, RR_SIZE, None);
        c.layout = self.spread(RR_FLOWS, THREADS);
        c.nodelay = true;
        c
    }

    /// One flow, the sender on the client CPU and the receiver on the server CPU.
    pub fn udp64_config(&self) -> Config {
        let mut c = Config::new(Workload::UdpStream, self.secs, self.cpus, SMALL_DATAGRAM, None);
        c.udp.socket_buffer = Some(UDP_SOCKET_BUFFER.into());
        c
    }

    /// `udp64_config` with UDP_FLOWS flows, one thread per CPU on each side.
    pub fn udp64_scaled_config(&self) -> Config {
        let mut c = self.udp64_config();
        c.layout = self.spread(UDP_FLOWS, UDP_FLOWS);
        c
    }

    /// `udp64_config` (or its scaled layout) sent with UDP_SEGMENT: the datagram size on
    /// the wire stays 64 bytes, 64 of them per send.
    pub fn udp64_batched_config(&self, scaled: bool) -> Config {
        let mut c = if scaled { self.udp64_scaled_config() } else { self.udp64_config() };
        c.udp.gso = true;
        c
    }

    pub fn gso_config(&self, gso: bool) -> Config {
        let mut c = Config::new(Workload::UdpStream, self.secs, self.cpus, GSO_SEGMENT, None);
        c.udp.rate = self.gso_rate.clone();
        c.udp.gso = gso;
        c
    }
}

/// The parts, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    Stream,
    Rr,
    Udp64,
    Gso,
}

impl Part {
    fn title(self) -> &'static str {
        match self {
            Part::Stream => "1. TCP stream, 8 flows over 2 threads",
            Part::Rr => "2. TCP rr, 100 flows over 2 threads, 64-byte request and response",
            Part::Udp64 => "3a. UDP stream, 64-byte datagrams, unpaced",
            Part::Gso => "3b. UDP stream, 1400-byte datagrams: --gso 1400 vs -m 1400",
        }
    }
}

/// A tool in a part and the settings it runs with.
pub struct Member {
    pub tool: Box<dyn Tool>,
    pub cfg: Config,
}

fn ringperf_labeled(bin: &std::path::Path, label: &'static str) -> Box<dyn Tool> {
    Box::new(Ringperf { label, ..Ringperf::new(bin.to_path_buf()) })
}

/// ringperf receiving with UDP_GRO (its sender's GSO comes from the config).
fn ringperf_gro(bin: &std::path::Path, label: &'static str) -> Box<dyn Tool> {
    Box::new(Ringperf { label, extra: vec!["--gro".into()], ..Ringperf::new(bin.to_path_buf()) })
}

/// Every part with the tools that are here; a missing peer is named and left out.
fn parts(plan: &ScalePlan, bin: &std::path::Path) -> Vec<(Part, Vec<Member>)> {
    let rp = |label| ringperf_labeled(bin, label);
    let mut out = Vec::new();

    let cfg = plan.stream_config();
    let mut m = vec![Member { tool: rp(ringperf::NAME), cfg: cfg.clone() }];
    m.extend(find_peer(|| Ok(Box::new(Iperf3::find()?))).map(|tool| Member { tool, cfg: cfg.clone() }));
    m.extend(find_peer(|| Ok(Box::new(Neper::find()?))).map(|tool| Member { tool, cfg: cfg.clone() }));
    out.push((Part::Stream, m));

    let cfg = plan.rr_config();
    let mut m = vec![Member { tool: rp(ringperf::NAME), cfg: cfg.clone() }];
    m.extend(find_peer(|| Ok(Box::new(Iperf2::find()?))).map(|tool| Member { tool, cfg: cfg.clone() }));
    m.extend(find_peer(|| Ok(Box::new(Neper::find()?))).map(|tool| Member { tool, cfg: cfg.clone() }));
    out.push((Part::Rr, m));

    let one = plan.udp64_config();
    let mut m = vec![Member { tool: rp(RINGPERF_UDP_SCALED), cfg: plan.udp64_scaled_config() }];
    m.extend(find_peer(|| Ok(Box::new(Iperf3::find()?))).map(|tool| Member { tool, cfg: one.clone() }));
    m.extend(find_peer(|| Ok(Box::new(Netperf::find()?))).map(|tool| Member { tool, cfg: one.clone() }));
    m.push(Member { tool: rp(RINGPERF_UDP_ONE), cfg: one });
    m.push(Member { tool: ringperf_gro(bin, RINGPERF_UDP_BATCHED), cfg: plan.udp64_batched_config(false) });
    m.push(Member {
        tool: ringperf_gro(bin, RINGPERF_UDP_BATCHED_SCALED),
        cfg: plan.udp64_batched_config(true),
    });
    out.push((Part::Udp64, m));

    out.push((
        Part::Gso,
        vec![
            Member { tool: rp(RINGPERF_GSO), cfg: plan.gso_config(true) },
            Member { tool: rp(RINGPERF_PLAIN), cfg: plan.gso_config(false) },
        ],
    ));
    out.retain(|(p, _)| plan.parts.contains(p));
    out
}

/// The medians of a tool in a part, by name.
fn find<'a>(parts: &'a [(Part, Vec<ToolSummary>)], part: Part, tool: &str) -> Option<&'a ToolSummary> {
    parts.iter().find(|(p, _)| *p == part)?.1.iter().find(|s| s.tool == tool)
}

fn x(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"))
}

/// The targets, measured, one line each.
pub fn render_targets(plan: &ScalePlan, parts: &[(Part, Vec<ToolSummary>)]) -> String {
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "not measured",
    };
    let mut s = String::from("## Targets (medians)\n\n");
    let rp = |part| find(parts, part, ringperf::NAME);
    if let (Some(rp), Some(peer)) = (rp(Part::Stream), find(parts, Part::Stream, "iperf3")) {
        let q = ratio(rp.rate, peer.rate);
        let _ = writeln!(
            s,
            "- stream, 8 flows / 2 threads: throughput at least iperf3 -P 8's: {} ({}); service demand {} of iperf3's (no target)",
            x(q),
            verdict(q.map(|q| q >= 1.0)),
            x(ratio(rp.service_demand, peer.service_demand))
        );
    }
    if let (Some(rp), Some(peer)) = (rp(Part::Rr), find(parts, Part::Rr, crate::peers::iperf2::NAME)) {
        let _ = writeln!(
            s,
            "- rr, 100 flows / 2 threads (reported, no target): transactions/s {} of {}'s, service demand per transaction {}",
            x(ratio(rp.rate, peer.rate)),
            peer.tool,
            x(ratio(rp.service_demand, peer.service_demand))
        );
    }
    let udp = |tool| find(parts, Part::Udp64, tool);
    if let Some(peer) = udp("iperf3") {
        // The target holds for ringperf's fastest row of one datagram per send: --gso and
        // --gro batch in the kernel, which is not the path iperf3 and netperf measure.
        let best = RINGPERF_UDP_PLAIN_ROWS
            .iter()
            .filter_map(|&t| udp(t))
            .filter(|s| s.rate.is_some())
            .max_by(|a, b| a.rate.partial_cmp(&b.rate).unwrap_or(std::cmp::Ordering::Equal));
        if let Some(rp) = best {
            let q = ratio(rp.rate, peer.rate);
            let qd = ratio(rp.service_demand, peer.service_demand);
            let _ = writeln!(
                s,
                "- UDP 64 B, fastest ringperf row of one datagram per send ({}): datagrams/s received at least 1.5x iperf3's: {} ({}); service demand per datagram below iperf3's: {} ({}); loss ringperf {} %, iperf3 {} %",
                rp.tool,
                x(q),
                verdict(q.map(|q| q >= 1.5)),
                x(qd),
                verdict(qd.map(|q| q < 1.0)),
                opt(rp.loss_percent, 2),
                opt(peer.loss_percent, 2)
            );
        }
        for (tool, what) in [
            (RINGPERF_UDP_SCALED, format!("{UDP_FLOWS} flows over {UDP_FLOWS} threads, one datagram per send")),
            (
                RINGPERF_UDP_ONE,
                "1 flow, one datagram per send (one CPU sends and runs the loopback receive path for both tools)"
                    .into(),
            ),
            (
                RINGPERF_UDP_BATCHED,
                "--gso 64 --gro, 1 flow (opt-in batching in the kernel: not the peers' path)".into(),
            ),
            (
                RINGPERF_UDP_BATCHED_SCALED,
                format!("--gso 64 --gro, {UDP_FLOWS} flows (opt-in batching in the kernel: not the peers' path)"),
            ),
        ] {
            if let Some(one) = udp(tool) {
                let _ = writeln!(
                    s,
                    "- UDP 64 B, ringperf {what} (no target): {} of iperf3's, service demand {}, loss {} %",
                    x(ratio(one.rate, peer.rate)),
                    x(ratio(one.service_demand, peer.service_demand)),
                    opt(one.loss_percent, 2)
                );
            }
        }
    }
    if let (Some(g), Some(p)) = (find(parts, Part::Gso, RINGPERF_GSO), find(parts, Part::Gso, RINGPERF_PLAIN))
    {
        let qd = ratio(g.service_demand, p.service_demand);
        let qk = ratio(g.service_demand_per_kb, p.service_demand_per_kb);
        let _ = writeln!(
            s,
            "- UDP --gso 1400: service demand per datagram below -m 1400's: {} ({}); per KB: {} ({})",
            x(qd),
            verdict(qd.map(|q| q < 1.0)),
            x(qk),
            verdict(qk.map(|q| q < 1.0))
        );
        let q = ratio(g.payload_bps, p.payload_bps);
        match &plan.gso_rate {
            Some(r) => {
                let _ = writeln!(
                    s,
                    "- UDP --gso 1400 at the same payload rate (both -b {r}): received payload rate gso/plain {} ({}, within 5 %)",
                    x(q),
                    verdict(q.map(|q| (0.95..=1.05).contains(&q)))
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "- UDP --gso 1400 at the same payload rate: not applicable, both ran unpaced (--gso-rate 0; received payload rate gso/plain {})",
                    x(q)
                );
            }
        }
    }
    s
}

pub fn header(plan: &ScalePlan, host: &Host, parts: &[(Part, Vec<Member>)]) -> String {
    let mut s = String::from("# ringperf-bench scale (many flows over two threads, and UDP)\n\n");
    let _ = writeln!(
        s,
        "- each part alternates its tools, {} run(s) each, {} s per run, {:.1} s pause between runs; traffic on 127.0.0.1 only",
        plan.runs,
        plan.secs,
        plan.pause.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "- host: Linux {}, {} CPUs; TCP parts: every process of every tool may use CPUs {} (ringperf --cpus, peers under taskset -c); UDP parts: sender on CPU {}, receiver on CPU {} (ringperf -T, iperf3 -A, netperf -T) except ringperf's {UDP_FLOWS}-flow runs, spread over both",
        host.kernel,
        host.cpus,
        plan.cpu_set(),
        plan.cpus.0,
        plan.cpus.1
    );
    let _ = writeln!(
        s,
        "- congestion control: {} on every tool in the stream part (system default {}); rr: the system default on every tool (iperf 2 sets none); UDP has none",
        plan.cc, host.default_cc
    );
    let _ = writeln!(
        s,
        "- CPU, the same for every tool: per-CPU /proc/stat deltas from just before the client starts (server already listening) to just after it exits; busy = user+nice+system+irq+softirq; service demand (SD) = busy µs summed over all CPUs per unit of work: KB (1024 bytes) received, transaction, or datagram received"
    );
    let _ = writeln!(
        s,
        "- iperf3 {}: one thread for all -P streams in this release (multi-threaded streams came in 3.16), so iperf3 -P 8 is 8 streams on one thread per side, against ringperf's and neper's 8 flows on 2 threads per side",
        iperf3_version()
    );
    let _ = writeln!(
        s,
        "- rr peers: iperf 2's TCP bounceback (`-P 100`: 100 connections, each a thread with one request in flight) and neper tcp_rr (`-F 100 -T 2`: 100 flows over 2 epoll threads, like ringperf's); TCP_NODELAY on every tool (iperf 2 always sets it). Not sockperf: its ping-pong keeps one message in flight per client process even with many sockets"
    );
    let _ = writeln!(
        s,
        "- UDP: datagrams received per second = the receiver's count over its window (ringperf's udp report, iperf3's packets - lost_packets, netperf's remote bytes / datagram size); loss = (sent - received) / sent from each tool's own counts; SD per datagram received and per KB received"
    );
    let _ = writeln!(
        s,
        "- GSO part: {}",
        match &plan.gso_rate {
            Some(r) => format!("both paced with -b {r}"),
            None => "both unpaced (--gso-rate 0)".into(),
        }
    );
    let _ = writeln!(s, "- commands:");
    for (p, members) in parts {
        for m in members {
            let _ = writeln!(s, "  - {} {}: `{}`", p.title(), m.tool.name(), m.tool.describe(&m.cfg));
        }
    }
    let _ = writeln!(s);
    s
}

fn iperf3_version() -> String {
    Command::new("iperf3")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Finds the tools, runs the four parts in turn and prints the report.
pub fn run(plan: &ScalePlan) -> Result<()> {
    let host = Host::read()?;
    for cpu in [plan.cpus.0, plan.cpus.1] {
        if cpu >= host.cpus {
            return Err(BenchError::Usage(format!(
                "CPU {cpu} does not exist: this host has CPUs 0..={}; pick others with --cpus",
                host.cpus - 1
            )));
        }
    }
    let bin = ringperf::locate(plan.ringperf.as_deref())?;
    let parts = parts(plan, &bin);
    print!("{}", header(plan, &host, &parts));
    let _ = std::io::stdout().flush();
    let mut first = true;
    let mut summaries = Vec::new();
    for (part, members) in &parts {
        let entries: Vec<Entry> =
            members.iter().map(|m| Entry { tool: m.tool.as_ref(), cfg: &m.cfg }).collect();
        let (results, _) = bench::alternate_entries(&entries, plan.runs, plan.pause, 0, &mut first)?;
        let tools: Vec<&dyn Tool> = members.iter().map(|m| m.tool.as_ref()).collect();
        print!("{}", render_part(*part, &members[0].cfg, &host, &results, &tools));
        let _ = std::io::stdout().flush();
        summaries.push((*part, tools.iter().map(|t| report::summarize(t.name(), &results)).collect()));
    }
    print!("{}", render_targets(plan, &summaries));
    Ok(())
}

/// A part's runs, medians and ratios, under its title.
fn render_part(part: Part, cfg: &Config, host: &Host, results: &[RunResult], tools: &[&dyn Tool]) -> String {
    format!(
        "## {}\n\n{}{}\n",
        part.title(),
        report::runs_table(cfg, results).replacen("## Runs", "### Runs", 1),
        report::summary(cfg, host, results, tools).replacen("## Medians", "### Medians", 1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> ScalePlan {
        ScalePlan {
            secs: 3,
            runs: 2,
            pause: Duration::ZERO,
            cpus: (0, 1),
            size: 131072,
            cc: "cubic".into(),
            gso_rate: None,
            ringperf: None,
            parts: vec![Part::Stream, Part::Rr, Part::Udp64, Part::Gso],
        }
    }

    fn ringperf_args(label: &'static str, cfg: &Config) -> String {
        let d = ringperf_labeled(std::path::Path::new("rp"), label).describe(cfg);
        d.strip_prefix("rp ").unwrap_or(&d).to_string()
    }

    #[test]
    fn commands_match_the_brief() {
        let p = plan();
        assert_eq!(
            ringperf_args("ringperf", &p.stream_config()),
            "stream -l 3 -m 131072 -M 131072 --flows 8 --threads 2 --cpus 0,1 --cc cubic --no-profile --json"
        );
        assert_eq!(
            ringperf_args("ringperf", &p.rr_config()),
            "rr -l 3 -r 64,64 --flows 100 --threads 2 --cpus 0,1 --nodelay --no-profile --json"
        );
        let mut gso = p.gso_config(true);
        gso.udp.rate = Some("2G".into());
        assert_eq!(
            ringperf_args(RINGPERF_GSO, &gso),
            "udp-stream -l 3 --gso 1400 -T 0,1 -b 2G --no-profile --json"
        );
        assert_eq!(
            ringperf_args(RINGPERF_UDP_SCALED, &p.udp64_scaled_config()),
            "udp-stream -l 3 -m 64 -s 8M -S 8M --flows 2 --threads 2 --cpus 0,1 --no-profile --json"
        );
        assert_eq!(
            ringperf_args(RINGPERF_UDP_ONE, &p.udp64_config()),
            "udp-stream -l 3 -m 64 -s 8M -S 8M -T 0,1 --no-profile --json"
        );
        let gro = |label, cfg: &Config| {
            let d = ringperf_gro(std::path::Path::new("rp"), label).describe(cfg);
            d.strip_prefix("rp ").unwrap_or(&d).to_string()
        };
        assert_eq!(
            gro(RINGPERF_UDP_BATCHED, &p.udp64_batched_config(false)),
            "udp-stream -l 3 --gso 64 -s 8M -S 8M -T 0,1 --no-profile --gro --json"
        );
        assert_eq!(
            gro(RINGPERF_UDP_BATCHED_SCALED, &p.udp64_batched_config(true)),
            "udp-stream -l 3 --gso 64 -s 8M -S 8M --flows 2 --threads 2 --cpus 0,1 --no-profile --gro --json"
        );
        let i = Iperf3 { bin: "iperf3".into(), zerocopy: false };
        assert_eq!(
            i.describe(&p.stream_config()),
            "taskset -c 0,1 iperf3 -s -1 -B 127.0.0.1 -p PORT ; taskset -c 0,1 iperf3 -c 127.0.0.1 -p PORT -t 3 -P 8 -l 131072 -C cubic -J"
        );
        assert!(i
            .describe(&p.udp64_config())
            .ends_with("-c 127.0.0.1 -p PORT -t 3 -u -b 0 -l 64 -w 8M -A 0 -J"));
        assert!(Iperf2 { bin: "iperf".into() }
            .describe(&p.rr_config())
            .contains("--bounceback --bounceback-period 0 -l 64 -P 100 -t 3"));
    }

    fn summary(tool: &'static str, rate: f64, sd: f64, sd_kb: f64) -> ToolSummary {
        ToolSummary {
            tool,
            runs: 2,
            rate: Some(rate),
            rate_range: None,
            busy_percent: None,
            service_demand: Some(sd),
            own_service_demand: None,
            process_service_demand: None,
            tps_by_count: None,
            tps_by_rtt: None,
            mean_rtt_us: None,
            loss_percent: None,
            payload_bps: Some(rate),
            service_demand_per_kb: Some(sd_kb),
            network_service_demand: None,
        }
    }

    #[test]
    fn targets_say_met_and_missed() {
        let parts = vec![
            (Part::Stream, vec![summary("ringperf", 2.0, 1.0, 0.0), summary("iperf3", 1.0, 1.0, 0.0)]),
            (
                Part::Udp64,
                vec![
                    summary(RINGPERF_UDP_SCALED, 1.2, 1.0, 1.0),
                    summary("iperf3", 1.0, 1.0, 1.0),
                    summary(RINGPERF_UDP_ONE, 0.9, 1.0, 1.0),
                    summary(RINGPERF_UDP_BATCHED, 1.4, 0.5, 0.5),
                ],
            ),
            (Part::Gso, vec![summary(RINGPERF_GSO, 5.0, 0.5, 0.5), summary(RINGPERF_PLAIN, 1.0, 1.0, 1.0)]),
        ];
        let t = render_targets(&plan(), &parts);
        assert!(t.contains("throughput at least iperf3 -P 8's: 2.00x (met)"), "{t}");
        // The batched row is the fastest, but the target is judged on the plain rows.
        assert!(t.contains(&format!("one datagram per send ({RINGPERF_UDP_SCALED}): datagrams/s")), "{t}");
        assert!(
            t.contains(
                "1.5x iperf3's: 1.20x (MISSED); service demand per datagram below iperf3's: 1.00x (MISSED)"
            ),
            "{t}"
        );
        assert!(t.contains("--gso 64 --gro, 1 flow (opt-in batching in the kernel: not the peers' path) (no target): 1.40x of iperf3's, service demand 0.50x"), "{t}");
        assert!(t.contains("below -m 1400's: 0.50x (met); per KB: 0.50x (met)"), "{t}");
        assert!(t.contains("ringperf 1 flow, one datagram per send (one CPU sends"), "{t}");
        assert!(t.contains("(no target): 0.90x of iperf3's"), "{t}");
        assert!(t.contains("2 flows over 2 threads, one datagram per send (no target): 1.20x"), "{t}");
        assert!(t.contains("not applicable, both ran unpaced"), "{t}");
    }

    #[test]
    fn parts_run_only_what_was_asked() {
        let p = ScalePlan { parts: vec![Part::Udp64], ..plan() };
        let got = parts(&p, std::path::Path::new("rp"));
        assert_eq!(got.iter().map(|(p, _)| *p).collect::<Vec<_>>(), [Part::Udp64]);
        let names: Vec<&str> = got[0].1.iter().map(|m| m.tool.name()).collect();
        for row in RINGPERF_UDP_ROWS {
            assert!(names.contains(&row), "{row} missing from {names:?}");
        }
    }
}
