//! Progress of a comparison on stderr while its runs go: on a terminal, a bar (runs done of
//! the total, the tool and workload running, the time left) with each run's result line
//! printed above it; elsewhere (the report to a file or a pipe, a log, CI) one plain line per run, so the log reads as it
//! did. The report itself goes to stdout, between comparisons, never under the bar.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{HumanDuration, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// What the comparisons that follow belong to (`all`'s "[3/9] rr 1 B, CPUs 0/1"), and how
/// long the work after them should take, for the bar's heading and its time left.
#[derive(Clone, Debug, Default)]
pub struct Context {
    pub heading: String,
    pub later: Duration,
}

static CONTEXT: Mutex<Option<Context>> = Mutex::new(None);

/// Sets the context of the comparisons that follow (`None`: a comparison on its own).
pub fn set_context(context: Option<Context>) {
    if let Ok(mut c) = CONTEXT.lock() {
        *c = context;
    }
}

fn context() -> Context {
    CONTEXT.lock().ok().and_then(|c| c.clone()).unwrap_or_default()
}

/// How often the bar redraws: between runs only the clock moves.
const TICK: Duration = Duration::from_millis(250);

/// The progress of one alternation of runs.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    context: Context,
    /// When the work should be over, in ms after `origin` (the bar's time left reads it).
    end_ms: Arc<AtomicU64>,
    origin: Instant,
}

impl Progress {
    /// `total` runs to come; a bar when both stdout and stderr are terminals (as the cli's
    /// progress: a report sent to a file or a pipe is a log, and its runs' lines stay plain).
    pub fn start(total: u64) -> Progress {
        Progress::new(total, std::io::stdout().is_terminal() && std::io::stderr().is_terminal())
    }

    fn new(total: u64, bar: bool) -> Progress {
        let context = context();
        let end_ms = Arc::new(AtomicU64::new(0));
        let origin = Instant::now();
        let bar = bar.then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let end = end_ms.clone();
            let left = move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let left = end.load(Ordering::Relaxed).saturating_sub(origin.elapsed().as_millis() as u64);
                let _ = write!(w, "{}", HumanDuration(Duration::from_millis(left)));
            };
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix}\n  [{bar:30}] {pos}/{len} runs, about {left} left  {msg}",
            ) {
                bar.set_style(style.progress_chars("=> ").with_key("left", left));
            }
            bar.set_prefix(if context.heading.is_empty() {
                "ringperf-bench".into()
            } else {
                context.heading.clone()
            });
            bar.enable_steady_tick(TICK);
            bar
        });
        Progress { bar, total, context, end_ms, origin }
    }

    /// Run `done + 1` of the total starts: `tool` on `work`, with `left` to go in this
    /// alternation (this run included).
    pub fn run_starts(&self, done: u64, tool: &str, work: &str, left: Duration) {
        let left = left + self.context.later;
        self.end_ms.store((self.origin.elapsed() + left).as_millis() as u64, Ordering::Relaxed);
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(format!("{tool}: {work}"));
            }
            None => {
                eprint!(
                    "ringperf-bench: run {}/{} {tool} {work} (about {} s left) ... ",
                    done + 1,
                    self.total,
                    left.as_secs()
                );
                let _ = std::io::stderr().flush();
            }
        }
    }

    /// The run that started ended with `outcome` (its result line, or its failure).
    pub fn run_ends(&self, done: u64, tool: &str, outcome: &str) {
        match &self.bar {
            Some(bar) => {
                bar.println(format!("ringperf-bench: run {}/{} {tool}: {outcome}", done + 1, self.total))
            }
            None => eprintln!("{outcome}"),
        }
    }

    /// Erases the bar (the report follows on stdout).
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a terminal there is no bar, and the context `all` sets reaches the time left
    /// of the comparisons that follow it, until it is taken away.
    #[test]
    fn plain_lines_off_a_terminal_and_the_context_carries_the_later_work() {
        set_context(Some(Context { heading: "[2/9] rr".into(), later: Duration::from_secs(60) }));
        let p = Progress::new(4, false);
        assert!(p.bar.is_none());
        assert_eq!(p.context.heading, "[2/9] rr");
        p.run_starts(0, "netperf", "TCP_RR 1 B", Duration::from_secs(10));
        let end = p.end_ms.load(Ordering::Relaxed);
        assert!((70_000..71_000).contains(&end), "{end} ms");
        p.finish();
        set_context(None);
        assert!(Progress::new(1, false).context.heading.is_empty());
    }

    /// A bar drawn to a hidden target still counts the runs.
    #[test]
    fn a_bar_counts_runs_done() {
        let p = Progress::new(3, true);
        let bar = p.bar.clone().expect("a bar");
        bar.set_draw_target(ProgressDrawTarget::hidden());
        p.run_starts(2, "iperf3", "TCP_STREAM 131072 B", Duration::from_secs(5));
        assert_eq!((bar.position(), bar.length()), (2, Some(3)));
        assert_eq!(bar.message(), "iperf3: TCP_STREAM 131072 B");
        p.finish();
    }
}
