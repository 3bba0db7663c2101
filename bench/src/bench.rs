//! The comparison itself: the tools take turns (ringperf, peer, ringperf, peer, ...), each
//! run measured the same way, and the results go to the report.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use crate::cpu;
use crate::error::{BenchError, Result};
use crate::peers::iperf3::Iperf3;
use crate::peers::ringperf::{self, Ringperf};
use crate::peers::sockperf::Sockperf;
use crate::peers::{Config, RunResult, Tool, Workload};
use crate::report;

/// Everything one invocation asks for.
#[derive(Clone, Debug)]
pub struct Plan {
    pub cfg: Config,
    /// Runs per tool.
    pub runs: u32,
    /// Idle time between runs, outside every measurement window.
    pub pause: Duration,
    /// An explicit ringperf binary.
    pub ringperf: Option<PathBuf>,
}

/// What the host looks like, for the report header.
#[derive(Clone, Debug)]
pub struct Host {
    pub kernel: String,
    pub cpus: usize,
    pub default_cc: String,
    pub available_cc: Vec<String>,
}

impl Host {
    pub fn read() -> Result<Host> {
        let sys =
            |p: &str| fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into());
        Ok(Host {
            kernel: sys("/proc/sys/kernel/osrelease"),
            cpus: cpu::cpu_count()?,
            default_cc: sys("/proc/sys/net/ipv4/tcp_congestion_control"),
            available_cc: sys("/proc/sys/net/ipv4/tcp_available_congestion_control")
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// Checks the plan against the host, finds the tools, runs them in turn and prints the report.
pub fn run(plan: &Plan) -> Result<()> {
    let cfg = &plan.cfg;
    let host = Host::read()?;
    for (what, cpu) in [("client", cfg.client_cpu), ("server", cfg.server_cpu)] {
        if cpu >= host.cpus {
            return Err(BenchError::Usage(format!(
                "the {what} CPU {cpu} does not exist: this host has CPUs 0..={}; pick others with --cpus",
                host.cpus - 1
            )));
        }
    }
    if let Some(cc) = &cfg.cc {
        if !host.available_cc.iter().any(|c| c == cc) {
            eprintln!(
                "ringperf-bench: warning: congestion control '{cc}' is not in tcp_available_congestion_control ({}); \
                 the tools will fail unless the kernel can load tcp_{cc}",
                host.available_cc.join(" ")
            );
        }
    }
    // The peer first: a missing package should not wait for a ringperf build.
    let peer: Box<dyn Tool> = match cfg.workload {
        Workload::Stream => Box::new(Iperf3::find()?),
        Workload::Rr => Box::new(Sockperf::find()?),
    };
    let ringperf = Ringperf { bin: ringperf::locate(plan.ringperf.as_deref())? };
    let tools: [&dyn Tool; 2] = [&ringperf, peer.as_ref()];

    print!("{}", report::header(plan, &host, &tools));
    let _ = std::io::stdout().flush();
    let results = alternate(plan, &tools)?;
    print!("{}", report::runs_table(cfg, &results));
    print!("{}", report::summary(cfg, &host, &results, &tools));
    Ok(())
}

/// ringperf, peer, ringperf, peer, ...: `plan.runs` each, a pause between runs.
pub fn alternate(plan: &Plan, tools: &[&dyn Tool]) -> Result<Vec<RunResult>> {
    let total = plan.runs as usize * tools.len();
    let mut results = Vec::with_capacity(total);
    for round in 0..plan.runs {
        for tool in tools {
            if !results.is_empty() && !plan.pause.is_zero() {
                thread::sleep(plan.pause);
            }
            eprint!("ringperf-bench: run {}/{} {} ... ", round + 1, plan.runs, tool.name());
            let _ = std::io::stderr().flush();
            let children_before = children_cpu_us();
            let mut r = match tool.run(&plan.cfg) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("failed");
                    return Err(e);
                }
            };
            // A tool's run reaps every process it started (client and server) before it
            // returns, so the delta is exactly their CPU.
            r.process_cpu_us =
                children_cpu_us().zip(children_before).map(|(a, b)| a.saturating_sub(b) as f64);
            eprintln!("{}", report::one_line(&plan.cfg, &r));
            results.push(r);
        }
    }
    Ok(results)
}

/// User + system CPU of every child this process has reaped so far, µs.
fn children_cpu_us() -> Option<u64> {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable for the call.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return None;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Some(us(ru.ru_utime) + us(ru.ru_stime))
}
