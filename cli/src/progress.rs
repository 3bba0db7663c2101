//! Progress on a terminal for work that takes a while (a test, its iterations, a sweep's
//! points, a plan): what runs, a bar, and how long is left, on stderr. Silent when stdout is
//! not a terminal (the output is being kept: a file, a pipe, a harness) and for machine
//! output (--json and the like), so nothing but the report reaches what reads it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Whether progress is drawn: both stdout and stderr are terminals and the output is for a
/// reader (`machine` is false).
pub fn shown(machine: bool) -> bool {
    !machine && std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}

/// How often the bar moves: a run tells nothing between its samples, so the clock does.
const TICK: Duration = Duration::from_millis(200);

/// A bar over a known length of wall-clock time under a heading, moved by the clock, with a
/// message (the current rate, the iteration) beside it. Erased when finished, so the report
/// that follows reads as it does without a terminal.
pub struct Timed {
    bar: ProgressBar,
    done: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Timed {
    /// `total` is how long the work should take; past it, the bar waits at its end.
    pub fn start(heading: &str, total: Duration, shown: bool) -> Timed {
        let done = Arc::new(AtomicBool::new(false));
        if !shown {
            return Timed { bar: ProgressBar::hidden(), done, ticker: None };
        }
        let len = total.as_millis().max(1) as u64;
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let template =
            format!("{{prefix}}\n  [{{bar:30}}] {{done}} of {}, {{left}} left  {{msg}}", seconds(total));
        if let Ok(style) = ProgressStyle::with_template(&template) {
            // The position is the clock, so what is left is the length less it (indicatif's
            // own estimate extrapolates the first ticks' rate, and jumps).
            let left = |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let left = s.len().unwrap_or(0).saturating_sub(s.pos());
                let _ = w.write_str(&seconds(Duration::from_millis(left)));
            };
            let done = |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&seconds(Duration::from_millis(s.pos())));
            };
            bar.set_style(style.progress_chars("=> ").with_key("left", left).with_key("done", done));
        }
        bar.set_prefix(heading.to_string());
        let ticker = {
            let (bar, done) = (bar.clone(), done.clone());
            let started = Instant::now();
            thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    bar.set_position((started.elapsed().as_millis() as u64).min(len.saturating_sub(1)));
                    thread::park_timeout(TICK);
                }
            })
        };
        Timed { bar, done, ticker: Some(ticker) }
    }

    /// A clone of the bar, for a thread that sets its message.
    pub fn bar(&self) -> ProgressBar {
        self.bar.clone()
    }

    /// Prints `line` on stderr above the bar, where it stays (without a bar: just prints it).
    pub fn println(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Stops the clock and erases the bar and its heading.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}

/// A length as the bar says it: `8 s`, `2m 30s`.
pub fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{}m {:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_reads_in_seconds_then_minutes() {
        assert_eq!(seconds(Duration::from_millis(400)), "0 s");
        assert_eq!(seconds(Duration::from_secs(8)), "8 s");
        assert_eq!(seconds(Duration::from_secs(150)), "2m 30s");
    }

    /// Under `cargo test` stdout is captured or a pipe: nothing is drawn, and a hidden bar
    /// still prints the lines it is given (to stderr) and finishes.
    #[test]
    fn a_hidden_bar_draws_nothing_and_starts_no_clock() {
        let t = Timed::start("heading", Duration::from_secs(1), false);
        assert!(t.bar.is_hidden() && t.ticker.is_none());
        t.finish();
        assert!(!shown(true), "machine output is never given progress");
    }
}
