//! Latency under load (`ringperf load`): one probe test (rr or udp-rr) runs the whole
//! time, and load tests (streams or a UDP flood) join it once its idle phase is over. Each
//! is an ordinary test with its own control session; this is the one result type that puts
//! them together: the probe's two latency phases side by side, the inflation between them,
//! the load's throughput per direction, the run's CPU, and every test's interval samples
//! on the probe's time axis.

use serde::{Deserialize, Serialize};

use crate::report::{IntervalSample, LatencySummary, TestReport};

/// Bumped on any change a reader of the JSON would notice.
pub const LOAD_SCHEMA_VERSION: u32 = 1;

/// What the load is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LoadKind {
    /// TCP streams client to server.
    Up,
    /// TCP streams server to client.
    Down,
    /// Both at once, one test each way.
    Both,
    /// A paced UDP flood, client to server.
    Udp,
}

impl LoadKind {
    pub const ALL: [LoadKind; 4] = [LoadKind::Up, LoadKind::Down, LoadKind::Both, LoadKind::Udp];

    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Up => "up",
            LoadKind::Down => "down",
            LoadKind::Both => "both",
            LoadKind::Udp => "udp",
        }
    }

    /// The load tests this kind runs, one per direction.
    pub fn parts(self) -> &'static [LoadDirection] {
        match self {
            LoadKind::Up => &[LoadDirection::Up],
            LoadKind::Down => &[LoadDirection::Down],
            LoadKind::Both => &[LoadDirection::Up, LoadDirection::Down],
            LoadKind::Udp => &[LoadDirection::UdpUp],
        }
    }
}

/// One load test's direction.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LoadDirection {
    /// TCP, client to server.
    Up,
    /// TCP, server to client.
    Down,
    /// UDP, client to server.
    UdpUp,
}

impl LoadDirection {
    pub fn name(self) -> &'static str {
        match self {
            LoadDirection::Up => "up",
            LoadDirection::Down => "down",
            LoadDirection::UdpUp => "udp-up",
        }
    }

    /// Payload bytes of a client-side interval in this direction: sent going up, received
    /// coming down.
    fn bytes(self, s: &IntervalSample) -> u64 {
        match self {
            LoadDirection::Up | LoadDirection::UdpUp => s.bytes_sent,
            LoadDirection::Down => s.bytes_received,
        }
    }
}

/// One load test: its direction and its full report, or why it produced none.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct LoadPart {
    pub direction: LoadDirection,
    /// Throughput as the test's report gives it (the sender's view), bits/s.
    pub throughput_bits_per_sec: Option<f64>,
    /// The window's start as an offset from the probe's window start.
    pub start_offset_ns: Option<u64>,
    pub report: Option<TestReport>,
    /// Why the test gave no report (it failed before its window opened).
    pub error: Option<String>,
}

/// Loaded over idle, for each percentile.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Inflation {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

impl Inflation {
    pub fn of(idle: &LatencySummary, loaded: &LatencySummary) -> Inflation {
        let ratio = |l: u64, i: u64| l as f64 / i.max(1) as f64;
        Inflation {
            p50: ratio(loaded.p50_ns, idle.p50_ns),
            p90: ratio(loaded.p90_ns, idle.p90_ns),
            p99: ratio(loaded.p99_ns, idle.p99_ns),
        }
    }
}

/// The probe's schedule: open loop at a target rate, or closed loop (and why).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProbeRate {
    /// Requests per second over all probe flows asked for; `None`: closed loop.
    pub target_per_sec: Option<f64>,
    /// Transactions per second the probe completed over its whole window.
    pub achieved_per_sec: f64,
    /// Requests the open-loop schedule dropped or sent late (0 closed loop).
    pub slipped: u64,
    pub dropped: u64,
    /// Why the probe ran closed loop, when it did.
    pub closed_loop_reason: Option<String>,
}

/// The run's CPU: the probe's window spans the whole run, so its system view covers probes
/// and load together.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct LoadCpu {
    pub local_busy_percent: f64,
    pub remote_busy_percent: Option<f64>,
    /// Busy CPU µs (all CPUs, this host) per KiB of load payload moved in all directions.
    pub local_us_per_kb: Option<f64>,
    pub remote_us_per_kb: Option<f64>,
}

/// One probe interval with the load that moved during it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LoadSeriesPoint {
    /// Offset from the probe's window start.
    pub start_ns: u64,
    pub duration_ns: u64,
    pub probe_transactions: u64,
    pub probe_p50_ns: Option<u64>,
    pub probe_p99_ns: Option<u64>,
    /// Load payload in this interval per direction (the load tests' own intervals spread
    /// over this one by their overlap), in the order of `LoadReport::loads`.
    pub load_bytes: Vec<u64>,
    /// System busy share over the interval (the probe's view).
    pub busy_percent: Option<f64>,
}

impl LoadSeriesPoint {
    /// All directions' load, bits/s.
    pub fn load_bits_per_sec(&self) -> f64 {
        self.load_bytes.iter().sum::<u64>() as f64 * 8.0 / (self.duration_ns.max(1) as f64 / 1e9)
    }
}

/// The whole latency-under-load run.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct LoadReport {
    pub schema_version: u32,
    /// "LOAD", so a reader can tell it from a single test's report.
    pub test: String,
    pub load: LoadKind,
    /// The probe's workload as netperf names it (TCP_RR, UDP_RR).
    pub probe_test: String,
    pub idle_ms: u64,
    pub loaded_ms: u64,
    /// True when the tests ran against a server embedded in the client's process (shared by
    /// all of them): its CPU is then the same host's.
    #[serde(default)]
    pub embedded_server: bool,
    /// Where the probe's latency phases split, offset from its window start.
    pub split_ns: Option<u64>,
    /// Where the first load test's window opened, offset from the probe's window start.
    pub load_start_ns: Option<u64>,
    /// Round trips that completed in the idle phase, and in the loaded phase.
    pub idle: Option<LatencySummary>,
    pub loaded: Option<LatencySummary>,
    pub inflation: Option<Inflation>,
    pub probe_rate: ProbeRate,
    pub cpu: Option<LoadCpu>,
    pub loads: Vec<LoadPart>,
    pub series: Vec<LoadSeriesPoint>,
    pub partial: bool,
    pub partial_reason: Option<String>,
    /// The probe test's full report.
    pub probe: TestReport,
}

impl LoadReport {
    /// Puts the probe's and the load tests' reports together. `closed_loop_reason`: why
    /// the probe has no schedule, when it has none; `stopped`: the reason the run was cut
    /// short, if the caller knows one (Ctrl-C, a load test that failed).
    pub fn assemble(
        load: LoadKind,
        idle_ms: u64,
        loaded_ms: u64,
        probe: TestReport,
        loads: Vec<(LoadDirection, Result<TestReport, String>)>,
        closed_loop_reason: Option<String>,
    ) -> LoadReport {
        let phases = probe.local.latency_phases.as_ref();
        let (idle, loaded) = match phases {
            Some(p) => (p.first.clone(), p.second.clone()),
            None => (None, None),
        };
        let inflation = match (&idle, &loaded) {
            (Some(i), Some(l)) => Some(Inflation::of(i, l)),
            _ => None,
        };
        let probe_start = probe.local.window_start_ns;
        let parts: Vec<LoadPart> = loads
            .into_iter()
            .map(|(direction, r)| match r {
                Ok(report) => LoadPart {
                    direction,
                    throughput_bits_per_sec: Some(report.summary.throughput_bits_per_sec),
                    start_offset_ns: probe_start
                        .zip(report.local.window_start_ns)
                        .map(|(p, l)| l.saturating_sub(p)),
                    report: Some(report),
                    error: None,
                },
                Err(e) => LoadPart {
                    direction,
                    throughput_bits_per_sec: None,
                    start_offset_ns: None,
                    report: None,
                    error: Some(e),
                },
            })
            .collect();
        let load_start_ns = parts.iter().filter_map(|p| p.start_offset_ns).min();
        let series = series(&probe, &parts);
        let cpu = cpu(&probe, &parts);
        let probe_rate = probe_rate(&probe, closed_loop_reason);
        let mut reasons: Vec<String> = Vec::new();
        if probe.partial {
            reasons.push(format!("probe: {}", probe.partial_reason.as_deref().unwrap_or("cut short")));
        }
        for p in &parts {
            match (&p.report, &p.error) {
                (Some(r), _) if r.partial => reasons.push(format!(
                    "{} load: {}",
                    p.direction.name(),
                    r.partial_reason.as_deref().unwrap_or("cut short")
                )),
                (None, Some(e)) => reasons.push(format!("{} load: {e}", p.direction.name())),
                _ => {}
            }
        }
        if phases.is_none() && !probe.partial {
            reasons.push("the probe's window ended before its idle phase did".into());
        }
        LoadReport {
            schema_version: LOAD_SCHEMA_VERSION,
            test: "LOAD".into(),
            load,
            probe_test: probe.test.clone(),
            idle_ms,
            loaded_ms,
            embedded_server: false,
            split_ns: phases.map(|p| p.split_ns),
            load_start_ns,
            idle,
            loaded,
            inflation,
            probe_rate,
            cpu,
            loads: parts,
            series,
            partial: !reasons.is_empty(),
            partial_reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
            probe,
        }
    }

    /// Load throughput in one direction summed over its tests, bits/s.
    pub fn throughput(&self, direction: LoadDirection) -> Option<f64> {
        let rates: Vec<f64> = self
            .loads
            .iter()
            .filter(|p| p.direction == direction)
            .filter_map(|p| p.throughput_bits_per_sec)
            .collect();
        (!rates.is_empty()).then(|| rates.iter().sum())
    }
}

/// Every probe interval, with each load test's bytes spread onto it by overlap: a load
/// interval that lies half in a probe interval gives it half its bytes. Before a load
/// test's window opened it contributes nothing.
fn series(probe: &TestReport, parts: &[LoadPart]) -> Vec<LoadSeriesPoint> {
    probe
        .local
        .intervals
        .iter()
        .map(|p| {
            let load_bytes = parts
                .iter()
                .map(|part| {
                    let (Some(report), Some(offset)) = (&part.report, part.start_offset_ns) else {
                        return 0;
                    };
                    spread(p, &report.local.intervals, offset, part.direction)
                })
                .collect();
            LoadSeriesPoint {
                start_ns: p.start_ns,
                duration_ns: p.duration_ns,
                probe_transactions: p.transactions,
                probe_p50_ns: p.latency_p50_ns,
                probe_p99_ns: p.latency_p99_ns,
                load_bytes,
                busy_percent: p.busy_percent,
            }
        })
        .collect()
}

/// The bytes of `load` (intervals of a window that opened `offset` ns into the probe's)
/// that fall in the probe interval `p`, each load interval's spread evenly over its time.
fn spread(p: &IntervalSample, load: &[IntervalSample], offset: u64, direction: LoadDirection) -> u64 {
    let (lo, hi) = (p.start_ns, p.start_ns + p.duration_ns);
    let mut bytes = 0.0;
    for l in load {
        let (a, b) = (offset + l.start_ns, offset + l.start_ns + l.duration_ns);
        let overlap = hi.min(b).saturating_sub(lo.max(a));
        if overlap > 0 {
            bytes += direction.bytes(l) as f64 * overlap as f64 / l.duration_ns.max(1) as f64;
        }
    }
    bytes.round() as u64
}

/// The probe window's CPU, charged to the load's payload (the probes' own bytes are a
/// rounding error beside it, and their cost is part of what the run measured).
fn cpu(probe: &TestReport, parts: &[LoadPart]) -> Option<LoadCpu> {
    let kb: f64 = parts
        .iter()
        .filter_map(|p| p.report.as_ref())
        .map(|r| {
            let s = &r.local;
            let moved = s.bytes_sent.max(s.bytes_received);
            moved as f64 / 1024.0
        })
        .sum();
    let per_kb = |busy_us: f64| (kb > 0.0).then(|| busy_us / kb);
    let local = &probe.local.cpu.system;
    let remote = probe.remote.as_ref().map(|r| &r.cpu.system);
    Some(LoadCpu {
        local_busy_percent: local.busy_percent,
        remote_busy_percent: remote.map(|r| r.busy_percent),
        local_us_per_kb: per_kb(local.busy_us),
        remote_us_per_kb: remote.and_then(|r| per_kb(r.busy_us)),
    })
}

fn probe_rate(probe: &TestReport, closed_loop_reason: Option<String>) -> ProbeRate {
    let open = probe.local.rr.and_then(|rr| rr.open_loop);
    ProbeRate {
        target_per_sec: open.map(|o| o.target_rate),
        achieved_per_sec: probe.local.transactions as f64 / probe.local.elapsed_secs(),
        slipped: open.map_or(0, |o| o.slipped),
        dropped: open.map_or(0, |o| o.dropped),
        closed_loop_reason: if open.is_some() { None } else { closed_loop_reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(start_ms: u64, ms: u64, sent: u64, received: u64) -> IntervalSample {
        IntervalSample {
            start_ns: start_ms * 1_000_000,
            duration_ns: ms * 1_000_000,
            bytes_sent: sent,
            bytes_received: received,
            ..IntervalSample::default()
        }
    }

    /// A load interval straddling two probe intervals gives each its overlap's share; no
    /// probe interval before the load's window opened gets any.
    #[test]
    fn load_bytes_land_on_the_probe_intervals_they_overlap() {
        let probe: Vec<IntervalSample> = (0..4).map(|i| sample(i * 100, 100, 10, 10)).collect();
        let load = [sample(0, 100, 1000, 0), sample(100, 100, 2000, 0)];
        // The load opened 150 ms into the probe's window.
        let offset = 150_000_000;
        let spread: Vec<u64> = probe.iter().map(|p| spread(p, &load, offset, LoadDirection::Up)).collect();
        assert_eq!(spread, vec![0, 500, 1500, 1000]);
        assert_eq!(LoadDirection::Down.bytes(&sample(0, 1, 3, 7)), 7, "down is what the client received");
    }

    #[test]
    fn inflation_is_loaded_over_idle() {
        let summary = |p50, p99| LatencySummary {
            count: 1,
            min_ns: 1,
            mean_ns: 1.0,
            p50_ns: p50,
            p90_ns: p50,
            p99_ns: p99,
            p999_ns: p99,
            p9999_ns: p99,
            max_ns: p99,
            histogram: String::new(),
        };
        let i = Inflation::of(&summary(10_000, 20_000), &summary(30_000, 100_000));
        assert_eq!((i.p50, i.p99), (3.0, 5.0));
    }
}
