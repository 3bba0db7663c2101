//! The one CPU measurement every tool gets: per-CPU /proc/stat deltas around its run.
//!
//! busy = user + nice + system + irq + softirq; total = busy + idle + iowait + steal
//! (iowait is a wait, not work: a tool blocked in io_uring_enter shows there). The parsing and the busy/total split are the
//! engine's own [`ProcStat`], so the bench and ringperf cannot drift apart on definitions;
//! what differs is only *where* the window is taken: here, outside the tool, the same way
//! for every tool.

use std::time::Instant;

use ringperf_core::measure::cpu::ProcStat;
use ringperf_core::report::SystemCpu;

use crate::error::Result;

/// /proc/stat and the monotonic clock at one instant.
#[derive(Clone, Debug)]
pub struct Sample {
    stat: ProcStat,
    at: Instant,
}

impl Sample {
    pub fn now() -> Result<Sample> {
        let stat = ProcStat::read()?;
        Ok(Sample { stat, at: Instant::now() })
    }
}

/// System CPU over one tool's run.
#[derive(Clone, Debug)]
pub struct CpuWindow {
    /// Wall time between the two samples.
    pub wall_ns: u64,
    pub system: SystemCpu,
}

impl CpuWindow {
    pub fn between(before: &Sample, after: &Sample) -> CpuWindow {
        let wall_ns = after.at.saturating_duration_since(before.at).as_nanos().max(1) as u64;
        CpuWindow::from_stats(&before.stat, &after.stat, wall_ns)
    }

    pub fn from_stats(before: &ProcStat, after: &ProcStat, wall_ns: u64) -> CpuWindow {
        CpuWindow { wall_ns, system: after.since(before, wall_ns) }
    }

    /// Busy CPU time summed over all CPUs, µs.
    pub fn busy_us(&self) -> f64 {
        self.system.busy_us
    }

    /// Busy share of all CPUs, 0..=100.
    pub fn busy_percent(&self) -> f64 {
        self.system.busy_percent
    }

    pub fn wall_secs(&self) -> f64 {
        self.wall_ns as f64 / 1e9
    }

    /// netperf's service demand: busy µs (all CPUs) per unit of work (a KB or a transaction).
    pub fn service_demand(&self, units: f64) -> Option<f64> {
        (units > 0.0).then(|| self.busy_us() / units)
    }

    /// Busy share of one CPU, if the host has it.
    pub fn cpu_busy_percent(&self, cpu: usize) -> Option<f64> {
        self.system.per_cpu_busy_percent.get(cpu).copied()
    }
}

/// How many CPUs /proc/stat lists.
pub fn cpu_count() -> Result<usize> {
    Ok(ProcStat::read()?.cpus.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "cpu  0 0 0 0 0 0 0 0 0 0\n\
        cpu0 100 0 100 800 0 0 0 0 0 0\n\
        cpu1 100 0 100 800 0 0 0 0 0 0\n";
    // cpu0: +50 user +30 system +10 softirq +10 idle; cpu1: +20 system +70 idle +10 iowait.
    const AFTER: &str = "cpu  0 0 0 0 0 0 0 0 0 0\n\
        cpu0 150 0 130 810 0 0 10 0 0 0\n\
        cpu1 100 0 120 870 10 0 0 0 0 0\n";

    fn window() -> CpuWindow {
        let b = ProcStat::parse(BEFORE).unwrap();
        let a = ProcStat::parse(AFTER).unwrap();
        CpuWindow::from_stats(&b, &a, 1_000_000_000)
    }

    #[test]
    fn busy_excludes_idle_and_iowait() {
        let w = window();
        // 90 + 20 busy of 200 ticks: 55 %.
        assert!((w.busy_percent() - 55.0).abs() < 1e-9);
        assert!((w.cpu_busy_percent(0).unwrap() - 90.0).abs() < 1e-9);
        assert!((w.cpu_busy_percent(1).unwrap() - 20.0).abs() < 1e-9);
        assert!(w.cpu_busy_percent(2).is_none());
    }

    #[test]
    fn service_demand_is_busy_us_per_unit() {
        let w = window();
        // 55 % of 2 CPUs over 1 s = 1.1 s of CPU.
        assert!((w.busy_us() - 1.1e6).abs() < 1e-3);
        assert!((w.service_demand(1.1e6).unwrap() - 1.0).abs() < 1e-9);
        assert!(w.service_demand(0.0).is_none());
    }

    #[test]
    fn live_samples_make_a_window_within_bounds() {
        let a = Sample::now().unwrap();
        let b = Sample::now().unwrap();
        let w = CpuWindow::between(&a, &b);
        assert!(w.wall_ns >= 1);
        assert!((0.0..=100.0).contains(&w.busy_percent()));
        assert!(cpu_count().unwrap() >= 1);
    }
}
