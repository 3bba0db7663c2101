//! Interval lines while a test runs (netperf demo mode, `-D`): the engine sends the local
//! side's samples over a channel and this thread prints them, so the worker never does.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ringperf_core::report::IntervalSample;
use ringperf_core::spec::TestSpec;

use crate::args::TestArgs;
use crate::interrupt::Stopper;
use crate::progress;
use crate::render::{Format, Units};

pub struct Printer {
    tx: mpsc::Sender<IntervalSample>,
    handle: JoinHandle<()>,
}

/// Collects the local workers' samples of each tick and hands their sum to `emit`, once all
/// have arrived (or whatever arrived, when the run ends), on a thread of its own.
fn collect(
    spec: &TestSpec,
    mut emit: impl FnMut(IntervalSample) + Send + 'static,
) -> (mpsc::Sender<IntervalSample>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<IntervalSample>();
    let workers = spec.workers() * spec.group_roles(true).len();
    // Named so the kernel cost profile charges it as a helper thread, not a data worker.
    let spawned = thread::Builder::new().name("ringperf-live".into()).spawn(move || {
        let mut pending: Vec<(u32, Vec<IntervalSample>)> = Vec::new();
        let mut merged = |samples: Vec<IntervalSample>| {
            let merged = ringperf_core::merge::intervals(samples.into_iter().map(|x| vec![x]).collect());
            emit(merged.into_iter().next().unwrap_or_default());
        };
        for s in rx.iter() {
            match pending.iter_mut().find(|p| p.0 == s.index) {
                Some(p) => p.1.push(s),
                None => pending.push((s.index, vec![s])),
            }
            while let Some(pos) = pending.iter().position(|p| p.1.len() >= workers) {
                let (_, samples) = pending.remove(pos);
                merged(samples);
            }
        }
        pending.sort_by_key(|p| p.0);
        for (_, samples) in pending {
            merged(samples);
        }
    });
    // As thread::spawn would: a host that cannot start one more thread cannot run the test.
    let handle = spawned.expect("starting the live printer's thread");
    (tx, handle)
}

impl Printer {
    /// Starts printing if -D or --json-stream was given, or by default for runs over 10 s
    /// on a terminal. JSON and CSV carry the series in the report instead.
    pub fn start(
        t: &TestArgs,
        spec: &TestSpec,
        format: Format,
        units: Units,
        stop: Stopper,
    ) -> Option<Printer> {
        if spec.interval_ms == 0 || matches!(format, Format::Json | Format::Csv) {
            return None;
        }
        let asked = t.stats.interval.is_some() || format == Format::JsonStream;
        let by_default = spec.duration_ms > 10_000 && std::io::stdout().is_terminal();
        if !(asked || by_default) {
            return None;
        }
        let mut lines = Lines { format, rr: spec.workload.is_transactional(), units, printed: 0 };
        let (tx, handle) = collect(spec, move |s| {
            if let Some(line) = lines.line(&s) {
                print_or_stop(&line, &stop);
            }
        });
        Some(Printer { tx, handle })
    }

    /// Hands each interval (the local workers' samples summed) to `emit` as it ends: for a
    /// caller with its own line format (the netperf front end).
    pub fn with(spec: &TestSpec, emit: impl FnMut(IntervalSample) + Send + 'static) -> Printer {
        let (tx, handle) = collect(spec, emit);
        Printer { tx, handle }
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

/// Prints an interval line; once standard output cannot take one (its reader is gone, the
/// disk is full), stops the run through `stop`, which tells the server and keeps what was
/// measured, and prints no more.
pub fn print_or_stop(line: &str, stop: &Stopper) {
    if crate::output::stdout_failed() {
        return;
    }
    if let Err(f) = crate::output::stdout("an interval line", line) {
        let why = if f.closed_pipe { "standard output was closed by its reader" } else { &f.message };
        stop.stop(&format!("stopped: {why}"));
    }
}

/// The shortest interval a text line shows: the remainder after the last tick may be a
/// sliver, or nothing at all when the window ends on a tick; below the millisecond the
/// lines print, its rate is noise (and a harness would divide by its 0.000 s).
pub const MIN_LINE_NS: u64 = 1_000_000;

/// Whether an interval gets a text line of its own (see [`MIN_LINE_NS`]).
pub fn worth_a_line(s: &IntervalSample) -> bool {
    s.duration_ns >= MIN_LINE_NS
}

/// The interval lines of one run in one format, numbered as they are printed.
struct Lines {
    format: Format,
    rr: bool,
    units: Units,
    printed: usize,
}

impl Lines {
    /// `s`'s line, or `None` for a text line's sliver of an interval. --json-stream
    /// carries every sample: its lines add up to the report's series.
    fn line(&mut self, s: &IntervalSample) -> Option<String> {
        let line = match self.format {
            Format::JsonStream => crate::render::json::interval_line(s, self.rr),
            _ if !worth_a_line(s) => return None,
            Format::Keyval => keyval(self.printed, s, self.rr, self.units),
            _ => human(s, self.rr, self.units),
        };
        self.printed += 1;
        Some(line)
    }
}

/// On a terminal: what runs, at once, and a bar under it moved by the clock, with the
/// iteration (of an iterated run) and the current rate as each interval sample arrives
/// (see [`progress`]). Both are erased when the run ends, so the report that follows reads
/// as it does without a terminal.
pub struct Status {
    tx: mpsc::Sender<IntervalSample>,
    handle: JoinHandle<()>,
    timed: progress::Timed,
    iteration: Arc<AtomicU32>,
}

impl Status {
    /// `heading` says what runs ("[3/8] zc/multishot", or the test's banner); `iterations`
    /// is how many runs at most (-i), `machine` whether the output is for a program.
    pub fn start(
        spec: &TestSpec,
        heading: &str,
        units: Units,
        iterations: u32,
        machine: bool,
    ) -> Option<Status> {
        if !progress::shown(machine) {
            return None;
        }
        let iterations = iterations.max(1);
        let total = Duration::from_millis(spec.duration_ms) * iterations;
        let timed = progress::Timed::start(heading, total, true);
        let rr = spec.workload.is_transactional();
        let iteration = Arc::new(AtomicU32::new(1));
        let (bar, at) = (timed.bar(), iteration.clone());
        let (tx, handle) = collect(spec, move |s| {
            let rate = if rr {
                format!("{:.1} trans/s", s.transactions_per_sec())
            } else {
                format!("{:.2} {}", units.convert(s.throughput_bits_per_sec()), units.label())
            };
            bar.set_message(match iterations {
                1 => rate,
                _ => format!("iteration {} of at most {iterations}: {rate}", at.load(Ordering::Relaxed)),
            });
        });
        Some(Status { tx, handle, timed, iteration })
    }

    pub fn sender(&self) -> mpsc::Sender<IntervalSample> {
        self.tx.clone()
    }

    /// Iteration `n` (from 1) ended: the next one is running.
    pub fn iteration_done(&self, n: u32) {
        self.iteration.store(n + 1, Ordering::Relaxed);
    }

    /// Prints `line` above the heading (e.g. an iteration's result), so it stays when the
    /// heading and the bar are erased.
    pub fn println(&self, line: &str) {
        self.timed.println(line);
    }

    /// Erases the bar and the heading above it, once the last sample is shown.
    pub fn finish(self) {
        drop(self.tx);
        let _ = self.handle.join();
        self.timed.finish();
    }
}

/// A short banner for the status heading (it must fit a terminal line, or erasing it in
/// place would leave its wrapped part): the test, where, how long, the engines.
pub fn heading(spec: &TestSpec, host: Option<&str>) -> String {
    let to = match host {
        Some(h) if h.parse::<std::net::Ipv6Addr>().is_ok() => format!("[{h}]"),
        Some(h) => h.to_string(),
        None => "embedded server".to_string(),
    };
    format!(
        "ringperf {} to {to}: {} s, {} flow(s), {}/{}",
        spec.netperf_name(),
        spec.duration_ms as f64 / 1e3,
        spec.flows,
        spec.local.send_engine.name(),
        spec.local.recv_engine.name()
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(index: u32, start_ms: u64, duration_ns: u64) -> IntervalSample {
        IntervalSample {
            index,
            start_ns: start_ms * 1_000_000,
            duration_ns,
            bytes_sent: 1_000_000,
            ..IntervalSample::default()
        }
    }

    /// A run whose window ends on a tick leaves an empty remainder, one that ends just
    /// after a tick a sliver: --keyval's last interval is neither; a remainder of a real
    /// span keeps its line and its number.
    #[test]
    fn keyval_lines_never_end_on_an_empty_interval() {
        let mut lines = Lines { format: Format::Keyval, rr: false, units: Units::parse("m"), printed: 0 };
        let series = [
            sample(0, 0, 500_000_000),
            sample(1, 500, 500_000_000),
            sample(2, 1000, 0),
            sample(3, 1000, 400_000),
            sample(4, 1000, 5_000_000),
        ];
        let out: Vec<Option<String>> = series.iter().map(|s| lines.line(s)).collect();
        assert!(out[0].as_ref().is_some_and(|l| l.contains("NETPERF_INTERVAL[0]=0.500")));
        assert!(out[1].as_ref().is_some_and(|l| l.contains("NETPERF_INTERVAL[1]=0.500")));
        assert_eq!((&out[2], &out[3]), (&None, &None), "no line for an empty interval or a sliver");
        assert!(out[4].as_ref().is_some_and(|l| l.contains("NETPERF_INTERVAL[2]=0.005")), "{:?}", out[4]);
        for l in out.iter().flatten() {
            assert!(!l.contains("=0.000\n"), "a 0-second interval: {l}");
        }
        let mut human = Lines { format: Format::Human, rr: false, units: Units::parse("m"), printed: 0 };
        assert_eq!(human.line(&sample(0, 1000, 0)), None);
        let mut stream =
            Lines { format: Format::JsonStream, rr: false, units: Units::parse("m"), printed: 0 };
        assert!(stream.line(&sample(0, 1000, 0)).is_some(), "--json-stream keeps the series whole");
    }
}
