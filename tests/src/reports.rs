//! Reading JSON reports by dotted path, and the checks every report of a kind must pass.

use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Reading reports.

/// The value at a dotted path (`local.cpu.system.busy_percent`); panics naming the path.
pub fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for key in path.split('.') {
        cur = cur.get(key).unwrap_or_else(|| panic!("report has no field '{path}' (missing '{key}')"));
    }
    cur
}

pub fn u64_at(v: &Value, path: &str) -> u64 {
    at(v, path).as_u64().unwrap_or_else(|| panic!("'{path}' is not an unsigned integer: {}", at(v, path)))
}

pub fn f64_at(v: &Value, path: &str) -> f64 {
    let x = at(v, path).as_f64().unwrap_or_else(|| panic!("'{path}' is not a number: {}", at(v, path)));
    assert!(x.is_finite(), "'{path}' is not finite: {x}");
    x
}

pub fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path).as_str().unwrap_or_else(|| panic!("'{path}' is not a string: {}", at(v, path)))
}

pub fn bool_at(v: &Value, path: &str) -> bool {
    at(v, path).as_bool().unwrap_or_else(|| panic!("'{path}' is not a boolean: {}", at(v, path)))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn busy_us_of(r: &Value, side: &str) -> f64 {
    f64_at(r, &format!("{side}.cpu.system.busy_us"))
}

/// Checks what every side report must satisfy, whatever the test: CPU shares within
/// [0, 100], busy time within what the CPUs could give, the ring used, the tool measured.
pub fn check_side_common(r: &Value, side: &str) {
    let p = |f: &str| format!("{side}.{f}");
    let elapsed_ns = u64_at(r, &p("elapsed_ns"));
    assert!(elapsed_ns > 0, "{side}: elapsed_ns is 0");

    let cpus = u64_at(r, &p("cpu.system.cpus"));
    assert!(cpus >= 1, "{side}: cpu.system.cpus is 0");
    let busy = f64_at(r, &p("cpu.system.busy_percent"));
    assert!((0.0..=100.0).contains(&busy), "{side}: busy_percent {busy} outside [0, 100]");
    let steal = f64_at(r, &p("cpu.system.steal_percent"));
    assert!((0.0..=100.0).contains(&steal), "{side}: steal_percent {steal} outside [0, 100]");
    assert!(busy + steal <= 100.0 + 1e-6, "{side}: busy {busy} + steal {steal} exceed 100 %");
    let per_cpu = at(r, &p("cpu.system.per_cpu_busy_percent"))
        .as_array()
        .unwrap_or_else(|| panic!("{side}: per_cpu_busy_percent is not an array"));
    assert_eq!(per_cpu.len() as u64, cpus, "{side}: per-CPU list does not cover cpu.system.cpus");
    for (i, c) in per_cpu.iter().enumerate() {
        let c = c.as_f64().unwrap_or(f64::NAN);
        assert!((0.0..=100.0).contains(&c), "{side}: CPU {i} busy {c} outside [0, 100]");
    }
    let busy_us = f64_at(r, &p("cpu.system.busy_us"));
    let capacity_us = cpus as f64 * elapsed_ns as f64 / 1e3;
    // /proc/stat counts scheduler ticks, so a side whose threads ran a few ms in all (a
    // paced test) can honestly see none; past 50 ms of exact thread time (a dozen ticks or
    // more) a zero means the counter is broken.
    let thread_ns = u64_at(r, &p("cpu.tool.thread_ns"));
    assert!(
        busy_us > 0.0 || thread_ns < 50_000_000,
        "{side}: no busy CPU time measured while the worker threads ran {thread_ns} ns"
    );
    assert!(
        busy_us <= capacity_us * (1.0 + 1e-9),
        "{side}: busy {busy_us} us over {cpus} CPUs x {elapsed_ns} ns"
    );

    assert!(u64_at(r, &p("cpu.tool.thread_ns")) > 0, "{side}: the worker thread's CPU time is 0");
    let overhead = f64_at(r, &p("cpu.tool_overhead_percent"));
    assert!(overhead >= 0.0, "{side}: tool overhead {overhead} is negative");

    let syscalls = at(r, &p("ring.syscalls"));
    if syscalls.is_null() {
        for f in ["enters", "sqes", "cqes"] {
            assert!(u64_at(r, &p(&format!("ring.{f}"))) > 0, "{side}: ring.{f} is 0");
        }
    } else {
        // A classic engine has no ring: it counts its system calls instead, and no enters.
        for f in ["enters", "sqes", "cqes"] {
            assert_eq!(u64_at(r, &p(&format!("ring.{f}"))), 0, "{side}: a classic side reports ring.{f}");
        }
        let calls: u64 = ["sends", "recvs", "epoll_waits", "other"].iter().map(|f| u64_at(syscalls, f)).sum();
        assert!(calls > 0, "{side}: a classic side counted no system calls: {syscalls}");
    }
    assert!(at(r, &p("socket.send_buffer")).is_u64() && at(r, &p("socket.recv_buffer")).is_u64());
}

/// Checks a stream report: exact byte conservation between sender and receiver, positive
/// throughput consistent with the sender's counts, sane CPU, positive service demand.
pub fn check_stream_report(r: &Value, reverse: bool) {
    let (test, dir, sender, receiver) = if reverse {
        ("TCP_MAERTS", "server_to_client", "remote", "local")
    } else {
        // netperf calls a stream whose sender splices from a file TCP_SENDFILE.
        let splice = str_at(r, "spec.local.send_engine") == "splice";
        (if splice { "TCP_SENDFILE" } else { "TCP_STREAM" }, "client_to_server", "local", "remote")
    };
    assert_eq!(str_at(r, "test"), test);
    assert_eq!(str_at(r, "spec.workload"), "stream");
    assert_eq!(str_at(r, "spec.direction"), dir);
    assert_eq!(str_at(r, &format!("{sender}.role")), "stream_sender");
    assert_eq!(str_at(r, &format!("{receiver}.role")), "stream_receiver");

    let sent = u64_at(r, &format!("{sender}.bytes_sent"));
    let received = u64_at(r, &format!("{receiver}.bytes_received"));
    assert!(sent > 0, "the sender sent nothing");
    assert_eq!(sent, received, "bytes sent by the {sender} side != bytes received by the {receiver} side");
    assert_eq!(u64_at(r, &format!("{sender}.bytes_received")), 0, "the sender received payload");
    assert_eq!(u64_at(r, &format!("{receiver}.bytes_sent")), 0, "the receiver sent payload");

    for side in ["local", "remote"] {
        check_side_common(r, side);
        assert_eq!(u64_at(r, &format!("{side}.transactions")), 0, "{side}: transactions in a stream test");
        assert!(at(r, &format!("{side}.latency")).is_null(), "{side}: latency in a stream test");
        let sd = f64_at(r, &format!("{side}.service_demand.us_per_kb"));
        assert!(
            sd > 0.0 || sd == 0.0 && busy_us_of(r, side) == 0.0,
            "{side}: us_per_kb {sd} is not positive"
        );
        // netperf's definition, from this side's own counts.
        let moved = u64_at(r, &format!("{side}.bytes_sent")) + u64_at(r, &format!("{side}.bytes_received"));
        let busy_us = f64_at(r, &format!("{side}.cpu.system.busy_us"));
        assert!(
            close(sd, busy_us / (moved as f64 / 1024.0)),
            "{side}: us_per_kb {sd} != busy_us {busy_us} / ({moved} B / 1024)"
        );
        assert!(at(r, &format!("{side}.service_demand.us_per_transaction")).is_null());
    }

    let tput = f64_at(r, "summary.throughput_bits_per_sec");
    assert!(tput > 0.0, "throughput {tput} is not positive");
    let elapsed = u64_at(r, &format!("{sender}.elapsed_ns"));
    assert!(
        close(tput, sent as f64 * 8.0 / (elapsed as f64 / 1e9)),
        "throughput {tput} does not match the sender's {sent} bytes over {elapsed} ns"
    );
    // The sender's window cannot close before its deadline (an absolute ring timeout).
    let want_ns = u64_at(r, "spec.duration_ms") * 1_000_000;
    assert!(elapsed >= want_ns, "the sender stopped after {elapsed} ns, before the {want_ns} ns test length");
    assert!(at(r, "summary.transactions_per_sec").is_null());
}

/// Checks an rr report: both sides count the same transactions, bytes match the sizes,
/// the latency histogram covers every transaction with ordered percentiles.
pub fn check_rr_report(r: &Value) {
    assert_eq!(str_at(r, "test"), "TCP_RR");
    assert_eq!(str_at(r, "spec.workload"), "rr");
    assert_eq!(str_at(r, "local.role"), "rr_client");
    assert_eq!(str_at(r, "remote.role"), "rr_server");
    let t = u64_at(r, "local.transactions");
    assert!(t > 0, "the client completed no transactions");
    assert!(u64_at(r, "remote.transactions") > 0, "the server completed no transactions");
    assert_eq!(t, u64_at(r, "remote.transactions"), "client and server count different transactions");

    let req = u64_at(r, "spec.request_size");
    let rsp = u64_at(r, "spec.response_size");
    assert_eq!(u64_at(r, "local.bytes_sent"), t * req, "client bytes sent != transactions x request size");
    assert_eq!(
        u64_at(r, "local.bytes_received"),
        t * rsp,
        "client bytes received != transactions x response"
    );
    assert_eq!(
        u64_at(r, "remote.bytes_received"),
        t * req,
        "server bytes received != transactions x request"
    );
    assert_eq!(u64_at(r, "remote.bytes_sent"), t * rsp, "server bytes sent != transactions x response size");

    for side in ["local", "remote"] {
        check_side_common(r, side);
        let sd = f64_at(r, &format!("{side}.service_demand.us_per_transaction"));
        assert!(
            sd > 0.0 || sd == 0.0 && busy_us_of(r, side) == 0.0,
            "{side}: us_per_transaction {sd} is not positive"
        );
        let busy_us = f64_at(r, &format!("{side}.cpu.system.busy_us"));
        assert!(close(sd, busy_us / t as f64), "{side}: us_per_transaction {sd} != busy_us {busy_us} / {t}");
    }

    let l = at(r, "local.latency");
    assert!(l.is_object(), "the rr client reported no latency: {l}");
    assert_eq!(u64_at(l, "count"), t, "latency.count != local.transactions");
    let names = ["min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns"];
    let vals: Vec<u64> = names.iter().map(|n| u64_at(l, n)).collect();
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
    let mean = f64_at(l, "mean_ns");
    assert!(
        mean >= vals[0] as f64 && mean <= *vals.last().expect("max") as f64,
        "mean {mean} outside [min, max]"
    );
    let hist = str_at(l, "histogram");
    assert!(!hist.is_empty(), "empty serialized histogram");
    assert!(
        hist.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)),
        "the histogram is not base64"
    );
    assert!(at(r, "remote.latency").is_null(), "the rr server reported latency");

    let tps = f64_at(r, "summary.transactions_per_sec");
    let elapsed = u64_at(r, "local.elapsed_ns");
    assert!(tps > 0.0);
    assert!(
        close(tps, t as f64 / (elapsed as f64 / 1e9)),
        "transactions_per_sec {tps} != {t} / {elapsed} ns"
    );
    assert!(close(f64_at(r, "summary.mean_latency_ns"), mean), "summary.mean_latency_ns != latency.mean_ns");
    assert!(f64_at(r, "summary.throughput_bits_per_sec") > 0.0);
    let want_ns = u64_at(r, "spec.duration_ms") * 1_000_000;
    assert!(elapsed >= want_ns, "the client stopped after {elapsed} ns, before the {want_ns} ns test length");
}
