//! The default human report: short (a stream at most 12 lines, rr, crr and udp-rr at most
//! 14) and holding what matters (netperf's table, the engines in the header, how sure, the
//! tool overhead with its kernel share and the samples it rests on, the kernel's proof of
//! zero copy, one line of doubts); `-v` prints the rest, and the JSON stays whole.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use ringperf_cli::render::{doubt, human, HumanOptions, Units};
use ringperf_core::measure::profile::report;
use ringperf_core::report::SpliceReport;
use ringperf_core::spec::{DEFAULT_PROFILE_HZ, LIGHT_PROFILE_HZ};
use ringperf_core::TestReport;
use ringperf_tests::{at, ringperf, skip, ChildGuard};
use serde_json::Value;

/// The most lines a default stream report may take, and an rr, crr or udp-rr one.
const STREAM_LINES: usize = 12;
const RR_LINES: usize = 14;

/// Lines only `-v` prints: one side's ring, TCP_INFO, offloads, kernel counters.
const VERBOSE_ONLY: &[&str] = &[
    "  tool user-space overhead",
    "  ring: ",
    "  syscalls (no ring)",
    "  tcp: ",
    "  limits: ",
    "  egress ",
    "  cpu split: ",
    "  softirqs: ",
    "  interrupts of ",
    "  placement: ",
];

/// Runs `args` and checks the default report's form: at most `max` lines, the engines in
/// the header, `table` (a column heading of netperf's table), how sure, the tool overhead
/// with its kernel share and sample count, nothing of `-v`. Returns the output.
fn short_report(test: &str, args: &[&str], table: &str, max: usize) -> String {
    let out = ringperf!().run(args).success().stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() <= max, "{args:?}: {} lines, at most {max}:\n{out}", lines.len());
    let header = lines.first().copied().unwrap_or_default();
    assert!(
        header.starts_with("ringperf ")
            && header.contains("send engine ")
            && header.contains("receive engine "),
        "the header names no engines: {header}"
    );
    assert!(out.contains(table), "{args:?}: no netperf table ('{table}'):\n{out}");
    assert!(lines.iter().any(|l| l.starts_with("within run: ")), "{args:?}: no within-run interval:\n{out}");
    let overhead = lines.iter().find(|l| l.starts_with("tool overhead")).unwrap_or_else(|| {
        panic!("{args:?}: no tool overhead line:\n{out}");
    });
    if overhead.contains("profile unavailable") {
        skip(test, &format!("the kernel refused the profile here: {overhead}"));
    } else {
        for part in ["kernel io_uring ", "syscall entry/exit ", " % ± ", " busy samples"] {
            assert!(overhead.contains(part), "{args:?}: the tool overhead lacks '{part}': {overhead}");
        }
        assert!(!overhead.contains("not measured"), "{overhead}");
        // A figure measured from samples: a share of busy CPU, its interval and a count above 0
        // (the first side's, where the line gives both).
        let number = |text: Option<&str>| -> f64 {
            let word = text.unwrap_or_default();
            word.parse().unwrap_or_else(|e| panic!("'{word}' is no number ({e}): {overhead}"))
        };
        let share = number(overhead.split(" % ± ").next().and_then(|l| l.rsplit(' ').next()));
        let half = number(overhead.split_once(" % ± ").and_then(|(_, r)| r.split_whitespace().next()));
        assert!((0.0..=100.0).contains(&share) && half > 0.0, "{overhead}");
        let samples = number(overhead.split(" busy samples").next().and_then(|l| l.rsplit(' ').next()));
        assert!(samples > 0.0, "no busy samples under the figure: {overhead}");
        // Its parts (user space, io_uring, syscall entry/exit, helper threads) add up to it,
        // each printed to 0.1: the line leaves none of the tool's categories out.
        let first = overhead.split_once(" % ± ").map(|(_, r)| r).unwrap_or_default();
        let inside =
            first.split_once('(').and_then(|(_, r)| r.split_once(';')).map(|(p, _)| p).unwrap_or_default();
        let parts: Vec<f64> =
            inside.split(", ").map(|p| number(p.trim_end_matches(" %").rsplit(' ').next())).collect();
        assert!(parts.len() >= 3, "the parts of the tool overhead: {overhead}");
        let sum: f64 = parts.iter().sum();
        assert!(
            (sum - share).abs() <= 0.05 * parts.len() as f64 + 1e-9,
            "parts {parts:?} add to {sum}, not {share}: {overhead}"
        );
    }
    for v in VERBOSE_ONLY {
        assert!(!lines.iter().any(|l| l.contains(v)), "{args:?}: '{v}' is for -v:\n{out}");
    }
    out
}

#[test]
fn a_default_stream_report_is_at_most_12_lines_with_what_matters() {
    let test = "a_default_stream_report_is_at_most_12_lines_with_what_matters";
    short_report(test, &["stream", "-l", "1"], "Throughput", STREAM_LINES);
    short_report(test, &["udp-stream", "-l", "1"], "Throughput", STREAM_LINES);
}

#[test]
fn a_default_transaction_report_is_at_most_14_lines_with_its_round_trips() {
    let test = "a_default_transaction_report_is_at_most_14_lines_with_its_round_trips";
    for cmd in ["rr", "crr", "udp-rr"] {
        let out = short_report(test, &[cmd, "-l", "1"], "Trans.", RR_LINES);
        assert!(out.lines().any(|l| l.starts_with("round trip (us, ")), "{cmd}: no percentiles:\n{out}");
    }
}

#[test]
fn verbose_prints_what_the_default_leaves_out() {
    let out = ringperf!().run(&["rr", "-l", "0.5", "-v"]).success().stdout;
    for side in ["local ", "remote"] {
        for item in [
            "tool user-space overhead",
            "syscalls (no ring)",
            "tcp: ",
            "egress ",
            "cpu split: ",
            "placement: ",
        ] {
            assert!(
                out.lines().any(|l| l.starts_with(side) && l.contains(item)),
                "-v has no '{side}' line with '{item}':\n{out}"
            );
        }
    }
    assert!(out.lines().count() > RR_LINES, "-v is no longer than the default:\n{out}");
}

#[test]
fn zero_copy_that_loopback_copied_is_proven_and_doubted() {
    let test = "zero_copy_that_loopback_copied_is_proven_and_doubted";
    let out = short_report(test, &["stream", "-l", "0.5", "--send-engine", "zc"], "Throughput", STREAM_LINES);
    let proof =
        out.lines().find(|l| l.starts_with("zero copy: ")).unwrap_or_else(|| panic!("no proof:\n{out}"));
    assert!(proof.contains("local zc ") && proof.contains("the kernel copied"), "{proof}");
    let doubt =
        out.lines().find(|l| l.starts_with("doubtful: ")).unwrap_or_else(|| panic!("no doubt:\n{out}"));
    assert!(doubt.contains("copied zero copy") && doubt.contains("(local)"), "{doubt}");
    // Without a zero-copy engine there is nothing to prove.
    let plain = ringperf!().run(&["stream", "-l", "0.3"]).success().stdout;
    assert!(!plain.contains("zero copy"), "{plain}");
}

/// What the JSON of `r` says is doubtful, read apart from the renderer.
fn doubtful_by_json(r: &Value) -> Vec<String> {
    let mut why = Vec::new();
    for side in ["local", "remote"] {
        let s = &r[side];
        if s["socket"]["retransmits"].as_u64().unwrap_or(0) > 0 {
            why.push(format!("{side} retransmits"));
        }
        if s["cpu"]["system"]["steal_percent"].as_f64().unwrap_or(0.0) >= doubt::STEAL_PERCENT {
            why.push(format!("{side} steal"));
        }
        if s["profile"]["lost"].as_u64().unwrap_or(0) > 0 {
            why.push(format!("{side} lost samples"));
        }
        // The note's parts beyond its sample count and lost samples (said apart).
        let mut note = s["profile"]["note"].as_str().unwrap_or("").to_string();
        let busy = s["profile"]["busy_samples"].as_u64().unwrap_or(0);
        let lost = s["profile"]["lost"].as_u64().unwrap_or(0);
        for part in [report::few_samples_note(busy), Some(report::lost_note(lost))].into_iter().flatten() {
            note = note.replace(&part, "");
        }
        if !note.trim_matches(|c| c == ';' || c == ' ').is_empty() {
            why.push(format!("{side} profile note: {note}"));
        }
    }
    if r["summary"]["within_run"]["half_width_percent"].as_f64().unwrap_or(0.0) > doubt::NOISY_PERCENT {
        why.push("noisy".into());
    }
    if r["partial"].as_bool() == Some(true) {
        why.push("partial".into());
    }
    why
}

fn rendered(r: &TestReport) -> String {
    human::render(r, Units::parse("m"), &HumanOptions { banner: true, ..HumanOptions::default() })
}

/// The report as `-v` prints it.
fn rendered_verbose(r: &TestReport) -> String {
    human::render(
        r,
        Units::parse("m"),
        &HumanOptions { banner: true, verbosity: 1, ..HumanOptions::default() },
    )
}

fn doubt_line(text: &str) -> Option<&str> {
    text.lines().find(|l| l.starts_with("doubtful: "))
}

#[test]
fn the_doubt_line_names_what_the_report_holds_and_is_absent_without_it() {
    let text = ringperf!().run(&["rr", "-l", "0.5", "--json"]).success().stdout;
    let json: Value = serde_json::from_str(&text).expect("the report is JSON");
    let mut r: TestReport = ringperf_core::report_upgrade::parse(&text).expect("a report");
    // As it came: a doubt line exactly when the JSON holds a reason for one.
    let expected = doubtful_by_json(&json);
    assert_eq!(doubt_line(&rendered(&r)).is_some(), !expected.is_empty(), "{expected:?}:\n{}", rendered(&r));

    // Nothing doubtful: no line.
    r.summary.within_run = None;
    for s in [Some(&mut r.local), r.remote.as_mut()].into_iter().flatten() {
        s.socket.retransmits = Some(0);
        s.cpu.system.steal_percent = 0.0;
        if let Some(p) = s.profile.as_mut() {
            (p.lost, p.note) = (0, None);
        }
    }
    assert!(doubt::doubts(&r).is_empty(), "{:?}", doubt::doubts(&r));
    let clean = rendered(&r);
    assert_eq!(doubt_line(&clean), None, "{clean}");
    assert!(clean.lines().count() <= RR_LINES, "{clean}");

    // Each reason named, with its side.
    r.partial = true;
    r.partial_reason = Some("interrupted (Ctrl-C)".into());
    r.local.socket.retransmits = Some(3);
    r.remote.as_mut().expect("a remote side").cpu.system.steal_percent = 4.0;
    if let Some(p) = r.local.profile.as_mut() {
        p.lost = 7;
    }
    let text = rendered(&r);
    let line = doubt_line(&text).unwrap_or_else(|| panic!("no doubt line:\n{text}"));
    let mut parts = vec![
        "a partial run (interrupted (Ctrl-C))",
        "3 retransmitted segments (local 3, remote 0)",
        "steal 4.0 % of CPU time",
    ];
    if r.local.profile.as_ref().is_some_and(|p| p.unavailable.is_none()) {
        parts.push("the profile lost 7 samples (local)");
    }
    for part in parts {
        assert!(line.contains(part), "no '{part}' in: {line}");
    }
    // -v ends with the same line.
    let verbose = rendered_verbose(&r);
    assert_eq!(verbose.lines().last(), Some(line), "{verbose}");
}

/// Every key of the object at `path`, with `profile` left out.
fn keys(v: &Value, path: &str) -> BTreeSet<String> {
    let o = if path.is_empty() { v } else { at(v, path) };
    o.as_object()
        .unwrap_or_else(|| panic!("{path} is not an object"))
        .keys()
        .filter(|k| *k != "profile")
        .cloned()
        .collect()
}

#[test]
fn the_json_keeps_every_field_and_the_default_adds_a_light_profile() {
    let rp = ringperf!();
    let with = rp.run_json(&["stream", "-l", "0.3"]);
    let without = rp.run_json(&["stream", "-l", "0.3", "--no-profile"]);
    for path in ["", "spec", "local", "remote", "summary", "local.cpu"] {
        assert_eq!(keys(&with, path), keys(&without, path), "'{path}' differs beyond its profile");
    }
    for field in
        ["local.ring", "local.tcp", "local.network", "local.kernel", "remote.kernel", "remote.network"]
    {
        assert!(at(&with, field).is_object(), "{field}: {}", at(&with, field));
    }
    assert_eq!(at(&with, "spec.profile.enabled"), &Value::Bool(true));
    assert_eq!(at(&with, "spec.profile.hz").as_u64(), Some(u64::from(LIGHT_PROFILE_HZ)));
    assert!(at(&with, "local.profile").is_object() && at(&with, "remote.profile").is_object());
    assert!(without["spec"].get("profile").is_none() && at(&without, "local.profile").is_null());
    // --profile takes the full rate; --profile-hz says its own.
    let full = rp.run_json(&["stream", "-l", "0.3", "--profile"]);
    assert_eq!(at(&full, "spec.profile.hz").as_u64(), Some(u64::from(DEFAULT_PROFILE_HZ)));
    let own = rp.run_json(&["stream", "-l", "0.3", "--profile-hz", "99"]);
    assert_eq!(at(&own, "spec.profile.hz").as_u64(), Some(99));
}

/// How long a run against a server killed under it may take to print its partial report.
const PARTIAL_TIMEOUT: Duration = Duration::from_secs(20);

/// `args` against a standalone server for 20 s with an interval line every 0.2 s; the server
/// is killed once the first interval line shows traffic flowing. Returns the exit code and
/// the report printed after the interval lines.
fn run_with_the_server_killed(args: &[&str]) -> (Option<i32>, String) {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let mut all = args.to_vec();
    all.extend(["-H", "127.0.0.1", "-p", &port, "-l", "20", "-D", "0.2"]);
    let mut cmd = rp.command(&all);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut client = ChildGuard::spawn(cmd);
    let stdout = client.child_mut().stdout.take().expect("piped stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first =
        lines.recv_timeout(PARTIAL_TIMEOUT).unwrap_or_else(|e| panic!("{args:?}: no interval line: {e}"));
    assert!(first.starts_with("interval "), "{args:?}: the first line is no interval: {first}");
    server.child().kill();
    let status = client.wait_timeout(PARTIAL_TIMEOUT);
    let mut err = String::new();
    if let Some(mut e) = client.child_mut().stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = status.unwrap_or_else(|| panic!("{args:?}: the client ran on after its server died: {err}"));
    // The reader ends with the client's stdout: every line the client printed is in.
    let report: Vec<String> = lines.iter().filter(|l| !l.starts_with("interval ")).collect();
    (status.code(), report.join("\n") + "\n")
}

#[test]
fn a_run_whose_server_died_says_it_is_partial_in_the_doubt_line() {
    for (cmd, max) in [("stream", STREAM_LINES), ("rr", RR_LINES)] {
        let (code, report) = run_with_the_server_killed(&[cmd]);
        assert_eq!(code, Some(3), "{cmd}: a dead server is a peer error:\n{report}");
        assert!(report.contains("Throughput") || report.contains("Trans."), "{cmd}: no table:\n{report}");
        let line = doubt_line(&report).unwrap_or_else(|| panic!("{cmd}: no doubt line:\n{report}"));
        assert!(line.contains("a partial run ("), "{cmd}: the doubt line does not say partial: {line}");
        assert!(
            report.lines().count() <= max,
            "{cmd}: {} lines, at most {max}:\n{report}",
            report.lines().count()
        );
    }
}

/// A zero-copy rr whose server died: the partial notice, the zero-copy proof and the doubts
/// all fit in the rr limit (the notice was a line of its own, 15 in all).
#[test]
fn a_partial_zero_copy_rr_stays_within_its_limit() {
    let (code, report) = run_with_the_server_killed(&["rr", "--send-engine", "zc"]);
    assert_eq!(code, Some(3), "a dead server is a peer error:\n{report}");
    assert!(report.lines().any(|l| l.starts_with("zero copy: local zc ")), "no proof:\n{report}");
    let line = doubt_line(&report).unwrap_or_else(|| panic!("no doubt line:\n{report}"));
    assert!(line.contains("a partial run (") && line.contains("never reported"), "{line}");
    let n = report.lines().count();
    assert!(n <= RR_LINES, "{n} lines, at most {RR_LINES}:\n{report}");
}

/// Every warning a default report can carry at once (a missed confidence target over
/// iterations, a partial run with and without the server's side, a payload file smaller
/// than a send, zero copy the kernel copied) stays within the limit, each still named in
/// the one doubt line; -v keeps its own lines for them.
#[test]
fn every_combination_of_warnings_stays_within_the_limit() {
    for (cmd, max) in [("rr", RR_LINES), ("stream", STREAM_LINES)] {
        let args = [cmd, "-l", "0.3", "-i", "3,3", "-I", "99,0.01", "--send-engine", "zc", "--json"];
        let text = ringperf!().run(&args).success().stdout;
        let full: TestReport = ringperf_core::report_upgrade::parse(&text).expect("a report");
        assert!(full.confidence.as_ref().is_some_and(|c| !c.met), "{cmd}: the target was met");
        for (partial, remote, small_file) in
            [(false, true, false), (true, true, false), (true, false, false), (true, false, true)]
        {
            let mut r = full.clone();
            if partial {
                r.partial = true;
                r.partial_reason = Some("interrupted (Ctrl-C)".into());
            }
            if !remote {
                r.remote = None;
            }
            if small_file {
                let send = r.local.send.as_mut().expect("a send report");
                send.splice = Some(SpliceReport {
                    file_bytes: Some(100),
                    file_smaller_than_send: Some(1000),
                    ..SpliceReport::default()
                });
            }
            let text = rendered(&r);
            let case = format!("{cmd} partial {partial} remote {remote} small file {small_file}");
            let n = text.lines().count();
            assert!(n <= max, "{case}: {n} lines, at most {max}:\n{text}");
            assert!(text.lines().any(|l| l.starts_with("zero copy: ")), "{case}: no proof:\n{text}");
            let sure = text.lines().find(|l| l.contains("confidence: 3 iterations")).unwrap_or("");
            assert!(sure.contains("NOT met") && sure.contains("local CPU "), "{case}: {sure}\n{text}");
            let line = doubt_line(&text).unwrap_or_else(|| panic!("{case}: no doubt line:\n{text}"));
            let mut parts =
                vec!["the confidence target was not met (", "over the ±0.01 % asked for", "copied zero copy"];
            if partial {
                parts.push("a partial run (interrupted (Ctrl-C)");
            }
            if !remote {
                parts.push("the server's side never reported");
            }
            if small_file {
                parts.push("the payload file is 100 bytes, smaller than the 1000-byte send size");
            }
            for part in parts {
                assert!(line.contains(part), "{case}: no '{part}' in: {line}");
            }
            let verbose = rendered_verbose(&r);
            assert!(verbose.starts_with("!!! WARNING: confidence target not met: "), "{case}:\n{verbose}");
            assert_eq!(verbose.contains("\nPARTIAL RESULT: "), partial, "{case}:\n{verbose}");
        }
    }
}

/// With --mptcp the default report gains one `mptcp:` line and still keeps its limits.
#[test]
fn an_mptcp_report_keeps_its_limits_with_one_mptcp_line() {
    let test = "an_mptcp_report_keeps_its_limits_with_one_mptcp_line";
    let enabled = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").unwrap_or_default();
    if enabled.trim() != "1" {
        skip(test, "this kernel or namespace has no MPTCP (/proc/sys/net/mptcp/enabled is not 1)");
        return;
    }
    for (cmd, table, max) in
        [("stream", "Throughput", STREAM_LINES), ("rr", "Trans.", RR_LINES), ("crr", "Trans.", RR_LINES)]
    {
        let out = short_report(test, &[cmd, "--mptcp", "-l", "1"], table, max);
        let mptcp: Vec<&str> = out.lines().filter(|l| l.starts_with("mptcp: ")).collect();
        assert_eq!(mptcp.len(), 1, "{cmd}: not one mptcp line:\n{out}");
        assert!(mptcp[0].contains("connections MPTCP"), "{cmd}: {}", mptcp[0]);
    }
}
