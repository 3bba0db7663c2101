//! The figures a sweep tabulates and plots, by name: each is the mean over a report's
//! iterations with its confidence half-width (at the report's own level) when it iterated.

use std::sync::LazyLock;

use ringperf_engine::measure::confidence::estimate;
use ringperf_engine::measure::profile::categories::TABLE;
use ringperf_engine::measure::profile::{diff_name, Category};
use ringperf_engine::report::IterationFigures;
use ringperf_engine::TestReport;

/// A figure a sweep can plot (`--figure`).
pub struct Figure {
    pub name: &'static str,
    /// Axis label, with the unit.
    pub label: String,
    /// Multiplier from the stored unit to the label's unit.
    pub scale: f64,
    source: Source,
}

/// Where a figure's per-iteration samples come from.
enum Source {
    /// One of the headline figures every iteration records; `profile` when it exists only
    /// with the kernel cost profile (--profile).
    Iteration { of: fn(&IterationFigures) -> Option<f64>, profile: bool },
    /// A profile category's cost per unit of work on one side (us/KB, us/Tr for rr).
    Cost { local: bool, category: Category },
}

fn headline(name: &'static str, label: &str, scale: f64, of: fn(&IterationFigures) -> Option<f64>) -> Figure {
    Figure { name, label: label.to_string(), scale, source: Source::Iteration { of, profile: false } }
}

fn profiled(name: &'static str, label: &str, of: fn(&IterationFigures) -> Option<f64>) -> Figure {
    Figure { name, label: label.to_string(), scale: 1.0, source: Source::Iteration { of, profile: true } }
}

/// Every figure, by the names `--figure` takes: the headline ones, the profile's overhead
/// and network-path service demand, then each category's cost per side under the names
/// `ringperf diff` gives them, in the categories table's order.
static FIGURES: LazyLock<Vec<Figure>> = LazyLock::new(|| {
    let mut all = vec![
        headline("throughput", "throughput (10^6 bits/s)", 1e-6, |f| Some(f.throughput_bits_per_sec)),
        headline("transactions", "transactions/s", 1.0, |f| f.transactions_per_sec),
        headline("local_cpu", "local CPU busy (% of all CPUs)", 1.0, |f| Some(f.local_cpu_percent)),
        headline("remote_cpu", "remote CPU busy (% of all CPUs)", 1.0, |f| f.remote_cpu_percent),
        headline("local_sd", "local service demand (us/KB or us/Tr)", 1.0, |f| f.local_sd_us),
        headline("remote_sd", "remote service demand (us/KB or us/Tr)", 1.0, |f| f.remote_sd_us),
        headline("local_ns_per_segment", "local CPU per segment (ns)", 1.0, |f| f.local_ns_per_segment),
        headline("remote_ns_per_segment", "remote CPU per segment (ns)", 1.0, |f| f.remote_ns_per_segment),
        headline("local_softirq", "local softirq time (% of all CPUs)", 1.0, |f| f.local_softirq_percent),
        headline("remote_softirq", "remote softirq time (% of all CPUs)", 1.0, |f| f.remote_softirq_percent),
        headline("local_packets_per_net_rx", "local rx packets per NET_RX softirq", 1.0, |f| {
            f.local_packets_per_net_rx
        }),
        headline("remote_packets_per_net_rx", "remote rx packets per NET_RX softirq", 1.0, |f| {
            f.remote_packets_per_net_rx
        }),
        headline("p50", "p50 round trip (us)", 1e-3, |f| f.p50_latency_ns.map(|v| v as f64)),
        headline("p99", "p99 round trip (us)", 1e-3, |f| f.p99_latency_ns.map(|v| v as f64)),
        profiled(
            "local_tool_overhead_with_kernel",
            "local tool overhead, user + io_uring + syscalls (% of busy CPU)",
            |f| f.local_tool_overhead_percent,
        ),
        profiled(
            "remote_tool_overhead_with_kernel",
            "remote tool overhead, user + io_uring + syscalls (% of busy CPU)",
            |f| f.remote_tool_overhead_percent,
        ),
        profiled("local_network_sd", "local network path service demand (us/KB or us/Tr)", |f| {
            f.local_network_sd_us
        }),
        profiled("remote_network_sd", "remote network path service demand (us/KB or us/Tr)", |f| {
            f.remote_network_sd_us
        }),
    ];
    for local in [true, false] {
        // Idle is not busy CPU: it has no cost per unit of work.
        for row in TABLE.iter().filter(|r| r.category != Category::Idle) {
            let side = if local { "local" } else { "remote" };
            all.push(Figure {
                name: diff_name(local, row.category),
                label: format!("{side} cost in {} (us/KB or us/Tr)", row.label),
                scale: 1.0,
                source: Source::Cost { local, category: row.category },
            });
        }
    }
    all
});

/// The names `--figure` accepts.
pub fn names() -> Vec<&'static str> {
    FIGURES.iter().map(|f| f.name).collect()
}

pub fn by_name(name: &str) -> Option<&'static Figure> {
    FIGURES.iter().find(|f| f.name == name)
}

/// A figure's value for one report, in the label's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    pub mean: f64,
    /// Confidence half-width; `None` from a single iteration.
    pub half_width: Option<f64>,
}

impl Figure {
    /// The mean over the report's iterations and, when it iterated, the half-width at its
    /// confidence level. `None` if the report does not have this figure.
    pub fn of(&self, r: &TestReport) -> Option<Value> {
        let samples: Vec<f64> = match self.source {
            Source::Iteration { of, .. } => r.iterations.iter().filter_map(of).collect(),
            Source::Cost { local, category } => cost_samples(r, local, category),
        };
        if samples.is_empty() {
            return None;
        }
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        let half_width = r
            .confidence
            .as_ref()
            .and_then(|c| estimate(self.name, &samples, c.target.level))
            .map(|e| e.half_width * self.scale);
        Some(Value { mean: mean * self.scale, half_width })
    }
}

impl Figure {
    /// True when the figure exists only in a run that took the kernel cost profile.
    pub fn needs_profile(&self) -> bool {
        match self.source {
            Source::Iteration { profile, .. } => profile,
            Source::Cost { .. } => true,
        }
    }
}

/// A category's cost per unit on one side: each iteration's (-i), else the run's; an
/// iteration without samples in the category spent nothing there. None without a profile.
fn cost_samples(r: &TestReport, local: bool, category: Category) -> Vec<f64> {
    let side = if local { Some(&r.local) } else { r.remote.as_ref() };
    let Some(p) = side.and_then(|s| s.profile.as_ref()).filter(|p| p.unavailable.is_none()) else {
        return Vec::new();
    };
    let of = |costs: &[(Category, f64)]| costs.iter().find(|c| c.0 == category).map_or(0.0, |c| c.1);
    if p.iterations.is_empty() {
        vec![of(&p.unit_costs(r.spec.workload.is_transactional()))]
    } else {
        p.iterations.iter().map(|i| of(i)).collect()
    }
}

/// The figure a plot shows by default: the workload's rate.
pub fn default_for(r: &TestReport) -> &'static Figure {
    let name = if r.summary.transactions_per_sec.is_some() { "transactions" } else { "throughput" };
    by_name(name).unwrap_or(&FIGURES[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_busy_category_is_a_figure_on_both_sides_under_its_diff_name() {
        for row in TABLE.iter().filter(|r| r.category != Category::Idle) {
            for local in [true, false] {
                let f = by_name(diff_name(local, row.category)).expect("a figure per category and side");
                assert!(f.needs_profile(), "{}", f.name);
                assert!(f.label.contains(row.label), "{}", f.label);
            }
        }
        assert!(!by_name("throughput").expect("throughput").needs_profile());
        assert!(by_name("local_network_sd").expect("network sd").needs_profile());
        let names = names();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "no name twice");
    }
}
