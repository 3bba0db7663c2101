//! Interval lines while a test runs (netperf demo mode, `-D`): the engine sends the local
//! side's samples over a channel and this thread prints them, so the worker never does.

use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{SystemTime, UNIX_EPOCH};

use ringperf_engine::report::IntervalSample;
use ringperf_engine::spec::TestSpec;

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
        let rr = spec.workload.is_transactional();
        let handle = thread::spawn(move || {
            let mut out = std::io::stdout();
            for (n, s) in rx.iter().enumerate() {
                let line =
                    if format == Format::Keyval { keyval(n, &s, rr, units) } else { human(&s, rr, units) };
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
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
