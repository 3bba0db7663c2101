//! `ringperf-bench all`: every seed workload against its peers in one command, each
//! workload's full comparison printed as it finishes, then one table of ratios.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::bench;
use crate::error::Result;
use crate::peers::{Config, Workload};
use crate::plan::Plan;
use crate::progress::{self, Context};
use crate::report::{RatioRow, Table};

/// One workload of the comparison, as the users' own scripts run it.
#[derive(Clone, Debug)]
pub struct Case {
    pub label: String,
    pub cfg: Config,
}

/// The seeds' workloads: 128 KiB TCP_STREAM, TCP_MAERTS and TCP_SENDFILE (of `file`) across
/// CPUs; 1-byte TCP_RR on one CPU and across two (netperf's -T 1 and -T 0,1); 1-byte
/// TCP_CRR; UDP_RR at 8 bytes (ringperf's UDP transactions carry an 8-byte sequence
/// number, so every tool gets 8); 1400-byte UDP_STREAM, unpaced; 64-byte UDP_STREAM,
/// unpaced, datagrams received per second, every socket buffer 8 MiB as in `scale`.
pub fn cases(secs: u32, cpus: (usize, usize), cc: Option<&str>, file: &Path) -> Vec<Case> {
    let cfg = |workload, size, client_cpu, server_cpu, cc: Option<&str>| {
        Config::new(workload, secs, (client_cpu, server_cpu), size, cc.map(str::to_owned))
    };
    let (c, s) = cpus;
    let stream = cfg(Workload::Stream, 128 * 1024, c, s, cc);
    let mut maerts = stream.clone();
    maerts.stream.reverse = true;
    let mut sendfile = stream.clone();
    sendfile.stream.sendfile = Some(file.to_path_buf());
    let mut udp64 = cfg(Workload::UdpStream, crate::scale::SMALL_DATAGRAM, c, s, None);
    udp64.udp.socket_buffer = Some(crate::scale::UDP_SOCKET_BUFFER.into());
    vec![
        Case { label: format!("stream 128 KiB, CPUs {c}/{s}"), cfg: stream },
        Case { label: format!("maerts 128 KiB, CPUs {c}/{s}"), cfg: maerts },
        Case { label: format!("sendfile 128 KiB, CPUs {c}/{s}"), cfg: sendfile },
        Case { label: format!("rr 1 B, same CPU ({c}/{c})"), cfg: cfg(Workload::Rr, 1, c, c, cc) },
        Case { label: format!("rr 1 B, CPUs {c}/{s}"), cfg: cfg(Workload::Rr, 1, c, s, cc) },
        Case { label: format!("crr 1 B, CPUs {c}/{s}"), cfg: cfg(Workload::Crr, 1, c, s, cc) },
        Case { label: format!("udp-rr 8 B, CPUs {c}/{s}"), cfg: cfg(Workload::UdpRr, 8, c, s, None) },
        Case {
            label: format!("udp-stream 1400 B, CPUs {c}/{s}"),
            cfg: cfg(Workload::UdpStream, 1400, c, s, None),
        },
        Case { label: format!("udp-stream 64 B, CPUs {c}/{s}"), cfg: udp64 },
    ]
}

/// What one case ended with.
#[derive(Clone)]
pub enum Outcome {
    Ratios(Vec<RatioRow>),
    Failed(String),
}

/// Runs every case; a case that fails is reported and the others still run.
pub fn run(
    cases: &[Case],
    runs: u32,
    pause: Duration,
    ringperf: Option<PathBuf>,
    baseline: Option<PathBuf>,
    classic: bool,
) -> Result<()> {
    let mut outcomes = Vec::new();
    let started = Instant::now();
    for (i, case) in cases.iter().enumerate() {
        if i > 0 {
            thread::sleep(pause);
        }
        progress::set_context(Some(Context {
            heading: format!("[{}/{}] {}", i + 1, cases.len(), case.label),
            later: later(started.elapsed(), i, cases.len()),
        }));
        println!("\n# [{}/{}] {}\n", i + 1, cases.len(), case.label);
        let _ = std::io::stdout().flush();
        let plan = Plan {
            cfg: case.cfg.clone(),
            runs,
            pause,
            ringperf: ringperf.clone(),
            baseline: baseline.clone(),
            classic,
        };
        outcomes.push(match bench::run_collect(&plan) {
            Ok(rows) => Outcome::Ratios(rows),
            Err(e) => {
                eprintln!("ringperf-bench: {}: {e}", case.label);
                Outcome::Failed(e.to_string())
            }
        });
    }
    progress::set_context(None);
    print!("{}", render(cases, &outcomes));
    Ok(())
}

/// How long the cases after case `i` of `n` should take: as long each as the cases before
/// it took on average (their peers, hence their runs, differ little); nothing known before
/// the first has run.
fn later(elapsed: Duration, i: usize, n: usize) -> Duration {
    if i == 0 {
        return Duration::ZERO;
    }
    elapsed / i as u32 * (n - i - 1) as u32
}

/// The table of every case's ratios.
pub fn render(cases: &[Case], outcomes: &[Outcome]) -> String {
    let profiled = cases.iter().any(|c| c.cfg.profile);
    let mut head = vec!["workload", "ringperf's default", "peer", "ringperf / peer: rate", "service demand"];
    if profiled {
        head.push("network-path service demand");
    }
    let mut t = Table::new(&head);
    let x = |v: Option<f64>, interval: &Option<String>| {
        let r = v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"));
        match interval {
            Some(i) => format!("{r} ({i})"),
            None => r,
        }
    };
    for (case, outcome) in cases.iter().zip(outcomes) {
        let harness = default_harness_cell(&case.cfg);
        match outcome {
            Outcome::Ratios(rows) => {
                for r in rows {
                    let mut row = vec![
                        case.label.clone(),
                        harness.clone(),
                        r.peer.to_string(),
                        x(r.rate, &r.rate_interval),
                        x(r.service_demand, &r.sd_interval),
                    ];
                    if profiled {
                        row.push(x(r.network_sd, &r.network_sd_interval));
                    }
                    t.row(row);
                }
            }
            Outcome::Failed(e) => {
                let first = e.lines().next().unwrap_or_default();
                let mut row =
                    vec![case.label.clone(), harness, "-".into(), format!("failed: {first}"), "-".into()];
                if profiled {
                    row.push("-".into());
                }
                t.row(row);
            }
        }
    }
    let mut out = String::from("\n# All workloads: ringperf against each peer (ratios of medians)\n\n");
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "\nrate: throughput, transactions/s or datagrams received/s; service demand: busy CPU µs per KB, per transaction or per datagram over all CPUs, measured by the bench the same way for every tool (lower is cheaper); in brackets the 95 % interval of the ratio over the runs, and a tool whose runs fall in two clusters (\"bimodal\": a jump of at least 10 % between them, over three times the spread within either; then the ratio stands for neither, read the runs); ringperf's default: the harness its rule picks for the case (`--classic` runs the other one as the peer \"ringperf classic\" or \"ringperf io_uring\")"
    );
    if profiled {
        let _ = writeln!(
            out,
            "network-path service demand: each run's service demand less the tool's own share of busy CPU (user space, helper threads, io_uring machinery and syscall entry/exit) by the kernel cost profile of its window (ringperf's own profile, the bench's for a peer); each case's cost table above gives the figures"
        );
    }
    out
}

/// The harness ringperf's rule picks for a case, with its engines.
fn default_harness_cell(cfg: &crate::peers::Config) -> String {
    match crate::peers::ringperf::default_harness(cfg) {
        Some(h) => crate::peers::ringperf::harness_label(h).to_string(),
        None => "io_uring (splice)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first case knows nothing of the later ones; after it, each later case is
    /// reckoned at the average so far.
    #[test]
    fn the_later_cases_are_reckoned_at_the_average_so_far() {
        let min = Duration::from_secs(60);
        assert_eq!(later(Duration::ZERO, 0, 9), Duration::ZERO);
        assert_eq!(later(2 * min, 2, 9), 6 * min);
        assert_eq!(later(8 * min, 8, 9), Duration::ZERO);
    }

    #[test]
    fn every_seed_workload_is_a_case_with_its_pinning() {
        let c = cases(4, (0, 1), Some("cubic"), Path::new("/tmp/f"));
        let kinds: Vec<(&str, usize, usize, u32)> = c
            .iter()
            .map(|c| (c.cfg.netperf_test(), c.cfg.client_cpu, c.cfg.server_cpu, c.cfg.size))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("TCP_STREAM", 0, 1, 131072),
                ("TCP_MAERTS", 0, 1, 131072),
                ("TCP_SENDFILE", 0, 1, 131072),
                ("TCP_RR", 0, 0, 1),
                ("TCP_RR", 0, 1, 1),
                ("TCP_CRR", 0, 1, 1),
                ("UDP_RR", 0, 1, 8),
                ("UDP_STREAM", 0, 1, 1400),
                ("UDP_STREAM", 0, 1, 64),
            ]
        );
        assert_eq!(c[8].cfg.udp.socket_buffer.as_deref(), Some("8M"), "as scale's 64-byte datagrams");
        assert!(c[8].label.starts_with("udp-stream 64 B"));
        assert!(c.iter().all(|c| c.cfg.secs == 4));
        assert_eq!(c[6].cfg.cc, None, "UDP has no congestion control");
        assert_eq!(c[0].cfg.cc.as_deref(), Some("cubic"));
        assert_eq!(c[2].cfg.stream.sendfile.as_deref(), Some(Path::new("/tmp/f")));
    }

    #[test]
    fn a_failed_case_is_a_row_and_the_others_stay() {
        let c = cases(1, (0, 1), Some("cubic"), Path::new("/tmp/f"));
        let ok = Outcome::Ratios(vec![RatioRow {
            peer: "netperf",
            rate: Some(1.1),
            rate_interval: Some("95 % interval 1.02x-1.20x".into()),
            service_demand: Some(0.9),
            sd_interval: None,
            network_sd: Some(1.01),
            network_sd_interval: None,
        }]);
        let text = render(&c[..2], &[Outcome::Failed("netperf was not found\nmore".into()), ok.clone()]);
        assert!(text.contains("failed: netperf was not found"), "{text}");
        assert!(!text.contains("more"), "{text}");
        assert!(text.contains("| 1.10x (95 % interval 1.02x-1.20x)"), "{text}");
        assert!(text.contains("| 0.90x "), "{text}");
        assert!(!text.contains("network-path"), "no profile, no column: {text}");
        // Each case names the harness ringperf's rule picks for it.
        let cells = |text: &str, label: &str| -> Vec<String> {
            let line = text.lines().find(|l| l.starts_with(&format!("| {label} "))).unwrap_or_default();
            line.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect()
        };
        let text = render(&c[3..4], std::slice::from_ref(&ok));
        assert_eq!(cells(&text, "rr 1 B, same CPU (0/0)")[1..3], ["classic", "netperf"], "{text}");
        let text = render(&c[..1], std::slice::from_ref(&ok));
        assert_eq!(cells(&text, "stream 128 KiB, CPUs 0/1")[1], "io_uring", "{text}");
        let text = render(&c[2..3], std::slice::from_ref(&ok));
        assert_eq!(cells(&text, "sendfile 128 KiB, CPUs 0/1")[1], "io_uring (splice)", "{text}");
        let mut profiled = c[3..4].to_vec();
        profiled[0].cfg.profile = true;
        let text = render(&profiled, &[ok]);
        assert!(text.contains("network-path service demand") && text.contains("| 1.01x"), "{text}");
    }
}
