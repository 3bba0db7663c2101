//! Interval samples: a multishot Timeout on the worker's ring ticks every interval, and
//! each tick snapshots the counters, the system CPU, the interval's latency percentiles
//! and TCP_INFO sums. Nothing here runs per operation.

use std::os::fd::RawFd;
use std::sync::mpsc;

use io_uring::{opcode, types};

use crate::error::Result;
use crate::io::op;
use crate::measure::clock::monotonic_ns;
use crate::measure::cpu::ProcStat;
use crate::measure::latency::LatencyRecorder;
use crate::measure::tcp_info::TcpFlowInfo;
use crate::report::IntervalSample;
use crate::ring::{token, Ring};
use crate::workload::FlowCounters;

/// Where a worker's interval samples and latency go.
pub struct IntervalSampler {
    interval_ns: u64,
    /// Boxed: the kernel reads it when the multishot timeout is submitted.
    ts: Box<types::Timespec>,
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
            ts: Box::new(
                types::Timespec::new()
                    .sec(interval_ns / 1_000_000_000)
                    .nsec((interval_ns % 1_000_000_000) as u32),
            ),
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
        }
    }

    /// Opens the first interval and arms the repeating tick on `ring`.
    pub fn start(&mut self, ring: &mut Ring, window_start: u64) -> Result<()> {
        self.open(window_start);
        if self.interval_ns == 0 {
            return Ok(());
        }
        let e = opcode::Timeout::new(&*self.ts)
            .count(0)
            .flags(types::TimeoutFlags::MULTISHOT)
            .build()
            .user_data(token(op::INTERVAL, 0));
        // SAFETY: the timespec is boxed in self and outlives the ring's use of it.
        unsafe { ring.push(&e) }
    }

    /// Opens the first interval without a ring: the caller ticks every
    /// [`IntervalSampler::interval_ns`] (a classic worker's timer).
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
        if let Some(live) = &self.live {
            let _ = live.send(s.clone());
        }
        self.samples.push(s);
        self.last_ns = now;
        self.last_totals = totals;
        self.last_stat = stat;
        self.last_retrans = retrans;
    }

    /// Closes the last (partial) interval and hands back the samples and all latency.
    pub fn finish(mut self, end_ns: u64, flows: &[FlowCounters]) -> (Vec<IntervalSample>, LatencyRecorder) {
        // The remainder after the last tick is sampled too, however short, so the series
        // adds up to the totals.
        if self.interval_ns > 0 && end_ns > self.last_ns {
            self.sample(end_ns, flows);
        }
        self.total.merge(&self.current);
        (self.samples, self.total)
    }
}
