//! `--mptcp`: Multipath TCP data sockets on both sides. On loopback every TCP test moves
//! the same bytes on both sides and the report says each connection stayed MPTCP; over the
//! lab's two paths one stream carries bytes on two subflows; a server that cannot listen
//! MPTCP and an engine MPTCP refuses each get an error that says what to do.

use std::net::Ipv4Addr;

use ringperf_core::measure::mptcp::MptcpReport;
use ringperf_core::report::SideReport;
use ringperf_core::TestReport;
use ringperf_tests::{
    lab_name, ringperf, run_with_timeout, skip, skip_unless, Lab, NetnsPair, Server, TestReportExt, IP,
    LAB_PROGRAMS,
};

/// Skips `test` (saying why) unless this kernel opens MPTCP sockets here.
fn skip_without_mptcp(test: &str) -> bool {
    let p = ringperf_core::measure::mptcp::IPPROTO_MPTCP;
    // SAFETY: socket takes no memory; the descriptor is closed at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, p) };
    match fd {
        fd if fd >= 0 => {
            // SAFETY: our own new descriptor, closed once.
            unsafe { libc::close(fd) };
            false
        }
        _ => {
            let e = std::io::Error::last_os_error();
            skip(
                test,
                &format!("this kernel opens no MPTCP socket ({e}): net.mptcp.enabled=0 or no CONFIG_MPTCP"),
            );
            true
        }
    }
}

/// The side's MPTCP report, which every flow's connection must have kept to the end.
fn stayed_mptcp<'a>(name: &str, s: &'a SideReport, flows: usize) -> &'a MptcpReport {
    let m = s.mptcp.as_ref().unwrap_or_else(|| panic!("{name}: no MPTCP report"));
    assert_eq!(m.flows.len(), flows, "{name}: {m:?}");
    assert_eq!((m.mptcp as usize, m.fallback), (flows, 0), "{name}: a connection fell back: {m:?}");
    for f in m.flows.iter() {
        let f = f.as_ref().unwrap_or_else(|| panic!("{name}: the kernel said nothing of a flow: {m:?}"));
        assert!(!f.fallback && f.subflows.unwrap_or(0) >= 1, "{name}: {f:?}");
    }
    m
}

/// Both sides moved the same bytes, and the default report's line says MPTCP with no
/// fallback on either side.
fn check_loopback(r: &TestReport, human: &str) {
    let (l, rm) = (&r.local, r.remote());
    assert!(l.bytes_sent + l.bytes_received > 0, "nothing moved: {l:?}");
    assert_eq!(l.bytes_sent, rm.bytes_received, "client sent and server received differ");
    assert_eq!(l.bytes_received, rm.bytes_sent, "server sent and client received differ");
    assert!(r.spec.socket.mptcp, "the spec does not say MPTCP");
    let line =
        human.lines().find(|l| l.starts_with("mptcp: ")).unwrap_or_else(|| panic!("no mptcp line:\n{human}"));
    assert!(!line.contains("fell back") && !human.contains("MPTCP fell back"), "{human}");
}

/// Runs `args` with --mptcp on loopback, as JSON and as the default report.
fn run_loopback(test: &str, args: &[&str]) -> Option<TestReport> {
    if skip_without_mptcp(test) {
        return None;
    }
    let rp = ringperf!();
    let mut all = args.to_vec();
    all.extend_from_slice(&["--mptcp", "-l", "1"]);
    let r = rp.run_report(&all);
    let human = rp.run(&all).success().stdout;
    check_loopback(&r, &human);
    if r.spec.workload != ringperf_core::spec::Workload::Crr {
        let flows = r.local.flows.len();
        let m = stayed_mptcp("local", &r.local, flows);
        stayed_mptcp("remote", r.remote(), flows);
        assert!(
            human.contains(&format!("mptcp: both sides {flows} of {flows} connections MPTCP")),
            "{human}"
        );
        // MPTCP's own count of the payload covers what the test counted (the flow header too).
        let counted = r.local.bytes_sent;
        let mptcp_sent: u64 = m.flows.iter().flatten().filter_map(|f| f.bytes_sent).sum();
        assert!(mptcp_sent >= counted, "MPTCP says {mptcp_sent} bytes sent, the test counted {counted}");
    } else {
        // crr's connections are counted by how their handshakes ended.
        let t = r.local.transactions;
        assert!(t > 0 && t == r.remote().transactions);
        for (name, s) in [("local", &r.local), ("remote", r.remote())] {
            let m = s.mptcp.as_ref().unwrap_or_else(|| panic!("{name}: no MPTCP report"));
            let h = m.handshakes.unwrap_or_else(|| panic!("{name}: no handshakes: {m:?}"));
            assert!(h.mptcp >= t && h.fallback == 0, "{name}: {t} connections, {h:?}");
        }
        assert!(human.contains("connections MPTCP (handshakes"), "{human}");
    }
    Some(r)
}

#[test]
fn stream_on_the_ring() {
    run_loopback("stream_on_the_ring", &["stream", "--harness", "io-uring"]);
}

#[test]
fn stream_classic() {
    run_loopback("stream_classic", &["stream", "--harness", "classic"]);
}

#[test]
fn maerts_on_the_ring() {
    run_loopback("maerts_on_the_ring", &["stream", "--reverse", "--harness", "io-uring", "--flows", "2"]);
}

#[test]
fn maerts_classic() {
    run_loopback("maerts_classic", &["stream", "--reverse", "--harness", "classic"]);
}

#[test]
fn rr_on_the_ring() {
    run_loopback("rr_on_the_ring", &["rr", "--harness", "io-uring"]);
}

#[test]
fn rr_classic() {
    run_loopback("rr_classic", &["rr", "--harness", "classic"]);
}

#[test]
fn crr_on_the_ring() {
    run_loopback("crr_on_the_ring", &["crr", "--harness", "io-uring"]);
}

#[test]
fn crr_classic() {
    run_loopback("crr_classic", &["crr", "--harness", "classic"]);
}

/// The engines MPTCP takes besides the defaults work; the zero-copy ones it refuses are
/// refused before anything runs, by name, naming the engines that work.
#[test]
fn engines_that_work_work_and_the_others_are_refused_by_name() {
    if skip_without_mptcp("engines_that_work_work_and_the_others_are_refused_by_name") {
        return;
    }
    let rp = ringperf!();
    for engines in [["--send-engine", "splice"], ["--recv-engine", "multishot"], ["--recv-engine", "bundle"]]
    {
        let mut args = vec!["stream", "--mptcp", "-l", "1"];
        args.extend_from_slice(&engines);
        let r = rp.run_report(&args);
        assert_eq!(r.local.bytes_sent, r.remote().bytes_received, "{engines:?}");
        stayed_mptcp("local", &r.local, 1);
    }
    for (engine, works) in [
        (&["--send-engine", "zc"][..], "--send-engine copy"),
        (&["--send-engine", "zc-msg"][..], "--send-engine copy"),
        (&["--send-engine", "msg-zerocopy", "--recv-engine", "syscall"][..], "--send-engine copy"),
        (&["--send-engine", "syscall", "--recv-engine", "zerocopy-receive"][..], "--recv-engine syscall"),
    ] {
        let mut args = vec!["stream", "--mptcp", "-l", "1"];
        args.extend_from_slice(engine);
        rp.run(&args).failure(2, &["mptcp", "does not work", works]);
    }
}

/// A server whose namespace has MPTCP disabled cannot listen MPTCP: the client's error
/// says so, and how to enable it or do without, with a non-zero exit.
#[test]
fn a_server_that_refuses_mptcp_gives_a_clear_error() {
    let test = "a_server_that_refuses_mptcp_gives_a_clear_error";
    if skip_unless(test, true, &[IP]) || skip_without_mptcp(test) {
        return;
    }
    let pair = match NetnsPair::create("mptcpoff", 83) {
        Ok(p) => p,
        Err(e) => return skip(test, &format!("cannot create a namespace pair: {e}")),
    };
    let mut off = std::process::Command::new("ip");
    off.args(["netns", "exec", pair.b.name(), "sysctl", "-qw", "net.mptcp.enabled=0"]);
    pair.run_checked(off).expect("disabling MPTCP in the server's namespace");
    let rp = ringperf!();
    let b_ip: Ipv4Addr = pair.b_addr.parse().expect("address");
    let server = Server::spawn_in(&rp, &pair.b, b_ip, &[]);
    let port = server.port_arg();
    let cmd = pair.a.exec(rp.path(), &["stream", "--mptcp", "-H", &pair.b_addr, "-p", &port, "-l", "1"]);
    let o = run_with_timeout(cmd, std::time::Duration::from_secs(60));
    assert_ne!(o.status.code(), Some(0), "the client succeeded against a server without MPTCP: {o}");
    let err = o.stderr.to_lowercase();
    for needle in ["server", "mptcp", "net.mptcp.enabled", "--mptcp"] {
        assert!(err.contains(needle), "the error lacks '{needle}': {o}");
    }
    // The same server still serves plain TCP.
    let cmd = pair.a.exec(rp.path(), &["stream", "-H", &pair.b_addr, "-p", &port, "-l", "1"]);
    run_with_timeout(cmd, std::time::Duration::from_secs(60)).success();
}

/// Over the lab's two paths (the server on b announces its second address), one MPTCP
/// stream opens a subflow on each and carries bytes on both, with no fallback.
#[test]
fn a_stream_over_two_paths_uses_two_subflows() {
    let test = "a_stream_over_two_paths_uses_two_subflows";
    if skip_unless(test, true, LAB_PROGRAMS) || skip_without_mptcp(test) {
        return;
    }
    let lab = Lab::up(&lab_name("mptcp"), &["--paths", "2"]);
    let rp = ringperf!();
    let server = Server::start(lab.exec("b", rp.path(), &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    let port = server.port_arg();
    let cmd = lab.exec(
        "a",
        rp.path(),
        &["stream", "--mptcp", "-H", "198.18.0.2", "-p", &port, "-l", "3", "--json"],
    );
    let r = run_with_timeout(cmd, std::time::Duration::from_secs(60)).success().report();
    assert_eq!(r.local.bytes_sent, r.remote().bytes_received);
    for (name, s) in [("local", &r.local), ("remote", r.remote())] {
        let m = stayed_mptcp(name, s, 1);
        let f = m.flows[0].as_ref().expect("flow");
        assert_eq!(f.subflows, Some(2), "{name}: {f:?}");
        assert_eq!(f.subflow.len(), 2, "{name}: {f:?}");
        for sf in &f.subflow {
            assert!(sf.bytes_acked + sf.bytes_received > 0, "{name}: a subflow carried nothing: {f:?}");
        }
        let paths: Vec<bool> = f.subflow.iter().map(|sf| sf.local.starts_with("198.18.1.")).collect();
        assert!(paths.contains(&true) && paths.contains(&false), "{name}: not one subflow per path: {f:?}");
    }
}

/// MPTCP's MIB counter `name` (MPTcpExt in /proc/net/netstat) in namespace `ns`.
fn mptcp_counter(ns: &str, name: &str) -> u64 {
    let mut c = std::process::Command::new("ip");
    c.args(["netns", "exec", ns, "cat", "/proc/net/netstat"]);
    let text = run_with_timeout(c, std::time::Duration::from_secs(10)).success().stdout;
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("MPTcpExt:")).collect();
    let [names, values] = rows[..] else { panic!("no MPTcpExt counters in {ns}:\n{text}") };
    let at = names.split_whitespace().position(|n| n == name).unwrap_or_else(|| panic!("no {name}: {names}"));
    values.split_whitespace().nth(at).and_then(|v| v.parse().ok()).expect("a counter")
}

/// `mptcpize run netperf ...` (mptcpd's wrapper, which turns a program's TCP sockets into
/// MPTCP ones) against a netserver that was not wrapped: the drop-in takes the wrapper as
/// the user's word, so the data connections are MPTCP on both ends (the server listened
/// MPTCP: the client's SYN/ACKs carried MP_CAPABLE), for the stream, rr and crr tests; and
/// `-- --mptcp` without the wrapper does the same.
#[test]
fn netperf_under_mptcpize_runs_the_same_test_on_mptcp() {
    let test = "netperf_under_mptcpize_runs_the_same_test_on_mptcp";
    let mptcpize = ringperf_tests::Program { name: "mptcpize", package: "mptcpd" };
    if skip_unless(test, true, &[IP, mptcpize]) || skip_without_mptcp(test) {
        return;
    }
    let ns = match ringperf_tests::Netns::create(&format!("rp-mptcpize-{}", std::process::id() % 100_000)) {
        Ok(n) => n,
        Err(e) => return skip(test, &format!("cannot create a namespace: {e}")),
    };
    let mut lo = std::process::Command::new("ip");
    lo.args(["-n", ns.name(), "link", "set", "lo", "up"]);
    run_with_timeout(lo, std::time::Duration::from_secs(10)).success();
    let dir = std::env::temp_dir().join(format!("ringperf-mptcpize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a links directory");
    let rp = ringperf!();
    rp.run(&["install-links", &dir.to_string_lossy()]).success();
    let server = Server::start(ns.exec(&dir.join("netserver"), &["-D", "-L", "127.0.0.1", "-p", "0"]));
    let port = server.port_arg();
    for t in ["TCP_STREAM", "TCP_RR", "TCP_CRR"] {
        let before = mptcp_counter(ns.name(), "MPCapableSYNACKRX");
        let netperf = dir.join("netperf").to_string_lossy().to_string();
        let args =
            ["run", &netperf, "-t", t, "-H", "127.0.0.1", "-p", &port, "-l", "1", "--", "-k", "THROUGHPUT"];
        let o = run_with_timeout(
            ns.exec(std::path::Path::new("mptcpize"), &args),
            std::time::Duration::from_secs(60),
        )
        .success();
        let tput: f64 = o
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("THROUGHPUT="))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{t}: no THROUGHPUT: {o}"));
        assert!(tput > 0.0, "{t}: {o}");
        let mptcp_connections = mptcp_counter(ns.name(), "MPCapableSYNACKRX") - before;
        assert!(mptcp_connections >= 1, "{t}: no connection was answered as MPTCP: {o}");
    }
    // Without the wrapper, `-- --mptcp` asks for the same.
    let before = mptcp_counter(ns.name(), "MPCapableSYNACKRX");
    let args =
        ["-t", "TCP_STREAM", "-H", "127.0.0.1", "-p", &port, "-l", "1", "--", "--mptcp", "-k", "THROUGHPUT"];
    let o =
        run_with_timeout(ns.exec(&dir.join("netperf"), &args), std::time::Duration::from_secs(60)).success();
    assert!(
        mptcp_counter(ns.name(), "MPCapableSYNACKRX") > before,
        "-- --mptcp made no MPTCP connection: {o}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
