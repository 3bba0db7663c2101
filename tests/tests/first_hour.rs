//! What a new user meets in the first hour: the bare command, mistyped and incomplete
//! command lines, bad flag pairs, and the outputs they read first. Each test is one rough
//! edge that was seen by running ringperf as a new user.

use ringperf_tests::{ringperf, PartialSweep, SweepEntry, TestReport};

#[test]
fn bare_ringperf_prints_a_short_usage_and_exits_2() {
    let o = ringperf!().run(&[]);
    assert_eq!(o.code(), 2, "{o}");
    assert!(o.stdout.is_empty(), "the usage of an error goes to stderr: {o}");
    let e = &o.stderr;
    assert!(e.contains("describe the kernel, not the tool."), "the sentence is cut: {o}");
    for cmd in ["stream", "rr", "engines", "sweep", "diff", "serve"] {
        assert!(e.lines().any(|l| l.trim_start().starts_with(cmd)), "'{cmd}' is not listed: {o}");
    }
    assert!(e.contains("ringperf stream") && e.contains("ringperf --help"), "no first commands: {o}");
    assert!(!e.contains("(see 'ringperf --help')"), "the old cut-off line is back: {o}");
}

#[test]
fn a_missing_positional_is_named_with_the_subcommand_help() {
    let rp = ringperf!();
    rp.run(&["diff", "a.json"]).failure(2, &["missing", "<B>", "'ringperf diff --help'"]);
    rp.run(&["plot", "a.json"]).failure(2, &["missing", "--output", "'ringperf plot --help'"]);
    rp.run(&["plot"]).failure(2, &["<INPUT>", "--output", "'ringperf plot --help'"]);
}

#[test]
fn a_bad_choice_lists_the_valid_values() {
    let line = ringperf!().run(&["stream", "-f", "x"]).failure(2, &["-f", "'x'", "'ringperf stream --help'"]);
    assert!(line.contains("k, m, g, K, M, G"), "the valid units are not listed: {line}");
    ringperf!().run(&["rr", "--send-engine", "fast"]).failure(2, &["--send-engine", "copy", "zc"]);
}

#[test]
fn unknown_flags_point_at_their_own_subcommand_help() {
    let rp = ringperf!();
    rp.run(&["probe", "--x"]).failure(2, &["--x", "'ringperf probe --help'"]);
    rp.run(&["stream", "--flwos", "2"])
        .failure(2, &["--flwos", "did you mean '--flows'", "'ringperf stream --help'"]);
    rp.run(&["sweep", "rr", "--nope"]).failure(2, &["--nope", "'ringperf sweep rr --help'"]);
}

/// Each bad pair: the flag, what is wrong with the pair, exit 2, nothing run.
#[test]
fn every_paired_flag_refuses_a_bad_pair() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["stream", "-i", "2,5"], &["-i", "MIN 5 is above MAX 2"]),
        (&["stream", "-i", "5,0"], &["-i", "MIN 0"]),
        (&["stream", "-i", "1,2,3"], &["-i", "more than two"]),
        (&["stream", "-I", "40,5"], &["-I", "confidence level 40"]),
        (&["stream", "-I", "99,0"], &["-I", "width 0"]),
        (&["stream", "-T", ","], &["-T", "names no cpu"]),
        (&["stream", "-T", "0,1,2"], &["-T", "more than two"]),
        (&["stream", "-s", ","], &["-s", "no size"]),
        (&["stream", "-S", "0,64K"], &["-S", "at least 1 byte"]),
        (&["rr", "-r", "1,1,1"], &["-r", "more than two"]),
        (&["rr", "-r", ","], &["-r", "no size"]),
        (&["crr", "--client-ports", "5000-4000"], &["--client-ports", "low to high"]),
        (&["crr", "--client-ports", "5000"], &["--client-ports", "LO-HI"]),
        (&["stream", "--recv-engine", "multishot", "--buf-count", "3"], &["--buf-count", "power of two"]),
        (&["stream", "--buf-size", "1G", "--buf-count", "4"], &["--buf-size", "buf-count x buf-size"]),
        (&["stream", "--sq-entries", "64", "--sq-batch", "128"], &["--sq-batch 128", "--sq-entries 64"]),
        (&["stream", "--cq-batch", "4"], &["--cq-batch", "--cq-wait-us"]),
        (&["stream", "-l", "1", "-D", "3"], &["-D 3", "-l 1"]),
        (&["stream", "-b", "1M", "--flow-rate", "2M"], &["--flow-rate", "-b"]),
        (&["sweep", "stream", "-m", "1K,2K", "-i", "2,5"], &["-i", "MIN 5 is above MAX 2"]),
        (&["sweep", "rr", "-r", "1,1:2,5,6"], &["-r", "more than two"]),
    ];
    for (args, needles) in cases {
        ringperf!().run(args).failure(2, needles);
    }
}

/// The pairs `engines` ran, as (send, recv) names from its JSON array.
fn engine_pairs(runs: &[TestReport]) -> Vec<(String, String)> {
    runs.iter()
        .map(|x| (x.spec.local.send_engine.name().to_string(), x.spec.local.recv_engine.name().to_string()))
        .collect()
}

#[test]
fn engines_default_is_each_engine_against_the_default_and_matrix_is_the_product() {
    let lists = ["--send-engines", "copy,zc", "--recv-engines", "recv,multishot"];
    let mut args = vec!["engines", "-l", "0.2", "-m", "16K", "-M", "16K"];
    args.extend(lists);
    let default = engine_pairs(&ringperf!().run_parsed::<Vec<TestReport>>(&args));
    let want: Vec<(String, String)> = [("copy", "multishot"), ("zc", "multishot"), ("copy", "recv")]
        .iter()
        .map(|(s, r)| (s.to_string(), r.to_string()))
        .collect();
    assert_eq!(default, want, "without --matrix: each engine against the other side's default");
    args.push("--matrix");
    let mut matrix = engine_pairs(&ringperf!().run_parsed::<Vec<TestReport>>(&args));
    assert_eq!(matrix.len(), 4, "--matrix: 2 x 2 pairs: {matrix:?}");
    matrix.sort();
    matrix.dedup();
    assert_eq!(matrix.len(), 4, "--matrix ran a pair twice");
}

/// Runs `args` against a served port for 20 s, kills the server once the run has gone a
/// second, and returns the client's exit code and stdout: a partial report whose server
/// side never came.
fn run_until_the_server_dies(args: &[&str]) -> (Option<i32>, String, String) {
    use std::io::Read;
    use std::process::Stdio;
    use std::time::Duration;
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let mut all = args.to_vec();
    all.extend(["-H", "127.0.0.1", "-p", &port, "-l", "20"]);
    let mut cmd = rp.command(&all);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut client = ringperf_tests::ChildGuard::spawn(cmd);
    assert!(server.wait_for_log("session started", Duration::from_secs(20)).is_some());
    std::thread::sleep(Duration::from_secs(1));
    server.child().kill();
    let status =
        client.wait_timeout(Duration::from_secs(15)).expect("the client ran on after its server died");
    let (mut out, mut err) = (String::new(), String::new());
    client.child_mut().stdout.take().expect("stdout").read_to_string(&mut out).expect("stdout");
    client.child_mut().stderr.take().expect("stderr").read_to_string(&mut err).expect("stderr");
    (status.code(), out, err)
}

#[test]
fn a_partial_report_does_not_print_the_missing_server_side_as_zero() {
    let (code, out, err) = run_until_the_server_dies(&["stream", "-m", "16K", "-M", "16K"]);
    assert_eq!(code, Some(3), "a dead server is a peer error: {out}\n{err}");
    // The default report says it in its doubt line (-v: a line under the banner too).
    assert!(
        out.lines().any(|l| l.starts_with("doubtful: a partial run (") && l.contains("never reported")),
        "not marked partial: {out}"
    );
    let header =
        out.lines().position(|l| l.starts_with("bytes")).unwrap_or_else(|| panic!("no table: {out}"));
    let data: Vec<&str> = out.lines().nth(header + 2).unwrap_or_default().split_whitespace().collect();
    assert_eq!(data.len(), 9, "the data line lost a column: {data:?}\n{out}");
    // Recv socket size (the server's), remote CPU and remote service demand were never reported.
    assert_eq!([data[0], data[6], data[8]], ["—"; 3], "a missing figure printed as a value: {data:?}");
    let local_cpu: f64 = data[5].parse().unwrap_or_else(|_| panic!("local CPU is not a number: {data:?}"));
    assert!(local_cpu > 0.0, "the local side's CPU was measured: {data:?}");

    let (code, out, err) = run_until_the_server_dies(&["stream", "-m", "16K", "-M", "16K", "--keyval"]);
    assert_eq!(code, Some(3), "{out}\n{err}");
    let value = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} missing: {out}"))
            .to_string()
    };
    for name in ["REMOTE_CPU_UTIL", "REMOTE_SD", "RSR_SIZE_END", "REMOTE_TOOL_OVERHEAD"] {
        assert_eq!(value(name), "", "{name} of a server that never reported must be empty: {out}");
    }
    assert!(!value("LOCAL_CPU_UTIL").is_empty(), "the local side was measured: {out}");
}

/// A server on ::1 is reached with `-H ::1` and `-H [::1]`, and the report names it
/// `[::1]:port`, in the banner and in the JSON.
#[test]
fn ipv6_hosts_are_accepted_bare_and_bracketed_and_printed_bracketed() {
    let test = "ipv6_hosts_are_accepted_bare_and_bracketed_and_printed_bracketed";
    if let Err(e) = std::net::TcpListener::bind("[::1]:0") {
        ringperf_tests::skip(test, &format!("this host has no ::1 ({e})"));
        return;
    }
    let rp = ringperf!();
    let server = ringperf_tests::Server::start(rp.command(&["serve", "--bind", "::1", "--port", "0"]));
    let port = server.port_arg();
    let want = format!("[::1]:{port}");
    for host in ["::1", "[::1]"] {
        let out =
            rp.run(&["stream", "-H", host, "-p", &port, "-l", "0.3", "-m", "16K", "-M", "16K"]).success();
        let banner = out.stdout.lines().next().unwrap_or_default();
        assert!(banner.contains(&format!("to {want}:")), "-H {host}: the banner lacks {want}: {banner}");
        let r = rp.run_report(&["rr", "-H", host, "-p", &port, "-l", "0.3"]);
        assert_eq!(r.server, want, "-H {host}: the JSON's server");
    }
    rp.run(&["stream", "-H", &format!("[::1]:{port}"), "-p", "1"]).failure(2, &[&want, "-p 1"]);
    rp.run(&["stream", "-H", "[::1"]).failure(2, &["[::1]"]);
}

/// Writes `v` to a file of this test process and returns its path.
fn saved(name: &str, v: &TestReport) -> String {
    let dir = std::env::temp_dir().join(format!("ringperf-first-hour-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(v).expect("JSON")).expect("write");
    p.to_string_lossy().into_owned()
}

#[test]
fn diff_shows_units_refuses_different_tests_and_flags_partial_reports() {
    let rp = ringperf!();
    let stream = rp.run_report(&["stream", "-l", "0.3", "-m", "16K", "-M", "16K"]);
    let rr = rp.run_report(&["rr", "-l", "0.3"]);
    let (s, r) = (saved("stream.json", &stream), saved("rr.json", &rr));

    rp.run(&["diff", &s, &r]).failure(2, &["TCP_STREAM", "TCP_RR", "same test"]);

    let out = rp.run(&["diff", &s, &s]).success().stdout;
    let row = |out: &str, name: &str| -> Vec<String> {
        let line =
            out.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} row: {out}"));
        line.split_whitespace().map(str::to_string).collect()
    };
    let tput = row(&out, "throughput");
    let mbits = stream.iterations[0].throughput_bits_per_sec / 1e6;
    assert_eq!(tput[1], format!("{mbits:.2}"), "throughput is not in 10^6bits/s: {tput:?}");
    assert_eq!(tput[3], "10^6bits/s", "{tput:?}");
    assert_eq!(row(&out, "local_sd")[3], "us/KB");
    assert_eq!(row(&out, "local_cpu")[3], "%");
    assert!(!out.lines().any(|l| l.starts_with("p50")), "a stream has no latency row: {out}");

    let out = rp.run(&["diff", &r, &r]).success().stdout;
    let p50 = row(&out, "p50");
    assert_eq!(p50[3], "us", "latency without its unit: {p50:?}");
    let p50_us = rr.iterations[0].p50_latency_ns.expect("iteration p50") as f64 / 1e3;
    assert_eq!(p50[1], format!("{p50_us:.1}"), "p50 not in us: {p50:?}");
    assert_eq!(row(&out, "local_sd")[3], "us/Tr");

    let mut partial = stream.clone();
    partial.partial = true;
    partial.partial_reason = Some("the server closed the control connection".into());
    partial.remote = None;
    partial.iterations[0].remote_cpu_percent = None;
    partial.iterations[0].remote_sd_us = None;
    let p = saved("partial.json", &partial);
    let out = rp.run(&["diff", &s, &p]).success().stdout;
    assert!(out.lines().any(|l| l.starts_with("B =") && l.contains("PARTIAL")), "B not flagged: {out}");
    assert!(out.contains("!!! B is partial"), "no partial warning: {out}");
    assert_eq!(row(&out, "remote_cpu")[2], "—", "a missing remote figure printed as a value: {out}");
    for f in [&s, &r, &p] {
        let _ = std::fs::remove_file(f);
    }
    let _ = std::fs::remove_dir(std::path::Path::new(&s).parent().expect("temp dir"));
}

/// Starts a 3-point sweep that writes `--output`, waits until the first point is in that
/// file, sends SIGINT, and returns (exit code, stdout, stderr, the --output file's text).
fn interrupted_sweep(tag: &str, extra: &[&str]) -> (Option<i32>, String, String, String) {
    use std::io::Read;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let out_file =
        std::env::temp_dir().join(format!("ringperf-first-hour-{tag}-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&out_file);
    let path = out_file.to_string_lossy().into_owned();
    let mut args = vec!["sweep", "stream", "-l", "2", "-m", "16K,32K,64K", "-M", "16K", "--output", &path];
    args.extend_from_slice(extra);
    let mut cmd = ringperf!().command(&args);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut sweep = ringperf_tests::ChildGuard::spawn(cmd);
    // Read both pipes as the sweep writes them: a --json sweep's output is larger than a
    // pipe's buffer, and a child blocked on a full pipe cannot exit.
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let stdout = reader(Box::new(sweep.child_mut().stdout.take().expect("stdout")));
    let stderr = reader(Box::new(sweep.child_mut().stderr.take().expect("stderr")));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done = std::fs::read_to_string(&out_file)
            .ok()
            .and_then(|t| serde_json::from_str::<Vec<SweepEntry>>(&t).ok())
            .map_or(0, |points| points.len());
        if done >= 1 {
            break;
        }
        assert!(sweep.try_status().is_none(), "the sweep ended before its first point was written");
        assert!(Instant::now() < deadline, "the first point never reached {path}");
        std::thread::sleep(Duration::from_millis(20));
    }
    sweep.signal(libc::SIGINT);
    let status = sweep.wait_timeout(Duration::from_secs(15)).expect("the sweep ran on after Ctrl-C");
    let out = stdout.join().expect("stdout reader");
    let err = stderr.join().expect("stderr reader");
    let file = std::fs::read_to_string(&out_file).expect("--output file");
    let _ = std::fs::remove_file(&out_file);
    (status.code(), out, err, file)
}

/// A partial sweep's JSON: `partial`, its reason, and the points it has; the first one whole.
fn check_partial_sweep(text: &str) -> PartialSweep {
    let v: PartialSweep = ringperf_tests::parse("a partial sweep", text);
    assert!(v.partial, "not marked partial: {text:.400}");
    assert!(v.partial_reason.contains("Ctrl-C"), "no reason: {text:.400}");
    let points = &v.points;
    assert!((1..3).contains(&points.len()), "a stopped 3-point sweep has 1 or 2 points: {}", points.len());
    assert_eq!(points[0].point.get("send_size"), Some("16K"));
    let first =
        points[0].report.as_ref().unwrap_or_else(|| panic!("the first point has no report: {text:.400}"));
    assert!(!first.partial, "the finished point is whole");
    assert!(first.local.bytes_sent > 0);
    v
}

#[test]
fn ctrl_c_stops_a_json_sweep_with_the_points_it_has_and_exit_130() {
    let (code, out, err, file) = interrupted_sweep("json", &["--json"]);
    assert_eq!(code, Some(130), "stdout: {out:.400}\nstderr: {err}");
    check_partial_sweep(&out);
    check_partial_sweep(&file);
    assert!(err.contains("partial result"), "stderr does not say why: {err}");
    // The partial file still draws.
    let svg = std::env::temp_dir().join(format!("ringperf-first-hour-partial-{}.svg", std::process::id()));
    let svg_path = svg.to_string_lossy().into_owned();
    let json = std::env::temp_dir().join(format!("ringperf-first-hour-partial-{}.json", std::process::id()));
    std::fs::write(&json, &file).expect("write");
    ringperf!().run(&["plot", &json.to_string_lossy(), "-o", &svg_path]).success();
    assert!(std::fs::read_to_string(&svg).expect("svg").contains("<svg"));
    let _ = (std::fs::remove_file(&svg), std::fs::remove_file(&json));
}

#[test]
fn ctrl_c_stops_a_sweep_table_with_the_points_it_has_and_exit_130() {
    let (code, out, err, file) = interrupted_sweep("table", &[]);
    assert_eq!(code, Some(130), "stdout: {out}\nstderr: {err}");
    let first = out.lines().find(|l| l.starts_with("16K")).unwrap_or_else(|| panic!("no row for 16K: {out}"));
    assert!(!first.contains("PARTIAL"), "the finished point is marked partial: {first}");
    assert!(!out.lines().any(|l| l.starts_with("64K")), "the last point cannot have run: {out}");
    assert!(
        out.contains("PARTIAL SWEEP") && out.contains("Ctrl-C"),
        "the table is not marked partial: {out}"
    );
    check_partial_sweep(&file);
}

/// On a terminal (a pty from util-linux `script`), a short run shows its banner and a
/// bar with the seconds done of the whole and left before the report, and `engines` says which pair runs
/// and how many remain. Through pipes (every other test) none of it appears.
#[test]
fn progress_shows_on_a_terminal_and_never_in_a_pipe() {
    let test = "progress_shows_on_a_terminal_and_never_in_a_pipe";
    let rp = ringperf!();
    let piped = rp.run(&["stream", "-l", "0.5", "-m", "16K", "-M", "16K"]).success();
    assert!(
        !piped.stderr.contains("/ 0.5 s") && !piped.stderr.contains('\r') && !piped.stderr.contains("\x1b["),
        "progress leaked into a pipe: {piped}"
    );
    let piped =
        rp.run(&["engines", "-l", "0.3", "--send-engines", "copy", "--recv-engines", "recv"]).success();
    assert!(!piped.stderr.contains("[1/1]"), "engines progress leaked into a pipe: {piped}");

    let in_pty = |args: &str| -> Option<String> {
        let line = format!("{} {args}", rp.path().display());
        let mut c = std::process::Command::new("script");
        c.args(["-qec", &line, "/dev/null"]);
        match ringperf_tests::try_run_with_timeout(c, ringperf_tests::RUN_TIMEOUT) {
            Ok(o) if o.status.success() => Some(o.stdout),
            Ok(o) => panic!("{line} under script failed: {o}"),
            Err(e) => {
                ringperf_tests::skip(test, &format!("util-linux `script` cannot run ({e})"));
                None
            }
        }
    };
    let Some(tty) = in_pty("stream -l 1 -m 16K -M 16K") else { return };
    let status = tty.find(" of 1 s, ").unwrap_or_else(|| panic!("no progress bar on a terminal: {tty:?}"));
    let banner =
        tty.find("TCP_STREAM to embedded server").unwrap_or_else(|| panic!("no banner at once: {tty:?}"));
    let report = tty.find("Throughput").unwrap_or_else(|| panic!("no report: {tty:?}"));
    assert!(banner < status && status < report, "the banner and status do not come before the report");
    assert!(tty.contains("\r\x1b[2K"), "the status line is not updated in place: {tty:?}");

    let Some(tty) =
        in_pty("engines -l 0.5 -m 16K -M 16K --send-engines copy,zc --recv-engines recv --recv-engine recv")
    else {
        return;
    };
    for step in ["[1/2] copy/recv (1 left", "[2/2] zc/recv (0 left"] {
        assert!(tty.contains(step), "engines did not show '{step}': {tty:?}");
    }
}

/// Each command's help lists the flags it uses, and a flag it does not use is refused with
/// where it applies, instead of being silently ignored.
#[test]
fn each_help_lists_only_its_own_flags_and_the_others_are_refused() {
    let rp = ringperf!();
    let help = |cmd: &[&str]| {
        let mut args = cmd.to_vec();
        args.push("--help");
        rp.run(&args).success().stdout
    };
    let lists = |text: &str, flag: &str| {
        text.lines().any(|l| l.trim_start().split([' ', ',', '=']).any(|w| w == flag))
    };
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (
            &["stream"],
            &["--send-engine", "--rcvlowat", "--send-depth", "-m"],
            &["--histogram", "--no-latency"],
        ),
        (&["sweep", "stream"], &["--send-engine", "--output"], &["--histogram", "--no-latency"]),
        (
            &["rr"],
            &["--histogram", "--no-latency", "--send-engine", "-r"],
            &["--rcvlowat", "--send-depth", "--recv-depth"],
        ),
        (
            &["crr"],
            &["--histogram", "--linger0", "--send-engine", "--recv-engine", "--verify", "--buf-count"],
            &["--rcvlowat", "--send-depth", "--recv-depth"],
        ),
        (&["udp-stream"], &["--gso", "--send-depth", "--send-engine"], &["--nodelay", "--cc", "--histogram"]),
        (&["udp-rr"], &["--timeout-us", "--histogram"], &["--nodelay", "--mss", "--verify", "--send-depth"]),
        (&["sendfile"], &["-F", "--recv-engine"], &["--send-engine", "--histogram"]),
    ];
    for (cmd, shown, hidden) in cases {
        let text = help(cmd);
        for f in *shown {
            assert!(lists(&text, f), "{cmd:?} --help lacks {f}:\n{text}");
        }
        for f in *hidden {
            assert!(!lists(&text, f), "{cmd:?} --help lists {f}, which it does not use:\n{text}");
        }
    }
    rp.run(&["stream", "--histogram"]).failure(2, &["--histogram", "does not apply to stream", "rr"]);
    rp.run(&["udp-stream", "--cc", "cubic"]).failure(2, &["--cc", "does not apply to udp-stream", "tcp"]);
    rp.run(&["sendfile", "--send-engine", "zc"]).failure(2, &["--send-engine", "splices"]);
    rp.run(&["rr", "--send-depth", "4"]).failure(2, &["--send-depth", "does not apply to rr"]);
}

/// `--version` says which build a report came from: the version and the git commit.
#[test]
fn version_names_the_version_and_the_commit_it_was_built_from() {
    let o = ringperf!().run(&["--version"]).success();
    let want = format!("ringperf {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(o.stdout.starts_with(&want), "{o}");
    let test = "version_names_the_version_and_the_commit_it_was_built_from";
    let git = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output();
    match git {
        Ok(g) if g.status.success() => {
            let commit = String::from_utf8_lossy(&g.stdout).trim().to_string();
            assert!(o.stdout.contains(&format!("(commit {commit}")), "not this checkout's {commit}: {o}");
        }
        _ => ringperf_tests::skip(test, "not in a git checkout (or no git): the commit cannot be compared"),
    }
}

/// The man pages and completion scripts are commands a user runs once to install them.
#[test]
fn man_pages_and_completions_print_and_a_wrong_name_is_refused() {
    let rp = ringperf!();
    let page = rp.run(&["man", "stream"]).success();
    assert!(page.stdout.lines().any(|l| l.starts_with(".TH ringperf-stream 1 ")), "{page}");
    rp.run(&["man", "strem"]).failure(2, &["'strem' is not a command", "stream"]);
    let bash = rp.run(&["completions", "bash"]).success();
    assert!(bash.stdout.contains("complete -F"), "{bash}");
    rp.run(&["completions", "tcsh"]).failure(2, &["tcsh", "bash", "zsh", "fish"]);
}
