//! CPU accounting: per-CPU /proc/stat deltas for the system view, and per-thread clocks and
//! rusage for the tool's own view.

use std::fs;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::measure::clock::thread_cpu_ns;

/// /proc/stat deltas over the window.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SystemCpu {
    pub cpus: usize,
    /// Busy share of all CPUs: (user+nice+system+irq+softirq) / all, 0..=100.
    pub busy_percent: f64,
    /// Stolen by the hypervisor, 0..=100, not counted as busy.
    pub steal_percent: f64,
    /// Busy CPU time summed over all CPUs, in microseconds.
    pub busy_us: f64,
    /// Busy share of each CPU, 0..=100.
    pub per_cpu_busy_percent: Vec<f64>,
}

/// CPU consumed by the side's worker threads.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct ToolCpu {
    /// CLOCK_THREAD_CPUTIME_ID delta: exact, user and system together.
    pub thread_ns: u64,
    /// getrusage(RUSAGE_THREAD) split, in tick resolution.
    pub user_us: u64,
    pub system_us: u64,
    /// io_uring helper threads this side's rings created (SQPOLL, io-wq), from schedstat.
    pub helper_ns: u64,
}

/// One CPU's cumulative /proc/stat counters (USER_HZ ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// Busy CPU: user + nice + system + irq + softirq. A thread waiting in io_uring_enter is
    /// idle or iowait, not busy, so waiting on the ring must not count; steal is neither.
    fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait + self.steal
    }
    pub fn delta(&self, before: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user.saturating_sub(before.user),
            nice: self.nice.saturating_sub(before.nice),
            system: self.system.saturating_sub(before.system),
            idle: self.idle.saturating_sub(before.idle),
            iowait: self.iowait.saturating_sub(before.iowait),
            irq: self.irq.saturating_sub(before.irq),
            softirq: self.softirq.saturating_sub(before.softirq),
            steal: self.steal.saturating_sub(before.steal),
        }
    }
}

/// A snapshot of every `cpuN` line of /proc/stat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub cpus: Vec<CpuTicks>,
    /// The CPU number of each entry of `cpus` (offline CPUs have no line, so the position
    /// is not always the number).
    pub ids: Vec<usize>,
}

impl ProcStat {
    pub fn read() -> Result<ProcStat> {
        let text = fs::read_to_string("/proc/stat")
            .map_err(|e| Error::io("reading /proc/stat for CPU utilization", e))?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> Result<ProcStat> {
        let mut cpus = Vec::new();
        let mut ids = Vec::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("cpu") else { continue };
            // "cpu " is the aggregate; per-CPU lines start with a digit.
            if !rest.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            let mut fields = rest.split_whitespace();
            let id = fields.next().and_then(|n| n.parse::<usize>().ok());
            let v: Vec<u64> = fields.map_while(|f| f.parse().ok()).collect();
            let Some(id) = id.filter(|_| v.len() >= 8) else {
                return Err(Error::io(
                    "parsing /proc/stat",
                    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("unexpected line: {line}")),
                ));
            };
            ids.push(id);
            cpus.push(CpuTicks {
                user: v[0],
                nice: v[1],
                system: v[2],
                idle: v[3],
                iowait: v[4],
                irq: v[5],
                softirq: v[6],
                steal: v[7],
            });
        }
        if cpus.is_empty() {
            return Err(Error::io(
                "parsing /proc/stat",
                std::io::Error::new(std::io::ErrorKind::InvalidData, "no per-CPU lines"),
            ));
        }
        Ok(ProcStat { cpus, ids })
    }

    /// System CPU over [before, self], with `elapsed_ns` the window it covered.
    pub fn since(&self, before: &ProcStat, elapsed_ns: u64) -> SystemCpu {
        let n = self.cpus.len().min(before.cpus.len());
        let deltas: Vec<CpuTicks> = (0..n).map(|i| self.cpus[i].delta(&before.cpus[i])).collect();
        let pct = |part: u64, all: u64| if all == 0 { 0.0 } else { 100.0 * part as f64 / all as f64 };
        let busy: u64 = deltas.iter().map(CpuTicks::busy).sum();
        let steal: u64 = deltas.iter().map(|d| d.steal).sum();
        let total: u64 = deltas.iter().map(CpuTicks::total).sum();
        let busy_percent = pct(busy, total);
        SystemCpu {
            cpus: n,
            busy_percent,
            steal_percent: pct(steal, total),
            // Ticks are coarse (10 ms); the busy share times the exact window is the
            // better estimate of busy time, and it is netperf's definition too.
            busy_us: busy_percent / 100.0 * n as f64 * elapsed_ns as f64 / 1000.0,
            per_cpu_busy_percent: deltas.iter().map(|d| pct(d.busy(), d.total())).collect(),
        }
    }
}

/// The calling thread's CPU clocks at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadCpuSnapshot {
    cpu_ns: u64,
    user_us: u64,
    system_us: u64,
}

impl ThreadCpuSnapshot {
    /// Reads CLOCK_THREAD_CPUTIME_ID and RUSAGE_THREAD of the calling thread.
    pub fn now() -> ThreadCpuSnapshot {
        // SAFETY: an all-zero rusage is a valid value of this plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is valid and writable; RUSAGE_THREAD always exists on Linux.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        ThreadCpuSnapshot { cpu_ns: thread_cpu_ns(), user_us: us(ru.ru_utime), system_us: us(ru.ru_stime) }
    }

    /// CPU the thread used since `before`.
    pub fn since(&self, before: &ThreadCpuSnapshot) -> ToolCpu {
        ToolCpu {
            thread_ns: self.cpu_ns.saturating_sub(before.cpu_ns),
            user_us: self.user_us.saturating_sub(before.user_us),
            system_us: self.system_us.saturating_sub(before.system_us),
            helper_ns: 0,
        }
    }
}

/// CPU time (ns, from schedstat) of the io_uring helper threads a thread's rings created:
/// `iou-sqp-<tid>` (SQPOLL) and `iou-wrk-<tid>` (io-wq). Helpers that already exited are
/// not seen, so this is a lower bound.
pub fn helper_threads_ns(creator_tid: i32) -> u64 {
    let names = [format!("iou-sqp-{creator_tid}"), format!("iou-wrk-{creator_tid}")];
    let Ok(tasks) = fs::read_dir("/proc/self/task") else { return 0 };
    let mut total = 0;
    for t in tasks.flatten() {
        let comm = fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if names.iter().any(|n| comm.trim() == n) {
            let sched = fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            total += sched.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str =
        "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 40 0 0 0 0 0 0\nintr 1\n";
    const B: &str =
        "cpu  40 0 40 110 0 0 0 10 0 0\ncpu0 35 0 5 50 0 0 0 10 0 0\ncpu1 5 0 35 60 0 0 0 0 0 0\nintr 1\n";

    #[test]
    fn busy_and_steal_come_from_per_cpu_deltas() {
        let a = ProcStat::parse(A).unwrap();
        let b = ProcStat::parse(B).unwrap();
        assert_eq!(a.cpus.len(), 2);
        let s = b.since(&a, 1_000_000_000);
        // cpu0: 30 busy, 10 idle, 10 steal; cpu1: 30 busy, 20 idle.
        assert_eq!(s.cpus, 2);
        assert!((s.busy_percent - 60.0).abs() < 1e-9);
        assert!((s.steal_percent - 10.0).abs() < 1e-9);
        assert!((s.per_cpu_busy_percent[0] - 60.0).abs() < 1e-9);
        assert!((s.per_cpu_busy_percent[1] - 60.0).abs() < 1e-9);
        // 60 % of 2 CPUs over 1 s.
        assert!((s.busy_us - 1.2e6).abs() < 1e-3);
    }

    /// This machine's /proc/stat head (kernel 6.18, 2 vCPUs).
    const REAL: &str = "cpu  439706 54168 457514 437794 325609 0 209401 617 0 0
cpu0 213529 25590 228929 231529 155547 0 107041 289 0 0
cpu1 226177 28577 228584 206265 170061 0 102360 328 0 0
intr 103056452 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 17
ctxt 1
";

    #[test]
    fn a_real_sample_parses_with_its_cpu_numbers_and_a_cut_one_does_not() {
        let s = ProcStat::parse(REAL).unwrap();
        assert_eq!(s.ids, vec![0, 1]);
        assert_eq!(s.cpus[1].softirq, 102360);
        let cut = &REAL[..REAL.find("206265").unwrap()];
        assert!(ProcStat::parse(cut).is_err());
        assert!(
            ProcStat::parse("cpux 1 2 3 4 5 6 7 8\n").is_err(),
            "a per-CPU line without a number is skipped"
        );
        let offline = ProcStat::parse("cpu0 1 1 1 1 1 1 1 1\ncpu3 1 1 1 1 1 1 1 1\n").unwrap();
        assert_eq!(offline.ids, vec![0, 3]);
    }

    #[test]
    fn garbage_proc_stat_is_an_error() {
        assert!(ProcStat::parse("intr 1 2 3\n").is_err());
        assert!(ProcStat::parse("cpu0 1 2\n").is_err());
    }

    #[test]
    fn live_proc_stat_reads() {
        let s = ProcStat::read().unwrap();
        assert!(!s.cpus.is_empty());
        let t = ThreadCpuSnapshot::now();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(ThreadCpuSnapshot::now().since(&t).thread_ns > 0);
    }
}
