//! Third-party runs: `ringperf stream -H B --from A` has agent A run the client side
//! against agent B. Between namespaces (root only): bytes conserved, and the controller's
//! namespace carries none of them. On loopback: every workload and iterations through an
//! agent, the refusals (no --allow-third-party, no key, an old protocol), and agents left
//! ready after a controller is killed mid-run.

use std::time::Duration;

use ringperf_tests::fabric::{Fabric, KeyFile, AGENT_PORT};
use ringperf_tests::{
    ringperf, run_with_timeout, skip_unless, Control, Ringperf, Server, TestReportExt, IP, LAB_PROGRAMS,
};

/// Agents A and B on loopback, A taking third-party work; both hold `key`.
fn loopback_agents(rp: &Ringperf, key: &KeyFile) -> (Server, Server) {
    let a = Server::spawn_with(rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    let b = Server::spawn_with(rp, &["--psk-file", key.arg()]);
    (a, b)
}

/// The arguments that run `workload` from agent `a` against agent `b`.
fn from_args<'a>(a: &'a str, b: &'a str, key: &'a KeyFile) -> Vec<&'a str> {
    vec!["-H", "127.0.0.1", "-p", b, "--from", "127.0.0.1", "--from-port", a, "--psk-file", key.arg()]
}

#[test]
fn every_workload_runs_through_an_agent_and_names_both_hosts() {
    let rp = ringperf!();
    let key = KeyFile::new("tpall");
    let (a, b) = loopback_agents(&rp, &key);
    let (ap, bp) = (a.port_arg(), b.port_arg());
    for workload in ["stream", "rr", "crr", "udp-stream", "udp-rr", "sendfile"] {
        let mut args = vec![workload, "-l", "0.5"];
        args.extend(from_args(&ap, &bp, &key));
        let r = rp.run_report(&args);
        assert!(!r.partial, "{workload}: partial: {:?}", r.partial_reason);
        let client = Some(format!("127.0.0.1:{ap}"));
        assert_eq!(r.client, client, "{workload}: the agent is not named");
        assert_eq!(r.server, format!("127.0.0.1:{bp}"), "{workload}: the server is not named");
        assert!(!r.embedded_server, "{workload}");
        // CPU figures of both agents came back.
        for (side, x) in r.sides() {
            let busy = x.cpu.system.busy_percent;
            assert!((0.0..=100.0).contains(&busy), "{workload}: {side} busy {busy}");
        }
        if workload == "stream" || workload == "sendfile" {
            assert_eq!(r.local.bytes_sent, r.remote().bytes_received, "{workload}");
            assert!(r.local.bytes_sent > 0, "{workload}: nothing moved");
        }
        if workload == "rr" || workload == "crr" {
            assert!(r.local.transactions > 0, "{workload}: no transactions");
        }
    }
    // Each run was a session on A that A ran as a client of B, and A's log says so.
    assert!(a.log().iter().filter(|l| l.contains(" done (")).count() >= 6, "{:?}", a.log());
    // Named as the controller gave it, and the address A resolved it to, once.
    let against = format!("against 127.0.0.1:{bp} (127.0.0.1:{bp}) for this controller");
    assert_eq!(a.log().iter().filter(|l| l.contains("third party") && l.contains(&against)).count(), 6);
}

#[test]
fn iterations_and_the_human_banner_work_through_an_agent() {
    let rp = ringperf!();
    let key = KeyFile::new("tpiter");
    let (a, b) = loopback_agents(&rp, &key);
    let (ap, bp) = (a.port_arg(), b.port_arg());
    let mut args = vec!["stream", "-l", "0.5", "-i", "2,2"];
    args.extend(from_args(&ap, &bp, &key));
    let r = rp.run_report(&args);
    assert_eq!(r.iterations.len(), 2, "two iterations: {:?}", r.iterations);
    assert_eq!(r.confidence().iterations, 2);
    let mut args = vec!["stream", "-l", "1", "-D", "0.25"];
    args.extend(from_args(&ap, &bp, &key));
    let o = rp.run(&args).success();
    // The agent's interval samples print once its report arrives, in order: four of
    // 0.25 s, and perhaps a short remainder after them.
    let intervals: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("interval")).collect();
    assert!((4..=5).contains(&intervals.len()), "{o}");
    // Each interval ends where the next starts, from 0.00 on: the sampler's ticks may come
    // late on a loaded host, so the ends are not exact multiples of 0.25 s.
    let spans: Vec<(f64, f64)> = intervals
        .iter()
        .filter_map(|l| {
            let span = l.strip_prefix("interval")?.trim_start().split(" s").next()?;
            let (from, to) = span.split_once('-')?;
            Some((from.trim().parse().ok()?, to.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(spans.len(), intervals.len(), "unparsable interval lines: {o}");
    assert_eq!(spans[0].0, 0.0, "{o}");
    for pair in spans.windows(2) {
        assert!(pair[0].0 < pair[0].1 && (pair[0].1 - pair[1].0).abs() < 0.006, "{o}");
    }
    let banner = o.stdout.lines().find(|l| l.starts_with("ringperf ")).unwrap_or_default().to_string();
    assert!(
        banner.contains(&format!("to 127.0.0.1:{bp} from agent 127.0.0.1:{ap}")),
        "the banner does not name both hosts: {banner}"
    );
}

#[test]
fn an_agent_without_the_flag_refuses_naming_it() {
    let rp = ringperf!();
    let key = KeyFile::new("tpflag");
    // A holds the key but was not started with --allow-third-party.
    let a = Server::spawn_with(&rp, &["--psk-file", key.arg()]);
    let b = Server::spawn_with(&rp, &["--psk-file", key.arg()]);
    let (ap, bp) = (a.port_arg(), b.port_arg());
    let mut args = vec!["stream", "-l", "0.5"];
    args.extend(from_args(&ap, &bp, &key));
    let o = rp.run(&args);
    o.failure(3, &["--allow-third-party"]);
    // B never saw a session: A refused before connecting anywhere.
    assert!(!b.log().iter().any(|l| l.contains("session started")), "{:?}", b.log());
    // And the flag alone is refused without a key.
    let o = rp.run(&["serve", "--allow-third-party", "--bind", "127.0.0.1", "--port", "0"]);
    o.failure(2, &["--psk-file"]);
}

#[test]
fn an_agent_sends_only_to_a_peer_that_proves_its_key() {
    let rp = ringperf!();
    let key = KeyFile::new("tpproof");
    let a = Server::spawn_with(&rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    // A server that asks for no key: anyone could be behind it.
    let open = Server::spawn(&rp);
    let (ap, op) = (a.port_arg(), open.port_arg());
    let mut args = vec!["stream", "-l", "0.5"];
    args.extend(from_args(&ap, &op, &key));
    rp.run(&args).failure(3, &["proves it holds this agent's key"]);
    assert!(!open.log().iter().any(|l| l.contains("accepted")), "{:?}", open.log());
    // A key the agent does not hold is refused by the agent itself.
    let other = KeyFile::new("tpother");
    let mut args = vec!["stream", "-l", "0.5"];
    args.extend(from_args(&ap, &op, &other));
    rp.run(&args).failure(3, &["key"]);
}

#[test]
fn a_peer_speaking_the_old_protocol_is_told_to_upgrade() {
    let rp = ringperf!();
    let s = Server::spawn(&rp);
    let now = ringperf_control::protocol::PROTOCOL_VERSION;
    // Every older hello had two fields; this server still reads them and names both versions.
    for old in [3, now - 1] {
        let mut c = Control::connect(s.port());
        c.send_json(&serde_json::json!({"type": "hello", "protocol": old, "tool_version": "old"}));
        let (kind, message) = c.expect_error();
        assert_eq!(kind, "protocol", "{message}");
        assert!(
            message.contains(&format!("client speaks protocol {old}, this server speaks {now}")),
            "{message}"
        );
        assert!(message.contains("same ringperf version"), "{message}");
    }
}

#[test]
fn a_controller_killed_mid_run_leaves_both_agents_ready() {
    let rp = ringperf!();
    let key = KeyFile::new("tpkill");
    let (mut a, mut b) = loopback_agents(&rp, &key);
    let (ap, bp) = (a.port_arg(), b.port_arg());
    let mut args = vec!["stream", "-l", "20", "-b", "100m"];
    args.extend(from_args(&ap, &bp, &key));
    let mut controller = ringperf_tests::ChildGuard::spawn(rp.command(&args));
    assert!(
        b.wait_for_log("accepted", Duration::from_secs(20)).is_some(),
        "the run never started: {:?}",
        b.log()
    );
    std::thread::sleep(Duration::from_millis(500));
    controller.kill();
    // A sees its controller gone and stops the run; B's session ends with it.
    assert!(
        a.wait_for_log("stopped by the client", Duration::from_secs(10)).is_some()
            || a.wait_for_log("session failed", Duration::from_secs(1)).is_some(),
        "A did not stop the run: {:?}",
        a.log()
    );
    // Stopped mid-run, B reports what it measured; on a machine so slow that the kill
    // came before the window opened, its session fails instead. Either way it ends.
    assert!(
        b.wait_for_log("stopped by the client", Duration::from_secs(10)).is_some()
            || b.wait_for_log("session failed", Duration::from_secs(1)).is_some(),
        "B's session did not end: {:?}",
        b.log()
    );
    a.assert_running();
    b.assert_running();
    let mut args = vec!["stream", "-l", "0.5"];
    args.extend(from_args(&ap, &bp, &key));
    let r = rp.run_report(&args);
    assert!(!r.partial, "the next run through the same agents: {:?}", r.partial_reason);
}

#[test]
fn third_party_stream_between_namespaces_carries_nothing_through_the_root_namespace() {
    const TEST: &str = "third_party_stream_between_namespaces_carries_nothing_through_the_root_namespace";
    let mut needs = LAB_PROGRAMS.to_vec();
    needs.push(IP);
    if skip_unless(TEST, true, &needs) {
        return;
    }
    let rp = ringperf!();
    let fabric = Fabric::up("mhtp", 61, 4, &rp, &["--allow-third-party"]);
    let (a, b) = (&fabric.hosts[0], &fabric.hosts[1]);
    let before = fabric.root_bytes();
    let port = AGENT_PORT.to_string();
    let args = [
        "stream",
        "-l",
        "2",
        "--json",
        "-H",
        &b.data_ip,
        "-p",
        &port,
        "--from",
        &a.control_ip,
        "--from-port",
        &port,
        "--psk-file",
        fabric.key.arg(),
    ];
    let o = run_with_timeout(rp.command(&args), Duration::from_secs(60));
    let r = o.success().report();
    let moved = r.local.bytes_sent;
    assert!(moved > 10 << 20, "under 10 MiB moved in 2 s between namespaces: {moved}");
    assert_eq!(moved, r.remote().bytes_received, "bytes lost between A and B");
    assert_eq!(r.server, format!("{}:{port}", b.data_ip));
    assert_eq!(r.client, Some(format!("{}:{port}", a.control_ip)));
    let root = fabric.root_bytes() - before;
    eprintln!("third party between namespaces: {moved} bytes from A to B, {root} bytes on the root namespace's interfaces");
    // The control messages and the report are tens of KB; the data is many MB.
    assert!(root < moved / 100, "the root namespace's interfaces carried {root} bytes of {moved} moved");
    assert!(root > 0, "the controller's messages did not cross the control veths");
}

#[test]
fn each_agent_applies_its_own_limits() {
    let rp = ringperf!();
    let key = KeyFile::new("tplim");
    // A short leash on the agent that runs the client side...
    let a = Server::spawn_with(&rp, &["--psk-file", key.arg(), "--allow-third-party", "--max-duration", "1"]);
    let b = Server::spawn_with(&rp, &["--psk-file", key.arg()]);
    let (ap, bp) = (a.port_arg(), b.port_arg());
    let mut args = vec!["stream", "-l", "2"];
    args.extend(from_args(&ap, &bp, &key));
    rp.run(&args).failure(2, &["--max-duration 1"]);
    assert!(
        !b.log().iter().any(|l| l.contains("session started")),
        "A refused before reaching B: {:?}",
        b.log()
    );
    // ...and on the agent that serves: its refusal reaches the controller naming it.
    let free = Server::spawn_with(&rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    let tight = Server::spawn_with(&rp, &["--psk-file", key.arg(), "--max-flows", "2"]);
    let (fp, tp) = (free.port_arg(), tight.port_arg());
    let mut args = vec!["stream", "-l", "1", "--flows", "4"];
    args.extend(from_args(&fp, &tp, &key));
    let line = rp.run(&args).failure(2, &["--max-flows 2"]);
    assert!(line.contains(&format!("the peer agent 127.0.0.1:{tp}")), "{line}");
}
