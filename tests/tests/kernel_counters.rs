//! The kernel counters each side measures over its window (engine `measure::kernel`):
//! CPU split, network softirqs, softnet, the egress device's interrupts and counters, and
//! where each flow was received. Over loopback, and in a veth lab where the device's own
//! counters can be checked against what TCP says it sent.

use ringperf_tests::{
    at, f64_at, lab_name, ringperf, skip_unless, str_at, u64_at, Lab, Server, LAB_PROGRAMS, RUN_TIMEOUT,
};
use serde_json::Value;

fn online_cpus() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u64::try_from(n).unwrap_or(1).max(1)
}

fn array<'a>(r: &'a Value, path: &str) -> &'a Vec<Value> {
    at(r, path).as_array().unwrap_or_else(|| panic!("'{path}' is not an array: {}", at(r, path)))
}

/// What every side's kernel counters must hold, wherever it ran.
fn check_side(r: &Value, side: &str, flows: usize) {
    let k = format!("{side}.kernel");
    let availability = str_at(r, &format!("{k}.irq_time_accounting.available"));
    assert!(["yes", "no", "unknown"].contains(&availability), "{k}: irq time accounting '{availability}'");
    assert!(!str_at(r, &format!("{k}.irq_time_accounting.source")).is_empty());
    let split = array(r, &format!("{k}.cpu_split"));
    assert_eq!(split.len() as u64, online_cpus(), "{k}.cpu_split has one entry per online CPU");
    let num =
        |v: &Value, f: &str| v.get(f).and_then(Value::as_f64).unwrap_or_else(|| panic!("{k}: no {f} in {v}"));
    for c in split {
        let sum: f64 = ["user", "nice", "system", "irq", "softirq", "iowait", "steal", "idle"]
            .iter()
            .map(|f| num(c, f))
            .sum();
        // Each CPU's ticks split exactly into the eight states.
        if num(c, "ticks") > 0.0 {
            assert!((sum - 100.0).abs() < 0.01, "{k}: CPU {} sums to {sum} %", num(c, "cpu"));
        }
    }
    let placements = array(r, &format!("{k}.flows"));
    assert_eq!(placements.len(), flows, "{k}.flows: one placement per data socket");
    for p in placements {
        let cpu = p.get("rx_cpu").and_then(Value::as_u64).unwrap_or_else(|| panic!("{k}: no rx CPU in {p}"));
        assert!(cpu < online_cpus(), "{k}: a flow received on CPU {cpu} of {}", online_cpus());
    }
}

#[test]
fn a_loopback_stream_counts_softirqs_splits_every_cpu_and_places_every_flow() {
    let rp = ringperf!();
    let r = rp.run_json(&["stream", "-l", "1", "--flows", "2"]);
    for side in ["local", "remote"] {
        check_side(&r, side, 2);
        assert_eq!(str_at(&r, &format!("{side}.kernel.nic.device")), "lo");
        assert_eq!(str_at(&r, &format!("{side}.kernel.nic.driver")), "loopback");
        let note = str_at(&r, &format!("{side}.kernel.interrupts.note"));
        assert!(note.contains("no interrupts"), "loopback's interrupts: {note}");
        assert!(array(&r, &format!("{side}.kernel.interrupts.lines")).is_empty());
        assert!(!array(&r, &format!("{side}.kernel.softnet")).is_empty());
        // Every payload segment crossed lo in the window.
        let rx = u64_at(&r, &format!("{side}.kernel.nic.link.rx_packets"));
        let segs = u64_at(&r, "remote.tcp.data_segs_in");
        assert!(rx >= segs / 2, "{side}: lo received {rx} packets, TCP {segs} segments");
    }
    // The receiver ran the NET_RX softirqs that delivered the stream.
    assert!(u64_at(&r, "remote.kernel.net_rx_softirqs") > 0, "no NET_RX softirq in the receiver's window");
    assert!(!array(&r, "remote.kernel.net_softirq_cpus").is_empty());
    assert!(f64_at(&r, "remote.kernel.packets_per_net_rx") > 0.0);
    assert!(at(&r, "remote.kernel.packets_per_interrupt").is_null(), "lo has no interrupts to divide by");
    // Unpinned workers are said to be.
    assert_eq!(at(&r, "local.kernel.workers_pinned"), &Value::Bool(false));
}

#[test]
fn pinned_workers_are_named_and_the_human_report_has_a_line_per_item() {
    let rp = ringperf!();
    let o = rp.run(&["rr", "-l", "0.5", "-T", "0,0", "-v"]).success();
    for side in ["local ", "remote"] {
        for item in [
            "cpu split: workers on CPU 0;",
            "softirqs: NET_RX ",
            "interrupts of lo: none",
            "nic lo (loopback): rx ",
            "placement: 1 flow: rx on CPU ",
        ] {
            assert!(
                o.stdout.lines().any(|l| l.starts_with(side) && l.contains(item)),
                "no '{side}' line with '{item}':\n{}",
                o.stdout
            );
        }
    }
    assert!(!o.stdout.contains("flow_limit"), "the per-CPU table is for -vv only");
    let v = rp.run(&["rr", "-l", "0.5", "-vv"]).success();
    let header = v.stdout.lines().filter(|l| l.contains("NET_RX") && l.contains("flow_limit")).count();
    assert_eq!(header, 2, "one per-CPU table per side under -vv:\n{}", v.stdout);
    assert!(v.stdout.contains("irq time accounting: "), "{}", v.stdout);
}

#[test]
fn crr_says_why_it_has_no_placement_and_keyval_carries_the_counters() {
    let rp = ringperf!();
    let r = rp.run_json(&["crr", "-l", "0.5"]);
    for side in ["local", "remote"] {
        assert!(array(&r, &format!("{side}.kernel.flows")).is_empty());
        let note = str_at(&r, &format!("{side}.kernel.placement_note"));
        assert!(note.contains("crr"), "{side}: {note}");
    }
    let o = rp.run(&["stream", "-l", "0.5", "--keyval"]).success();
    let field = |name: &str| {
        o.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in:\n{}", o.stdout))
            .to_string()
    };
    assert!(field("REMOTE_NET_RX_SOFTIRQS").parse::<u64>().is_ok_and(|n| n > 0));
    assert!(field("LOCAL_NIC_TX_PACKETS").parse::<u64>().is_ok_and(|n| n > 0));
    assert_eq!(field("LOCAL_NIC"), "lo");
    assert!(field("LOCAL_SOFTIRQ_PERCENT").parse::<f64>().is_ok());
    assert_eq!(field("LOCAL_PACKETS_PER_INTERRUPT"), "", "lo has no interrupts");
}

#[test]
fn a_veth_lab_counts_the_senders_segments_on_the_device_and_names_the_driver() {
    let test = "a_veth_lab_counts_the_senders_segments_on_the_device_and_names_the_driver";
    if skip_unless(test, true, LAB_PROGRAMS) {
        return;
    }
    let rp = ringperf!();
    // TSO off on the sender's veth: the stack segments before the device, so each data
    // segment TCP counts is one packet the device counts.
    let lab = Lab::up(&lab_name("kcount"), &["--tso", "a=off"]);
    let mut server =
        Server::start(lab.exec("b", rp.path(), &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    let port = server.port_arg();
    let o = ringperf_tests::run_with_timeout(
        lab.exec("a", rp.path(), &["stream", "-H", "198.18.0.2", "-p", &port, "-l", "1", "--json"]),
        RUN_TIMEOUT,
    )
    .success();
    server.assert_running();
    let r = o.json();
    for side in ["local", "remote"] {
        check_side(&r, side, 1);
        assert_eq!(str_at(&r, &format!("{side}.kernel.nic.device")), "lab0");
        assert_eq!(str_at(&r, &format!("{side}.kernel.nic.driver")), "veth");
        // veth has driver counters (ETHTOOL_GSTATS), some per queue.
        let queues = array(&r, &format!("{side}.kernel.nic.queues"));
        assert!(
            !queues.is_empty(),
            "{side}: veth's per-queue driver counters missing: {}",
            at(&r, &format!("{side}.kernel.nic"))
        );
        let note = str_at(&r, &format!("{side}.kernel.interrupts.note"));
        assert!(note.contains("lab0"), "{side}: {note}");
    }
    let sent = u64_at(&r, "local.tcp.data_segs_out");
    let tx = u64_at(&r, "local.kernel.nic.link.tx_packets");
    assert!(sent > 0);
    assert!(tx >= sent, "the sender's veth sent {tx} packets for {sent} data segments");
    let rx = u64_at(&r, "remote.kernel.nic.link.rx_packets");
    assert!(rx > 0, "the receiver's veth received nothing");
    drop(server);
    drop(lab);
}
