//! Outputs that fail: a full device, a closed standard output, a reader that goes away
//! mid-run, device nodes and FIFOs named as output files, a full file system, a report
//! that carries control characters into an SVG, a report from an unknown schema. Each must
//! fail loudly (a message naming the output, a non-zero exit), lose nothing another output
//! can hold, replace nothing that is not a regular file, and leave the server serving.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use ringperf_tests::{
    have_program, is_root, parse, ringperf, skip, ChildGuard, Ringperf, SweepEntry, TestReport, PYTHON3,
    RUN_TIMEOUT,
};

use crate::{baseline, still_serves};

/// A folder for one test's files, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("ringperf-adv-out-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("a scratch folder");
        Scratch(d)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The names in the folder, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(&self.0)
            .expect("reading the scratch folder")
            .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs `cmd` with its standard output sent to `stdout`, stderr captured; bounded by
/// RUN_TIMEOUT. Returns the exit status and stderr.
pub(crate) fn run_into(mut cmd: Command, stdout: Stdio) -> (ExitStatus, String) {
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(cmd);
    let mut err = child.child_mut().stderr.take().expect("piped stderr");
    let reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = child.wait_timeout(RUN_TIMEOUT);
    let status = status.unwrap_or_else(|| panic!("did not finish within {RUN_TIMEOUT:?}"));
    (status, reader.join().unwrap_or_default())
}

pub(crate) fn dev_full() -> Stdio {
    Stdio::from(fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full"))
}

/// A test's arguments against `server`.
fn against<'a>(server_port: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["-H", "127.0.0.1", "-p", server_port]);
    v
}

/// `ringperf` under another name (netperf, netserver), through a link in `dir`.
fn linked(rp: &Ringperf, dir: &Scratch, name: &str) -> PathBuf {
    let link = dir.path(name);
    std::os::unix::fs::symlink(rp.path(), &link).expect("a link");
    link
}

/// A short stream's --json report, as text.
fn a_report(rp: &Ringperf) -> String {
    rp.run(&["stream", "-l", "0.3", "--json"]).success().stdout
}

#[test]
fn a_full_standard_output_is_named_and_the_exit_says_so() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let (status, err) = run_into(rp.command(&against(&port, &["stream", "-l", "0.5", "--json"])), dev_full());
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("ringperf: writing the report to standard output: No space left on device"),
        "{err}"
    );
    // The test itself ran whole: only its output failed.
    assert!(server.wait_for_log("TCP_STREAM done", Duration::from_secs(10)).is_some(), "{:?}", server.log());

    // Every command's standard output is checked: diff, plot's input error aside, probe,
    // the flags table, --help, and netperf's result.
    let dir = Scratch::new("full");
    let report = dir.path("a.json");
    fs::write(&report, a_report(&rp)).unwrap();
    let r = report.to_str().unwrap();
    for (args, what) in [
        (vec!["diff", r, r], "the comparison"),
        (vec!["probe"], "the probe's report"),
        (vec!["--help-markdown"], "the flags table"),
        (vec!["stream", "--help"], "the help"),
    ] {
        let (status, err) = run_into(rp.command(&args), dev_full());
        assert_eq!(status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&format!("writing {what} to standard output: No space left on device")),
            "{args:?}: {err}"
        );
    }
    let netperf = linked(&rp, &dir, "netperf");
    let mut cmd = Command::new(&netperf);
    cmd.args(["-H", "127.0.0.1", "-p", &port, "-l", "0.3", "-P", "0"]);
    let (status, err) = run_into(cmd, dev_full());
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("netperf: writing the result to standard output: No space left on device"), "{err}");
    still_serves(&rp, &mut server, base, None);
}

#[test]
fn a_closed_standard_output_is_an_error_not_a_silent_success() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let mut cmd = rp.command(&against(&port, &["stream", "-l", "0.3", "--json"]));
    // SAFETY: runs in the child between fork and exec and only calls close(2), which is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    let (status, err) = run_into(cmd, Stdio::inherit());
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("writing the report to standard output: Bad file descriptor"), "{err}");
    still_serves(&rp, &mut server, base, None);
}

/// `--json-stream | head -2`: once the reader is gone the test stops at the next
/// interval, the server is told (it logs the test as stopped by the client, not done), and
/// the client exits 141 without a panic, long before its 30 s would have ended.
#[test]
fn a_reader_that_goes_away_stops_the_test_and_the_server_hears_of_it() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let mut cmd = rp.command(&against(&port, &["stream", "-l", "30", "-D", "0.1", "--json-stream"]));
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(cmd);
    let mut err = child.child_mut().stderr.take().expect("piped stderr");
    let err = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    {
        let mut lines = BufReader::new(child.child_mut().stdout.take().expect("piped stdout")).lines();
        for _ in 0..2 {
            let line = lines.next().expect("an interval line").expect("readable");
            assert!(line.contains("\"type\""), "not an interval object: {line}");
        }
        // `head -2` exits: the pipe's read end closes here.
    }
    let stopped = server.wait_for_log("TCP_STREAM stopped by the client", Duration::from_secs(20));
    assert!(stopped.is_some(), "the server was not told: {:?}", server.log());
    let status =
        child.wait_timeout(Duration::from_secs(20)).expect("the client did not exit after its reader left");
    let err = err.join().unwrap_or_default();
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(err.contains("partial result: stopped: standard output was closed by its reader"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!server.log().iter().any(|l| l.contains("TCP_STREAM done")), "{:?}", server.log());
    still_serves(&rp, &mut server, base, None);
}

/// A device node and a FIFO named as --output are written into, never replaced, and a
/// FIFO gets the sweep's JSON once, whole. The device is one this test makes (a null
/// device of its own), so a failure could never replace the system's /dev/null.
#[test]
fn a_device_or_a_fifo_output_is_written_into_never_replaced() {
    let test = "a_device_or_a_fifo_output_is_written_into_never_replaced";
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let dir = Scratch::new("dev");
    let sweep = |out: &Path| {
        let args = against(&port, &["sweep", "stream", "-l", "0.2", "-m", "1K,2K", "--json"]);
        let mut cmd = rp.command(&args);
        cmd.arg("--output").arg(out);
        run_into(cmd, Stdio::piped())
    };
    if is_root() {
        let null = dir.path("null");
        let made = Command::new("mknod").arg(&null).args(["c", "1", "3"]).status().expect("mknod");
        assert!(made.success());
        let (status, err) = sweep(&null);
        assert_eq!(status.code(), Some(0), "{err}");
        let m = fs::metadata(&null).unwrap();
        assert!(m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3), "the device was replaced");
        assert_eq!(dir.names(), ["null"], "a temporary file was left");
    } else {
        skip(test, "the device-node half needs root to make a device node (CI runs as root)");
    }

    let fifo = dir.path("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    // Nobody reads it: refused at once, not a wait for ever.
    let (status, err) = sweep(&fifo);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("'{}': no process is reading this FIFO", fifo.display())), "{err}");
    // A reader: it gets one whole JSON document. It opens its end first, without
    // blocking, so the FIFO has a reader before the sweep looks for one.
    let read_end = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(read_whole(read_end));
    });
    let (status, err) = sweep(&fifo);
    assert_eq!(status.code(), Some(0), "{err}");
    let got = rx.recv_timeout(Duration::from_secs(20)).expect("the FIFO's reader got nothing");
    let points: Vec<SweepEntry> = parse("what the FIFO's reader got, as one sweep", &got);
    assert_eq!(points.len(), 2, "{got}");
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    still_serves(&rp, &mut server, base, None);
}

/// What a writer sends into the FIFO `f` (opened without blocking), up to the writer's
/// close after its data: a bounded wait on each event (data, the end), 30 s at most.
fn read_whole(mut f: File) -> String {
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    for _ in 0..3000 {
        match f.read(&mut chunk) {
            // No writer: none yet, or the one that wrote has closed.
            Ok(0) if !got.is_empty() => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
        thread::sleep(Duration::from_millis(10));
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A full file system: the sweep's file cannot be written. The error names the file and
/// the reason, the exit is 1, no temporary file is left, and the table still reaches
/// standard output. The small file system is a tmpfs in a mount namespace of the
/// command's own, so nothing outside it sees the mount.
#[test]
fn a_full_file_system_is_reported_and_leaves_no_temporary_file() {
    let test = "a_full_file_system_is_reported_and_leaves_no_temporary_file";
    if !is_root() || !have_program("unshare") {
        skip(test, "needs root and unshare (util-linux) for a tmpfs in a mount namespace of its own");
        return;
    }
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let dir = Scratch::new("enospc");
    let mnt = dir.path("small");
    fs::create_dir(&mnt).unwrap();
    let out = mnt.join("sweep.json");
    let script = r#"mount -t tmpfs -o size=4k ringperf-test "$1" || exit 99
"$2" sweep stream -H 127.0.0.1 -p "$3" -l 0.2 --output "$1/sweep.json"
echo "rc=$?" >&2
echo "left: $(ls -A "$1")" >&2"#;
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(rp.path())
        .arg(server.port_arg());
    let o = ringperf_tests::run_with_timeout(cmd, RUN_TIMEOUT);
    assert!(o.stderr.contains("rc=1"), "{o}");
    assert!(
        o.stderr
            .contains(&format!("writing the sweep's JSON to '{}': No space left on device", out.display())),
        "{o}"
    );
    assert!(o.stderr.contains("left: \n") || o.stderr.trim_end().ends_with("left:"), "a file was left: {o}");
    assert!(o.stdout.contains("10^6bits/s"), "the table was lost too: {o}");
    still_serves(&rp, &mut server, base, None);
}

/// A chart that cannot be written fails the run, and the report on standard output is
/// whole all the same.
#[test]
fn a_chart_that_cannot_be_written_keeps_the_report() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let o = rp.run(&against(&port, &["stream", "-l", "0.5", "--json", "--plot", "/dev/full"]));
    assert_eq!(o.code(), 1, "{o}");
    assert!(o.stderr.contains("writing the chart to '/dev/full': No space left on device"), "{o}");
    let r = o.report();
    assert!(r.local.bytes_sent > 0, "{o}");
    still_serves(&rp, &mut server, base, None);
}

/// Text from a report placed in an SVG (the test's name, the server's address, a flame
/// graph's frames) cannot make it invalid: markup is escaped and characters XML 1.0
/// forbids are replaced.
#[test]
fn control_characters_in_a_report_give_a_valid_svg() {
    let test = "control_characters_in_a_report_give_a_valid_svg";
    let rp = ringperf!();
    let dir = Scratch::new("svg");
    let mut r: TestReport = parse("a report", &a_report(&rp));
    r.test = "TCP_STREAM\u{1}\u{8}<script>&\u{ffff}".into();
    r.server = "127.0.0.1\u{1b}[2J:1".into();
    let input = dir.path("r.json");
    fs::write(&input, serde_json::to_string(&r).unwrap()).unwrap();
    let folded = dir.path("s.folded");
    fs::write(&folded, "ringperf;tcp_sendmsg\u{2}<a>_[k] 30\nswapper;idle\u{1f}&_[k] 10\n").unwrap();
    for (from, to) in [(&input, dir.path("r.svg")), (&folded, dir.path("f.svg"))] {
        rp.run(&["plot", from.to_str().unwrap(), "-o", to.to_str().unwrap()]).success();
        let svg = fs::read_to_string(&to).expect("the SVG");
        let bad: Vec<char> = svg
            .chars()
            .filter(|&c| (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{fffe}' || c == '\u{ffff}')
            .collect();
        assert!(bad.is_empty(), "{}: characters XML forbids: {bad:?}", to.display());
        assert!(!svg.contains("<script>") && !svg.contains("<a>"), "markup from the report reached the SVG");
        if have_program(PYTHON3.name) {
            let parsed = Command::new(PYTHON3.name)
                .args(["-c", "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])"])
                .arg(&to)
                .output()
                .expect("python3");
            assert!(parsed.status.success(), "{}: {}", to.display(), String::from_utf8_lossy(&parsed.stderr));
        } else {
            skip(
                test,
                "the strict XML parse needs python3 (apt-get install -y python3); the character check ran",
            );
        }
    }
}

/// A report from a schema this ringperf does not know is read, and said to be.
#[test]
fn an_unknown_schema_version_is_warned_about() {
    let rp = ringperf!();
    let dir = Scratch::new("schema");
    let mut r: TestReport = parse("a report", &a_report(&rp));
    r.schema_version = 99;
    let (a, b) = (dir.path("a.json"), dir.path("b.json"));
    fs::write(&a, serde_json::to_string(&r).unwrap()).unwrap();
    fs::write(&b, a_report(&rp)).unwrap();
    let o = rp.run(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]).success();
    assert!(o.stderr.contains(&format!("warning: '{}' has schema_version 99", a.display())), "{o}");
    assert!(!o.stderr.contains(&format!("'{}' has schema_version", b.display())), "{o}");
    let svg = dir.path("a.svg");
    let o = rp.run(&["plot", a.to_str().unwrap(), "-o", svg.to_str().unwrap()]).success();
    assert!(o.stderr.contains("has schema_version 99"), "{o}");
}

/// netserver's -p takes a port: anything else says what is wrong with it.
#[test]
fn netserver_says_what_is_wrong_with_its_port() {
    let rp = ringperf!();
    let dir = Scratch::new("nsport");
    let netserver = linked(&rp, &dir, "netserver");
    for bad in ["x", "70000", "-1"] {
        let mut cmd = Command::new(&netserver);
        cmd.args(["-D", "-p", bad]);
        let o = ringperf_tests::run_with_timeout(cmd, RUN_TIMEOUT);
        o.failure(2, &[&format!("netserver: -p {bad}: not a port number")]);
    }
}

/// A server whose log cannot be written stops (as on SIGTERM) and says so in its exit
/// code, rather than serving with no record of whom it served.
#[test]
fn a_server_whose_log_fails_stops() {
    let rp = ringperf!();
    let mut cmd = rp.command(&["serve", "--bind", "127.0.0.1", "--port", "0"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(dev_full());
    let mut child = ChildGuard::spawn(cmd);
    let status = child.wait_timeout(Duration::from_secs(20)).expect("the server went on without its log");
    assert_eq!(status.code(), Some(1), "{status}");
}

/// A repeated netperf option takes its last value, as netperf does (the test runs the
/// second -l, and the second -m).
#[test]
fn a_repeated_netperf_option_takes_its_last_value() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let r = rp.run_report(&[
        "-t",
        "TCP_STREAM",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-l",
        "0.2",
        "-l",
        "0.4",
        "--",
        "-m",
        "1K",
        "-m",
        "2K",
    ]);
    assert_eq!(r.spec.duration_ms, 400);
    assert_eq!(r.spec.send_size, 2048);
    still_serves(&rp, &mut server, base, None);
}
