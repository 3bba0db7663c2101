//! The kernel counters each side measures over its window (engine `measure::kernel`):
//! CPU split, network softirqs, softnet, the egress device's interrupts and counters, and
//! where each flow was received. Over loopback, and in a veth lab where the device's own
//! counters can be checked against what TCP says it sent.

use ringperf_tests::{
    lab_name, lab_stream_a_to_b, ringperf, skip_unless, KernelCounters, Lab, NicCounters, SideReport,
    SideReportExt, TestReportExt, LAB_PROGRAMS,
};

fn online_cpus() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u64::try_from(n).unwrap_or(1).max(1)
}

/// The side's egress device counters, checked to be `device`'s with `driver`.
fn nic<'a>(side: &str, k: &'a KernelCounters, device: &str, driver: &str) -> &'a NicCounters {
    let nic = k.nic.as_ref().unwrap_or_else(|| panic!("{side}: no kernel.nic"));
    assert_eq!(nic.device, device);
    assert_eq!(nic.driver.as_deref(), Some(driver));
    nic
}

/// What the side says of its device's interrupts.
fn interrupts_note<'a>(side: &str, k: &'a KernelCounters) -> &'a str {
    let note = k.interrupts.as_ref().and_then(|i| i.note.as_deref());
    note.unwrap_or_else(|| panic!("{side}: no kernel.interrupts.note"))
}

/// What every side's kernel counters must hold, wherever it ran.
fn check_side(side: &str, kernel: &KernelCounters, flows: usize) {
    let k = format!("{side}.kernel");
    // irq_time_accounting.available is yes, no or unknown: the report parsed.
    assert!(!kernel.irq_time_accounting.source.is_empty());
    let split = &kernel.cpu_split;
    assert_eq!(split.len() as u64, online_cpus(), "{k}.cpu_split has one entry per online CPU");
    for c in split {
        let sum: f64 = [c.user, c.nice, c.system, c.irq, c.softirq, c.iowait, c.steal, c.idle].iter().sum();
        // Each CPU's ticks split exactly into the eight states.
        if c.ticks > 0 {
            assert!((sum - 100.0).abs() < 0.01, "{k}: CPU {} sums to {sum} %", c.cpu);
        }
    }
    let placements = &kernel.flows;
    assert_eq!(placements.len(), flows, "{k}.flows: one placement per data socket");
    for p in placements {
        let cpu = u64::from(p.rx_cpu.unwrap_or_else(|| panic!("{k}: no rx CPU in {p:?}")));
        assert!(cpu < online_cpus(), "{k}: a flow received on CPU {cpu} of {}", online_cpus());
    }
}

#[test]
fn a_loopback_stream_counts_softirqs_splits_every_cpu_and_places_every_flow() {
    let rp = ringperf!();
    let r = rp.run_report(&["stream", "-l", "1", "--flows", "2"]);
    for (side, x) in r.sides() {
        let k = x.kernel();
        check_side(side, k, 2);
        let nic = nic(side, k, "lo", "loopback");
        let note = interrupts_note(side, k);
        assert!(note.contains("no interrupts"), "loopback's interrupts: {note}");
        assert!(k.interrupts.as_ref().is_some_and(|i| i.lines.is_empty()));
        assert!(!k.softnet.is_empty());
        // Every payload segment crossed lo in the window.
        let rx = nic.link.as_ref().unwrap_or_else(|| panic!("{side}: no kernel.nic.link")).rx_packets;
        let segs = r.remote().tcp().data_segs_in;
        assert!(rx >= segs / 2, "{side}: lo received {rx} packets, TCP {segs} segments");
    }
    // The receiver ran the NET_RX softirqs that delivered the stream.
    let k = r.remote().kernel();
    assert!(k.net_rx_softirqs > 0, "no NET_RX softirq in the receiver's window");
    assert!(!k.net_softirq_cpus.is_empty());
    assert!(k.packets_per_net_rx.expect("remote.kernel.packets_per_net_rx") > 0.0);
    assert!(k.packets_per_interrupt.is_none(), "lo has no interrupts to divide by");
    // Unpinned workers are said to be.
    assert!(!r.local.kernel().workers_pinned);
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
    let r = rp.run_report(&["crr", "-l", "0.5"]);
    for (side, x) in r.sides() {
        assert!(x.kernel().flows.is_empty());
        let note =
            x.kernel().placement_note.as_deref().unwrap_or_else(|| panic!("{side}: no placement_note"));
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
    let r = lab_stream_a_to_b(&lab, rp.path());
    for (side, x) in r.sides() {
        let k = x.kernel();
        check_side(side, k, 1);
        let nic = nic(side, k, "lab0", "veth");
        // veth has driver counters (ETHTOOL_GSTATS), some per queue.
        assert!(!nic.queues.is_empty(), "{side}: veth's per-queue driver counters missing: {nic:?}");
        let note = interrupts_note(side, k);
        assert!(note.contains("lab0"), "{side}: {note}");
    }
    let link = |x: &SideReport| {
        x.kernel().nic.as_ref().and_then(|n| n.link).unwrap_or_else(|| panic!("no kernel.nic.link"))
    };
    let sent = r.local.tcp().data_segs_out;
    let tx = link(&r.local).tx_packets;
    assert!(sent > 0);
    assert!(tx >= sent, "the sender's veth sent {tx} packets for {sent} data segments");
    let rx = link(r.remote()).rx_packets;
    assert!(rx > 0, "the receiver's veth received nothing");
    drop(lab);
}
