//! Interval samples: a tick every interval (a multishot Timeout on a ring worker's ring,
//! armed by the workload driver; a classic worker's timer), and each tick snapshots the counters, the system CPU, the interval's latency percentiles
//! and TCP_INFO sums. Nothing here runs per operation.

use std::os::fd::RawFd;
use std::sync::mpsc;

use serde::{Deserialize, Serialize};

use crate::measure::clock::monotonic_ns;
use crate::measure::cpu::ProcStat;
use crate::measure::latency::LatencyRecorder;
use crate::measure::tcp_info::TcpFlowInfo;

/// What one interval of a run looked like on one side.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct IntervalSample {
    /// Offset of the interval's start from the window start.
    pub start_ns: u64,
    /// The tick number, so several workers' samples of one interval line up.
    #[serde(default)]
    pub index: u32,
    pub duration_ns: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub transactions: u64,
    /// System busy share over the interval, 0..=100.
    pub busy_percent: Option<f64>,
    /// The interval's percentiles. With several workers, p50 is the transaction-weighted
    /// mean of theirs and p99 the largest (percentiles do not add).
    pub latency_p50_ns: Option<u64>,
    pub latency_p99_ns: Option<u64>,
    /// TCP retransmissions during the interval, summed over flows.
    pub retransmits: u64,
}

impl IntervalSample {
    /// Payload bits per second in either direction, whichever this side moved more of.
    pub fn throughput_bits_per_sec(&self) -> f64 {
        (self.bytes_sent.max(self.bytes_received)) as f64 * 8.0 / (self.duration_ns.max(1) as f64 / 1e9)
    }
    pub fn transactions_per_sec(&self) -> f64 {
        self.transactions as f64 / (self.duration_ns.max(1) as f64 / 1e9)
    }
}

/// Per-flow totals a workload keeps up to date as it runs, so that a run that fails or
/// is stopped halfway still reports what it moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub transactions: u64,
}

/// Where a worker's interval samples and latency go.
pub struct IntervalSampler {
    interval_ns: u64,
    socks: Vec<RawFd>,
    window_start: u64,
    last_ns: u64,
    last_totals: FlowCounters,
    last_retrans: u64,
    last_stat: Option<ProcStat>,
    samples: Vec<IntervalSample>,
    live: Option<mpsc::Sender<IntervalSample>>,
    /// Round trips of the current interval, folded into `total` at every tick.
    current: LatencyRecorder,
    total: LatencyRecorder,
    record_latency: bool,
    /// Latency split (`TestSpec::latency_split_ms`): the offset from the window start at
    /// which the first phase ends, and, once the tick nearest it has passed, that tick's
    /// offset and the first phase's histogram (`total` then holds the second phase's).
    split_ns: Option<u64>,
    first_phase: Option<(u64, LatencyRecorder)>,
}

/// A window's latency split in two at an interval tick: what the first phase recorded,
/// what the second did, and the tick's offset from the window start.
pub struct LatencySplit {
    pub at_ns: u64,
    pub first: LatencyRecorder,
    pub second: LatencyRecorder,
}

impl IntervalSampler {
    /// `interval_ns` 0 turns interval sampling off (latency still goes into one histogram).
    pub fn new(
        interval_ns: u64,
        duration_ns: u64,
        socks: &[RawFd],
        record_latency: bool,
        live: Option<mpsc::Sender<IntervalSample>>,
    ) -> IntervalSampler {
        let capacity = duration_ns.checked_div(interval_ns).map_or(0, |n| (n + 4) as usize);
        IntervalSampler {
            interval_ns,
            socks: socks.to_vec(),
            window_start: 0,
            last_ns: 0,
            last_totals: FlowCounters::default(),
            last_retrans: 0,
            last_stat: None,
            samples: Vec::with_capacity(capacity),
            live,
            current: LatencyRecorder::new(),
            total: LatencyRecorder::new(),
            record_latency,
            split_ns: None,
            first_phase: None,
        }
    }

    /// Splits the window's latency in two phases at the interval tick nearest `offset_ns`
    /// from the window start (at most half an interval before it): round trips that
    /// complete before that tick go in the first, the rest in the second. The tick is the
    /// only clock read: nothing is added per transaction.
    pub fn split_at(mut self, offset_ns: Option<u64>) -> IntervalSampler {
        self.split_ns = offset_ns.filter(|_| self.interval_ns > 0);
        self
    }

    /// Opens the first interval; the caller then ticks every
    /// [`IntervalSampler::interval_ns`] (a ring's multishot timeout, a classic worker's timer).
    pub fn open(&mut self, window_start: u64) {
        self.window_start = window_start;
        self.last_ns = window_start;
        if self.interval_ns > 0 {
            self.last_stat = ProcStat::read().ok();
            self.last_retrans = self.retrans();
        }
    }

    /// The tick period; 0 when interval sampling is off.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// One round trip, nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if !self.record_latency {
            return;
        }
        if self.interval_ns == 0 {
            self.total.record(ns);
        } else {
            self.current.record(ns);
        }
    }

    /// An interval tick: sample the counters so far.
    pub fn tick(&mut self, flows: &[FlowCounters]) {
        let now = monotonic_ns();
        self.sample(now, flows);
    }

    fn retrans(&self) -> u64 {
        self.socks.iter().filter_map(|&fd| TcpFlowInfo::read(fd)).map(|t| u64::from(t.total_retrans)).sum()
    }

    fn sample(&mut self, now: u64, flows: &[FlowCounters]) {
        let totals = flows.iter().fold(FlowCounters::default(), |a, f| FlowCounters {
            bytes_sent: a.bytes_sent + f.bytes_sent,
            bytes_received: a.bytes_received + f.bytes_received,
            transactions: a.transactions + f.transactions,
        });
        let stat = ProcStat::read().ok();
        let busy = match (&stat, &self.last_stat) {
            (Some(a), Some(b)) => Some(a.since(b, now - self.last_ns).busy_percent),
            _ => None,
        };
        let lat = self.current.summary();
        let retrans = self.retrans();
        let s = IntervalSample {
            index: self.samples.len() as u32,
            start_ns: self.last_ns - self.window_start,
            duration_ns: now - self.last_ns,
            bytes_sent: totals.bytes_sent - self.last_totals.bytes_sent,
            bytes_received: totals.bytes_received - self.last_totals.bytes_received,
            transactions: totals.transactions - self.last_totals.transactions,
            busy_percent: busy,
            latency_p50_ns: lat.as_ref().map(|l| l.p50_ns),
            latency_p99_ns: lat.as_ref().map(|l| l.p99_ns),
            retransmits: retrans.saturating_sub(self.last_retrans),
        };
        self.total.merge(&self.current);
        self.current.reset();
        if let Some(split) = self.split_ns.filter(|_| self.first_phase.is_none()) {
            let at = now - self.window_start;
            if at + self.interval_ns / 2 >= split {
                let first = std::mem::take(&mut self.total);
                self.first_phase = Some((at, first));
            }
        }
        if let Some(live) = &self.live {
            let _ = live.send(s.clone());
        }
        self.samples.push(s);
        self.last_ns = now;
        self.last_totals = totals;
        self.last_stat = stat;
        self.last_retrans = retrans;
    }

    /// Closes the last (partial) interval and hands back the samples, all latency, and
    /// with a split each phase's (`None` when the window ended before the split's tick).
    pub fn finish(
        mut self,
        end_ns: u64,
        flows: &[FlowCounters],
    ) -> (Vec<IntervalSample>, LatencyRecorder, Option<LatencySplit>) {
        // The remainder after the last tick is sampled too, however short, so the series
        // adds up to the totals.
        if self.interval_ns > 0 && end_ns > self.last_ns {
            self.sample(end_ns, flows);
        }
        self.total.merge(&self.current);
        match self.first_phase {
            Some((at_ns, first)) => {
                let mut all = LatencyRecorder::new();
                all.merge(&first);
                all.merge(&self.total);
                (self.samples, all, Some(LatencySplit { at_ns, first, second: self.total }))
            }
            None => (self.samples, self.total, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Round trips go to the phase their completion falls in, split at the tick nearest the
    /// split offset; the phases add up to the whole and the whole is unchanged.
    #[test]
    fn a_split_puts_each_round_trip_in_one_phase_at_the_nearest_tick() {
        let flows = [FlowCounters::default()];
        let mut s = IntervalSampler::new(200 * MS, 1000 * MS, &[], true, None).split_at(Some(500 * MS));
        s.open(1_000 * MS);
        let window = 1_000 * MS;
        for (tick, latencies) in [(200, [10, 20]), (400, [30, 40]), (600, [1000, 2000]), (800, [3000, 4000])]
        {
            for ns in latencies {
                s.record(ns);
            }
            s.sample(window + tick * MS, &flows);
        }
        s.record(5000);
        let (samples, all, split) = s.finish(window + 900 * MS, &flows);
        assert_eq!(samples.len(), 5);
        let split = split.expect("the window passed the split");
        // 400 ms + half an interval reaches 500 ms: that tick ends the first phase.
        assert_eq!(split.at_ns, 400 * MS);
        assert_eq!((split.first.len(), split.second.len(), all.len()), (4, 5, 9));
        let (first, second) =
            (split.first.summary().expect("first"), split.second.summary().expect("second"));
        assert!(first.max_ns < 41 && second.min_ns >= 999, "{first:?} {second:?}");
    }

    /// A window that ends before its split's tick reports no phases; a sampler without
    /// ticks cannot split.
    #[test]
    fn no_split_without_its_tick() {
        let flows = [FlowCounters::default()];
        let mut s = IntervalSampler::new(200 * MS, 1000 * MS, &[], true, None).split_at(Some(900 * MS));
        s.open(0);
        s.record(10);
        s.sample(200 * MS, &flows);
        assert!(s.finish(300 * MS, &flows).2.is_none());
        let mut s = IntervalSampler::new(0, 1000 * MS, &[], true, None).split_at(Some(500 * MS));
        s.open(0);
        s.record(10);
        let (_, all, split) = s.finish(900 * MS, &flows);
        assert!(split.is_none() && all.len() == 1);
    }
}
