//! `ringperf serve` against what was seen to hurt a real server: forged log lines, sessions
//! that add up to more memory than the host has, logged-in connections that sit on every
//! slot, unknown spec fields, a key file its group can read, reports too big for a frame,
//! a server that would not stop, a refusal that looked like a network fault, and IPv6.

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use clap::Parser;
use serde_json::json;

use ringperf_cli::args::Cli;
use ringperf_control::limits::session_memory;
use ringperf_core::setting::spell_settings;
use ringperf_tests::{
    check_stream_report, ringperf, run_with_timeout, Control, Reply, Ringperf, Server, TestReportExt,
};

const FORGED: &str = "ringperf serve: 10.66.66.66:4444: TCP_STREAM done (31337 bytes, 0 transactions)";

/// A log line starts with an RFC 3339 UTC timestamp with milliseconds.
fn timestamped(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && b[24] == b' '
        && [0..4, 5..7, 8..10, 11..13, 14..16, 17..19, 20..23]
            .into_iter()
            .all(|r| b[r].iter().all(u8::is_ascii_digit))
}

/// Every line of the log is one timestamped line with no control character in it, and the
/// forged text appears only inside another line, escaped.
fn log_is_clean(server: &Server) {
    let log = server.log();
    for line in &log {
        assert!(timestamped(line), "a log line without its timestamp (a forged line?): {line:?}");
        assert!(!line.chars().any(char::is_control), "a control character reached the log: {line:?}");
        if let Some(at) = line.find("10.66.66.66") {
            assert!(
                line[..at].ends_with("\\nringperf serve: "),
                "the forged text is not behind an escaped newline: {line:?}"
            );
        }
    }
}

#[test]
fn peer_text_reaches_the_log_and_replies_escaped_and_bounded() {
    let rp = ringperf!();
    let mut server = rp.serve();

    // Before authentication: an unknown message type carrying a forged line and escapes.
    let mut c = Control::connect(server.port());
    let kind = format!("x\n{FORGED}\x1b[2K\r\u{202e}");
    c.send_json(&json!({ "type": kind, "protocol": 2 }));
    let (k, msg) = c.expect_error();
    assert_eq!(k, "protocol");
    assert!(!msg.chars().any(char::is_control), "the reply carries control characters: {msg:?}");
    assert!(msg.contains("x\\nringperf serve: 10.66.66.66") && msg.contains("\\x1b[2K\\r\\u{202e}"), "{msg}");
    let line = server.wait_for_log("10.66.66.66", Duration::from_secs(5)).expect("the refusal is logged");
    assert!(line.contains("127.0.0.1:") && line.contains("rejected"), "{line}");

    // After authentication: an unknown spec field named with a newline, and a long one.
    let spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec");
    for (field, needle) in
        [(format!("y\n{FORGED}"), "y\\nringperf serve"), ("z".repeat(500), "(380 more bytes)")]
    {
        let mut c = Control::connect(server.port());
        c.handshake(None);
        let mut spec = spec.clone();
        spec[&field] = json!(1);
        c.send_json(&json!({"type": "test", "spec": spec}));
        let (_, msg) = c.expect_error();
        assert!(msg.contains(needle), "the reply lacks '{needle}': {msg}");
        assert!(!msg.chars().any(char::is_control), "{msg:?}");
        assert!(server.wait_for_log(needle, Duration::from_secs(5)).is_some(), "{:?}", server.log());
    }
    let long = server.wait_for_log("(380 more bytes)", Duration::from_secs(1)).expect("logged");
    assert!(!long.contains(&"z".repeat(121)), "an unbounded field name reached the log: {long}");

    log_is_clean(&server);
    server.assert_running();
}

/// The spec the CLI builds for `args` (a test command line), as the server will see it.
fn spec_of(args: &[&str]) -> ringperf_core::TestSpec {
    let cli = Cli::try_parse_from([&["ringperf"], args].concat()).expect("a valid command line");
    ringperf_cli::test_spec(&cli.command).expect("a valid spec")
}

#[test]
fn sessions_share_one_memory_budget() {
    let rp = ringperf!();
    let test = ["stream", "-M", "1M", "--verify", "--recv-engine", "recv"];
    let need = session_memory(&spec_of(&test));
    assert!(need >= 1 << 20, "the test's estimate is {need} bytes");
    // Room for two of these tests, not three.
    let budget = (need * 5 / 2).to_string();
    let mut server = rp.serve_with(&["--max-total-memory", &budget]);
    assert!(
        server.log().iter().any(|l| l.contains("of payload memory in all")),
        "the start line does not report the budget: {:?}",
        server.log()
    );
    let port = server.port_arg();
    let long = |rp: &Ringperf| {
        let (rp, port) = (rp.clone(), port.clone());
        thread::spawn(move || {
            let mut a = vec!["-H", "127.0.0.1", "-p", &port, "-l", "4", "--json"];
            a.splice(0..0, test);
            rp.run(&a)
        })
    };
    let first = long(&rp);
    assert!(server.wait_for_log("1 running tests", Duration::from_secs(20)).is_some(), "{:?}", server.log());
    let second = long(&rp);
    assert!(server.wait_for_log("2 running tests", Duration::from_secs(20)).is_some(), "{:?}", server.log());

    let mut a = test.to_vec();
    a.extend(["-H", "127.0.0.1", "-p", &port, "-l", "1"]);
    let line =
        rp.run(&a).failure(3, &["--max-total-memory", "in use by 2 sessions", "this test needs", "or wait"]);
    eprintln!("figures: third session refused with: {line}");

    for t in [first, second] {
        let r = t.join().expect("client").success().report();
        check_stream_report(&r, false);
    }
    // Both reservations were given back: the same test runs again.
    thread::sleep(Duration::from_millis(200));
    rp.run(&a).success();
    server.assert_running();
}

#[test]
fn silent_logged_in_sessions_cannot_lock_real_clients_out() {
    let rp = ringperf!();
    let mut server = rp.serve_with(&["--max-sessions-per-host", "8"]);
    // 20 connections from 127.0.0.2 log in and say nothing more.
    let other = Ipv4Addr::new(127, 0, 0, 2);
    let mut held = Vec::new();
    let mut refusals = Vec::new();
    for _ in 0..20 {
        let mut c = Control::connect_from(other, server.port());
        let ch = c.hello();
        c.answer(&ch, None);
        match c.read_reply() {
            Reply::Frame(v) if v["type"] == "welcome" => held.push(c),
            Reply::Frame(v) if v["type"] == "error" => {
                refusals.push(v["message"].as_str().unwrap_or("").to_string())
            }
            other => panic!("expected a welcome or a refusal, got {other:?}"),
        }
    }
    assert_eq!(held.len(), 8, "the per-host cap let {} sessions in", held.len());
    assert_eq!(refusals.len(), 12);
    for m in &refusals {
        // The wire names the setting; the client's front end spells it as its user types it.
        let m = spell_settings(m, ringperf_cli::args::spelling::native);
        assert!(
            m.contains("127.0.0.2") && m.contains("--max-sessions-per-host") && m.contains("8 sessions"),
            "{m}"
        );
    }
    // A real client from another address runs its test meanwhile.
    let port = server.port_arg();
    let r = rp.run_report(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.5"]);
    check_stream_report(&r, false);
    // The silent ones are told why they are dropped, and let go.
    for mut c in held {
        let (kind, msg) = c.expect_error();
        assert_eq!(kind, "peer", "{msg}");
        assert!(msg.contains("no test spec within 2 s"), "{msg}");
        c.expect_closed();
    }
    server.assert_running();
}

#[test]
fn the_session_limit_counts_silent_sessions_apart_from_running_tests() {
    let rp = ringperf!();
    let mut server = rp.serve_with(&["--max-sessions", "3"]);
    let held: Vec<Control> = (0..3)
        .map(|_| {
            let mut c = Control::connect(server.port());
            c.handshake(None);
            c
        })
        .collect();
    let port = server.port_arg();
    let o = rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]);
    let line = o.failure(3, &["--max-sessions", "0 running tests", "3 logged in and not yet sent a test"]);
    assert!(!line.contains("running 3 tests"), "{line}");
    // Once the deadline drops them, the same client gets in.
    for mut c in held {
        let (_, msg) = c.expect_error();
        assert!(msg.contains("no test spec"), "{msg}");
    }
    thread::sleep(Duration::from_millis(200));
    check_stream_report(&rp.run_report(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]), false);
    server.assert_running();
}

#[test]
fn unknown_spec_fields_are_refused_by_name() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec");
    let cases: [(&[&str], &str); 4] = [
        (&[], "frobnicate"),
        (&["ring"], "ring_turbo"),
        (&["remote"], "gpu_direct"),
        (&["remote", "socket_buffers"], "huge"),
    ];
    for (path, field) in cases {
        let mut s = spec.clone();
        let mut at = &mut s;
        for p in path {
            at = &mut at[*p];
        }
        at[field] = json!(true);
        let mut c = Control::connect(server.port());
        c.handshake(None);
        c.send_json(&json!({"type": "test", "spec": s}));
        let (kind, msg) = c.expect_error();
        assert_eq!(kind, "protocol", "{msg}");
        let want = format!(
            "unknown field `{field}` in the test spec: the client is newer than this server (protocol "
        );
        assert!(msg.contains(&want) && msg.ends_with("upgrade the server"), "{path:?}.{field}: {msg}");
        c.expect_closed();
    }
    // What this build's client sends, the server knows: every field of a full spec.
    let port = server.port_arg();
    let r = rp.run_report(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3", "--flows", "2"]);
    check_stream_report(&r, false);
    server.assert_running();
}

/// A key file in a fresh temporary directory with `mode`.
fn key_file(name: &str, mode: u32) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringperf-hardening-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("key");
    fs::write(&path, "a-test-key-of-thirty-two-bytes!!\n").expect("writing the key");
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

#[test]
fn a_key_file_its_group_or_others_can_touch_is_refused() {
    let rp = ringperf!();
    for mode in [0o640, 0o604, 0o660, 0o610] {
        let key = key_file(&format!("{mode:o}"), mode);
        let path = key.to_str().expect("path");
        let o = rp.run(&["serve", "--bind", "127.0.0.1", "--port", "0", "--psk-file", path]);
        let line = o.failure(2, &[&format!("chmod 600 {path}")]);
        assert!(line.contains(&format!("mode {mode:03o}")), "{line}");
    }
    let key = key_file("600", 0o600);
    let mut server = rp.serve_with(&["--psk-file", key.to_str().expect("path")]);
    server.assert_running();
}

#[test]
fn a_second_signal_stops_a_server_waiting_for_its_sessions() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let client = {
        let rp = rp.clone();
        thread::spawn(move || rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "15"]))
    };
    assert!(server.wait_for_log("accepted", Duration::from_secs(20)).is_some(), "{:?}", server.log());
    server.child().signal(libc::SIGINT);
    let line = server.wait_for_log("press Ctrl-C again", Duration::from_secs(10));
    assert!(
        line.is_some_and(|l| l.contains("1 session")),
        "no hint after the first Ctrl-C: {:?}",
        server.log()
    );
    server.child().signal(libc::SIGINT);
    let status = server
        .child()
        .wait_timeout(Duration::from_secs(10))
        .expect("the second Ctrl-C did not stop the server");
    assert_eq!(status.code(), Some(130), "{:?}", server.log());
    // The client's test was cut short by the server's exit: it says so.
    let o = client.join().expect("client");
    assert_eq!(o.code(), 3, "{o}");
}

#[test]
fn a_client_refused_by_the_allow_list_is_told_so() {
    let rp = ringperf!();
    let mut server = rp.serve_with(&["--allow", "198.18.0.0/15"]);
    let port = server.port_arg();
    let o = rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]);
    o.failure(3, &["refused this client", "--allow list"]);
    server.assert_running();
}

#[test]
fn a_keyless_server_beyond_loopback_warns_at_start() {
    let rp = ringperf!();
    let open = Server::start(rp.command(&["serve", "--bind", "0.0.0.0", "--port", "0"]));
    let warning = open.log().into_iter().find(|l| l.contains("warning: no key"));
    let warning = warning.unwrap_or_else(|| panic!("no warning: {:?}", open.log()));
    assert!(warning.contains("anyone who can reach") && warning.contains("use --psk-file"), "{warning}");

    let local = rp.serve();
    assert!(!local.log().iter().any(|l| l.contains("warning")), "{:?}", local.log());
    let key = key_file("warn", 0o600);
    let keyed = Server::start(rp.command(&[
        "serve",
        "--bind",
        "0.0.0.0",
        "--port",
        "0",
        "--psk-file",
        key.to_str().expect("path"),
    ]));
    assert!(!keyed.log().iter().any(|l| l.contains("warning")), "{:?}", keyed.log());
}

#[test]
fn serve_listens_on_both_families_by_default() {
    if TcpListener::bind("[::1]:0").is_err() {
        ringperf_tests::skip("serve_listens_on_both_families_by_default", "this host has no IPv6 loopback");
        return;
    }
    let rp = ringperf!();
    let mut server = Server::start(rp.command(&["serve", "--port", "0"]));
    let line = server.log().into_iter().find(|l| l.contains("listening on")).expect("listening line");
    assert!(line.ends_with(&format!("listening on [::]:{}", server.port())), "{line}");
    let port = server.port_arg();
    for host in ["127.0.0.1", "::1"] {
        let r = rp.run_report(&["stream", "-H", host, "-p", &port, "-l", "0.3"]);
        check_stream_report(&r, false);
        assert!(!r.partial);
    }
    // An IPv4 client is logged as itself, not as ::ffff:127.0.0.1.
    let log = server.log();
    assert!(log.iter().any(|l| l.contains(" 127.0.0.1:") && l.contains("session started")), "{log:?}");
    assert!(log.iter().any(|l| l.contains(" [::1]:") && l.contains("session started")), "{log:?}");
    assert!(!log.iter().any(|l| l.contains("::ffff:")), "{log:?}");
    server.assert_running();

    let help = rp.run(&["serve", "--help"]).success().stdout;
    assert!(
        help.contains("[::]") && help.contains("0.0.0.0"),
        "--help does not explain the default bind: {help}"
    );
}

#[test]
fn serve_help_shows_sizes_with_units_and_every_default() {
    let rp = ringperf!();
    let help = rp.run(&["serve", "--help"]).success().stdout;
    // clap wraps long lines: compare with the wrapping undone.
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "[default: 64M]",
        "[default: 1G]",
        "[default: 12866]",
        "[default: 64]",
        "[default: 8]",
        "[default: 128]",
        "[default: 86400]",
        "[default: 4096]",
        "[default: a quarter of MemTotal]",
        "[default: none]",
        "[default: no key]",
        "[default: everyone]",
    ] {
        assert!(help.contains(want), "serve --help lacks '{want}':\n{help}");
    }
    assert!(!help.contains("67108864") && !help.contains("1073741824"), "raw byte counts in --help:\n{help}");
}

#[test]
fn a_report_of_thousands_of_flows_arrives_whole() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    // 3500 flows made a server report of 1.17 MB, over the 1 MiB frame every other message has.
    let o = rp.run(&[
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "--flows",
        "3500",
        "--threads",
        "2",
        "-l",
        "1",
        "--json",
    ]);
    let r = o.success().report();
    assert!(!r.partial, "{:?}", r.partial_reason);
    check_stream_report(&r, false);
    assert_eq!(r.remote().flows.len(), 3500);
    let report_bytes = serde_json::to_vec(r.remote()).expect("JSON").len();
    eprintln!("figures: the server's report of 3500 flows: {report_bytes} bytes");
    assert!(
        report_bytes > 1 << 20,
        "the report fit the old frame anyway ({report_bytes} bytes): a test of nothing"
    );
    server.assert_running();
}

/// The interval floor is 10 ms (/proc/stat ticks are 10 ms: shorter samples would read
/// no CPU), so 10,000 samples take at least 100 s; a loaded host slips a few ticks (9,683
/// in 102 s was seen, 8,789 with two compilers running), hence 125 s. The one long test of the suite, kept light by pacing.
#[test]
fn a_run_with_ten_thousand_interval_samples_reports_whole() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let cmd = rp.command(&[
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-l",
        "125",
        "-D",
        "0.01",
        "-b",
        "10m",
        "--json",
    ]);
    let r = run_with_timeout(cmd, Duration::from_secs(180)).success().report();
    assert!(!r.partial, "{:?}", r.partial_reason);
    check_stream_report(&r, false);
    for (side, x) in r.sides() {
        let n = x.intervals.len();
        eprintln!("figures: {side} interval samples: {n}");
        assert!(n >= 10_000, "{side}: {n} interval samples, not the 10,000 this test is about");
    }
    let report_bytes = serde_json::to_vec(r.remote()).expect("JSON").len();
    assert!(report_bytes > 1 << 20, "the server's report fit the old frame anyway ({report_bytes} bytes)");
    server.assert_running();
}

#[test]
fn a_spec_whose_report_could_not_be_carried_is_refused_up_front() {
    let rp = ringperf!();
    let o = rp.run(&["stream", "-l", "86400", "-D", "0.01"]);
    o.failure(2, &["8640000 interval samples", "-D 0.864 or more"]);
    let mut server = rp.serve();
    let mut c = Control::connect(server.port());
    c.handshake(None);
    let mut spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec");
    spec["duration_ms"] = json!(86_400_000u64);
    spec["interval_ms"] = json!(10);
    c.send_json(&json!({"type": "test", "spec": spec}));
    let (kind, msg) = c.expect_error();
    assert_eq!(kind, "usage", "{msg}");
    assert!(msg.contains("interval samples"), "{msg}");
    server.assert_running();
}
