//! The figures a sweep tabulates and plots, by name: each is the mean over a report's
//! iterations with its confidence half-width (at the report's own level) when it iterated.

use ringperf_engine::measure::confidence::estimate;
use ringperf_engine::report::IterationFigures;
use ringperf_engine::TestReport;

/// A figure a sweep can plot (`--figure`).
pub struct Figure {
    pub name: &'static str,
    /// Axis label, with the unit.
    pub label: &'static str,
    /// Multiplier from the stored unit to the label's unit.
    pub scale: f64,
    of: fn(&IterationFigures) -> Option<f64>,
}

/// Every figure, by the names `--figure` takes.
pub const FIGURES: &[Figure] = &[
    Figure {
        name: "throughput",
        label: "throughput (10^6 bits/s)",
        scale: 1e-6,
        of: |f| Some(f.throughput_bits_per_sec),
    },
    Figure { name: "transactions", label: "transactions/s", scale: 1.0, of: |f| f.transactions_per_sec },
    Figure {
        name: "local_cpu",
        label: "local CPU busy (% of all CPUs)",
        scale: 1.0,
        of: |f| Some(f.local_cpu_percent),
    },
    Figure {
        name: "remote_cpu",
        label: "remote CPU busy (% of all CPUs)",
        scale: 1.0,
        of: |f| f.remote_cpu_percent,
    },
    Figure {
        name: "local_sd",
        label: "local service demand (us/KB or us/Tr)",
        scale: 1.0,
        of: |f| f.local_sd_us,
    },
    Figure {
        name: "remote_sd",
        label: "remote service demand (us/KB or us/Tr)",
        scale: 1.0,
        of: |f| f.remote_sd_us,
    },
    Figure {
        name: "local_ns_per_segment",
        label: "local CPU per segment (ns)",
        scale: 1.0,
        of: |f| f.local_ns_per_segment,
    },
    Figure {
        name: "remote_ns_per_segment",
        label: "remote CPU per segment (ns)",
        scale: 1.0,
        of: |f| f.remote_ns_per_segment,
    },
    Figure {
        name: "local_softirq",
        label: "local softirq time (% of all CPUs)",
        scale: 1.0,
        of: |f| f.local_softirq_percent,
    },
    Figure {
        name: "remote_softirq",
        label: "remote softirq time (% of all CPUs)",
        scale: 1.0,
        of: |f| f.remote_softirq_percent,
    },
    Figure {
        name: "local_packets_per_net_rx",
        label: "local rx packets per NET_RX softirq",
        scale: 1.0,
        of: |f| f.local_packets_per_net_rx,
    },
    Figure {
        name: "remote_packets_per_net_rx",
        label: "remote rx packets per NET_RX softirq",
        scale: 1.0,
        of: |f| f.remote_packets_per_net_rx,
    },
    Figure {
        name: "p50",
        label: "p50 round trip (us)",
        scale: 1e-3,
        of: |f| f.p50_latency_ns.map(|v| v as f64),
    },
    Figure {
        name: "p99",
        label: "p99 round trip (us)",
        scale: 1e-3,
        of: |f| f.p99_latency_ns.map(|v| v as f64),
    },
];

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
        let samples: Vec<f64> = r.iterations.iter().filter_map(self.of).collect();
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

/// The figure a plot shows by default: the workload's rate.
pub fn default_for(r: &TestReport) -> &'static Figure {
    let name = if r.summary.transactions_per_sec.is_some() { "transactions" } else { "throughput" };
    by_name(name).unwrap_or(&FIGURES[0])
}
