//! Progress on a terminal: a test, its iterations and a sweep's points show a bar and how
//! long is left on stderr when stdout and stderr are a terminal, and nothing of it reaches
//! a pipe, a file or --json. The terminal is a pseudo-terminal from util-linux's `script`,
//! whose output is everything the program wrote to it.

use std::process::Command;

use ringperf_tests::{ringperf, run_with_timeout, skip, RUN_TIMEOUT};

/// What a bar line says (see the CLI's progress module): "2 s of 5 s, 3 s left".
const BAR: &str = " s left";

/// Runs the shell command `line` with a pseudo-terminal as its terminal, and returns what
/// reached the terminal; None (after saying SKIPPED) without `script`.
fn on_terminal(test: &str, line: &str) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        skip(test, "util-linux's `script` is not installed (apt-get install util-linux): no pseudo-terminal to run on");
        return None;
    }
    let mut c = Command::new("script");
    // -q: no "Script started" lines; -e: its exit code is the command's.
    c.args(["-qec", line, "/dev/null"]);
    let o = run_with_timeout(c, RUN_TIMEOUT).success();
    Some(o.stdout)
}

fn bin() -> String {
    ringperf!().path().display().to_string()
}

#[test]
fn a_test_on_a_terminal_shows_its_bar_and_iterations() {
    let test = "a_test_on_a_terminal_shows_its_bar_and_iterations";
    let Some(out) = on_terminal(test, &format!("'{}' rr -l 0.6 -i 2,2", bin())) else { return };
    assert!(out.contains(BAR), "no bar on a terminal: {out}");
    assert!(out.contains("of 1 s,"), "the bar does not say the length of both iterations: {out}");
    assert!(out.contains("iteration 1 of at most 2"), "the bar does not say the iteration: {out}");
    assert!(out.contains("Trans."), "the report is missing: {out}");
}

#[test]
fn no_progress_reaches_a_pipe_or_json() {
    let test = "no_progress_reaches_a_pipe_or_json";
    let bin = bin();
    // stdout a pipe, stderr the terminal: the output is being kept, so no bar at all.
    let Some(out) = on_terminal(test, &format!("'{bin}' rr -l 0.6 | cat")) else { return };
    assert!(out.contains("Trans."), "the report is missing: {out}");
    assert!(!out.contains(BAR), "a bar with stdout a pipe: {out}");
    // Both a terminal, but --json: for a program, so no bar either.
    let out = on_terminal(test, &format!("'{bin}' rr -l 0.6 --json")).unwrap_or_default();
    assert!(out.contains("\"schema_version\""), "no JSON: {out}");
    assert!(!out.contains(BAR), "a bar with --json: {out}");
}

#[test]
fn a_sweep_on_a_terminal_says_which_point_and_how_long_is_left() {
    let test = "a_sweep_on_a_terminal_says_which_point_and_how_long_is_left";
    let bin = bin();
    let sweep = format!("'{bin}' sweep rr -l 1 -r 1:64");
    let Some(out) = on_terminal(test, &sweep) else { return };
    assert!(out.contains("[1/2] ") && out.contains("1 left after this, about 1 s"), "{out}");
    assert!(out.contains("[2/2] ") && out.contains("0 left after this, about 0 s"), "{out}");
    assert!(out.contains(BAR), "no bar: {out}");
    let out = on_terminal(test, &format!("{sweep} > /dev/null")).unwrap_or_default();
    assert!(!out.contains("[1/2]") && !out.contains(BAR), "progress with stdout kept: {out}");
}
