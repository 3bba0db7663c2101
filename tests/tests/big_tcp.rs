//! BIG TCP's size limits: tools/lab sets them per host on its veths and, for one command, on
//! the host's own `lo`; every run's environment reads them back from the kernel; and `lo`
//! gets its old values back afterwards, also when the command is interrupted or was killed
//! outright (the next `lab lo` restores its record). These need
//! root and python3 (the lab sets the limits over rtnetlink with tools/lib/link_sizes.py);
//! without them they say so and skip.
//!
//! The `lo` checks run in one test, in order: they change the host's loopback, and a second
//! test reading lo's "old" values while the first has them changed would be comparing
//! against the wrong ones.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use ringperf_tests::{
    lab, lab_name, lab_script, ringperf, run_with_timeout, skip_unless, ChildGuard, Lab, Server,
    SideReportExt, TestReport, TestReportExt, LAB_PROGRAMS, PYTHON3, RUN_TIMEOUT,
};

const SETTABLE: [&str; 4] = ["gso_max_size", "gro_max_size", "gso_ipv4_max_size", "gro_ipv4_max_size"];

fn programs() -> Vec<ringperf_tests::Program> {
    [LAB_PROGRAMS, &[PYTHON3]].concat()
}

fn sizes_tool() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tools/lib/link_sizes.py")
}

/// lo's four settable limits as the kernel reports them now.
fn lo_sizes() -> BTreeMap<String, u32> {
    let mut c = Command::new("python3");
    c.arg(sizes_tool()).args(["get", "lo"]);
    let o = run_with_timeout(c, Duration::from_secs(20)).success();
    o.stdout
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| SETTABLE.contains(k))
        .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
        .collect()
}

/// Puts lo's limits back if a failing test left them changed (tools/lab restores them
/// itself; this is only the net under the test).
struct LoGuard(BTreeMap<String, u32>);

impl Drop for LoGuard {
    fn drop(&mut self) {
        if lo_sizes() != self.0 {
            let mut c = Command::new("python3");
            c.arg(sizes_tool()).args(["set", "lo"]).args(self.0.iter().map(|(k, v)| format!("{k}={v}")));
            let _ = run_with_timeout(c, Duration::from_secs(20));
        }
    }
}

/// A size none of lo's four limits has now, so a change is seen.
fn a_new_size(old: &BTreeMap<String, u32>) -> u32 {
    [524280, 262144, 131072].into_iter().find(|s| old.values().all(|v| v != s)).expect("a free size")
}

#[test]
fn lab_sizes_are_set_per_host_and_in_each_sides_environment() {
    if skip_unless("lab_sizes_are_set_per_host_and_in_each_sides_environment", true, &programs()) {
        return;
    }
    let rp = ringperf!();
    // The sender's GSO limits up, the receiver's GRO limits up: each on its own host only.
    let l = Lab::up(
        &lab_name("bigtcp"),
        &[
            "--gso-max-size",
            "a=524280",
            "--gso-ipv4-max-size",
            "a=262144",
            "--big-tcp",
            "b=131072",
            "--gso-max-size",
            "b=65536",
        ],
    );
    let mut server = Server::start(l.exec("b", rp.path(), &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    let port = server.port_arg();
    let o = run_with_timeout(
        l.exec("a", rp.path(), &["stream", "-H", "198.18.0.2", "-p", &port, "-l", "1", "--json"]),
        RUN_TIMEOUT,
    )
    .success();
    server.assert_running();
    let r: TestReport = o.report();
    let (a, b) = (r.local.network().sizes, r.remote().network().sizes);
    assert_eq!(r.local.network().device.as_deref(), Some("lab0"));
    assert_eq!((a.gso_max_size, a.gso_ipv4_max_size), (Some(524280), Some(262144)), "sender: {a:?}");
    // Host a's GRO limits were not asked for: veth's default.
    assert_eq!((a.gro_max_size, a.gro_ipv4_max_size), (Some(65536), Some(65536)), "sender: {a:?}");
    // --big-tcp b=131072 set all four of b's, and the named --gso-max-size b=65536 won over it.
    assert_eq!((b.gro_max_size, b.gro_ipv4_max_size), (Some(131072), Some(131072)), "receiver: {b:?}");
    assert_eq!((b.gso_max_size, b.gso_ipv4_max_size), (Some(65536), Some(131072)), "receiver: {b:?}");
    for s in [a, b] {
        assert!(s.tso_max_size.is_some_and(|t| t >= 524280), "veth's TSO ceiling: {s:?}");
    }
    // `status` shows them too.
    let status = lab(l.name(), &["status"]).success();
    assert!(status.stdout.contains("gso_max_size 524280"), "{status}");

    // What the kernel refuses is an error naming the host and the reason, exit 2.
    let big = lab(l.name(), &["up", "--gso-max-size", "a=1048576"]);
    assert_eq!(big.status.code(), Some(2), "{big}");
    assert!(big.stderr.contains("host a") && big.stderr.contains("tso_max_size"), "{big}");
    let bad = lab(l.name(), &["up", "--big-tcp", "b=64k"]);
    assert_eq!(bad.status.code(), Some(2), "{bad}");
    assert!(bad.stderr.contains("size in bytes"), "{bad}");
    drop(server);
}

#[test]
fn lo_is_set_for_one_command_and_restored_after_it_and_after_ctrl_c() {
    let test = "lo_is_set_for_one_command_and_restored_after_it_and_after_ctrl_c";
    if skip_unless(test, true, &programs()) {
        return;
    }
    let rp = ringperf!();
    let old = lo_sizes();
    assert_eq!(old.len(), 4, "lo's four limits: {old:?}");
    let _net = LoGuard(old.clone());
    let new = a_new_size(&old);
    let n = new.to_string();

    // Set, run, restore: the run's own environment shows lo at the new limits.
    let mut c = Command::new(lab_script());
    c.args(["lo", "--big-tcp", &n, "--", rp.path().to_str().unwrap(), "stream", "-l", "1", "--json"]);
    let o = run_with_timeout(c, RUN_TIMEOUT).success();
    let r: TestReport = o.report();
    for (side, s) in r.sides() {
        let net = s.network();
        assert_eq!(net.device.as_deref(), Some("lo"), "{side}");
        let z = net.sizes;
        let got = [z.gso_max_size, z.gro_max_size, z.gso_ipv4_max_size, z.gro_ipv4_max_size];
        assert_eq!(got, [Some(new); 4], "{side}: lo during the run: {z:?}");
    }
    assert_eq!(lo_sizes(), old, "lo after the run: {o}");

    // A failing command: lo is restored and its exit code comes through.
    let mut c = Command::new(lab_script());
    c.args(["lo", "--gso-ipv4-max-size", &n, "--", "sh", "-c", "exit 7"]);
    let o = run_with_timeout(c, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(7), "{o}");
    assert_eq!(lo_sizes(), old, "lo after a failing command: {o}");

    // Ctrl-C in the middle of a run: the run stops, lo comes back, exit 130.
    // The report goes to a file: a pipe nobody reads could fill and stall the run.
    let report_file = std::env::temp_dir().join(format!("ringperf-bigtcp-{}.json", std::process::id()));
    let mut c = Command::new(lab_script());
    c.args(["lo", "--big-tcp", &n, "--", rp.path().to_str().unwrap(), "stream", "-l", "20", "--json"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&report_file).expect("a report file"))
        .stderr(Stdio::null());
    let mut g = ChildGuard::spawn(c);
    let deadline = Instant::now() + Duration::from_secs(20);
    while lo_sizes().get("gso_max_size") != Some(&new) {
        assert!(Instant::now() < deadline, "lo never took the new size");
        assert!(g.try_status().is_none(), "tools/lab lo ended before it set lo");
        thread::sleep(Duration::from_millis(100));
    }
    // The run is under way (the stream's window is 20 s); stop it.
    thread::sleep(Duration::from_millis(1500));
    g.signal(libc::SIGINT);
    let status = g.wait_timeout(Duration::from_secs(30)).expect("tools/lab lo did not end after SIGINT");
    assert_eq!(status.code(), Some(130), "exit after SIGINT");
    // The SIGINT reached the run itself, which stopped early and said so in its report.
    let text = std::fs::read_to_string(&report_file).unwrap_or_default();
    let _ = std::fs::remove_file(&report_file);
    let r: TestReport =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("no report after SIGINT: {e}: {text}"));
    assert!(r.partial, "the interrupted run's report is not marked partial");
    assert_eq!(lo_sizes(), old, "lo after an interrupted run");
    let saved = PathBuf::from("/run/ringperf-lab/lo.saved");
    assert!(!saved.exists(), "the record of lo's values outlived the restore");

    // A run killed with SIGKILL leaves its record and lo changed: the next `lab lo` puts the
    // recorded values back before anything else.
    let words: Vec<String> = old.iter().map(|(k, v)| format!("{k}={v}")).collect();
    std::fs::write(&saved, words.join(" ")).expect("a record");
    let mut c = Command::new("python3");
    c.arg(sizes_tool()).args(["set", "lo", &format!("gso_ipv4_max_size={new}")]);
    run_with_timeout(c, Duration::from_secs(20)).success();
    let mut c = Command::new(lab_script());
    c.args(["lo", "--gro-max-size", &n, "--", "true"]);
    let o = run_with_timeout(c, Duration::from_secs(30)).success();
    assert!(o.stderr.contains("did not finish"), "the leftover record was not named: {o}");
    assert_eq!(lo_sizes(), old, "lo after a leftover record: {o}");
    assert!(!saved.exists(), "the leftover record outlived its restore");
}
