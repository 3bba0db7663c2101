//! The human table, in netperf's layout, followed by what netperf does not show: by default
//! the short form of `short` (how sure, tool overhead, zero-copy proof, doubts); with `-v`
//! every side's tool overhead, steal, ring batching, engines, TCP_INFO, offloads, kernel
//! counters, latency percentiles and confidence.

use std::fmt::Write;

use ringperf_core::env::{LinkSizes, NetworkEnvironment};
use ringperf_core::report::{RingSetup, SideReport, SyscallCounters, UdpReport, ZeroCopyReport};
use ringperf_core::spec::{Role, Workload};
use ringperf_core::TestReport;

use ringperf_core::units::Units;

use super::format::HumanOptions;
use super::sides::sides;
use super::statistics::{latency_lines, statistics_lines};

/// One line: the headline figures of a run (used per iteration).
pub fn headline(r: &TestReport, units: Units) -> String {
    match r.summary.transactions_per_sec {
        Some(tps) => format!(
            "{tps:.2} trans/s, CPU {:.1} % / {}{}",
            r.local.cpu.system.busy_percent,
            remote_cpu(r),
            partial_mark(r)
        ),
        None => format!(
            "{:.2} {}, CPU {:.1} % / {}{}",
            units.convert(r.summary.throughput_bits_per_sec),
            units.label(),
            r.local.cpu.system.busy_percent,
            remote_cpu(r),
            partial_mark(r)
        ),
    }
}

/// The remote CPU figure, or why there is none.
fn remote_cpu(r: &TestReport) -> String {
    r.remote
        .as_ref()
        .map_or_else(|| format!("{NOT_REPORTED} %"), |s| format!("{:.1} %", s.cpu.system.busy_percent))
}

fn partial_mark(r: &TestReport) -> &'static str {
    if r.partial {
        " (PARTIAL)"
    } else {
        ""
    }
}

pub fn render(r: &TestReport, units: Units, opts: &HumanOptions) -> String {
    let mut o = String::new();
    // The short default says the warnings and a partial run in its doubt line, so that no
    // combination of them takes it over its length; -v and netperf's -P 0 say them first.
    let warnings_first = opts.verbosity > 0 || !opts.banner;
    if let Some(c) = r.confidence.as_ref().filter(|_| warnings_first) {
        for m in c.misses() {
            let _ = writeln!(o, "!!! WARNING: confidence target not met: {m}");
        }
        if !c.met {
            o.push('\n');
        }
    }
    let small_files: Vec<String> = sides(r)
        .into_iter()
        .filter(|_| warnings_first)
        .filter_map(|(name, s)| {
            let w = s.send.as_ref()?.splice.as_ref()?.small_file_warning()?;
            Some(format!("!!! WARNING ({}): {w}", name.trim()))
        })
        .collect();
    for w in &small_files {
        let _ = writeln!(o, "{w}");
    }
    if !small_files.is_empty() {
        o.push('\n');
    }
    let mut table = String::new();
    render_table(&mut table, r, units, warnings_first);
    if opts.banner {
        o.push_str(&table);
    } else {
        // -P 0: the data line(s) only, as netperf prints them.
        let data = |l: &&str| l.starts_with(|c: char| c.is_ascii_digit()) || l.starts_with(NOT_REPORTED);
        for line in table.lines().filter(data) {
            o.push_str(line);
            o.push('\n');
        }
        return o;
    }
    // The default report's verdict on what held the stream back stands in for the blank
    // line under the table, so the report keeps its length.
    match super::limits::verdict(r).filter(|_| opts.verbosity == 0) {
        Some(v) => {
            let _ = writeln!(o, "{v}");
        }
        None => o.push('\n'),
    }
    if opts.verbosity == 0 {
        super::short::lines(&mut o, r, units, opts);
        return o;
    }
    let sides = sides(r);
    for &(name, s) in &sides {
        super::profile::side_line(&mut o, name, s);
        side_lines(&mut o, name, s);
    }
    for &(name, s) in &sides {
        engine_lines(&mut o, name, s);
        tcp_line(&mut o, name, s);
        super::limits::side_line(&mut o, name, s);
        super::mptcp::lines(&mut o, name, s);
        crr_line(&mut o, name, s);
        burst_line(&mut o, name, s, r.spec.open_loop.is_some());
        udp_lines(&mut o, name, s);
    }
    let retrans: Vec<String> =
        sides.iter().filter_map(|(n, s)| Some(format!("{} {}", n.trim(), s.socket.retransmits?))).collect();
    if !retrans.is_empty() {
        let _ = writeln!(o, "retransmitted segments (TCP_INFO): {}", retrans.join(", "));
    }
    for &(name, s) in &sides {
        let _ = writeln!(o, "{name}  {}", network_line(s.network.as_ref()));
    }
    for &(name, s) in &sides {
        super::kernel::lines(&mut o, name, s, opts.verbosity > 1);
    }
    if let Some(l) = &r.local.latency {
        latency_lines(&mut o, l);
        if opts.histogram {
            o.push_str(&super::histogram::render(l));
        }
    }
    one_way_lines(&mut o, r);
    if opts.profile {
        for &(name, s) in &sides {
            super::profile::tables(&mut o, name, s);
        }
    }
    statistics_lines(&mut o, r, units);
    if let Some(m) = super::mptcp::summary_line(r) {
        let _ = writeln!(o, "{m}");
    }
    if let Some(line) = super::doubt::line(r) {
        let _ = writeln!(o, "{line}");
    }
    o
}

/// The netperf-style banner and table.
/// `partial_line`: a partial run is said under the banner (else the doubt line says it).
fn render_table(o: &mut String, r: &TestReport, units: Units, partial_line: bool) {
    let server = super::address::socket_addr(&r.server);
    let where_ = match &r.client {
        _ if r.embedded_server => format!("{server} (embedded server)"),
        // Third party: neither side ran on this host.
        Some(agent) => format!("{server} from agent {}", super::address::socket_addr(agent)),
        None => server,
    };
    let remote_cpu = match &r.remote {
        Some(s) => s.pinned_cpu,
        None => r.spec.remote.cpus.first().copied(),
    };
    // One transaction in flight is what rr means without --burst: said only when deeper.
    let burst = match r.spec.open_loop {
        Some(o) => format!(
            ", open loop at {} requests/s {}",
            o.rate,
            if o.total { "over all flows" } else { "per flow" }
        ),
        None if r.spec.burst > 1 => format!(", {} transactions in flight per flow", r.spec.burst),
        None => String::new(),
    };
    let _ = writeln!(
        o,
        "ringperf {} to {where_}: {} s, {} flow(s){burst}, {}, pinned local {} remote {}",
        r.test,
        fmt_secs(r.spec.duration_ms as f64 / 1e3),
        r.spec.flows,
        super::engine_choice::header(r),
        cpu_name(r.local.pinned_cpu),
        cpu_name(remote_cpu)
    );
    if r.partial && partial_line {
        let _ = writeln!(
            o,
            "PARTIAL RESULT: {}. The figures cover the run until it stopped{}.",
            r.partial_reason.as_deref().unwrap_or("the run did not finish"),
            if r.remote.is_none() { "; the server's side never reported" } else { "" }
        );
    }
    match r.spec.workload {
        Workload::Stream => stream_table(o, r, units),
        Workload::Rr | Workload::Crr | Workload::UdpRr => rr_table(o, r),
        Workload::UdpStream => udp_stream_table(o, r, units),
    }
}

/// Tool user-space overhead and ring activity of one side.
fn side_lines(o: &mut String, name: &str, s: &SideReport) {
    {
        let c = &s.cpu;
        let _ = writeln!(
            o,
            "{name}  tool user-space overhead {:>5.2} % of busy CPU (tool user {} ms, sys {} ms; busy {:.0} ms over {} CPUs, steal {:.1} %)",
            c.tool_overhead_percent,
            c.tool.user_us / 1000,
            c.tool.system_us / 1000,
            c.system.busy_us / 1000.0,
            c.system.cpus,
            c.system.steal_percent
        );
        if let Some(calls) = &s.ring.syscalls {
            syscall_line(o, name, s, calls);
            return;
        }
        let mb = (s.bytes_sent + s.bytes_received) as f64 / 1e6;
        let per = match s.role {
            role if role.is_transactional() && s.transactions > 0 => {
                format!("{:.2} enters/transaction", s.ring.enters as f64 / s.transactions as f64)
            }
            _ if mb > 0.0 => format!("{:.1} enters/MB", s.ring.enters as f64 / mb),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "{name}  ring: {} enters, {:.2} SQEs/enter, {:.2} CQEs/enter, {per} ({})",
            s.ring.enters,
            s.ring.sqes_per_enter(),
            s.ring.cqes_per_enter(),
            ring_setup(&s.ring_setup)
        );
    }
}

/// A classic engine's worker has no ring: the system calls it made instead.
fn syscall_line(o: &mut String, name: &str, s: &SideReport, c: &SyscallCounters) {
    let mb = (s.bytes_sent + s.bytes_received) as f64 / 1e6;
    let per = match s.role {
        role if role.is_transactional() && s.transactions > 0 => {
            format!(", {:.2} calls/transaction", c.total() as f64 / s.transactions as f64)
        }
        _ if mb > 0.0 => format!(", {:.1} calls/MB", c.total() as f64 / mb),
        _ => String::new(),
    };
    let other = if c.other > 0 { format!(", {} other", c.other) } else { String::new() };
    let _ = writeln!(
        o,
        "{name}  syscalls (no ring): {} send, {} recv, {} epoll_wait{other}{per}",
        c.sends, c.recvs, c.epoll_waits
    );
}

/// TCP_INFO sums and the per-segment cost.
fn tcp_line(o: &mut String, name: &str, s: &SideReport) {
    let Some(t) = &s.tcp else { return };
    let mut line = format!(
        "{name}  tcp: {} retransmits, {} data segments out, {} in, rtt {:.0} us, cwnd {:.0}",
        t.total_retrans, t.data_segs_out, t.data_segs_in, t.mean_rtt_us, t.mean_cwnd
    );
    if let Some(ns) = s.service_demand.ns_per_segment {
        let _ = write!(line, "; {ns:.0} ns CPU per data segment");
    }
    if let Some(j) = t.jain_fairness {
        let _ = write!(line, "; fairness (Jain) {j:.3} over {} flows", t.flows.len());
    }
    let _ = writeln!(o, "{line}");
}

/// What the connection cycles of a crr side did.
fn crr_line(o: &mut String, name: &str, s: &SideReport) {
    let Some(c) = &s.crr else { return };
    let rate = c.connections as f64 / (s.elapsed_ns.max(1) as f64 / 1e9);
    // Each side says how it closed: the client whether with a reset, the server whether
    // it waited for the client's close.
    let close = match (s.role, c.linger0, c.server_closed_first) {
        (Role::CrrServer, _, true) => "closes first (before the client)",
        (Role::CrrServer, _, false) => "waits for the client's close",
        (_, true, _) => "RST close (SO_LINGER 0)",
        (_, false, _) => "normal close",
    };
    let _ = writeln!(
        o,
        "{name}  crr: {} connections ({rate:.0}/s), {close}, {} busy client ports skipped, {} connections rejected",
        c.connections, c.port_busy, c.rejected
    );
}

/// How deep an rr side saw its flows' transactions go, when the client kept more than one
/// in flight; open loop, how the client kept its schedule.
fn burst_line(o: &mut String, name: &str, s: &SideReport, open: bool) {
    if open {
        return open_loop_line(o, name, s);
    }
    let Some(rr) = s.rr.filter(|rr| rr.burst > 1) else { return };
    let seen = server_depth(s.role).unwrap_or("most one flow had sent and not seen answered at once");
    let _ = writeln!(
        o,
        "{name}  burst: {} transactions in flight per flow; {seen}: {}",
        rr.burst, rr.max_in_flight
    );
}

/// What a server's `max_in_flight` counts (`None` for a client): a TCP server sees whole
/// requests queue behind its answers, a UDP server new requests that arrive together.
fn server_depth(role: Role) -> Option<&'static str> {
    match role {
        Role::RrServer => Some("most whole requests one flow had waiting for an answer at once"),
        Role::UdpRrServer => {
            Some("most new requests of one flow that arrived together, before any was answered")
        }
        _ => None,
    }
}

/// Open loop: the client's target and achieved rate, slips and drops; the server's depth.
fn open_loop_line(o: &mut String, name: &str, s: &SideReport) {
    let Some(rr) = s.rr else { return };
    let Some(ol) = rr.open_loop else {
        if let Some(seen) = server_depth(s.role) {
            let _ = writeln!(o, "{name}  open loop: {seen}: {}", rr.max_in_flight);
        }
        return;
    };
    let _ = writeln!(
        o,
        "{name}  open loop: target {:.1} requests/s, achieved {:.1}/s; {} of {} sent more than {} us late ({:.2} %); {} dropped with {} outstanding on their flow; {} due but unsent at the end; most outstanding on one flow: {}",
        ol.target_rate,
        ol.achieved_rate(s.elapsed_ns),
        ol.slipped,
        ol.sent,
        ol.slip_allowance_ns / 1000,
        100.0 * ol.slip_share(),
        ol.dropped,
        rr.burst,
        ol.unsent_at_end,
        rr.max_in_flight
    );
}

/// netperf's UDP_STREAM table: the sender's line, then the receiver's own count and rate
/// (not reported when a partial run's server never sent its side).
fn udp_stream_table(o: &mut String, r: &TestReport, units: Units) {
    let (tx, rx) = r.sender_and_receiver();
    let (tx, rx) = (with_udp(tx), with_udp(rx));
    if tx.is_none() && rx.is_none() {
        return;
    }
    let secs = SideReport::elapsed_secs;
    let rate = |bits: f64| format!("{:.2}", units.convert(bits));
    let cpu = |s: &SideReport| format!("{:.2}", s.cpu.system.busy_percent);
    let _ = writeln!(o, "Socket  Message  Elapsed      Messages                    CPU      Service");
    let _ = writeln!(o, "Size    Size     Time         Okay   Lost   Throughput    Util     Demand");
    let _ = writeln!(o, "bytes   bytes    secs            #      #   {:<12}  % S      us/KB", units.label());
    o.push('\n');
    let _ = writeln!(
        o,
        "{:<7} {:<8} {:<8} {:>9} {:>6} {:>12}  {:<8} {:<7}",
        shown(tx.map(|(s, _)| s.socket.send_buffer)),
        shown(tx.map(|(_, u)| u.datagram_size)),
        shown(tx.map(|(s, _)| fmt_secs(secs(s)))),
        shown(tx.map(|(_, u)| u.datagrams_sent)),
        0,
        shown(tx.map(|(s, _)| rate(s.send_rate_bits_per_sec()))),
        shown(tx.map(|(s, _)| cpu(s))),
        sd(tx.map(|(s, _)| s), |s| s.service_demand.us_per_kb),
    );
    let lost = r.lost_datagrams();
    let _ = writeln!(
        o,
        "{:<7} {:<8} {:<8} {:>9} {:>6} {:>12}  {:<8} {:<7}",
        shown(rx.map(|(s, _)| s.socket.recv_buffer)),
        "",
        shown(rx.map(|(s, _)| fmt_secs(secs(s)))),
        shown(rx.map(|(_, u)| u.datagrams_received)),
        shown(lost),
        shown(rx.map(|(s, _)| rate(s.receive_rate_bits_per_sec()))),
        shown(rx.map(|(s, _)| cpu(s))),
        sd(rx.map(|(s, _)| s), |s| s.service_demand.us_per_kb),
    );
}

fn with_udp(s: Option<&SideReport>) -> Option<(&SideReport, &UdpReport)> {
    s.and_then(|s| s.udp.as_ref().map(|u| (s, u)))
}

/// Datagram accounting of one side of a UDP test.
fn udp_lines(o: &mut String, name: &str, s: &SideReport) {
    let Some(u) = &s.udp else { return };
    let per_dg = u.us_per_datagram.map_or_else(|| "-".into(), |v| format!("{:.3}", v));
    if u.sends > 0 {
        let gso = u.gso_segment.map_or_else(|| "no GSO".into(), |g| format!("GSO {g} B segments"));
        let _ = writeln!(
            o,
            "{name}  udp send: {} datagrams in {} sends ({:.2} datagrams per SQE, {gso}); {per_dg} us CPU per datagram",
            u.datagrams_sent,
            u.sends,
            u.datagrams_per_send()
        );
    }
    if u.receives > 0 || u.datagrams_received > 0 || u.sequence_span > 0 {
        let gro = if u.gro { "GRO on" } else { "no GRO" };
        let _ = writeln!(
            o,
            "{name}  udp receive: {} datagrams in {} receives ({:.2} datagrams per CQE, {gro}); {} lost in sequence, {} reordered, {} duplicated, {} late, {} stray; {per_dg} us CPU per datagram",
            u.datagrams_received,
            u.receives,
            u.datagrams_per_receive(),
            u.lost,
            u.reordered,
            u.duplicated,
            u.late,
            u.stray
        );
    }
    if matches!(s.role, Role::UdpRrClient) {
        let _ = writeln!(
            o,
            "{name}  udp rr: {} timeouts, {} retransmissions, {} stale responses ignored",
            u.timeouts, u.retransmissions, u.stale_responses
        );
    }
}

/// What the kernel did with zero-copy sends, and whether ringperf's own buffers held any
/// back.
fn zero_copy_line(engine: &str, z: &ZeroCopyReport) -> String {
    let verdict = if z.copied == 0 && z.notifications > 0 {
        "zero copy confirmed by every notification".to_string()
    } else if z.copied == z.notifications {
        "the kernel COPIED every send (loopback and veth always copy: zero copy needs a real NIC)".to_string()
    } else {
        format!("the kernel copied {} of {} sends", z.copied, z.notifications)
    };
    // A throughput that ringperf itself held down must not pass for the kernel's.
    let waits = if z.buffer_waits > 0 {
        format!(
            "; ringperf's own buffers held sends back {} times (a flow had fewer free than it wanted; {} per flow, each held until its notification)",
            z.buffer_waits, z.buffers_per_flow
        )
    } else {
        String::new()
    };
    let from = if z.fixed_buffers {
        "registered arena"
    } else if z.completion_ranges > 0 {
        "plain memory, completions from the error queue"
    } else {
        "plain memory, sends under a page"
    };
    format!(
        "zero copy ({engine}, from {from}): {} sends, {} notifications, {} copied; {:.1} % of bytes sent without a copy: {verdict}{waits}",
        z.sends,
        z.notifications,
        z.copied,
        100.0 * z.zero_copy_fraction()
    )
}

/// What the engines did, and what the kernel really did with zero-copy sends.
fn engine_lines(o: &mut String, name: &str, s: &SideReport) {
    if let Some(send) = &s.send {
        if let Some(z) = &send.zero_copy {
            let _ = writeln!(o, "{name}  {}", zero_copy_line(s.send_engine.name(), z));
            if let Some(l) = &z.notification_latency {
                let _ = writeln!(
                    o,
                    "{name}  notification latency (1 send in {}): p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                    z.latency_sample_every,
                    l.p50_ns as f64 / 1e3,
                    l.p99_ns as f64 / 1e3,
                    l.max_ns as f64 / 1e3
                );
            }
        }
        if let Some(sp) = &send.splice {
            let _ = writeln!(
                o,
                "{name}  splice: {} sends through a {} KiB pipe, {} per linked chain{}, {} short file->pipe, {} short pipe->socket, {} leftover splices",
                send.sends,
                sp.pipe_size / 1024,
                sp.chain_depth,
                if sp.sched_batch { " (sender and io-wq at SCHED_BATCH)" } else { "" },
                sp.short_in,
                sp.short_out,
                sp.leftover_splices
            );
        }
    }
    if let Some(rv) = &s.recv {
        if let Some(z) = &rv.zero_copy {
            let verdict = if z.bytes_mapped == 0 {
                "the kernel mapped nothing: every byte was copied (on loopback the payload is never in whole pages)"
            } else if z.mapped_fraction() < 0.5 {
                "mostly copied"
            } else {
                "mostly mapped"
            };
            let _ = writeln!(
                o,
                "{name}  zerocopy receive: {} receives, {:.1} % of bytes mapped ({} B), {} B copied to the copy buffer, {} B read with recv: {verdict}",
                z.receives,
                100.0 * z.mapped_fraction(),
                z.bytes_mapped,
                z.bytes_copied,
                z.bytes_read
            );
        }
        if rv.engine.uses_buffer_ring() {
            let mut line = format!(
                "{name}  receive ({}): {} data CQEs, {} ENOBUFS, {} re-arms",
                rv.engine.name(),
                rv.data_cqes,
                rv.enobufs,
                rv.rearms
            );
            let total: u64 = rv.buffers_per_cqe.iter().sum();
            if total > 0 {
                let mean = rv.buffers_per_cqe.iter().enumerate().map(|(i, n)| i as u64 * n).sum::<u64>()
                    as f64
                    / total as f64;
                let max = rv.buffers_per_cqe.iter().rposition(|&n| n > 0).unwrap_or(0);
                let _ = write!(line, ", {mean:.1} buffers per CQE on average (max {max})");
            }
            let _ = write!(line, "{}", landing(rv.landing_bytes, s.socket.rcvlowat));
            let _ = writeln!(o, "{line}");
        } else if rv.linked_receives > 0 {
            let chain = match rv.linked_receives {
                1 => "one at a time".to_string(),
                n => format!("{n} linked per chain, each waiting for all its bytes (MSG_WAITALL)"),
            };
            let _ = writeln!(
                o,
                "{name}  receive ({}): {} data CQEs from {} receives, {chain}{}",
                rv.engine.name(),
                rv.data_cqes,
                rv.arms,
                landing(rv.landing_bytes, s.socket.rcvlowat)
            );
        }
    }
    if let Some(v) = &s.verify {
        let state = match (&v.not_checked, v.mismatches) {
            (Some(why), _) => format!("payload not checked: {why}"),
            (None, 0) => "pattern intact".to_string(),
            (None, n) => format!("PAYLOAD CORRUPTED in {n} chunk(s)"),
        };
        let _ = writeln!(
            o,
            "{name}  verify: {} bytes checked, {state} (check cost {:.1} ms)",
            v.bytes_checked,
            v.cost_ns as f64 / 1e6
        );
    }
}

/// Where a receiver's payload lands and when the kernel wakes it, for the receive line.
fn landing(bytes: u64, rcvlowat: u32) -> String {
    let mut s = String::new();
    if bytes > 0 {
        let _ = write!(s, "; lands in {}", size_text(bytes));
    }
    if rcvlowat > 1 {
        let _ = write!(s, "; woken once {} are queued (SO_RCVLOWAT)", size_text(u64::from(rcvlowat)));
    }
    s
}

fn size_text(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// The facts of a side's network path that move results, on one line: device and driver,
/// MTU, offloads, qdisc, coalescing, TCP small queues.
fn network_line(n: Option<&NetworkEnvironment>) -> String {
    let Some(n) = n else {
        return "egress not reported (the peer's ringperf predates environment capture)".into();
    };
    let Some(dev) = &n.device else {
        let why = n.unavailable.first().map_or("", String::as_str);
        return format!("egress unknown: {why}");
    };
    let mut parts = Vec::new();
    if let Some(m) = n.mtu {
        parts.push(format!("mtu {m}"));
    }
    let o = &n.offloads;
    for (label, v) in [("TSO", o.tso), ("GSO", o.gso), ("GRO", o.gro), ("SG", o.sg)] {
        parts.push(format!("{label} {}", on_off(v)));
    }
    parts.push(format!("csum tx {} rx {}", on_off(o.tx_checksum), on_off(o.rx_checksum)));
    parts.extend(max_sizes_text(&n.sizes));
    let mut qdisc = n.qdisc.clone().unwrap_or_else(|| "?".into());
    if !n.qdisc_children.is_empty() {
        qdisc = format!("{qdisc} ({})", n.qdisc_children.join(", "));
    }
    parts.push(format!("qdisc {qdisc}"));
    if let Some(c) = &n.coalescing {
        let adaptive = if c.adaptive_rx || c.adaptive_tx { " adaptive" } else { "" };
        parts.push(format!(
            "coalescing rx {} us/{} frames, tx {} us/{} frames{adaptive}",
            c.rx_usecs, c.rx_frames, c.tx_usecs, c.tx_frames
        ));
    }
    if let Some(v) = n.sysctls.get("net.ipv4.tcp_limit_output_bytes") {
        parts.push(format!("tcp_limit_output_bytes {v}"));
    }
    let driver = n.driver.as_deref().unwrap_or("unknown");
    format!("egress {dev} ({driver} driver): {}", parts.join(", "))
}

/// BIG TCP's limits as the kernel reported them: `GSO max 524280 B (IPv4 65536)`; a limit the
/// kernel did not report is left out (the JSON lists it under `unavailable`).
fn max_sizes_text(s: &LinkSizes) -> Option<String> {
    let pair = |label: &str, all: Option<u32>, v4: Option<u32>| match (all, v4) {
        (Some(a), Some(b)) => Some(format!("{label} max {a} B (IPv4 {b})")),
        (Some(a), None) => Some(format!("{label} max {a} B")),
        (None, Some(b)) => Some(format!("{label} max IPv4 {b} B")),
        (None, None) => None,
    };
    let parts: Vec<String> = [
        pair("GSO", s.gso_max_size, s.gso_ipv4_max_size),
        pair("GRO", s.gro_max_size, s.gro_ipv4_max_size),
        s.tso_max_size.map(|t| format!("TSO max {t} B")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        None
    } else {
        Some(parts.join(", "))
    }
}

fn on_off(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "on",
        Some(false) => "off",
        None => "?",
    }
}

fn stream_table(o: &mut String, r: &TestReport, units: Units) {
    if let Some(rev) = r.summary.reverse_throughput_bits_per_sec {
        let _ = writeln!(o, "both directions at once (--bidir), {} flows each way:", r.spec.flows);
        let _ = writeln!(
            o,
            "  client -> server {:>11.2} {}  ({} bytes)",
            units.convert(r.summary.throughput_bits_per_sec),
            units.label(),
            r.local.bytes_sent
        );
        let _ = writeln!(
            o,
            "  server -> client {:>11.2} {}  ({})",
            units.convert(rev),
            units.label(),
            r.remote.as_ref().map_or_else(
                || format!("{} bytes received; the server never reported", r.local.bytes_received),
                |s| format!("{} bytes", s.bytes_sent)
            )
        );
    }
    let remote = r.remote.as_ref();
    let (sender, receiver) = r.sender_and_receiver();
    let _ = writeln!(o, "Recv     Send     Send                           Utilization       Service Demand");
    let _ = writeln!(o, "Socket   Socket   Message  Elapsed               Send     Recv     Send    Recv");
    let _ = writeln!(o, "Size     Size     Size     Time     Throughput   local    remote   local   remote");
    let _ = writeln!(
        o,
        "bytes    bytes    bytes    secs.    {:<12} % S      % S      us/KB   us/KB",
        units.label()
    );
    o.push('\n');
    let _ = writeln!(
        o,
        "{:<8} {:<8} {:<8} {:<8} {:>11.2}  {:<8.2} {:<8} {:<7} {:<7}",
        shown(receiver.map(|s| s.socket.recv_buffer)),
        shown(sender.map(|s| s.socket.send_buffer)),
        r.spec.send_size,
        fmt_secs(sender.unwrap_or(&r.local).elapsed_ns as f64 / 1e9),
        units.convert(r.summary.throughput_bits_per_sec),
        r.local.cpu.system.busy_percent,
        shown(remote.map(|s| format!("{:.2}", s.cpu.system.busy_percent))),
        sd(Some(&r.local), |s| s.service_demand.us_per_kb),
        sd(remote, |s| s.service_demand.us_per_kb),
    );
}

fn rr_table(o: &mut String, r: &TestReport) {
    let _ = writeln!(o, "Local /Remote");
    let _ = writeln!(o, "Socket Size       Request Resp.  Elapsed Trans.     CPU    CPU    S.dem    S.dem");
    let _ = writeln!(o, "Send     Recv     Size    Size   Time    Rate       local  remote local    remote");
    let _ = writeln!(o, "bytes    bytes    bytes   bytes  secs.   per sec    % S    % S    us/Tr    us/Tr");
    o.push('\n');
    let _ = writeln!(
        o,
        "{:<8} {:<8} {:<7} {:<6} {:<7} {:<10} {:<6.2} {:<6} {:<8} {:<8}",
        r.local.socket.send_buffer,
        r.local.socket.recv_buffer,
        r.spec.request_size,
        r.spec.response_size,
        fmt_secs(r.local.elapsed_ns as f64 / 1e9),
        shown(r.summary.transactions_per_sec.map(|t| format!("{t:.2}"))),
        r.local.cpu.system.busy_percent,
        shown(r.remote.as_ref().map(|s| format!("{:.2}", s.cpu.system.busy_percent))),
        sd(Some(&r.local), |s| s.service_demand.us_per_transaction),
        sd(r.remote.as_ref(), |s| s.service_demand.us_per_transaction),
    );
    match &r.remote {
        Some(remote) => {
            let _ = writeln!(o, "{:<8} {:<8}", remote.socket.send_buffer, remote.socket.recv_buffer);
        }
        None => {
            let _ = writeln!(o, "{NOT_REPORTED:<8} {NOT_REPORTED:<8}");
        }
    }
}

/// udp-stream's and udp-rr's one-way delays, each direction with how far its clock can be
/// trusted, or why it was not measured.
fn one_way_lines(o: &mut String, r: &TestReport) {
    let directions: &[(bool, &str)] = match r.spec.workload {
        Workload::UdpStream => &[(true, "client->server")],
        Workload::UdpRr => &[(true, "client->server"), (false, "server->client")],
        _ => return,
    };
    let us = |ns: u64| ns as f64 / 1e3;
    for &(request, name) in directions {
        if let Some(why) = r.spec.one_way_unmeasured(request) {
            let _ = writeln!(o, "one-way {name}: not measured ({why})");
            continue;
        }
        let Some(w) = r.one_way(request) else {
            let _ = writeln!(o, "one-way {name}: {NOT_REPORTED} (the side that received it did not report)");
            continue;
        };
        let Some(d) = &w.delay else {
            let _ = writeln!(o, "one-way {name}: no stamped datagram arrived");
            continue;
        };
        let clock = match &r.clock {
            Some(k) if k.same_host => "same host: one clock, exact".to_string(),
            Some(k) => format!(
                "clock offset {:+.1} us from {} probes, uncertainty +/-{:.1} us",
                k.offset_ns as f64 / 1e3,
                k.probes,
                us(k.uncertainty_ns)
            ),
            None => "clock offset unknown".to_string(),
        };
        let _ = writeln!(
            o,
            "one-way {name} (us, {} datagrams; {clock}): min {:.1} mean {:.1} p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}",
            d.count,
            us(d.min_ns),
            d.mean_ns / 1e3,
            us(d.p50_ns),
            us(d.p90_ns),
            us(d.p99_ns),
            us(d.p999_ns),
            us(d.max_ns)
        );
        if w.trusted == Some(false) {
            let _ = writeln!(
                o,
                "!!! one-way {name} cannot be trusted: the clock offset's uncertainty (+/-{:.1} us) is over half its p50; synchronise the hosts' clocks or use a shorter control path",
                us(w.uncertainty_ns.unwrap_or(0))
            );
        }
        if w.not_after_send > 0 {
            let _ = writeln!(
                o,
                "!!! one-way {name}: {} datagrams arrived no later than their send stamp on the corrected clock (counted as 1 ns): the offset estimate is off by more than their delay",
                w.not_after_send
            );
        }
    }
}

fn ring_setup(r: &RingSetup) -> String {
    let mut parts = vec![if r.sqpoll {
        match r.sqpoll_cpu {
            Some(c) => format!("SQPOLL on CPU {c}"),
            None => "SQPOLL".to_string(),
        }
    } else if r.defer_taskrun {
        "DEFER_TASKRUN".to_string()
    } else {
        "COOP_TASKRUN".to_string()
    }];
    if r.registered_ring_fd {
        parts.push("registered fd".into());
    }
    if r.fixed_files {
        parts.push("fixed files".into());
    }
    if r.no_iowait {
        parts.push("no iowait".into());
    }
    if r.cq_batch > 1 {
        parts.push(format!("wait {} CQEs or {} us", r.cq_batch, r.cq_wait_us));
    }
    if let Some(us) = r.napi_busy_poll_us {
        parts.push(format!("NAPI busy poll {us} us"));
    }
    parts.join(", ")
}

/// What a table cell shows for a figure nobody measured (a partial run's missing server
/// side, a service demand without bytes): a 0 there would read as a measurement.
pub const NOT_REPORTED: &str = "—";

fn shown(v: Option<impl std::fmt::Display>) -> String {
    v.map_or_else(|| NOT_REPORTED.to_string(), |v| v.to_string())
}

fn sd(s: Option<&SideReport>, f: impl Fn(&SideReport) -> Option<f64>) -> String {
    shown(s.and_then(f).map(|v| format!("{v:.3}")))
}

fn fmt_secs(s: f64) -> String {
    format!("{s:.2}")
}

fn cpu_name(c: Option<usize>) -> String {
    c.map_or_else(|| "-".into(), |c| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::env::{Coalescing, Offloads};

    #[test]
    fn the_zero_copy_line_says_when_ringperfs_buffers_held_sends_back() {
        let mut z = ZeroCopyReport {
            sends: 10,
            notifications: 10,
            copied: 10,
            bytes_copied: 10240,
            buffers_per_flow: 5,
            ..Default::default()
        };
        let line = zero_copy_line("zc", &z);
        assert!(
            line.starts_with(
                "zero copy (zc, from plain memory, sends under a page): 10 sends, 10 notifications, 10 copied;"
            ),
            "{line}"
        );
        assert!(!line.contains("held sends back"), "{line}");
        z.buffer_waits = 7;
        let line = zero_copy_line("zc-msg", &z);
        assert!(
            line.ends_with(
                "; ringperf's own buffers held sends back 7 times (a flow had fewer free than it wanted; 5 per flow, each held until its notification)"
            ),
            "{line}"
        );
    }

    #[test]
    fn egress_line_says_what_it_knows_and_why_not() {
        assert!(network_line(None).contains("not reported"));
        let unknown = NetworkEnvironment {
            unavailable: vec!["device: route lookup: Network is unreachable".into()],
            ..Default::default()
        };
        assert_eq!(
            network_line(Some(&unknown)),
            "egress unknown: device: route lookup: Network is unreachable"
        );

        let mut n = NetworkEnvironment {
            device: Some("eth0".into()),
            driver: Some("mlx5_core".into()),
            mtu: Some(9000),
            offloads: Offloads {
                tso: Some(false),
                gso: Some(true),
                gro: None,
                sg: Some(true),
                ..Default::default()
            },
            qdisc: Some("mq".into()),
            qdisc_children: vec!["fq_codel".into()],
            coalescing: Some(Coalescing {
                rx_usecs: 8,
                rx_frames: 128,
                adaptive_rx: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        n.sysctls.insert("net.ipv4.tcp_limit_output_bytes".into(), "1048576".into());
        assert_eq!(
            network_line(Some(&n)),
            "egress eth0 (mlx5_core driver): mtu 9000, TSO off, GSO on, GRO ?, SG on, csum tx ? rx ?, \
             qdisc mq (fq_codel), coalescing rx 8 us/128 frames, tx 0 us/0 frames adaptive, \
             tcp_limit_output_bytes 1048576"
        );
        n.sizes = LinkSizes {
            gso_max_size: Some(524280),
            gso_ipv4_max_size: Some(65536),
            gro_max_size: Some(131072),
            tso_max_size: Some(524280),
            ..Default::default()
        };
        assert!(
            network_line(Some(&n)).contains(
                "csum tx ? rx ?, GSO max 524280 B (IPv4 65536), GRO max 131072 B, TSO max 524280 B, qdisc mq"
            ),
            "{}",
            network_line(Some(&n))
        );
    }
}
