//! `engines`: every ringperf send/receive engine pair against copy/recv on one stream, and
//! ringperf's splice against iperf3 -Z (sendfile), all taking turns in one run, every run's
//! CPU measured the same way from /proc/stat.
//!
//! Issue 3's targets: trunc and multishot receive at lower service demand than recv; splice
//! at least iperf3 -Z; tool overhead under 1 % at the best pair. The report says whether each
//! was met; it does not tune anything towards them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use ringperf_core::spec::{RecvEngine, SendEngine};

use crate::bench;
use crate::error::Result;
use crate::peers::iperf3::{self, Iperf3};
use crate::peers::ringperf::{self, Expect, Ringperf};
use crate::peers::{Config, RunResult, Tool, Workload};
use crate::plan::{Host, Plan};
use crate::report::{self, opt, sd, Table};
use crate::stats::{interval_text, median, ratio};

/// One sender engine and one receiver engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub send: SendEngine,
    pub recv: RecvEngine,
}

impl Pair {
    pub const fn new(send: SendEngine, recv: RecvEngine) -> Pair {
        Pair { send, recv }
    }

    pub fn label(&self) -> String {
        format!("{}/{}", self.send.name(), self.recv.name())
    }
}

/// The baseline every ratio is to.
pub const BASELINE: Pair = Pair::new(SendEngine::Copy, RecvEngine::Recv);

/// The pairs issue 3 names: each send engine with recv, then copy with each receive engine.
pub const PAIRS: [Pair; 7] = [
    BASELINE,
    Pair::new(SendEngine::Zc, RecvEngine::Recv),
    Pair::new(SendEngine::ZcMsg, RecvEngine::Recv),
    Pair::new(SendEngine::Splice, RecvEngine::Recv),
    Pair::new(SendEngine::Copy, RecvEngine::Multishot),
    Pair::new(SendEngine::Copy, RecvEngine::Bundle),
    Pair::new(SendEngine::Copy, RecvEngine::Trunc),
];

/// Candidates for the best pair: the copy-avoiding senders with the copy-avoiding receivers.
pub const DEFAULT_EXTRA: &str = "splice/trunc,splice/multishot,zc/trunc";

/// "send/recv" with engine names ringperf knows.
pub fn parse_pair(s: &str) -> std::result::Result<Pair, String> {
    let (a, b) = s.split_once('/').ok_or_else(|| format!("'{s}' is not SEND/RECV, like splice/trunc"))?;
    let send = SendEngine::ALL.into_iter().find(|e| e.name() == a.trim()).ok_or_else(|| {
        let names: Vec<_> = SendEngine::ALL.iter().map(|e| e.name()).collect();
        format!("unknown send engine '{a}': use one of {}", names.join(", "))
    })?;
    let recv = RecvEngine::ALL.into_iter().find(|e| e.name() == b.trim()).ok_or_else(|| {
        let names: Vec<_> = RecvEngine::ALL.iter().map(|e| e.name()).collect();
        format!("unknown receive engine '{b}': use one of {}", names.join(", "))
    })?;
    Ok(Pair { send, recv })
}

/// How often one run may fail (and be repeated) before the whole comparison stops: with a
/// dozen tools and two sizes, one flaky run should not throw away the rest. Every repeated
/// failure is listed in the report.
pub const RETRIES: u32 = 2;

/// Everything one `engines` invocation asks for.
#[derive(Clone, Debug)]
pub struct EnginesPlan {
    /// Shared settings; `cfg.size` is replaced by each of `sizes` in turn.
    pub base: Plan,
    /// Bytes per send and per receive, one comparison each.
    pub sizes: Vec<u32>,
    /// Pairs beyond [`PAIRS`], candidates for the best pair.
    pub extra: Vec<Pair>,
}

/// Every pair to run, the named ones first, without duplicates.
pub fn all_pairs(extra: &[Pair]) -> Vec<Pair> {
    let mut v = PAIRS.to_vec();
    for p in extra {
        if !v.contains(p) {
            v.push(*p);
        }
    }
    v
}

/// ringperf with one engine pair: `ringperf sendfile` for splice (netperf TCP_SENDFILE),
/// `ringperf stream --send-engine S --recv-engine R` otherwise.
fn ringperf_for(bin: &std::path::Path, pair: Pair) -> Ringperf {
    let splice = pair.send == SendEngine::Splice;
    let mut extra = Vec::new();
    if !splice {
        extra.extend(["--send-engine".to_string(), pair.send.name().to_string()]);
    }
    extra.extend(["--recv-engine".to_string(), pair.recv.name().to_string()]);
    Ringperf {
        bin: bin.to_path_buf(),
        // A handful of labels for the life of the process.
        label: Box::leak(pair.label().into_boxed_str()),
        sendfile: splice,
        extra,
        expect: Expect {
            send_engine: Some(pair.send.name()),
            recv_engine: Some(pair.recv.name()),
            ..Expect::default()
        },
    }
}

/// Finds the tools, runs every size's comparison in turn and prints the report.
pub fn run(plan: &EnginesPlan) -> Result<()> {
    let host = bench::check_host(&plan.base.cfg)?;
    // The peer first: a missing package should not wait for a ringperf build.
    let peer = Iperf3 { bin: Iperf3::find()?.bin, zerocopy: true };
    let bin = ringperf::locate(plan.base.ringperf.as_deref())?;
    let pairs = all_pairs(&plan.extra);
    let rps: Vec<Ringperf> = pairs.iter().map(|p| ringperf_for(&bin, *p)).collect();
    let mut tools: Vec<&dyn Tool> = rps.iter().map(|r| r as &dyn Tool).collect();
    // iperf3 -Z right after splice/recv, its counterpart.
    let at = pairs.iter().position(|p| p.send == SendEngine::Splice).map_or(tools.len(), |i| i + 1);
    tools.insert(at, &peer);

    print!("{}", header(plan, &host, &tools));
    let _ = std::io::stdout().flush();
    let mut summaries = Vec::new();
    for &size in &plan.sizes {
        let mut p = plan.base.clone();
        p.cfg.size = size;
        eprintln!("ringperf-bench: {} sends", size_name(size));
        let (results, failures) = bench::alternate_retrying(&p, &tools, RETRIES)?;
        let rows = summarize(&tools, &results);
        print!("## {} sends (-m {s} -M {s}, iperf3 -l {s})\n\n", size_name(size), s = size);
        print!("{}", report::runs_table(&p.cfg, &results).replacen("## Runs", "### Runs", 1));
        print!("{}", bench::failures_note(&failures));
        print!("{}", render_size(&host, &rows));
        let _ = std::io::stdout().flush();
        summaries.push((size, rows));
    }
    print!("{}", render_targets(&summaries));
    Ok(())
}

fn size_name(size: u32) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

/// One tool's medians at one size.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub tool: &'static str,
    pub runs: usize,
    /// bits/s
    pub throughput: Option<f64>,
    /// The bench's /proc/stat service demand, us/KB.
    pub sd: Option<f64>,
    /// ringperf's own (client side), us/KB.
    pub own_sd: Option<f64>,
    pub local_overhead: Option<f64>,
    pub remote_overhead: Option<f64>,
    pub zero_copy_fraction: Option<f64>,
    /// Every run's throughput (bits/s) and bench service demand, for the targets' intervals.
    pub rates: Vec<f64>,
    pub sds: Vec<f64>,
}

pub fn summarize(tools: &[&dyn Tool], results: &[RunResult]) -> Vec<Row> {
    tools
        .iter()
        .map(|t| {
            let mine: Vec<&RunResult> = results.iter().filter(|r| r.tool == t.name()).collect();
            let med = |f: &dyn Fn(&RunResult) -> Option<f64>| {
                let v: Vec<f64> = mine.iter().filter_map(|r| f(r)).collect();
                median(&v)
            };
            Row {
                tool: t.name(),
                runs: mine.len(),
                throughput: med(&|r| Some(r.rate())),
                sd: med(&|r| r.service_demand()),
                own_sd: med(&|r| r.own_service_demand),
                local_overhead: med(&|r| r.ringperf.as_ref().map(|f| f.local_overhead_percent)),
                remote_overhead: med(&|r| r.ringperf.as_ref().map(|f| f.remote_overhead_percent)),
                zero_copy_fraction: med(&|r| r.ringperf.as_ref().and_then(|f| f.zero_copy_fraction)),
                rates: mine.iter().map(|r| r.rate()).collect(),
                sds: mine.iter().filter_map(|r| r.service_demand()).collect(),
            }
        })
        .collect()
}

fn find<'a>(rows: &'a [Row], tool: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.tool == tool)
}

/// The ringperf pair with the lowest median service demand (the bench's own figure).
pub fn best(rows: &[Row]) -> Option<&Row> {
    rows.iter()
        .filter(|r| r.tool.contains('/') && r.sd.is_some())
        .min_by(|a, b| a.sd.unwrap_or(f64::MAX).total_cmp(&b.sd.unwrap_or(f64::MAX)))
}

fn x(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"))
}

/// The medians table of one size, the splice line and the best pair line.
pub fn render_size(host: &Host, rows: &[Row]) -> String {
    let base = find(rows, &BASELINE.label()).cloned().unwrap_or_default();
    let mut t = Table::new(&[
        "pair",
        "runs",
        "Gbit/s (median)",
        "vs copy/recv",
        "SD us/KB (bench, median)",
        "vs copy/recv",
        "SD us/KB (ringperf)",
        "vs copy/recv",
        "tool overhead local %",
        "remote %",
        "zero-copy fraction",
    ]);
    for r in rows {
        t.row(vec![
            r.tool.to_string(),
            r.runs.to_string(),
            opt(r.throughput.map(|v| v / 1e9), 2),
            x(ratio(r.throughput, base.throughput)),
            sd(r.sd),
            x(ratio(r.sd, base.sd)),
            sd(r.own_sd),
            x(ratio(r.own_sd, base.own_sd)),
            opt(r.local_overhead, 2),
            opt(r.remote_overhead, 2),
            opt(r.zero_copy_fraction, 3),
        ]);
    }
    let mut out = format!("### Medians\n\n{}\n", t.render());
    let splice = find(rows, &Pair::new(SendEngine::Splice, RecvEngine::Recv).label());
    let z = find(rows, iperf3::NAME_ZEROCOPY);
    if let (Some(s), Some(z)) = (splice, z) {
        let _ = writeln!(
            out,
            "splice vs iperf3 -Z: throughput {}, service demand {}",
            x(ratio(s.throughput, z.throughput)),
            x(ratio(s.sd, z.sd))
        );
    }
    if let Some(b) = best(rows) {
        let _ = writeln!(
            out,
            "best pair: {}, tool overhead local {} % remote {} %",
            b.tool,
            opt(b.local_overhead, 2),
            opt(b.remote_overhead, 2)
        );
    }
    let _ = writeln!(
        out,
        "  (SD = busy CPU µs over all {} CPUs per KB received; \"bench\" is the same /proc/stat window for every tool, \"ringperf\" is ringperf's own client-side figure; best pair = lowest bench SD; tool overhead = ringperf's user-space CPU / all busy CPU, as it reports it)\n",
        host.cpus
    );
    out
}

/// ", 95 % interval ..." after a target's ratio, or nothing with too few runs.
fn interval_note(a: &[f64], b: &[f64]) -> String {
    interval_text(a, b).map(|t| format!(", {t}")).unwrap_or_default()
}

/// The targets, measured, one line each: the ratio of medians decides, and the
/// interval over the runs says how sure that is.
pub fn render_targets(sizes: &[(u32, Vec<Row>)]) -> String {
    let mut out =
        String::from("## Issue 3 targets, as measured (ratios of medians; intervals over the runs)\n\n");
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "not measured",
    };
    let runs = |r: Option<&Row>, f: fn(&Row) -> &Vec<f64>| r.map(f).cloned().unwrap_or_default();
    for (size, rows) in sizes {
        let name = size_name(*size);
        let base = find(rows, &BASELINE.label());
        for recv in [RecvEngine::Trunc, RecvEngine::Multishot] {
            let label = Pair::new(SendEngine::Copy, recv).label();
            let r = find(rows, &label);
            let q = ratio(r.and_then(|r| r.sd), base.and_then(|b| b.sd));
            let _ = writeln!(
                out,
                "- {name}: {label} service demand below copy/recv: {} ({}{})",
                x(q),
                verdict(q.map(|q| q < 1.0)),
                interval_note(&runs(r, |r| &r.sds), &runs(base, |r| &r.sds))
            );
        }
        let s = find(rows, &Pair::new(SendEngine::Splice, RecvEngine::Recv).label());
        let z = find(rows, iperf3::NAME_ZEROCOPY);
        let q = ratio(s.and_then(|s| s.throughput), z.and_then(|z| z.throughput));
        let _ = writeln!(
            out,
            "- {name}: splice throughput at least iperf3 -Z: {} ({}{})",
            x(q),
            verdict(q.map(|q| q >= 1.0)),
            interval_note(&runs(s, |r| &r.rates), &runs(z, |r| &r.rates))
        );
        let b = best(rows);
        let worst = b.and_then(|b| b.local_overhead.zip(b.remote_overhead)).map(|(l, r)| l.max(r));
        let _ = writeln!(
            out,
            "- {name}: tool overhead under 1 % at the best pair ({}): {} % ({})",
            b.map_or("-", |b| b.tool),
            opt(worst, 2),
            verdict(worst.map(|w| w < 1.0))
        );
    }
    out
}

/// What was compared, how, and with which exact commands.
pub fn header(plan: &EnginesPlan, host: &Host, tools: &[&dyn Tool]) -> String {
    let cfg = &plan.base.cfg;
    let mut s = String::new();
    let _ = writeln!(s, "# ringperf-bench engines (TCP stream, client to server, 1 flow)\n");
    let sizes: Vec<String> = plan.sizes.iter().map(|&z| size_name(z)).collect();
    let _ = writeln!(
        s,
        "- {} tools, alternating, {} run(s) each per size, {} s per run, {:.1} s pause between runs; sizes: {}",
        tools.len(),
        plan.base.runs,
        cfg.secs,
        plan.base.pause.as_secs_f64(),
        sizes.join(", ")
    );
    let _ = writeln!(
        s,
        "- host: Linux {}, {} CPUs; client pinned to CPU {}, server to CPU {}; traffic on 127.0.0.1 only",
        host.kernel, host.cpus, cfg.client_cpu, cfg.server_cpu
    );
    let _ = writeln!(
        s,
        "- congestion control: {} on every tool (system default: {})",
        cfg.cc.as_deref().unwrap_or("system default"),
        host.default_cc
    );
    let _ = writeln!(
        s,
        "- ratios are to {}; iperf3 -Z (sendfile) is the peer of splice/recv (ringperf sendfile: a memfd spliced to the socket; iperf3 -Z: sendfile(2) of a temp file, read(2) on the server)",
        BASELINE.label()
    );
    let _ = writeln!(
        s,
        "- CPU, the same for every tool: per-CPU /proc/stat deltas from just before the client starts to just after it exits; busy = user+nice+system+irq+softirq; service demand = busy µs summed over all CPUs per KB (1024 bytes) received"
    );
    let _ = writeln!(s, "- commands at {} (sizes change with the size):", size_name(plan.sizes[0]));
    let mut first = cfg.clone();
    first.size = plan.sizes[0];
    for t in tools {
        let _ = writeln!(s, "  - {}: `{}`", t.name(), t.describe(&first));
    }
    let _ = writeln!(s);
    s
}

/// The stream config every pair shares.
pub fn config(secs: u32, cpus: (usize, usize), cc: String) -> Config {
    Config::new(Workload::Stream, secs, cpus, 0, Some(cc))
}

/// Plan for the CLI.
pub fn plan(
    cfg: Config,
    runs: u32,
    pause: Duration,
    ringperf: Option<PathBuf>,
    sizes: Vec<u32>,
    extra: Vec<Pair>,
) -> EnginesPlan {
    EnginesPlan { base: Plan { cfg, runs, pause, ringperf, baseline: None, classic: false }, sizes, extra }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tool: &'static str, gbit: f64, sd: f64, ovh: f64) -> Row {
        Row {
            tool,
            runs: 3,
            throughput: Some(gbit * 1e9),
            sd: Some(sd),
            own_sd: Some(sd),
            local_overhead: Some(ovh),
            remote_overhead: Some(ovh / 2.0),
            zero_copy_fraction: None,
            rates: vec![gbit * 1e9; 3],
            sds: vec![sd; 3],
        }
    }

    #[test]
    fn pairs_parse_and_deduplicate() {
        assert_eq!(parse_pair("splice/trunc").unwrap(), Pair::new(SendEngine::Splice, RecvEngine::Trunc));
        assert!(parse_pair("splice").unwrap_err().contains("SEND/RECV"));
        assert!(parse_pair("nope/recv").unwrap_err().contains("send engine"));
        assert!(parse_pair("copy/nope").unwrap_err().contains("receive engine"));
        let all = all_pairs(&[BASELINE, parse_pair("zc/trunc").unwrap()]);
        assert_eq!(all.len(), PAIRS.len() + 1);
        assert_eq!(all[0].label(), "copy/recv");
    }

    #[test]
    fn splice_uses_sendfile_and_others_name_their_engines() {
        let r = ringperf_for(std::path::Path::new("rp"), Pair::new(SendEngine::Splice, RecvEngine::Trunc));
        let mut cfg = config(3, (0, 1), "cubic".into());
        cfg.size = 65536;
        assert_eq!(
            r.describe(&cfg),
            "rp sendfile -l 3 -m 65536 -M 65536 -T 0,1 --cc cubic --recv-engine trunc --json"
        );
        assert_eq!(r.name(), "splice/trunc");
        let r = ringperf_for(std::path::Path::new("rp"), Pair::new(SendEngine::ZcMsg, RecvEngine::Recv));
        assert_eq!(
            r.describe(&cfg),
            "rp stream -l 3 -m 65536 -M 65536 -T 0,1 --cc cubic --send-engine zc-msg --recv-engine recv --json"
        );
    }

    #[test]
    fn ratios_best_pair_and_targets() {
        let rows = vec![
            row("copy/recv", 10.0, 1.0, 0.5),
            row("splice/recv", 20.0, 0.5, 0.4),
            row("iperf3 -Z", 10.0, 0.25, 0.0),
            row("copy/trunc", 10.0, 0.8, 0.3),
            row("copy/multishot", 10.0, 1.2, 0.3),
            row("splice/trunc", 10.0, 0.4, 1.5),
        ];
        let host = Host { kernel: "k".into(), cpus: 2, default_cc: "cubic".into(), available_cc: vec![] };
        let text = render_size(&host, &rows);
        assert!(text.contains("splice vs iperf3 -Z: throughput 2.00x, service demand 2.00x"), "{text}");
        // iperf3 is never the best pair, however cheap.
        assert!(text.contains("best pair: splice/trunc, tool overhead local 1.50 % remote 0.75 %"), "{text}");
        let mut rows = rows;
        // multishot's runs spread wide enough that its 1.2x is no clear loss.
        rows[4].sds = vec![0.8, 1.2, 1.6];
        let t = render_targets(&[(65536, rows)]);
        assert!(
            t.contains(
                "64 KiB: copy/trunc service demand below copy/recv: 0.80x (met, 95 % interval 0.80x-0.80x)"
            ),
            "{t}"
        );
        assert!(
            t.contains("64 KiB: copy/multishot service demand below copy/recv: 1.20x (MISSED, 95 % interval"),
            "{t}"
        );
        assert!(t.contains("x: within the noise)"), "a spread that holds 1 is called a tie: {t}");
        assert!(
            t.contains("splice throughput at least iperf3 -Z: 2.00x (met, 95 % interval 2.00x-2.00x)"),
            "{t}"
        );
        assert!(t.contains("best pair (splice/trunc): 1.50 % (MISSED)"), "{t}");
        assert_eq!(size_name(1 << 20), "1 MiB");
    }
}
