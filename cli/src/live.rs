//! Interval lines while a test runs (netperf demo mode, `-D`): the engine sends the local
//! side's samples over a channel and this thread prints them, so the worker never does.

use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{SystemTime, UNIX_EPOCH};

use ringperf_engine::report::IntervalSample;
use ringperf_engine::spec::{TestSpec, Workload};

use crate::args::TestArgs;
use crate::render::{Format, Units};

pub struct Printer {
    tx: mpsc::Sender<IntervalSample>,
    handle: JoinHandle<()>,
}

impl Printer {
    /// Starts printing if -D was given, or by default for runs over 10 s on a terminal.
    /// JSON and CSV carry the series in the report instead.
    pub fn start(t: &TestArgs, spec: &TestSpec, format: Format, units: Units) -> Option<Printer> {
        if spec.interval_ms == 0 || matches!(format, Format::Json | Format::Csv) {
            return None;
        }
        let asked = t.stats.interval.is_some();
        let by_default = spec.duration_ms > 10_000 && std::io::stdout().is_terminal();
        if !(asked || by_default) {
            return None;
        }
        let (tx, rx) = mpsc::channel::<IntervalSample>();
        let rr = spec.workload == Workload::Rr;
        // Every local worker sends its own sample of each tick; print their sum once all
        // have arrived (or whatever arrived, when the run ends).
        let workers = spec.workers() * spec.group_roles(true).len();
        let handle = thread::spawn(move || {
            let mut out = std::io::stdout();
            let mut pending: Vec<(u32, Vec<IntervalSample>)> = Vec::new();
            let mut printed = 0usize;
            let mut emit = |samples: Vec<IntervalSample>| {
                let merged =
                    ringperf_engine::merge::intervals(samples.into_iter().map(|x| vec![x]).collect());
                let s = merged.into_iter().next().unwrap_or_default();
                let line = if format == Format::Keyval {
                    keyval(printed, &s, rr, units)
                } else {
                    human(&s, rr, units)
                };
                printed += 1;
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
            };
            for s in rx.iter() {
                match pending.iter_mut().find(|p| p.0 == s.index) {
                    Some(p) => p.1.push(s),
                    None => pending.push((s.index, vec![s])),
                }
                while let Some(pos) = pending.iter().position(|p| p.1.len() >= workers) {
                    let (_, samples) = pending.remove(pos);
                    emit(samples);
                }
            }
            pending.sort_by_key(|p| p.0);
            for (_, samples) in pending {
                emit(samples);
            }
        });
        Some(Printer { tx, handle })
    }

    pub fn sender(&self) -> mpsc::Sender<IntervalSample> {
        self.tx.clone()
    }

    /// Waits for the lines of a finished run.
    pub fn finish(self) {
        drop(self.tx);
        let _ = self.handle.join();
    }
}

fn human(s: &IntervalSample, rr: bool, units: Units) -> String {
    let t0 = s.start_ns as f64 / 1e9;
    let t1 = (s.start_ns + s.duration_ns) as f64 / 1e9;
    let cpu = s.busy_percent.map_or_else(|| "-".into(), |c| format!("{c:.1} %"));
    if rr {
        let us = |v: Option<u64>| v.map_or_else(|| "-".into(), |n| format!("{:.1}", n as f64 / 1e3));
        format!(
            "interval {t0:7.2}-{t1:7.2} s  {:>11.1} trans/s  p50 {} us  p99 {} us  CPU {cpu}  retrans {}\n",
            s.transactions_per_sec(),
            us(s.latency_p50_ns),
            us(s.latency_p99_ns),
            s.retransmits
        )
    } else {
        format!(
            "interval {t0:7.2}-{t1:7.2} s  {:>11.2} {}  CPU {cpu}  retrans {}\n",
            units.convert(s.throughput_bits_per_sec()),
            units.label(),
            s.retransmits
        )
    }
}

/// netperf's interim lines: NETPERF_INTERIM_RESULT[n]= and friends.
fn keyval(n: usize, s: &IntervalSample, rr: bool, units: Units) -> String {
    let (value, unit) = if rr {
        (s.transactions_per_sec(), "Trans/s")
    } else {
        (units.convert(s.throughput_bits_per_sec()), units.label())
    };
    let ending = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    format!(
        "NETPERF_INTERIM_RESULT[{n}]={value:.2}\nNETPERF_UNITS[{n}]={unit}\nNETPERF_INTERVAL[{n}]={:.3}\nNETPERF_ENDING[{n}]={ending:.3}\n",
        s.duration_ns as f64 / 1e9
    )
}
