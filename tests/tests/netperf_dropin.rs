//! ringperf as a drop-in netperf (issue 20): linked as `netperf` and `netserver` it takes
//! their command lines and answers in netperf's output contract, so harnesses built on
//! netperf run unchanged. The flent tests run flent itself (tools/test installs it from
//! PyPI into ~/.cache/ringperf-flent) against `ringperf serve` on loopback.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use ringperf_cli::{netperf_spec, spec_from_args};
use ringperf_tests::{ringperf, run_with_timeout, skip, ChildGuard, Outcome, Server};
use serde_json::Value;

/// A fresh directory under the target dir's temp area, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("ringperf-netperf-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A directory holding `netperf` and `netserver` links to the binary under test, made
/// by `ringperf install-links`.
fn links(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    let dir_s = dir.0.to_string_lossy().to_string();
    ringperf!().run(&["install-links", &dir_s]).success();
    dir
}

/// The `netperf` link with `args`, to run.
fn netperf_command(dir: &TempDir, args: &[&str]) -> Command {
    let mut cmd = Command::new(dir.0.join("netperf"));
    cmd.args(args);
    cmd
}

fn netperf(dir: &TempDir, args: &[&str]) -> Outcome {
    run_with_timeout(netperf_command(dir, args), Duration::from_secs(45))
}

/// `netserver -D` (the link) on 127.0.0.1 with an ephemeral port.
fn netserver(dir: &TempDir) -> Server {
    let mut cmd = Command::new(dir.0.join("netserver"));
    cmd.args(["-D", "-L", "127.0.0.1", "-p", "0"]);
    Server::start(cmd)
}

/// The links in a directory named after `tag`, a `netserver` of them, and its port as -p
/// takes it: where most tests here start.
fn serving(tag: &str) -> (TempDir, Server, String) {
    let dir = links(tag);
    let server = netserver(&dir);
    let port = server.port_arg();
    (dir, server, port)
}

/// The KEY=VALUE lines of netperf's -k output (indexed interim keys left out).
fn keyvals(stdout: &str) -> HashMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| !k.ends_with(']'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn num(kv: &HashMap<String, String>, key: &str) -> f64 {
    let v = kv.get(key).unwrap_or_else(|| panic!("no {key} in {kv:?}"));
    v.parse().unwrap_or_else(|_| panic!("{key}={v} is not a number"))
}

/// `netperf -P 0 -H 127.0.0.1 -p PORT -t TEST -l -COUNT -- OPTIONS -k KEYS`: a run that a
/// count (a negative -l) ends. Its -k values, and what it printed.
fn counted(
    dir: &TempDir,
    port: &str,
    test: &str,
    count: &str,
    options: &[&str],
    keys: &str,
) -> (HashMap<String, String>, Outcome) {
    let l = format!("-{count}");
    let mut args = vec!["-P", "0", "-H", "127.0.0.1", "-p", port, "-t", test, "-l", &l, "--"];
    args.extend_from_slice(options);
    args.extend(["-k", keys]);
    let out = netperf(dir, &args).success();
    (keyvals(&out.stdout), out)
}

/// A counted run ended at its count, long before the cap on its length.
fn assert_ended_by_count(kv: &HashMap<String, String>, test: &str, out: &Outcome) {
    let cap = ringperf_cli::netperf::COUNT_CAP_SECS as f64;
    assert!(num(kv, "ELAPSED_TIME") < cap / 2.0, "{test}: it ran to the cap, not to the count: {out}");
}

/// Command lines from netperf's manual, each next to the native command line that means
/// the same: both parse to one spec.
#[test]
fn netperf_manual_lines_parse_to_the_native_spec() {
    let pairs: &[(&str, &str)] = &[
        (
            "netperf -H 192.0.2.1 -t TCP_STREAM -l 30 -- -m 32K -s 128K -S 128K",
            "ringperf stream -H 192.0.2.1 -p 12865 -l 30 -m 32K -s 128K -S 128K",
        ),
        ("netperf -H 192.0.2.1 -t TCP_MAERTS -l 5", "ringperf stream --reverse -H 192.0.2.1 -p 12865 -l 5"),
        (
            "netperf -t TCP_SENDFILE -H 192.0.2.1 -F /etc/hostname -- -m 64K",
            "ringperf sendfile -H 192.0.2.1 -p 12865 -F /etc/hostname -m 64K",
        ),
        ("netperf -t TCP_RR -H 192.0.2.1 -- -r 32,1024", "ringperf rr -H 192.0.2.1 -p 12865 -r 32,1024"),
        (
            "netperf -t TCP_RR -H 192.0.2.1 -i 10,3 -I 99,5 -- -b 7 -D",
            "ringperf rr -H 192.0.2.1 -p 12865 -i 10,3 -I 99,5 --burst 8 --nodelay",
        ),
        ("netperf -t TCP_CRR -H 192.0.2.1 -- -r 100,200", "ringperf crr -H 192.0.2.1 -p 12865 -r 100,200"),
        ("netperf -t UDP_STREAM -H 192.0.2.1 -- -m 1472", "ringperf udp-stream -H 192.0.2.1 -p 12865 -m 1472"),
        (
            "netperf -t UDP_RR -H 192.0.2.1 -Y AF41,AF41 -- -r 64,64 -e 2",
            "ringperf udp-rr -H 192.0.2.1 -p 12865 --tos 0x88 -r 64,64 --timeout-us 2000000",
        ),
        ("netperf -t omni -p 20000 -T 0,1", "ringperf stream -H 127.0.0.1 -p 20000 -T 0,1"),
        ("netperf -t omni -H 192.0.2.1 -- -d rr -r 64,64", "ringperf rr -H 192.0.2.1 -p 12865 -r 64,64"),
        ("netperf -t omni -H 192.0.2.1 -- -d maerts", "ringperf stream --reverse -H 192.0.2.1 -p 12865"),
        ("netperf -t TCP_MAERTS -l -1M", "ringperf stream --reverse -H 127.0.0.1 -p 12865 --bytes 1M -l 600"),
        ("netperf -t TCP_RR -l -1000 -- -b 3", "ringperf rr -H 127.0.0.1 -p 12865 --transactions 1000 -l 600 --burst 4"),
        ("netperf -t TCP_CRR -l -500", "ringperf crr -H 127.0.0.1 -p 12865 --transactions 500 -l 600"),
        ("netperf -t UDP_RR -l -2000", "ringperf udp-rr -H 127.0.0.1 -p 12865 --transactions 2000 -l 600"),
        ("netperf -t UDP_STREAM -l -1M", "ringperf udp-stream -H 127.0.0.1 -p 12865 --bytes 1M -l 600"),
        (
            "netperf -P 0 -v 0 -D -0.20 -4 -H 127.0.0.1 -p 12865 -t TCP_STREAM -l 5 -f m -- -H 127.0.0.1 -k THROUGHPUT -K cubic",
            "ringperf stream -H 127.0.0.1 -p 12865 -l 5 -D 0.2 --cc cubic",
        ),
    ];
    for (np, native) in pairs {
        let np: Vec<&str> = np.split_whitespace().collect();
        let native: Vec<&str> = native.split_whitespace().collect();
        let a = netperf_spec(&np).unwrap_or_else(|e| panic!("{np:?}: {e}"));
        let b = spec_from_args(&native).unwrap_or_else(|e| panic!("{native:?}: {e}"));
        assert_eq!(a, b, "{np:?} and {native:?} give different specs");
    }
}

/// netperf's refusals look like netperf's and fail the run, so a harness reports them.
#[test]
fn what_cannot_be_honoured_fails_with_a_netperf_message() {
    let dir = links("refuse");
    for args in [
        &["-t", "SCTP_STREAM"][..],
        &["-t", "TCP_STREAM", "--", "-P", "5000"],
        // A count of nothing.
        &["-t", "UDP_RR", "-l", "-0"],
    ] {
        let out = netperf(&dir, args);
        assert_eq!(out.code(), 2, "{args:?}: {out}");
        assert!(out.stderr.starts_with("netperf: "), "{args:?}: {out}");
        assert!(out.stdout.is_empty(), "{args:?}: {out}");
    }
}

/// Demo mode with a negative interval: an interim result about every 0.2 s, each with its
/// units, interval length and wall-clock end, stamped as it was printed.
#[test]
fn demo_mode_prints_an_interim_result_about_every_interval() {
    use std::io::{BufRead, BufReader, Read};
    let (dir, _server, port) = serving("demo");
    let args =
        ["-P", "0", "-v", "0", "-D", "-0.2", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_STREAM", "-l", "2"];
    let mut cmd = netperf_command(&dir, &args);
    cmd.args(["--", "-k", "THROUGHPUT"]).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = ChildGuard::spawn(cmd);
    let mut reader = BufReader::new(child.child_mut().stdout.take().expect("piped stdout"));
    let mut stdout = String::new();
    let _ = reader.read_line(&mut stdout);
    // The first interim line comes 0.2 s into a 2 s test: netperf must still be running.
    let running_at_first_line = child.try_status().is_none();
    let _ = reader.read_to_string(&mut stdout);
    let status = child.wait_timeout(Duration::from_secs(45));
    assert!(status.is_some_and(|s| s.success()), "netperf failed: {status:?}\n{stdout}");
    assert!(stdout.starts_with("NETPERF_INTERIM_RESULT[0]="), "{stdout}");
    assert!(running_at_first_line, "the interim lines came only once the test was over:\n{stdout}");
    let indexed = |name: &str| -> Vec<f64> {
        stdout
            .lines()
            .filter(|l| l.starts_with(&format!("{name}[")))
            .filter_map(|l| l.split_once('=').and_then(|(_, v)| v.parse().ok()))
            .collect()
    };
    let (results, intervals, endings) =
        (indexed("NETPERF_INTERIM_RESULT"), indexed("NETPERF_INTERVAL"), indexed("NETPERF_ENDING"));
    // 2 s at 0.2 s is 10 intervals; a loaded machine may merge or lose one at either end.
    assert!(
        (7..=12).contains(&results.len()),
        "{} interim results in 2 s at -D -0.2:\n{stdout}",
        results.len()
    );
    assert_eq!((intervals.len(), endings.len()), (results.len(), results.len()), "{stdout}");
    assert_eq!(stdout.matches("NETPERF_UNITS[").count(), results.len(), "{stdout}");
    assert!(results.iter().all(|v| *v > 0.0), "{stdout}");
    // Ticks are ring timeouts: a worker descheduled on a busy machine stretches one
    // interval and shortens the next, so most, not all, are near 0.2 s.
    let near = intervals.iter().filter(|d| (0.1..0.4).contains(*d)).count();
    assert!(near * 2 >= intervals.len(), "intervals are not about 0.2 s: {intervals:?}");
    assert!(intervals.iter().all(|d| *d > 0.0 && *d < 2.0), "an interval outside the test: {intervals:?}");
    // Each ending is the previous one plus this interval (to the millisecond printed).
    for (k, w) in endings.windows(2).enumerate() {
        let step = w[1] - w[0];
        assert!(
            (step - intervals[k + 1]).abs() < 0.003,
            "ending {} is not its interval after the last: {endings:?} {intervals:?}",
            k + 1
        );
    }
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let last = endings[endings.len() - 1];
    // Wall-clock seconds, anchored on the first line: off by that line's printing delay.
    assert!((now - last).abs() < 10.0, "the endings are not wall-clock times: {last} at {now}");
    assert!(num(&keyvals(&stdout), "THROUGHPUT") > 0.0, "{stdout}");
}

/// The keys flent reads, in netperf's units and meaning, bytes conserved both ways; a
/// name ringperf cannot fill is left out of -k and empty under -o, as netperf does.
#[test]
fn keyval_output_has_netperfs_keys_with_sane_values() {
    let (dir, _server, port) = serving("keyval");
    let keys = "THROUGHPUT,THROUGHPUT_UNITS,PROTOCOL,DIRECTION,ELAPSED_TIME,TRANSPORT_MSS,LOCAL_SEND_SIZE,REMOTE_RECV_SIZE,LOCAL_BYTES_SENT,LOCAL_BYTES_RECVD,REMOTE_BYTES_SENT,REMOTE_BYTES_RECVD,LOCAL_SOCKET_TOS,NO_SUCH_OUTPUT";
    for (test, sending) in [("TCP_STREAM", true), ("TCP_MAERTS", false)] {
        let out = netperf(
            &dir,
            &[
                "-P",
                "0",
                "-H",
                "127.0.0.1",
                "-p",
                &port,
                "-t",
                test,
                "-l",
                "1",
                "-Y",
                "CS1",
                "--",
                "-k",
                keys,
            ],
        )
        .success();
        let kv = keyvals(&out.stdout);
        assert!(num(&kv, "THROUGHPUT") > 0.0, "{test}: {out}");
        assert_eq!(kv["THROUGHPUT_UNITS"], "10^6bits/s", "{test}");
        assert_eq!(kv["PROTOCOL"], "TCP", "{test}");
        assert_eq!(kv["DIRECTION"], if sending { "Send" } else { "Receive" }, "{test}");
        assert_eq!(kv["LOCAL_SOCKET_TOS"], "0x20", "{test}: -Y CS1");
        assert!(num(&kv, "TRANSPORT_MSS") > 0.0 && num(&kv, "ELAPSED_TIME") > 0.5, "{test}: {out}");
        assert!(!kv.contains_key("NO_SUCH_OUTPUT"), "{test}: netperf prints nothing for an unknown name");
        let (sent, received) = if sending {
            (num(&kv, "LOCAL_BYTES_SENT"), num(&kv, "REMOTE_BYTES_RECVD"))
        } else {
            (num(&kv, "REMOTE_BYTES_SENT"), num(&kv, "LOCAL_BYTES_RECVD"))
        };
        assert!(sent > 0.0 && sent == received, "{test}: {sent} bytes sent, {received} received: {out}");
        // Throughput is the bytes over the time, in 10^6 bits/s: a units slip (bytes for
        // bits, 10^3 for 10^6) is off by 8x or more. ELAPSED_TIME is this side's window in
        // netperf's two decimals and THROUGHPUT is over the receiver's, so on a busy machine
        // the two differ by some percent.
        let implied = received * 8.0 / num(&kv, "ELAPSED_TIME") / 1e6;
        let reported = num(&kv, "THROUGHPUT");
        assert!((implied / reported - 1.0).abs() < 0.25, "{test}: {reported} vs {implied} from the bytes");
    }
    let out = netperf(
        &dir,
        &[
            "-H",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "UDP_RR",
            "-l",
            "1",
            "--",
            "-e",
            "1",
            "-k",
            "THROUGHPUT,PROTOCOL,THROUGHPUT_UNITS,P99_LATENCY",
        ],
    )
    .success();
    let kv = keyvals(&out.stdout);
    assert!(num(&kv, "THROUGHPUT") > 0.0 && num(&kv, "P99_LATENCY") > 0.0, "{out}");
    assert_eq!((kv["PROTOCOL"].as_str(), kv["THROUGHPUT_UNITS"].as_str()), ("UDP", "Trans/s"));
    let out = netperf(
        &dir,
        &[
            "-P",
            "1",
            "-H",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "TCP_RR",
            "-l",
            "1",
            "--",
            "-o",
            "THROUGHPUT,NO_SUCH_OUTPUT,PROTOCOL",
        ],
    )
    .success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "banner, header, values: {out}");
    // netperf's titles, not its selector names; a name nobody knows stands for itself.
    assert_eq!(lines[1], "Throughput,NO_SUCH_OUTPUT,Protocol", "{out}");
    let values: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(values.len(), 3, "{out}");
    assert!(
        values[0].parse::<f64>().is_ok_and(|v| v > 0.0) && values[1].is_empty() && values[2] == "TCP",
        "{out}"
    );
}

/// A negative -l is a count: exactly that many bytes arrive, in either direction and with a
/// send size that does not divide it, and the test ends when they have (long before the
/// cap on its length); in TCP_RR, that many transactions.
#[test]
fn a_negative_length_sends_exactly_that_many_bytes() {
    let (dir, _server, port) = serving("count");
    let keys =
        "ELAPSED_TIME,LOCAL_BYTES_SENT,LOCAL_BYTES_RECVD,REMOTE_BYTES_SENT,REMOTE_BYTES_RECVD,THROUGHPUT";
    for (test, count, size) in [("TCP_STREAM", 200_000_000u64, "128K"), ("TCP_MAERTS", 50_000_001, "1000")] {
        let (kv, out) = counted(&dir, &port, test, &count.to_string(), &["-m", size], keys);
        let (sent, received) = if test == "TCP_STREAM" {
            (num(&kv, "LOCAL_BYTES_SENT"), num(&kv, "REMOTE_BYTES_RECVD"))
        } else {
            (num(&kv, "REMOTE_BYTES_SENT"), num(&kv, "LOCAL_BYTES_RECVD"))
        };
        assert_eq!((sent as u64, received as u64), (count, count), "{test}: {out}");
        assert!(num(&kv, "THROUGHPUT") > 0.0, "{test}: {out}");
        assert_ended_by_count(&kv, test, &out);
    }
    // TCP_RR counts transactions: one at a time, and a burst of 8 that does not divide it.
    for burst in ["0", "7"] {
        let (kv, out) = counted(&dir, &port, "TCP_RR", "5001", &["-r", "3,5", "-b", burst], keys);
        let bytes = |k: &str| num(&kv, k) as u64;
        assert_eq!(
            (bytes("LOCAL_BYTES_SENT"), bytes("REMOTE_BYTES_RECVD")),
            (3 * 5001, 3 * 5001),
            "-b {burst}: {out}"
        );
        assert_eq!(
            (bytes("REMOTE_BYTES_SENT"), bytes("LOCAL_BYTES_RECVD")),
            (5 * 5001, 5 * 5001),
            "-b {burst}: {out}"
        );
    }
}

/// A negative -l counts in TCP_CRR and UDP_RR too (connections, transactions: exactly that
/// many on both sides, seen in the bytes each side moved) and in UDP_STREAM (the bytes the
/// client sends, in whole datagrams as netperf counts them); each ends at its count, long
/// before the cap on its length.
#[test]
fn a_negative_length_counts_connections_transactions_and_datagrams() {
    let (dir, _server, port) = serving("count-more");
    let keys = "ELAPSED_TIME,LOCAL_BYTES_SENT,LOCAL_BYTES_RECVD,REMOTE_BYTES_SENT,REMOTE_BYTES_RECVD,CRR_CONNECTIONS";
    let run = |test: &str, count: &str, options: &[&str]| {
        let (kv, out) = counted(&dir, &port, test, count, options, keys);
        assert_ended_by_count(&kv, test, &out);
        (kv, out)
    };
    // Request and response sizes differ, so each side's bytes tell its transactions.
    for (test, count) in [("TCP_CRR", 500u64), ("UDP_RR", 2000)] {
        let (kv, out) = run(test, &count.to_string(), &["-r", "9,13"]);
        let bytes = |k: &str| num(&kv, k) as u64;
        assert_eq!(
            [
                bytes("LOCAL_BYTES_SENT"),
                bytes("REMOTE_BYTES_RECVD"),
                bytes("REMOTE_BYTES_SENT"),
                bytes("LOCAL_BYTES_RECVD")
            ],
            [9 * count, 9 * count, 13 * count, 13 * count],
            "{test}: exactly {count} transactions on both sides: {out}"
        );
        if test == "TCP_CRR" {
            assert_eq!(bytes("CRR_CONNECTIONS"), count, "{out}");
        }
    }
    // 1000-byte datagrams: a count they divide is sent exactly; one they do not is rounded
    // up to the next whole datagram, as netperf's sender does.
    for (count, sent) in [(2_000_000u64, 2_000_000u64), (100_001, 101_000)] {
        let (kv, out) = run("UDP_STREAM", &count.to_string(), &["-m", "1000"]);
        assert_eq!(num(&kv, "LOCAL_BYTES_SENT") as u64, sent, "{out}");
        let received = num(&kv, "REMOTE_BYTES_RECVD") as u64;
        assert!(received > 0 && received <= sent && received.is_multiple_of(1000), "{out}");
    }
}

/// -L binds the control and the data connections: from 127.0.0.2 the server logs that
/// address, and the data connections arrive from it too, or the server (which takes them
/// from the control connection's address only) would never see them.
#[test]
fn a_local_address_is_where_the_connections_leave_from() {
    let (dir, server, port) = serving("bind");
    for test in ["TCP_STREAM", "UDP_RR"] {
        let out = netperf(
            &dir,
            &["-P", "0", "-L", "127.0.0.2,4", "-H", "127.0.0.1", "-p", &port, "-t", test, "-l", "1"]
                .into_iter()
                .chain(["--", "-L", "127.0.0.2,4", "-k", "THROUGHPUT"])
                .collect::<Vec<_>>(),
        )
        .success();
        assert!(num(&keyvals(&out.stdout), "THROUGHPUT") > 0.0, "{test}: {out}");
    }
    let from_there = server.log().iter().filter(|l| l.contains("127.0.0.2:") && l.contains("done")).count();
    assert_eq!(from_there, 2, "the server saw both tests come from 127.0.0.2: {:?}", server.log());
    let crr = netperf(&dir, &["-L", "127.0.0.2", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_CRR", "-l", "1"]);
    assert_eq!(crr.code(), 2, "{crr}");
    assert!(crr.stderr.starts_with("netperf: ") && crr.stderr.contains("crr"), "{crr}");
}

/// Without a selector: the classic table under the banner, or -P 0 -v 0's figure alone.
#[test]
fn without_a_selector_the_classic_table_or_the_bare_figure() {
    let (dir, _server, port) = serving("classic");
    let out = netperf(&dir, &["-H", "127.0.0.1", "-p", &port, "-t", "TCP_STREAM", "-l", "1"]).success();
    assert!(out.stdout.contains("TCP STREAM TEST") && out.stdout.contains("Throughput"), "{out}");
    let last = out.stdout.lines().last().unwrap_or_default();
    let figure: f64 = last.split_whitespace().last().and_then(|v| v.parse().ok()).unwrap_or(0.0);
    assert!(figure > 0.0, "the last line ends in the throughput: {out}");
    let out =
        netperf(&dir, &["-P", "0", "-v", "0", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_RR", "-l", "1"])
            .success();
    let bare: Vec<&str> = out.stdout.split_whitespace().collect();
    assert_eq!(bare.len(), 1, "{out}");
    assert!(bare[0].parse::<f64>().is_ok_and(|v| v > 0.0), "{out}");
}

/// A background server's pid, stopped (SIGTERM) when dropped, so a failed assertion does
/// not leave it running.
struct Daemon(i32);

impl Daemon {
    /// Whether the process is gone: no such pid, or a zombie (this test is not its parent
    /// and cannot reap it).
    fn gone(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.0)) {
            Err(_) => true,
            Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    }

    fn stop(&self) {
        // SAFETY: kill takes plain integers; the pid is the server this test started.
        unsafe { libc::kill(self.0, libc::SIGTERM) };
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if !self.gone() {
            self.stop();
        }
    }
}

/// `netserver` without -D goes to the background as netserver does: it returns once the
/// server listens, saying on which port and with which pid; a netperf run reaches it, and
/// SIGTERM to that pid ends it. A port already taken makes it fail instead of pretending.
#[test]
fn netserver_in_the_background_says_its_port_and_pid() {
    let dir = links("daemon");
    let mut cmd = Command::new(dir.0.join("netserver"));
    cmd.args(["-L", "127.0.0.1", "-p", "0"]);
    let out = run_with_timeout(cmd, Duration::from_secs(20)).success();
    let quoted = |key: &str| -> Option<String> {
        let rest = out.stdout.split_once(&format!("{key} '"))?.1;
        Some(rest.split_once('\'')?.0.to_string())
    };
    let port = quoted("port").unwrap_or_else(|| panic!("no port: {out}"));
    let pid: i32 = out
        .stdout
        .split_once("pid ")
        .and_then(|(_, r)| r.trim_end().trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no pid: {out}"));
    let daemon = Daemon(pid);
    assert!(port.parse::<u16>().is_ok_and(|p| p > 0), "{out}");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> =
        cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).to_string()).collect();
    assert!(args.iter().any(|a| a == "serve"), "pid {pid} is the server itself: {args:?}");
    assert_eq!(quoted("host").as_deref(), Some("127.0.0.1"), "{out}");

    let run =
        netperf(&dir, &["-P", "0", "-v", "0", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_RR", "-l", "0.5"])
            .success();
    assert!(run.stdout.trim().parse::<f64>().is_ok_and(|v| v > 0.0), "{run}");

    // The same port again: taken, so the second server cannot listen, and says so.
    let mut again = Command::new(dir.0.join("netserver"));
    again.args(["-L", "127.0.0.1", "-p", &port]);
    let taken = run_with_timeout(again, Duration::from_secs(20));
    assert_eq!(taken.code(), 1, "{taken}");
    assert!(taken.stderr.contains("stopped before it was listening"), "{taken}");

    daemon.stop();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !daemon.gone() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(daemon.gone(), "pid {pid} still runs 10 s after SIGTERM");
    let refused = std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap_or(0)));
    assert!(refused.is_err(), "the port still takes connections after the server ended");
}

/// `install-links` makes both links, says so again when they are there, and refuses to
/// replace a file that is not one of its links.
#[test]
fn install_links_makes_both_links_once() {
    let dir = TempDir::new("links");
    let d = dir.0.to_string_lossy().to_string();
    let rp = ringperf!();
    rp.run(&["install-links", &d]).success();
    for name in ["netperf", "netserver"] {
        let meta = std::fs::symlink_metadata(dir.0.join(name)).expect("the link exists");
        assert!(meta.file_type().is_symlink(), "{name}");
    }
    let again = rp.run(&["install-links", &d]).success();
    assert!(again.stdout.contains("already there"), "{again}");
    let other = TempDir::new("links-taken");
    std::fs::write(other.0.join("netperf"), "not ringperf").expect("write");
    let out = rp.run(&["install-links", &other.0.to_string_lossy()]);
    assert_eq!(out.code(), 2, "{out}");
    assert!(out.stderr.contains("not a link"), "{out}");
}

/// ringperf's own options reach the netperf form through RINGPERF_ARGS.
#[test]
fn ringperf_args_reach_the_netperf_form() {
    let (dir, _server, port) = serving("args");
    let keys = "THROUGHPUT,RECV_ENGINE,SEND_ENGINE";
    let args = ["-P", "0", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_STREAM", "-l", "1", "--", "-k", keys];
    let mut cmd = netperf_command(&dir, &args);
    cmd.env("RINGPERF_ARGS", "--recv-engine multishot --send-engine zc");
    let out = run_with_timeout(cmd, Duration::from_secs(45)).success();
    let kv = keyvals(&out.stdout);
    assert_eq!((kv["RECV_ENGINE"].as_str(), kv["SEND_ENGINE"].as_str()), ("multishot", "zc"), "{out}");
    assert!(num(&kv, "THROUGHPUT") > 0.0);
}

/// flent runs one at a time: each already runs several netperfs at once on 2 vCPUs.
static FLENT: Mutex<()> = Mutex::new(());

/// flent, if installed: $RINGPERF_FLENT, tools/test's venv, or PATH.
fn find_flent() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RINGPERF_FLENT").map(PathBuf::from).filter(|p| p.is_file()) {
        return Some(p);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let venv = home.join(".cache/ringperf-flent/venv/bin/flent");
    if venv.is_file() {
        return Some(venv);
    }
    ringperf_tests::have_program("flent").then(|| PathBuf::from("flent"))
}

/// Runs `flent TEST` for `secs` seconds against a `netserver` link, with the links first
/// in PATH, and returns its data file as JSON (or None after saying why it was skipped).
fn run_flent(test_name: &str, flent_test: &str, secs: u32) -> Option<Value> {
    let Some(flent) = find_flent() else {
        skip(test_name, "flent is not installed: run tools/test as root (it pip-installs flent into ~/.cache/ringperf-flent/venv) or set RINGPERF_FLENT");
        return None;
    };
    if !ringperf_tests::have_program("fping") && !ringperf_tests::have_program("ping") {
        skip(test_name, "flent's ping runner needs fping or ping: apt-get install -y fping iputils-ping");
        return None;
    }
    let _one_at_a_time = FLENT.lock().unwrap_or_else(|e| e.into_inner());
    let dir = links(flent_test);
    let server = netserver(&dir);
    let data = TempDir::new(&format!("{flent_test}-data"));
    let path = format!("{}:{}", dir.0.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new(&flent);
    cmd.args([flent_test, "-l", &secs.to_string(), "--delay", "1", "-H", "127.0.0.1"])
        .args(["--netperf-control-port", &server.port_arg(), "-D"])
        .arg(&data.0)
        .env("PATH", path);
    let out = run_with_timeout(cmd, Duration::from_secs(u64::from(secs) + 60));
    assert_eq!(out.code(), 0, "flent {flent_test}: {out}\nserver: {:?}", server.log());
    assert!(!out.stderr.contains("Traceback"), "flent {flent_test}: {out}");
    let file = std::fs::read_dir(&data.0)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(".flent.gz"))
        .unwrap_or_else(|| panic!("flent {flent_test} wrote no data file: {out}"));
    Some(read_gzip_json(&file))
}

/// A .flent.gz data file (gzip JSON), read with the Python flent runs on.
fn read_gzip_json(file: &Path) -> Value {
    let mut cmd = Command::new("python3");
    cmd.args(["-c", "import gzip,sys; sys.stdout.write(gzip.open(sys.argv[1],'rt').read())"]).arg(file);
    let out = run_with_timeout(cmd, Duration::from_secs(30)).success();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{} is not gzip JSON: {e}", file.display()))
}

/// How far the mean of flent's throughput series may be from ringperf's own figure for the
/// flow, with one flow: flent resamples the 0.2 s interim points onto its own grid by
/// interpolation (not weighted by time) and drops points whose interval is far from the
/// running average, and the last interval of a run is cut short; with ~15 points per flow
/// on 2 busy vCPUs that moves the mean by a few percent (0.04 % measured on an idle
/// machine). A series off by a unit or a scale factor is off by far more.
const SERIES_TOLERANCE: f64 = 0.15;

/// The same for each of rrul's eight flows: they start a few ms apart as flent starts
/// eight netperfs, and share 2 vCPUs with each other and the pings, so each 0.2 s point
/// swings with the scheduler (up to 6.7 % measured with the machine otherwise idle, 15.7 %
/// once with the whole test suite running beside it).
const RRUL_SERIES_TOLERANCE: f64 = 0.25;

/// Checks that `series` in flent's data is non-empty and that its mean agrees with the
/// figure ringperf reported for the flow (flent's MEAN_VALUE is netperf's THROUGHPUT key),
/// and that the flow's bytes were conserved. Returns the mean.
fn check_series(data: &Value, series: &str, min_points: usize, tolerance: f64) -> f64 {
    let values: Vec<f64> = data["results"][series]
        .as_array()
        .unwrap_or_else(|| panic!("no series '{series}' in {}", data["results"]))
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert!(values.len() >= min_points, "'{series}' has {} points: {values:?}", values.len());
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let meta = &data["metadata"]["SERIES_META"][series];
    let reported =
        meta["MEAN_VALUE"].as_f64().unwrap_or_else(|| panic!("no MEAN_VALUE for '{series}': {meta}"));
    assert!(mean > 0.0 && reported > 0.0, "'{series}': mean {mean}, reported {reported}");
    let off = (mean / reported - 1.0).abs();
    assert!(
        off < tolerance,
        "'{series}': series mean {mean:.2} is {:.1} % off ringperf's {reported:.2}",
        off * 100.0
    );
    if let (Some(sent), Some(received)) = (meta["BYTES_SENT"].as_u64(), meta["BYTES_RECVD"].as_u64()) {
        assert!(sent > 0 && sent == received, "'{series}': {sent} bytes sent, {received} received");
    }
    mean
}

#[test]
fn flent_tcp_upload_runs_against_ringperf() {
    let Some(data) = run_flent("flent_tcp_upload_runs_against_ringperf", "tcp_upload", 3) else { return };
    check_series(&data, "TCP upload", 8, SERIES_TOLERANCE);
}

#[test]
fn flent_tcp_download_runs_against_ringperf() {
    let Some(data) = run_flent("flent_tcp_download_runs_against_ringperf", "tcp_download", 3) else { return };
    check_series(&data, "TCP download", 8, SERIES_TOLERANCE);
}

/// RRUL: four uploads and four downloads marked with DSCP, three UDP_RR pings and an ICMP
/// ping, all at once.
#[test]
fn flent_rrul_runs_against_ringperf() {
    let Some(data) = run_flent("flent_rrul_runs_against_ringperf", "rrul", 3) else { return };
    for dir in ["upload", "download"] {
        for class in ["BE", "BK", "CS5", "EF"] {
            check_series(&data, &format!("TCP {dir} {class}"), 8, RRUL_SERIES_TOLERANCE);
        }
    }
    for class in ["BE", "BK", "EF"] {
        let series = format!("Ping (ms) UDP {class}");
        let points =
            data["results"][&series].as_array().map_or(0, |v| v.iter().filter(|x| x.is_f64()).count());
        assert!(points >= 8, "'{series}' has {points} points");
        let rtt = data["metadata"]["SERIES_META"][&series]["MEAN_VALUE"].as_f64().unwrap_or(0.0);
        assert!(rtt > 0.0 && rtt < 100.0, "'{series}': mean round trip {rtt} ms on loopback");
    }
}
