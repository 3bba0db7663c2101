//! `ringperf-bench all`: every seed workload against its peers in one command, each
//! workload's full comparison printed as it finishes, then one table of ratios.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use crate::bench::{self, Plan};
use crate::error::Result;
use crate::peers::{Config, Workload};
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
/// number, so every tool gets 8); 1400-byte UDP_STREAM, unpaced.
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
    ]
}

/// What one case ended with.
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
    for (i, case) in cases.iter().enumerate() {
        if i > 0 {
            thread::sleep(pause);
        }
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
    print!("{}", render(cases, &outcomes));
    Ok(())
}

/// The table of every case's ratios.
pub fn render(cases: &[Case], outcomes: &[Outcome]) -> String {
    let mut t = Table::new(&["workload", "peer", "ringperf / peer: rate", "service demand"]);
    let x = |v: Option<f64>, interval: &Option<String>| {
        let r = v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"));
        match interval {
            Some(i) => format!("{r} ({i})"),
            None => r,
        }
    };
    for (case, outcome) in cases.iter().zip(outcomes) {
        match outcome {
            Outcome::Ratios(rows) => {
                for r in rows {
                    t.row(vec![
                        case.label.clone(),
                        r.peer.to_string(),
                        x(r.rate, &r.rate_interval),
                        x(r.service_demand, &r.sd_interval),
                    ]);
                }
            }
            Outcome::Failed(e) => {
                let first = e.lines().next().unwrap_or_default();
                t.row(vec![case.label.clone(), "-".into(), format!("failed: {first}"), "-".into()]);
            }
        }
    }
    let mut out = String::from("\n# All workloads: ringperf against each peer (ratios of medians)\n\n");
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "\nrate: throughput or transactions/s; service demand: busy CPU µs per KB or per transaction over all CPUs, measured by the bench the same way for every tool (lower is cheaper); in brackets the 95 % interval of the ratio over the runs"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ]
        );
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
        }]);
        let text = render(&c[..2], &[Outcome::Failed("netperf was not found\nmore".into()), ok]);
        assert!(text.contains("failed: netperf was not found"), "{text}");
        assert!(!text.contains("more"), "{text}");
        assert!(text.contains("| 1.10x (95 % interval 1.02x-1.20x)"), "{text}");
        assert!(text.contains("| 0.90x "), "{text}");
    }
}
