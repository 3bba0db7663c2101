//! `big-tcp`: one ringperf stream on `lo` with BIG TCP's GSO limit at 64 KiB and at 512 KiB,
//! taking turns, every run's CPU measured the same way from /proc/stat: one row, service
//! demand per KB side by side.
//!
//! The limit is lo's: all four of gso_max_size, gro_max_size, gso_ipv4_max_size and
//! gro_ipv4_max_size (the stream is IPv4, held to the IPv4 ones), set just before each run and
//! put back just after it. They are set over rtnetlink by tools/lib/link_sizes.py (iproute2
//! before 6.3 cannot set the IPv4 ones). lo gets its old values back however the bench ends:
//! a guard's Drop after each run, and a signal thread on SIGINT and SIGTERM.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::bench;
use crate::error::{BenchError, Result};
use crate::peers::ringperf::{self, Expect, Ringperf};
use crate::peers::{Config, RunResult, Tool, Workload};
use crate::plan::{Host, Plan};
use crate::report::{commands, opt, runs_and_host, runs_table, sd, Table};
use crate::stats::{interval_text, median, ratio};

/// The two GSO limits compared: the classic 64 KiB and veth's and lo's ceiling (tso_max_size).
pub const SMALL: u32 = 65536;
pub const BIG: u32 = 524280;
const SMALL_LABEL: &str = "lo gso 64 KiB";
const BIG_LABEL: &str = "lo gso 512 KiB";
const SETTABLE: [&str; 4] = ["gso_max_size", "gro_max_size", "gso_ipv4_max_size", "gro_ipv4_max_size"];

fn sizes_tool() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/lib/link_sizes.py"))
}

fn link_sizes(args: &[String]) -> Result<String> {
    let out = Command::new("python3").arg(sizes_tool()).args(args).output().map_err(|e| {
        BenchError::io("running python3 tools/lib/link_sizes.py (apt-get install -y python3)", e)
    })?;
    if !out.status.success() {
        return Err(BenchError::Tool(format!(
            "tools/lib/link_sizes.py {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// lo's four settable limits now, as NAME=BYTES words.
fn lo_now() -> Result<Vec<String>> {
    let all = link_sizes(&["get".into(), "lo".into()])?;
    let words: Vec<String> = all
        .split_whitespace()
        .filter(|w| w.split_once('=').is_some_and(|(k, _)| SETTABLE.contains(&k)))
        .map(str::to_owned)
        .collect();
    if words.len() != SETTABLE.len() {
        return Err(BenchError::Tool(format!(
            "this kernel does not report all of lo's {} (it said: {}): BIG TCP's IPv4 limits need Linux 6.3+",
            SETTABLE.join(", "),
            all.trim()
        )));
    }
    Ok(words)
}

fn lo_set(words: &[String]) -> Result<()> {
    let mut args = vec!["set".to_string(), "lo".to_string()];
    args.extend(words.iter().cloned());
    link_sizes(&args).map(|_| ())
}

fn all_four(size: u32) -> Vec<String> {
    SETTABLE.iter().map(|k| format!("{k}={size}")).collect()
}

/// lo's values from before the bench, which every exit path puts back.
static SAVED: OnceLock<Vec<String>> = OnceLock::new();
/// Held while lo is being changed or restored, so the signal thread never restores in the
/// middle of a set (and then sees the set land after it).
static LO: Mutex<()> = Mutex::new(());

fn restore() -> Result<()> {
    match SAVED.get() {
        Some(old) => lo_set(old),
        None => Ok(()),
    }
}

/// lo at one GSO limit for as long as it lives.
struct LoAt;

impl LoAt {
    fn set(size: u32) -> Result<LoAt> {
        let _l = LO.lock().unwrap_or_else(|p| p.into_inner());
        lo_set(&all_four(size))?;
        Ok(LoAt)
    }
}

impl Drop for LoAt {
    fn drop(&mut self) {
        let _l = LO.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = restore() {
            eprintln!("ringperf-bench: could not restore lo ({e}): set it back by hand to {:?}", SAVED.get());
        }
    }
}

/// On SIGINT or SIGTERM: lo back to its old values, then exit as the signal asks (130 or
/// 143). A run in progress is ringperf's own process, bounded by its -l.
fn restore_on_signals() -> Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM])
        .map_err(|e| BenchError::io("installing the SIGINT/SIGTERM handler that restores lo", e))?;
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let _l = LO.lock().unwrap_or_else(|p| p.into_inner());
            match restore() {
                Ok(()) => eprintln!("\nringperf-bench: interrupted; lo restored to {}", saved_text()),
                Err(e) => {
                    eprintln!("\nringperf-bench: interrupted; could not restore lo ({e}): {}", saved_text())
                }
            }
            std::process::exit(128 + sig);
        }
    });
    Ok(())
}

fn saved_text() -> String {
    SAVED.get().map_or_else(String::new, |w| w.join(" "))
}

/// ringperf with lo at `size` around each of its runs.
pub struct LoSized {
    pub inner: Ringperf,
    pub size: u32,
}

impl LoSized {
    pub fn new(bin: PathBuf, size: u32) -> LoSized {
        let label = if size == SMALL { SMALL_LABEL } else { BIG_LABEL };
        LoSized {
            inner: Ringperf {
                label,
                // A limit that did not take would measure the wrong thing: the report's own
                // environment must show it.
                expect: Expect { gso_ipv4_max_size: Some(size), ..Expect::default() },
                ..Ringperf::new(bin)
            },
            size,
        }
    }
}

impl Tool for LoSized {
    fn name(&self) -> &'static str {
        self.inner.label
    }

    fn describe(&self, cfg: &Config) -> String {
        format!("(lo's four GSO/GRO limits = {}) {}", self.size, self.inner.describe(cfg))
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        let _lo = LoAt::set(self.size)?;
        self.inner.run(cfg)
    }
}

pub fn config(secs: u32, cpus: (usize, usize), size: u32, cc: Option<String>) -> Config {
    Config::new(Workload::Stream, secs, cpus, size, cc)
}

pub fn run(plan: &Plan) -> Result<()> {
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } != 0 {
        return Err(BenchError::Usage(
            "big-tcp sets lo's gso_max_size and its kin: run it as root (sudo)".into(),
        ));
    }
    let host = bench::check_host(&plan.cfg)?;
    let bin = ringperf::locate(plan.ringperf.as_deref())?;
    let _ = SAVED.set(lo_now()?);
    restore_on_signals()?;
    let (a, b) = (LoSized::new(bin.clone(), SMALL), LoSized::new(bin, BIG));
    let tools: [&dyn Tool; 2] = [&a, &b];
    print!("{}", header(plan, &host, &tools));
    let _ = std::io::stdout().flush();
    let outcome = bench::alternate_retrying(plan, &tools, 1);
    // Every run restored lo behind it; check that it holds what it held before.
    let now = lo_now()?;
    if Some(&now) != SAVED.get() {
        restore()?;
        eprintln!("ringperf-bench: lo was {} after the runs; restored to {}", now.join(" "), saved_text());
    }
    let (results, failures) = outcome?;
    print!("{}", runs_table(&plan.cfg, &results));
    print!("{}", bench::failures_note(&failures));
    print!("{}", summary(&host, &plan.cfg, &results));
    Ok(())
}

fn header(plan: &Plan, host: &Host, tools: &[&dyn Tool]) -> String {
    let cfg = &plan.cfg;
    let mut s = String::new();
    let _ = writeln!(s, "# ringperf-bench big-tcp (one stream on lo: GSO limit 64 KiB vs 512 KiB)\n");
    runs_and_host(&mut s, &format!("{SMALL_LABEL} vs {BIG_LABEL}"), plan, host);
    let _ = writeln!(
        s,
        "- {} bytes per send and receive, 1 flow; congestion control {}; lo's gso_max_size, gro_max_size, gso_ipv4_max_size and gro_ipv4_max_size all at {SMALL} or all at {BIG} for each run (each report's environment is checked to show it), and put back after it ({} before the bench)",
        cfg.size,
        cfg.tcp_cc().unwrap_or("the system default"),
        saved_text()
    );
    let _ = writeln!(
        s,
        "- service demand: busy µs over all CPUs per KB received, from the same /proc/stat window for both settings; ringperf's own sender and receiver figures beside it"
    );
    commands(&mut s, tools, cfg);
    s
}

/// The row: each setting's median throughput and service demand, side by side.
pub fn summary(host: &Host, cfg: &Config, results: &[RunResult]) -> String {
    let med = |tool: &str, f: &dyn Fn(&RunResult) -> Option<f64>| {
        let v: Vec<f64> = results.iter().filter(|r| r.tool == tool).filter_map(f).collect();
        median(&v)
    };
    let all = |tool: &str, f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<f64> {
        results.iter().filter(|r| r.tool == tool).filter_map(f).collect()
    };
    let gbit = |r: &RunResult| Some(r.rate() / 1e9);
    let bench_sd = |r: &RunResult| r.service_demand();
    let own = |r: &RunResult| r.own_service_demand;
    let remote = |r: &RunResult| r.ringperf.as_ref().and_then(|f| f.remote_service_demand);
    let runs = |tool: &str| results.iter().filter(|r| r.tool == tool).count();
    let mut t = Table::new(&[
        "case",
        "runs",
        "Gbit/s 64 KiB",
        "Gbit/s 512 KiB",
        "SD us/KB 64 KiB",
        "SD us/KB 512 KiB",
        "512/64 SD",
        "sender SD 64 / 512 (ringperf)",
        "receiver SD 64 / 512 (ringperf)",
    ]);
    let q = ratio(med(BIG_LABEL, &bench_sd), med(SMALL_LABEL, &bench_sd));
    t.row(vec![
        format!("stream {} B on lo, 1 flow", cfg.size),
        format!("{}/{}", runs(SMALL_LABEL), runs(BIG_LABEL)),
        opt(med(SMALL_LABEL, &gbit), 2),
        opt(med(BIG_LABEL, &gbit), 2),
        sd(med(SMALL_LABEL, &bench_sd)),
        sd(med(BIG_LABEL, &bench_sd)),
        q.map_or_else(|| "-".into(), |q| format!("{q:.2}x")),
        format!("{} / {}", sd(med(SMALL_LABEL, &own)), sd(med(BIG_LABEL, &own))),
        format!("{} / {}", sd(med(SMALL_LABEL, &remote)), sd(med(BIG_LABEL, &remote))),
    ]);
    let mut out = format!("## BIG TCP on lo\n\n{}\n", t.render());
    if let Some(i) = interval_text(&all(BIG_LABEL, &bench_sd), &all(SMALL_LABEL, &bench_sd)) {
        let _ = writeln!(out, "512/64 service demand: {i}");
    }
    let _ = writeln!(
        out,
        "  (SD = busy CPU µs over all {} CPUs per KB, medians; below 1x the 512 KiB limit is cheaper per byte)",
        host.cpus
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_settings_run_ringperf_with_the_limit_checked() {
        let cfg = config(3, (0, 1), 131072, Some("cubic".into()));
        let (a, b) = (LoSized::new("rp".into(), SMALL), LoSized::new("rp".into(), BIG));
        assert_eq!((a.name(), b.name()), (SMALL_LABEL, BIG_LABEL));
        assert_eq!(b.inner.expect.gso_ipv4_max_size, Some(BIG));
        let d = b.describe(&cfg);
        assert!(d.starts_with("(lo's four GSO/GRO limits = 524280) rp stream -l 3 -m 131072"), "{d}");
        assert_eq!(
            all_four(SMALL).join(" "),
            "gso_max_size=65536 gro_max_size=65536 gso_ipv4_max_size=65536 gro_ipv4_max_size=65536"
        );
    }

    #[test]
    fn the_row_puts_both_settings_side_by_side() {
        let host = Host { kernel: "k".into(), cpus: 2, default_cc: "cubic".into(), available_cc: vec![] };
        let cfg = config(1, (0, 1), 131072, None);
        let text = summary(&host, &cfg, &[]);
        assert!(text.contains("| stream 131072 B on lo, 1 flow | 0/0 "), "{text}");
        assert!(text.contains("SD us/KB 64 KiB") && text.contains("SD us/KB 512 KiB"), "{text}");
    }
}
