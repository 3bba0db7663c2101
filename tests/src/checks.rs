//! The checks every report of a kind must pass, whatever else its test asserts.

use crate::reports::{Direction, Role, SendEngine, SideReport, TestReport, TestReportExt, Workload};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Checks what every side report must satisfy, whatever the test: CPU shares within
/// [0, 100], busy time within what the CPUs could give, the ring used, the tool measured.
/// `name` (local, remote) says which side in a failure.
pub fn check_side_common(name: &str, s: &SideReport) {
    let side = name;
    let elapsed_ns = s.elapsed_ns;
    assert!(elapsed_ns > 0, "{side}: elapsed_ns is 0");

    let system = &s.cpu.system;
    let cpus = system.cpus as u64;
    assert!(cpus >= 1, "{side}: cpu.system.cpus is 0");
    let busy = system.busy_percent;
    assert!((0.0..=100.0).contains(&busy), "{side}: busy_percent {busy} outside [0, 100]");
    let steal = system.steal_percent;
    assert!((0.0..=100.0).contains(&steal), "{side}: steal_percent {steal} outside [0, 100]");
    assert!(busy + steal <= 100.0 + 1e-6, "{side}: busy {busy} + steal {steal} exceed 100 %");
    let per_cpu = &system.per_cpu_busy_percent;
    assert_eq!(per_cpu.len() as u64, cpus, "{side}: per-CPU list does not cover cpu.system.cpus");
    for (i, &c) in per_cpu.iter().enumerate() {
        assert!((0.0..=100.0).contains(&c), "{side}: CPU {i} busy {c} outside [0, 100]");
    }
    let busy_us = system.busy_us;
    let capacity_us = cpus as f64 * elapsed_ns as f64 / 1e3;
    // /proc/stat counts scheduler ticks, so a side whose threads ran a few ms in all (a
    // paced test) can honestly see none; past 50 ms of exact thread time (a dozen ticks or
    // more) a zero means the counter is broken.
    let thread_ns = s.cpu.tool.thread_ns;
    assert!(
        busy_us > 0.0 || thread_ns < 50_000_000,
        "{side}: no busy CPU time measured while the worker threads ran {thread_ns} ns"
    );
    assert!(
        busy_us <= capacity_us * (1.0 + 1e-9),
        "{side}: busy {busy_us} us over {cpus} CPUs x {elapsed_ns} ns"
    );

    assert!(thread_ns > 0, "{side}: the worker thread's CPU time is 0");
    let overhead = s.cpu.tool_overhead_percent;
    assert!(overhead >= 0.0, "{side}: tool overhead {overhead} is negative");

    let ring = &s.ring;
    let counts = [("enters", ring.enters), ("sqes", ring.sqes), ("cqes", ring.cqes)];
    match &ring.syscalls {
        None => {
            for (f, n) in counts {
                assert!(n > 0, "{side}: ring.{f} is 0");
            }
        }
        // A classic engine has no ring: it counts its system calls instead, and no enters.
        Some(syscalls) => {
            for (f, n) in counts {
                assert_eq!(n, 0, "{side}: a classic side reports ring.{f}");
            }
            let calls = syscalls.sends + syscalls.recvs + syscalls.epoll_waits + syscalls.other;
            assert!(calls > 0, "{side}: a classic side counted no system calls: {syscalls:?}");
        }
    }
    // socket.send_buffer and recv_buffer are unsigned integers: the report parsed.
}

/// Checks a stream report: exact byte conservation between sender and receiver, positive
/// throughput consistent with the sender's counts, sane CPU, positive service demand.
pub fn check_stream_report(r: &TestReport, reverse: bool) {
    let (test, dir, (sender, s), (receiver, rc)) = if reverse {
        ("TCP_MAERTS", Direction::ServerToClient, ("remote", r.remote()), ("local", &r.local))
    } else {
        // netperf calls a stream whose sender splices from a file TCP_SENDFILE.
        let splice = r.spec.local.send_engine == SendEngine::Splice;
        let test = if splice { "TCP_SENDFILE" } else { "TCP_STREAM" };
        (test, Direction::ClientToServer, ("local", &r.local), ("remote", r.remote()))
    };
    assert_eq!(r.test, test);
    assert_eq!(r.spec.workload, Workload::Stream);
    assert_eq!(r.spec.direction, dir);
    assert_eq!(s.role, Role::StreamSender);
    assert_eq!(rc.role, Role::StreamReceiver);

    let sent = s.bytes_sent;
    let received = rc.bytes_received;
    assert!(sent > 0, "the sender sent nothing");
    assert_eq!(sent, received, "bytes sent by the {sender} side != bytes received by the {receiver} side");
    assert_eq!(s.bytes_received, 0, "the sender received payload");
    assert_eq!(rc.bytes_sent, 0, "the receiver sent payload");

    for (side, x) in r.sides() {
        check_side_common(side, x);
        assert_eq!(x.transactions, 0, "{side}: transactions in a stream test");
        assert!(x.latency.is_none(), "{side}: latency in a stream test");
        let sd = x.service_demand.us_per_kb.unwrap_or_else(|| panic!("{side}: no us_per_kb"));
        let busy_us = x.cpu.system.busy_us;
        assert!(sd > 0.0 || sd == 0.0 && busy_us == 0.0, "{side}: us_per_kb {sd} is not positive");
        // netperf's definition, from this side's own counts.
        let moved = x.bytes_sent + x.bytes_received;
        assert!(
            close(sd, busy_us / (moved as f64 / 1024.0)),
            "{side}: us_per_kb {sd} != busy_us {busy_us} / ({moved} B / 1024)"
        );
        assert!(x.service_demand.us_per_transaction.is_none());
    }

    let tput = r.summary.throughput_bits_per_sec;
    assert!(tput > 0.0, "throughput {tput} is not positive");
    let elapsed = s.elapsed_ns;
    assert!(
        close(tput, sent as f64 * 8.0 / (elapsed as f64 / 1e9)),
        "throughput {tput} does not match the sender's {sent} bytes over {elapsed} ns"
    );
    // The sender's window cannot close before its deadline (an absolute ring timeout).
    let want_ns = r.spec.duration_ms * 1_000_000;
    assert!(elapsed >= want_ns, "the sender stopped after {elapsed} ns, before the {want_ns} ns test length");
    assert!(r.summary.transactions_per_sec.is_none());
}

/// Checks an rr report: both sides count the same transactions, bytes match the sizes,
/// the latency histogram covers every transaction with ordered percentiles.
pub fn check_rr_report(r: &TestReport) {
    assert_eq!(r.test, "TCP_RR");
    assert_eq!(r.spec.workload, Workload::Rr);
    let (local, remote) = (&r.local, r.remote());
    assert_eq!(local.role, Role::RrClient);
    assert_eq!(remote.role, Role::RrServer);
    let t = local.transactions;
    assert!(t > 0, "the client completed no transactions");
    assert!(remote.transactions > 0, "the server completed no transactions");
    assert_eq!(t, remote.transactions, "client and server count different transactions");

    let req = u64::from(r.spec.request_size);
    let rsp = u64::from(r.spec.response_size);
    assert_eq!(local.bytes_sent, t * req, "client bytes sent != transactions x request size");
    assert_eq!(local.bytes_received, t * rsp, "client bytes received != transactions x response");
    assert_eq!(remote.bytes_received, t * req, "server bytes received != transactions x request");
    assert_eq!(remote.bytes_sent, t * rsp, "server bytes sent != transactions x response size");

    for (side, x) in r.sides() {
        check_side_common(side, x);
        let sd =
            x.service_demand.us_per_transaction.unwrap_or_else(|| panic!("{side}: no us_per_transaction"));
        let busy_us = x.cpu.system.busy_us;
        assert!(sd > 0.0 || sd == 0.0 && busy_us == 0.0, "{side}: us_per_transaction {sd} is not positive");
        assert!(close(sd, busy_us / t as f64), "{side}: us_per_transaction {sd} != busy_us {busy_us} / {t}");
    }

    let l = local.latency.as_ref().unwrap_or_else(|| panic!("the rr client reported no latency"));
    assert_eq!(l.count, t, "latency.count != local.transactions");
    let names = ["min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns"];
    let vals = [l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.p999_ns, l.p9999_ns, l.max_ns];
    for i in 1..vals.len() {
        assert!(
            vals[i - 1] <= vals[i],
            "latency {} = {} > {} = {}",
            names[i - 1],
            vals[i - 1],
            names[i],
            vals[i]
        );
    }
    assert!(vals[0] > 0, "a round trip of 0 ns");
    let mean = l.mean_ns;
    assert!(mean >= vals[0] as f64 && mean <= l.max_ns as f64, "mean {mean} outside [min, max]");
    let hist = &l.histogram;
    assert!(!hist.is_empty(), "empty serialized histogram");
    assert!(
        hist.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)),
        "the histogram is not base64"
    );
    assert!(remote.latency.is_none(), "the rr server reported latency");

    let tps = r.summary.transactions_per_sec.unwrap_or_else(|| panic!("no summary.transactions_per_sec"));
    let elapsed = local.elapsed_ns;
    assert!(tps > 0.0);
    assert!(
        close(tps, t as f64 / (elapsed as f64 / 1e9)),
        "transactions_per_sec {tps} != {t} / {elapsed} ns"
    );
    let summary_mean = r.summary.mean_latency_ns.unwrap_or_else(|| panic!("no summary.mean_latency_ns"));
    assert!(close(summary_mean, mean), "summary.mean_latency_ns != latency.mean_ns");
    assert!(r.summary.throughput_bits_per_sec > 0.0);
    let want_ns = r.spec.duration_ms * 1_000_000;
    assert!(elapsed >= want_ns, "the client stopped after {elapsed} ns, before the {want_ns} ns test length");
}
