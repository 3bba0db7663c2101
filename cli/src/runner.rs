//! The one way the CLI runs tests: single runs, `engines` and `sweep` all go through a
//! [`Runner`], which owns Ctrl-C for the whole command, shows progress while each run goes
//! (interval lines, or a status line on a terminal), passes the key, and turns a partial
//! report into its exit code. The drivers only decide what to run and how to render it.

use ringperf_control::auth::Psk;
use ringperf_control::{run_iterations, RunOptions};
use ringperf_core::measure::confidence::ConfidenceTarget;
use ringperf_core::{Error, TestReport, TestSpec};

use crate::args::TestArgs;
use crate::interrupt::{Interrupt, Stopper};
use crate::psk::client_psk;
use crate::{live, render, target};

/// How a run shows progress while it goes.
pub enum Progress<'a> {
    /// A status line on a terminal under this heading, and nothing else.
    Status(String),
    /// A single test's: interval lines when they print (-D, long runs on a terminal),
    /// otherwise a status line under the test's banner.
    Test(render::Format, &'a TestArgs),
    /// netperf's: the lines of this printer, if any (demo mode), and never a status line.
    Lines(Option<live::Printer>),
}

/// Sees each iteration's report (its number from 1) with a way to print a line above the
/// status line.
pub type EachIteration<'a> = dyn FnMut(u32, &TestReport, &dyn Fn(&str)) + 'a;

/// Ctrl-C and the key for one command, however many runs it makes.
pub struct Runner {
    stop: Interrupt,
    psk: Option<Psk>,
    units: render::Units,
}

impl Runner {
    /// Reads the key of `t` (--psk-file or RINGPERF_PSK) and installs the Ctrl-C handler:
    /// the first press stops the current run, which still reports what it measured; the
    /// command's later runs are not started.
    pub fn new(t: &TestArgs) -> Result<Runner, Error> {
        let stop = Interrupt::install()?;
        Ok(Runner { stop, psk: client_psk(t)?, units: render::Units::parse(&t.units) })
    }

    /// True once Ctrl-C (or SIGTERM, or SIGHUP) came.
    pub fn stopped(&self) -> bool {
        self.stop.fired()
    }

    /// Runs `spec` against the target of `t` to `confidence`, showing `progress`;
    /// `each` sees every iteration's report.
    pub fn run(
        &self,
        spec: &TestSpec,
        t: &TestArgs,
        confidence: Option<ConfidenceTarget>,
        progress: Progress<'_>,
        each: &mut EachIteration<'_>,
    ) -> Result<TestReport, Error> {
        let mut quiet = false;
        let (printer, heading) = match progress {
            Progress::Status(heading) => (None, heading),
            Progress::Lines(printer) => {
                quiet = true;
                (printer, String::new())
            }
            Progress::Test(format, t) => (
                live::Printer::start(t, spec, format, self.units, self.stop.stopper()),
                live::heading(spec, t.host.as_ref().map(|h| h.host.as_str())),
            ),
        };
        // Interval lines are progress already; without them a terminal gets a status line
        // (none for machine output, nor when stdout is kept).
        let machine = render::Format::of(t) != render::Format::Human;
        let iterations = confidence.map_or(1, |c| c.max_iterations);
        let status = if printer.is_none() && !quiet {
            live::Status::start(spec, &heading, self.units, iterations, machine)
        } else {
            None
        };
        let opts = RunOptions {
            live: printer
                .as_ref()
                .map(live::Printer::sender)
                .or_else(|| status.as_ref().map(live::Status::sender)),
            level: None,
            psk: self.psk.clone(),
            interrupt: Some(self.stop.fd()),
            server_in_process: false,
            before_go: None,
            peer_must_prove_key: false,
            local_bind: t.local_bind,
        };
        let println = |line: &str| match &status {
            Some(s) => s.println(line),
            None => eprintln!("{line}"),
        };
        // A third-party run's samples are the agent's: they arrive with its report, and
        // print then, in order, instead of as the run goes.
        let replay = printer.as_ref().map(live::Printer::sender);
        let result = run_iterations(spec, &target(t)?, &opts, confidence, &mut |n, r| {
            if let (Some(tx), Some(_)) = (&replay, &r.client) {
                for s in &r.local.intervals {
                    let _ = tx.send(s.clone());
                }
            }
            each(n, r, &println);
            if let Some(s) = &status {
                s.iteration_done(n);
            }
        });
        drop(replay);
        drop(opts);
        if let Some(p) = printer {
            p.finish();
        }
        if let Some(s) = status {
            s.finish();
        }
        let mut report = result?;
        report.server = render::socket_addr(&report.server);
        // The engine says Ctrl-C for whatever came on the interrupt pipe.
        if let (true, Some(why)) = (report.partial, self.stop.stopped_because()) {
            report.partial_reason = Some(why);
        }
        Ok(report)
    }

    /// Stops the current run as Ctrl-C does (see [`Stopper`]).
    pub fn stopper(&self) -> Stopper {
        self.stop.stopper()
    }

    /// For a partial report: says why on stderr and returns the exit code (130 after
    /// Ctrl-C, else 3: the peer or the network failed).
    pub fn partial(&self, report: &TestReport) -> Option<i32> {
        if !report.partial {
            return None;
        }
        let why = report.partial_reason.as_deref().unwrap_or("the run did not finish");
        eprintln!("ringperf: partial result: {why}");
        Some(if self.stop.fired() { 130 } else { 3 })
    }
}
