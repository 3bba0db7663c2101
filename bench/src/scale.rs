//! `scale`: ringperf with many flows over two threads, and UDP, against the best peer each.
//!
//! 1. stream, 8 flows over 2 threads: `ringperf stream --flows 8 --threads 2 --cpus 0,1`
//!    against `iperf3 -P 8` (both under the same CPU set, same -l and congestion control).
//! 2. rr, 100 flows over 2 threads, 64-byte request and response: against iperf 2's TCP
//!    bounceback with `-P 100` (100 connections, one request in flight on each).
//! 3. UDP 64-byte datagrams unpaced, every socket buffer 8 MiB on both tools:
//!    `ringperf udp-stream -m 64 --flows 2 --threads 2 --cpus 0,1` (one pinned ring per
//!    CPU on each side) against `iperf3 -u -b 0 -l 64 -w 8M` (iperf3 3.12 runs every stream
//!    on one thread, so one flow is its best), plus ringperf with one flow, datagrams
//!    received per second and loss; then
//!    `ringperf udp-stream --gso 1400` against `-m 1400`: service demand per datagram and
//!    per KB received.
//!
//! Every run is measured the same way (process::run_measured: /proc/stat around the client
//! process), the tools alternate within each part, and a targets block closes the report.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::Duration;

use serde_json::Value;

use crate::bench::Host;
use crate::cpu::CpuWindow;
use crate::error::{BenchError, Result};
use crate::peers::{json_f64, json_u64, LISTEN_TIMEOUT, PORT_ATTEMPTS};
use crate::process::{free_port, require, run_measured, Measured, Server};
use crate::report::{opt, sd, Table};
use crate::stats::{median, min_max, ratio};

/// Flows and threads of the stream part.
pub const STREAM_FLOWS: u32 = 8;
/// Flows of the rr part.
pub const RR_FLOWS: u32 = 100;
/// Worker threads per side for ringperf in the TCP parts.
pub const THREADS: u32 = 2;
/// Request and response bytes of the rr part.
pub const RR_SIZE: u32 = 64;
/// Datagram bytes of the small-datagram part.
pub const SMALL_DATAGRAM: u32 = 64;
/// Datagram bytes (GSO segment) of the GSO part.
pub const GSO_SEGMENT: u32 = 1400;
/// Flows (and threads per side) of ringperf's scaled small-datagram run.
pub const UDP_FLOWS: u32 = 2;
/// Socket buffers of every small-datagram run, both tools: with a sender and a receiver
/// sharing each CPU, a receiver waits out the sender's slice, and the kernel's default
/// 208 KiB holds only a millisecond or two of 64-byte datagrams.
pub const UDP_SOCKET_BUFFER: &str = "8M";

/// Everything one `scale` invocation asks for.
#[derive(Clone, Debug)]
pub struct ScalePlan {
    pub secs: u32,
    pub runs: u32,
    pub pause: Duration,
    /// Client (sender) and server (receiver) CPU for the single-flow UDP parts; the TCP
    /// parts give both tools both CPUs.
    pub cpus: (usize, usize),
    /// Bytes per write in the stream part.
    pub size: u32,
    pub cc: String,
    /// -b for both GSO-part runs; None runs them unpaced.
    pub gso_rate: Option<String>,
    pub ringperf: Option<PathBuf>,
}

impl ScalePlan {
    fn timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.secs) + 45)
    }
    fn cpu_set(&self) -> String {
        let (a, b) = self.cpus;
        if a == b {
            a.to_string()
        } else {
            format!("{a},{b}")
        }
    }
}

/// One run of one tool: the bench's CPU window and what the tool did.
#[derive(Clone, Debug)]
pub struct Sample {
    pub cpu: CpuWindow,
    /// The headline rate: bits/s (stream), transactions/s (rr), datagrams received/s (udp).
    pub rate: f64,
    /// Work units service demand is per: KB received (stream), transactions (rr),
    /// datagrams received (udp).
    pub units: f64,
    /// UDP: KB (1024 bytes) of payload received.
    pub kb: Option<f64>,
    /// UDP: datagrams sent and lost (sent - received).
    pub sent: Option<u64>,
    pub lost: Option<u64>,
    /// UDP: payload bits/s received.
    pub payload_bps: Option<f64>,
    /// rr: mean round trip, µs.
    pub mean_rtt_us: Option<f64>,
}

impl Sample {
    pub fn sd(&self) -> Option<f64> {
        self.cpu.service_demand(self.units)
    }
    pub fn sd_per_kb(&self) -> Option<f64> {
        self.kb.and_then(|kb| self.cpu.service_demand(kb))
    }
    pub fn loss_percent(&self) -> Option<f64> {
        match (self.sent, self.lost) {
            (Some(s), Some(l)) if s > 0 => Some(100.0 * l as f64 / s as f64),
            _ => None,
        }
    }
}

/// A tool in one part: its name, its exact commands, and how to run it once.
pub struct Case<'a> {
    pub name: &'static str,
    pub describe: String,
    pub run: Box<dyn Fn() -> Result<Sample> + 'a>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Stream,
    Rr,
    Udp64,
    Gso,
}

impl Part {
    fn title(self) -> &'static str {
        match self {
            Part::Stream => "1. TCP stream, 8 flows over 2 threads",
            Part::Rr => "2. TCP rr, 100 flows over 2 threads, 64-byte request and response",
            Part::Udp64 => "3a. UDP stream, 64-byte datagrams, unpaced",
            Part::Gso => "3b. UDP stream, 1400-byte datagrams: --gso 1400 vs -m 1400",
        }
    }
}

// ---------------------------------------------------------------- ringperf

fn ringperf_json(bin: &Path, args: &[String], plan: &ScalePlan) -> Result<(Measured, Value)> {
    let m = run_measured("ringperf", Command::new(bin).args(args), plan.timeout(), None)?;
    if !m.status.success() {
        return Err(BenchError::Tool(format!(
            "ringperf {} failed ({}):\n{}",
            args.join(" "),
            m.status,
            m.output_excerpt()
        )));
    }
    let v: Value = serde_json::from_str(&m.stdout)
        .map_err(|e| BenchError::Tool(format!("ringperf's --json output is not JSON ({e})")))?;
    Ok((m, v))
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub fn ringperf_stream_args(plan: &ScalePlan) -> Vec<String> {
    let secs = plan.secs.to_string();
    let size = plan.size.to_string();
    let flows = STREAM_FLOWS.to_string();
    let threads = THREADS.to_string();
    let cpus = plan.cpu_set();
    args(&[
        "stream",
        "-l",
        &secs,
        "--flows",
        &flows,
        "--threads",
        &threads,
        "--cpus",
        &cpus,
        "--cc",
        &plan.cc,
        "-m",
        &size,
        "-M",
        &size,
        "--json",
    ])
}

pub fn ringperf_rr_args(plan: &ScalePlan) -> Vec<String> {
    let secs = plan.secs.to_string();
    let flows = RR_FLOWS.to_string();
    let threads = THREADS.to_string();
    let cpus = plan.cpu_set();
    let r = format!("{RR_SIZE},{RR_SIZE}");
    args(&[
        "rr",
        "-l",
        &secs,
        "--flows",
        &flows,
        "--threads",
        &threads,
        "--cpus",
        &cpus,
        "-r",
        &r,
        "--nodelay",
        "--json",
    ])
}

/// `udp-stream` with `size_flag` ("-m" or "--gso") and an optional -b.
pub fn ringperf_udp_args(plan: &ScalePlan, size_flag: &str, size: u32, rate: Option<&str>) -> Vec<String> {
    let secs = plan.secs.to_string();
    let t = format!("{},{}", plan.cpus.0, plan.cpus.1);
    let size = size.to_string();
    let mut a = args(&["udp-stream", "-l", &secs, size_flag, &size, "-T", &t]);
    if let Some(r) = rate {
        a.extend(["-b".to_string(), r.to_string()]);
    }
    a.push("--json".into());
    a
}

/// Checks that the report ran with the flows, threads and CPUs asked for.
fn check_layout(r: &Value, flows: u32, threads: u32) -> Result<()> {
    let f = r.pointer("/spec/flows").and_then(Value::as_u64);
    let t = r.pointer("/spec/threads").and_then(Value::as_u64);
    if f != Some(u64::from(flows)) || t != Some(u64::from(threads)) {
        return Err(BenchError::Tool(format!(
            "ringperf ran {f:?} flows over {t:?} threads, not {flows} over {threads}"
        )));
    }
    Ok(())
}

pub fn parse_ringperf_stream(r: &Value, plan: &ScalePlan) -> Result<(f64, f64)> {
    check_layout(r, STREAM_FLOWS, THREADS)?;
    let cc = r.pointer("/spec/congestion_control").and_then(Value::as_str);
    if cc != Some(plan.cc.as_str()) {
        return Err(BenchError::Tool(format!(
            "ringperf ran with congestion control {cc:?}, not {}",
            plan.cc
        )));
    }
    let received = json_u64(r, "ringperf", "/remote/bytes_received")?;
    let bps = json_f64(r, "ringperf", "/summary/throughput_bits_per_sec")?;
    Ok((bps, received as f64 / 1024.0))
}

/// (transactions/s, transactions, mean round trip µs)
pub fn parse_ringperf_rr(r: &Value) -> Result<(f64, f64, Option<f64>)> {
    check_layout(r, RR_FLOWS, THREADS)?;
    let tps = json_f64(r, "ringperf", "/summary/transactions_per_sec")?;
    let tx = json_u64(r, "ringperf", "/local/transactions")?;
    let mean = r.pointer("/summary/mean_latency_ns").and_then(Value::as_f64).map(|ns| ns / 1000.0);
    Ok((tps, tx as f64, mean))
}

/// Datagrams received over the receiver's window, from the sender's and the receiver's
/// `udp` reports: (received/s, received, sent, datagram bytes).
pub fn parse_ringperf_udp(r: &Value, gso: Option<u32>) -> Result<(f64, u64, u64, u32)> {
    let sent = json_u64(r, "ringperf", "/local/udp/datagrams_sent")?;
    let received = json_u64(r, "ringperf", "/remote/udp/datagrams_received")?;
    let size = json_u64(r, "ringperf", "/remote/udp/datagram_size")? as u32;
    let got_gso = r.pointer("/local/udp/gso_segment").and_then(Value::as_u64).map(|g| g as u32);
    if got_gso != gso {
        return Err(BenchError::Tool(format!("ringperf's sender used GSO {got_gso:?}, not {gso:?}")));
    }
    let elapsed_ns = json_u64(r, "ringperf", "/remote/elapsed_ns")?;
    let rate = received as f64 / (elapsed_ns.max(1) as f64 / 1e9);
    Ok((rate, received, sent, size))
}

// ---------------------------------------------------------------- peers

/// A server on a fresh port, listening (tried on a few ports).
fn start_server(name: &str, make: &dyn Fn(u16) -> Command) -> Result<(Server, u16)> {
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port()?;
        let mut server = Server::spawn(name, &mut make(port))?;
        match server.wait_listening(port, LISTEN_TIMEOUT) {
            Ok(()) => return Ok((server, port)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| BenchError::Tool(format!("the {name} server did not start"))))
}

/// One iperf3 run: its one-shot server on a fresh port, the measured client, the server
/// reaped, the client's JSON checked.
fn run_iperf3(
    server: &dyn Fn(u16) -> Command,
    client: &dyn Fn(u16) -> Command,
    plan: &ScalePlan,
) -> Result<(Measured, Value)> {
    let (mut srv, port) = start_server("iperf3", server)?;
    let m = run_measured("iperf3", &mut client(port), plan.timeout(), None);
    let exit = srv.wait(Duration::from_secs(5));
    let m = m?;
    let v = iperf3_json(&m, &exit.describe())?;
    Ok((m, v))
}

fn iperf3_json(m: &Measured, server: &str) -> Result<Value> {
    let v: Value = serde_json::from_str(&m.stdout).map_err(|e| {
        BenchError::Tool(format!("iperf3 -J printed no JSON ({e}):\n{}\n{server}", m.output_excerpt()))
    })?;
    if let Some(err) = v.get("error").and_then(Value::as_str) {
        return Err(BenchError::Tool(format!("iperf3 failed: {err}\n{server}")));
    }
    if !m.status.success() {
        return Err(BenchError::Tool(format!("iperf3 failed ({}):\n{}", m.status, m.output_excerpt())));
    }
    Ok(v)
}

pub fn iperf3_stream_client(plan: &ScalePlan, port: u16) -> Vec<String> {
    let (secs, size, p, flows) =
        (plan.secs.to_string(), plan.size.to_string(), port.to_string(), STREAM_FLOWS.to_string());
    args(&["-c", "127.0.0.1", "-p", &p, "-t", &secs, "-P", &flows, "-l", &size, "-C", &plan.cc, "-J"])
}

pub fn iperf3_udp_client(plan: &ScalePlan, port: u16) -> Vec<String> {
    let (secs, p, l, a) =
        (plan.secs.to_string(), port.to_string(), SMALL_DATAGRAM.to_string(), plan.cpus.0.to_string());
    let w = UDP_SOCKET_BUFFER;
    args(&["-c", "127.0.0.1", "-p", &p, "-t", &secs, "-u", "-b", "0", "-l", &l, "-w", w, "-A", &a, "-J"])
}

/// `udp-stream -m 64` with 8 MiB socket buffers on both sides: one flow pinned by -T, or
/// UDP_FLOWS flows over as many threads per side, one per CPU.
pub fn ringperf_udp64_args(plan: &ScalePlan, scaled: bool) -> Vec<String> {
    let (secs, m, b) = (plan.secs.to_string(), SMALL_DATAGRAM.to_string(), UDP_SOCKET_BUFFER);
    let mut a = args(&["udp-stream", "-l", &secs, "-m", &m, "-s", b, "-S", b]);
    if scaled {
        let n = UDP_FLOWS.to_string();
        a.extend(args(&["--flows", &n, "--threads", &n, "--cpus", &plan.cpu_set()]));
    } else {
        a.extend(args(&["-T", &format!("{},{}", plan.cpus.0, plan.cpus.1)]));
    }
    a.push("--json".into());
    a
}

/// (bits/s received, KB received), after checking streams, block size and congestion control.
pub fn parse_iperf3_stream(r: &Value, plan: &ScalePlan) -> Result<(f64, f64)> {
    let streams = json_u64(r, "iperf3", "/start/test_start/num_streams")?;
    let blk = json_u64(r, "iperf3", "/start/test_start/blksize")?;
    if streams != u64::from(STREAM_FLOWS) || blk != u64::from(plan.size) {
        return Err(BenchError::Tool(format!("iperf3 ran {streams} streams of {blk}-byte writes")));
    }
    for side in ["sender", "receiver"] {
        let got = r.pointer(&format!("/end/{side}_tcp_congestion")).and_then(Value::as_str);
        if got.is_some_and(|g| g != plan.cc) {
            return Err(BenchError::Tool(format!("iperf3's {side} used {got:?}, not {}", plan.cc)));
        }
    }
    let bytes = json_u64(r, "iperf3", "/end/sum_received/bytes")?;
    let bps = json_f64(r, "iperf3", "/end/sum_received/bits_per_second")?;
    Ok((bps, bytes as f64 / 1024.0))
}

/// (received/s, received, sent): iperf3's receiver counts `packets` (highest sequence
/// number seen) and `lost_packets`; received = packets - lost, checked against its bytes.
pub fn parse_iperf3_udp(r: &Value) -> Result<(f64, u64, u64)> {
    let blk = json_u64(r, "iperf3", "/start/test_start/blksize")?;
    if blk != u64::from(SMALL_DATAGRAM) {
        return Err(BenchError::Tool(format!("iperf3 sent {blk}-byte datagrams, not {SMALL_DATAGRAM}")));
    }
    let packets = json_u64(r, "iperf3", "/end/sum_received/packets")?;
    let lost = json_u64(r, "iperf3", "/end/sum_received/lost_packets")?;
    let bytes = json_u64(r, "iperf3", "/end/sum_received/bytes")?;
    let secs = json_f64(r, "iperf3", "/end/sum_received/seconds")?;
    let sent = json_u64(r, "iperf3", "/end/sum_sent/packets")?;
    let received = packets.saturating_sub(lost);
    if received * blk != bytes {
        return Err(BenchError::Tool(format!(
            "iperf3's receiver counted {packets} packets, {lost} lost, but {bytes} bytes: not {blk} bytes each"
        )));
    }
    Ok((if secs > 0.0 { received as f64 / secs } else { 0.0 }, received, sent))
}

pub fn iperf2_rr_client(plan: &ScalePlan, port: u16) -> Vec<String> {
    let (secs, p, l, n) =
        (plan.secs.to_string(), port.to_string(), RR_SIZE.to_string(), RR_FLOWS.to_string());
    args(&[
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "--bounceback",
        "--bounceback-period",
        "0",
        "-l",
        &l,
        "-P",
        &n,
        "-t",
        &secs,
        "-e",
        "--no-connect-sync",
    ])
}

/// iperf 2's bounceback lines, one per flow:
/// `[  2] 0.0000-2.0156 sec  2.93 MBytes  12.2 Mbits/sec  24034=0.082/0.017/9.456/0.258 ms  0  576K/1942 us  12184 rps`
/// → (sum of rps, sum of bounceback counts, count-weighted mean round trip µs, flows).
pub fn parse_iperf2_bounceback(text: &str) -> Result<(f64, f64, f64, usize)> {
    let (mut rps, mut count, mut rtt_weighted, mut flows) = (0.0, 0.0, 0.0, 0usize);
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('[') || line.starts_with("[SUM") || !line.ends_with(" rps") {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let r: f64 = words[words.len() - 2].parse().map_err(|_| bad_iperf2(line))?;
        let bb = words.iter().find(|w| w.contains('=') && w.contains('/')).ok_or_else(|| bad_iperf2(line))?;
        let (n, stats) = bb.split_once('=').ok_or_else(|| bad_iperf2(line))?;
        let n: f64 = n.parse().map_err(|_| bad_iperf2(line))?;
        let avg_ms: f64 =
            stats.split('/').next().and_then(|a| a.parse().ok()).ok_or_else(|| bad_iperf2(line))?;
        rps += r;
        count += n;
        rtt_weighted += n * avg_ms * 1000.0;
        flows += 1;
    }
    if flows == 0 {
        return Err(BenchError::Tool(
            "iperf printed no bounceback line (`... N rps`): its test did not run".into(),
        ));
    }
    Ok((rps, count, if count > 0.0 { rtt_weighted / count } else { f64::NAN }, flows))
}

fn bad_iperf2(line: &str) -> BenchError {
    BenchError::Tool(format!("cannot read iperf's bounceback line: {line}"))
}

// ---------------------------------------------------------------- the cases

struct Tools {
    ringperf: PathBuf,
    iperf3: PathBuf,
    iperf2: PathBuf,
    taskset: PathBuf,
}

fn taskset(t: &Tools, cpus: &str, bin: &Path, a: Vec<String>) -> Command {
    let mut c = Command::new(&t.taskset);
    c.args(["-c", cpus]).arg(bin).args(a);
    c
}

fn show(c: &Command) -> String {
    let mut s = c.get_program().to_string_lossy().into_owned();
    let mut after_p = false;
    for a in c.get_args() {
        let a = a.to_string_lossy();
        s.push(' ');
        s.push_str(if after_p && a == "0" { "PORT" } else { &a });
        after_p = a == "-p";
    }
    s
}

fn stream_cases<'a>(t: &'a Tools, plan: &'a ScalePlan) -> Vec<Case<'a>> {
    let rp_args = ringperf_stream_args(plan);
    let cpus = plan.cpu_set();
    let server = move |p: u16| {
        taskset(t, &cpus, &t.iperf3, args(&["-s", "-1", "-B", "127.0.0.1", "-p", &p.to_string()]))
    };
    let client = move |p: u16| taskset(t, &plan.cpu_set(), &t.iperf3, iperf3_stream_client(plan, p));
    vec![
        Case {
            name: "ringperf",
            describe: format!("{} {}", t.ringperf.display(), rp_args.join(" ")),
            run: Box::new(move || {
                let (m, v) = ringperf_json(&t.ringperf, &rp_args, plan)?;
                let (bps, kb) = parse_ringperf_stream(&v, plan)?;
                Ok(basic(m.cpu, bps, kb))
            }),
        },
        Case {
            name: "iperf3",
            describe: format!("{} ; {}", show(&server(0)), show(&client(0))),
            run: Box::new(move || {
                let (m, v) = run_iperf3(&server, &client, plan)?;
                let (bps, kb) = parse_iperf3_stream(&v, plan)?;
                Ok(basic(m.cpu, bps, kb))
            }),
        },
    ]
}

fn rr_cases<'a>(t: &'a Tools, plan: &'a ScalePlan) -> Vec<Case<'a>> {
    let rp_args = ringperf_rr_args(plan);
    let server = move |p: u16| {
        taskset(t, &plan.cpu_set(), &t.iperf2, args(&["-s", "-B", "127.0.0.1", "-p", &p.to_string(), "-e"]))
    };
    let client = move |p: u16| taskset(t, &plan.cpu_set(), &t.iperf2, iperf2_rr_client(plan, p));
    vec![
        Case {
            name: "ringperf",
            describe: format!("{} {}", t.ringperf.display(), rp_args.join(" ")),
            run: Box::new(move || {
                let (m, v) = ringperf_json(&t.ringperf, &rp_args, plan)?;
                let (tps, tx, rtt) = parse_ringperf_rr(&v)?;
                Ok(Sample { mean_rtt_us: rtt, ..basic(m.cpu, tps, tx) })
            }),
        },
        Case {
            name: "iperf2 bounceback",
            describe: format!("{} ; {}", show(&server(0)), show(&client(0))),
            run: Box::new(move || {
                let (mut srv, port) = start_server("iperf", &server)?;
                let m = run_measured("iperf", &mut client(port), plan.timeout(), None);
                // iperf 2's server serves until stopped (SIGINT).
                let exit = srv.stop();
                let m = m?;
                let (rps, count, rtt, flows) = parse_iperf2_bounceback(&m.stdout).map_err(|e| {
                    BenchError::Tool(format!("{e}\n{}\n{}", m.output_excerpt(), exit.describe()))
                })?;
                if flows != RR_FLOWS as usize {
                    return Err(BenchError::Tool(format!(
                        "iperf reported {flows} bounceback flows, not {RR_FLOWS}:\n{}",
                        m.output_excerpt()
                    )));
                }
                Ok(Sample { mean_rtt_us: Some(rtt), ..basic(m.cpu, rps, count) })
            }),
        },
    ]
}

fn udp64_cases<'a>(t: &'a Tools, plan: &'a ScalePlan) -> Vec<Case<'a>> {
    let rp_args = ringperf_udp64_args(plan, true);
    let rp1_args = ringperf_udp64_args(plan, false);
    let server = move |p: u16| {
        let mut c = Command::new(&t.iperf3);
        c.args(["-s", "-1", "-B", "127.0.0.1", "-p", &p.to_string(), "-A", &plan.cpus.1.to_string()]);
        c
    };
    let client = move |p: u16| {
        let mut c = Command::new(&t.iperf3);
        c.args(iperf3_udp_client(plan, p));
        c
    };
    vec![
        Case {
            name: "ringperf 2 flows",
            describe: format!("{} {}", t.ringperf.display(), rp_args.join(" ")),
            run: Box::new(move || {
                let (m, v) = ringperf_json(&t.ringperf, &rp_args, plan)?;
                check_layout(&v, UDP_FLOWS, UDP_FLOWS)?;
                udp_sample(m.cpu, &v, None)
            }),
        },
        Case {
            name: "iperf3",
            describe: format!("{} ; {}", show(&server(0)), show(&client(0))),
            run: Box::new(move || {
                let (m, v) = run_iperf3(&server, &client, plan)?;
                let (rate, received, sent) = parse_iperf3_udp(&v)?;
                let bytes = received as f64 * f64::from(SMALL_DATAGRAM);
                Ok(Sample {
                    cpu: m.cpu,
                    rate,
                    units: received as f64,
                    kb: Some(bytes / 1024.0),
                    sent: Some(sent),
                    lost: Some(sent.saturating_sub(received)),
                    payload_bps: Some(rate * f64::from(SMALL_DATAGRAM) * 8.0),
                    mean_rtt_us: None,
                })
            }),
        },
        ringperf_udp_case("ringperf 1 flow", t, plan, rp1_args, None),
    ]
}

/// A ringperf udp-stream run with `args`, checked to have used `gso`.
fn ringperf_udp_case<'a>(
    name: &'static str,
    t: &'a Tools,
    plan: &'a ScalePlan,
    args: Vec<String>,
    gso: Option<u32>,
) -> Case<'a> {
    Case {
        name,
        describe: format!("{} {}", t.ringperf.display(), args.join(" ")),
        run: Box::new(move || {
            let (m, v) = ringperf_json(&t.ringperf, &args, plan)?;
            udp_sample(m.cpu, &v, gso)
        }),
    }
}

fn udp_sample(cpu: CpuWindow, v: &Value, gso: Option<u32>) -> Result<Sample> {
    let (rate, received, sent, size) = parse_ringperf_udp(v, gso)?;
    Ok(Sample {
        cpu,
        rate,
        units: received as f64,
        kb: Some(received as f64 * f64::from(size) / 1024.0),
        sent: Some(sent),
        lost: Some(sent.saturating_sub(received)),
        payload_bps: Some(rate * f64::from(size) * 8.0),
        mean_rtt_us: None,
    })
}

fn gso_cases<'a>(t: &'a Tools, plan: &'a ScalePlan) -> Vec<Case<'a>> {
    let rate = plan.gso_rate.as_deref();
    let gso = ringperf_udp_args(plan, "--gso", GSO_SEGMENT, rate);
    let plain = ringperf_udp_args(plan, "-m", GSO_SEGMENT, rate);
    vec![
        ringperf_udp_case("ringperf --gso 1400", t, plan, gso, Some(GSO_SEGMENT)),
        ringperf_udp_case("ringperf -m 1400", t, plan, plain, None),
    ]
}

fn basic(cpu: CpuWindow, rate: f64, units: f64) -> Sample {
    Sample { cpu, rate, units, kb: None, sent: None, lost: None, payload_bps: None, mean_rtt_us: None }
}

// ---------------------------------------------------------------- running

/// The cases of one part, alternating, `runs` rounds; the first failure ends the part.
fn alternate(plan: &ScalePlan, part: Part, cases: &[Case], first: &mut bool) -> Result<Vec<(usize, Sample)>> {
    let mut out = Vec::new();
    for round in 0..plan.runs {
        for (i, c) in cases.iter().enumerate() {
            if !*first && !plan.pause.is_zero() {
                thread::sleep(plan.pause);
            }
            *first = false;
            eprint!("ringperf-bench: {} run {}/{} {} ... ", part_tag(part), round + 1, plan.runs, c.name);
            let _ = std::io::stderr().flush();
            match (c.run)() {
                Ok(s) => {
                    eprintln!(
                        "{}, busy {:.1} %, SD {}",
                        rate_text(part, s.rate),
                        s.cpu.busy_percent(),
                        sd(s.sd())
                    );
                    out.push((i, s));
                }
                Err(e) => {
                    eprintln!("failed");
                    return Err(e);
                }
            }
        }
    }
    Ok(out)
}

fn part_tag(p: Part) -> &'static str {
    match p {
        Part::Stream => "stream",
        Part::Rr => "rr",
        Part::Udp64 => "udp64",
        Part::Gso => "gso",
    }
}

fn rate_text(p: Part, r: f64) -> String {
    match p {
        Part::Stream => format!("{:.2} Gbit/s", r / 1e9),
        Part::Rr => format!("{r:.0} transactions/s"),
        Part::Udp64 | Part::Gso => format!("{r:.0} datagrams/s received"),
    }
}

/// Medians of one case in one part.
#[derive(Clone, Debug, Default)]
pub struct Med {
    pub name: &'static str,
    pub runs: usize,
    pub rate: Option<f64>,
    pub range: Option<(f64, f64)>,
    pub busy: Option<f64>,
    pub sd: Option<f64>,
    pub sd_kb: Option<f64>,
    pub loss: Option<f64>,
    pub payload_bps: Option<f64>,
    pub rtt: Option<f64>,
}

pub fn medians(name: &'static str, samples: &[&Sample]) -> Med {
    let med =
        |f: &dyn Fn(&Sample) -> Option<f64>| median(&samples.iter().filter_map(|s| f(s)).collect::<Vec<_>>());
    let rates: Vec<f64> = samples.iter().map(|s| s.rate).collect();
    Med {
        name,
        runs: samples.len(),
        rate: median(&rates),
        range: min_max(&rates),
        busy: med(&|s| Some(s.cpu.busy_percent())),
        sd: med(&|s| s.sd()),
        sd_kb: med(&|s| s.sd_per_kb()),
        loss: med(&|s| s.loss_percent()),
        payload_bps: med(&|s| s.payload_bps),
        rtt: med(&|s| s.mean_rtt_us),
    }
}

fn x(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"))
}

/// The runs table and the medians table of one part.
pub fn render_part(
    part: Part,
    names: &[&'static str],
    samples: &[(usize, Sample)],
    cpus: usize,
) -> (String, Vec<Med>) {
    let mut s = format!("## {}\n\n", part.title());
    let udp = matches!(part, Part::Udp64 | Part::Gso);
    let (rate_head, sd_head) = match part {
        Part::Stream => ("Gbit/s", "SD us/KB"),
        Part::Rr => ("transactions/s", "SD us/tx"),
        Part::Udp64 | Part::Gso => ("datagrams/s received", "SD us/datagram"),
    };
    let mut head = vec!["run", "tool", rate_head];
    match part {
        Part::Rr => head.push("mean RTT us"),
        Part::Udp64 | Part::Gso => head.extend(["payload Mbit/s", "sent/s (window)", "loss %"]),
        Part::Stream => {}
    }
    head.extend(["window s", "busy CPU %", sd_head]);
    if udp {
        head.push("SD us/KB");
    }
    let mut t = Table::new(&head);
    let mut seen = vec![0usize; names.len()];
    let scale = if part == Part::Stream { 1e9 } else { 1.0 };
    let decimals = if part == Part::Stream { 2 } else { 0 };
    for (i, smp) in samples {
        seen[*i] += 1;
        let mut row =
            vec![seen[*i].to_string(), names[*i].to_string(), format!("{:.decimals$}", smp.rate / scale)];
        match part {
            Part::Rr => row.push(opt(smp.mean_rtt_us, 1)),
            Part::Udp64 | Part::Gso => row.extend([
                opt(smp.payload_bps.map(|b| b / 1e6), 1),
                opt(smp.sent.map(|n| n as f64 / smp.cpu.wall_secs()), 0),
                opt(smp.loss_percent(), 2),
            ]),
            Part::Stream => {}
        }
        row.extend([
            format!("{:.2}", smp.cpu.wall_secs()),
            format!("{:.1}", smp.cpu.busy_percent()),
            sd(smp.sd()),
        ]);
        if udp {
            row.push(sd(smp.sd_per_kb()));
        }
        t.row(row);
    }
    let _ = write!(s, "### Runs\n\n{}\n", t.render());

    let meds: Vec<Med> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mine: Vec<&Sample> = samples.iter().filter(|(j, _)| *j == i).map(|(_, s)| s).collect();
            medians(n, &mine)
        })
        .collect();
    let busy_head = format!("busy CPU % of {cpus}");
    let mut head = vec!["tool", "runs", rate_head, "min..max"];
    match part {
        Part::Rr => head.push("mean RTT us"),
        Part::Udp64 | Part::Gso => head.extend(["payload Mbit/s", "loss %"]),
        Part::Stream => {}
    }
    head.extend([busy_head.as_str(), sd_head]);
    if udp {
        head.push("SD us/KB");
    }
    let mut t = Table::new(&head);
    for m in &meds {
        let range = m.range.map_or_else(
            || "-".into(),
            |(lo, hi)| format!("{:.decimals$}..{:.decimals$}", lo / scale, hi / scale),
        );
        let mut row =
            vec![m.name.to_string(), m.runs.to_string(), opt(m.rate.map(|r| r / scale), decimals), range];
        match part {
            Part::Rr => row.push(opt(m.rtt, 1)),
            Part::Udp64 | Part::Gso => row.extend([opt(m.payload_bps.map(|b| b / 1e6), 1), opt(m.loss, 2)]),
            Part::Stream => {}
        }
        row.extend([opt(m.busy, 1), sd(m.sd)]);
        if udp {
            row.push(sd(m.sd_kb));
        }
        t.row(row);
    }
    let _ = write!(s, "### Medians\n\n{}\n", t.render());
    // Every other tool against the second, the peer.
    if let [first, b, rest @ ..] = meds.as_slice() {
        let what = match part {
            Part::Stream => "throughput",
            Part::Rr => "transactions/s",
            Part::Udp64 | Part::Gso => "datagrams/s received",
        };
        for a in std::iter::once(first).chain(rest) {
            let _ = write!(
                s,
                "{}/{}: {what} {}, service demand {}",
                a.name,
                b.name,
                x(ratio(a.rate, b.rate)),
                x(ratio(a.sd, b.sd))
            );
            if udp {
                let _ = write!(s, " per datagram, {} per KB", x(ratio(a.sd_kb, b.sd_kb)));
            }
            let _ = writeln!(s, "\n");
        }
    }
    (s, meds)
}

/// The targets, measured, one line each.
pub fn render_targets(plan: &ScalePlan, parts: &[(Part, Vec<Med>)]) -> String {
    let get = |p: Part| parts.iter().find(|(q, _)| *q == p).map(|(_, m)| m.as_slice());
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "not measured",
    };
    let mut s = String::from("## Targets (medians)\n\n");
    if let Some([rp, peer]) = get(Part::Stream) {
        let q = ratio(rp.rate, peer.rate);
        let _ = writeln!(
            s,
            "- stream, 8 flows / 2 threads: throughput at least iperf3 -P 8's: {} ({}); service demand {} of iperf3's (no target)",
            x(q),
            verdict(q.map(|q| q >= 1.0)),
            x(ratio(rp.sd, peer.sd))
        );
    }
    if let Some([rp, peer]) = get(Part::Rr) {
        let _ = writeln!(
            s,
            "- rr, 100 flows / 2 threads (reported, no target): transactions/s {} of {}'s, service demand per transaction {}",
            x(ratio(rp.rate, peer.rate)),
            peer.name,
            x(ratio(rp.sd, peer.sd))
        );
    }
    if let Some([rp, peer, one]) = get(Part::Udp64) {
        let q = ratio(rp.rate, peer.rate);
        let _ = writeln!(
            s,
            "- UDP 64 B, ringperf {UDP_FLOWS} flows over {UDP_FLOWS} threads: datagrams/s received at least 1.5x iperf3's: {} ({}); loss ringperf {} %, iperf3 {} %",
            x(q),
            verdict(q.map(|q| q >= 1.5)),
            opt(rp.loss, 2),
            opt(peer.loss, 2)
        );
        let _ = writeln!(
            s,
            "- UDP 64 B, ringperf 1 flow (no target; one CPU sends and runs the loopback receive path for both tools): {} of iperf3's, loss {} %",
            x(ratio(one.rate, peer.rate)),
            opt(one.loss, 2)
        );
    }
    if let Some([g, p]) = get(Part::Gso) {
        let qd = ratio(g.sd, p.sd);
        let qk = ratio(g.sd_kb, p.sd_kb);
        let _ = writeln!(
            s,
            "- UDP --gso 1400: service demand per datagram below -m 1400's: {} ({}); per KB: {} ({})",
            x(qd),
            verdict(qd.map(|q| q < 1.0)),
            x(qk),
            verdict(qk.map(|q| q < 1.0))
        );
        match &plan.gso_rate {
            Some(r) => {
                let q = ratio(g.payload_bps, p.payload_bps);
                let _ = writeln!(
                    s,
                    "- UDP --gso 1400 at the same payload rate (both -b {r}): received payload rate gso/plain {} ({}, within 5 %)",
                    x(q),
                    verdict(q.map(|q| (0.95..=1.05).contains(&q)))
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "- UDP --gso 1400 at the same payload rate: not applicable, both ran unpaced (--gso-rate 0; received payload rate gso/plain {})",
                    x(ratio(g.payload_bps, p.payload_bps))
                );
            }
        }
    }
    s
}

pub fn header(plan: &ScalePlan, host: &Host, parts: &[(Part, Vec<Case>)]) -> String {
    let mut s = String::from("# ringperf-bench scale (many flows over two threads, and UDP)\n\n");
    let _ = writeln!(
        s,
        "- each part alternates its tools, {} run(s) each, {} s per run, {:.1} s pause between runs; traffic on 127.0.0.1 only",
        plan.runs,
        plan.secs,
        plan.pause.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "- host: Linux {}, {} CPUs; TCP parts: every process of both tools may use CPUs {} (ringperf --cpus, peers under taskset -c); UDP parts: sender on CPU {}, receiver on CPU {} (ringperf -T, iperf3 -A)",
        host.kernel,
        host.cpus,
        plan.cpu_set(),
        plan.cpus.0,
        plan.cpus.1
    );
    let _ = writeln!(
        s,
        "- congestion control: {} on both tools in the stream part (ringperf --cc, iperf3 -C; system default {}); rr and UDP: system default (iperf 2 sets none, -C is TCP only)",
        plan.cc, host.default_cc
    );
    let _ = writeln!(
        s,
        "- CPU, the same for every tool: per-CPU /proc/stat deltas from just before the client starts (server already listening) to just after it exits; busy = user+nice+system+irq+softirq; service demand (SD) = busy µs summed over all CPUs per unit of work: KB (1024 bytes) received, transaction, or datagram received"
    );
    let _ = writeln!(
        s,
        "- iperf3 {}: one thread for all -P streams in this release (multi-threaded streams came in 3.16), so iperf3 -P 8 is 8 streams on one thread per side, against ringperf's 8 flows on 2 threads per side",
        iperf3_version()
    );
    let _ = writeln!(
        s,
        "- rr peer: iperf 2's TCP bounceback (`--bounceback --bounceback-period 0 -l 64 -P 100`): 100 connections, each a thread that writes a 64-byte request and reads the 64-byte echo, one in flight per connection, like ringperf's 100 flows; TCP_NODELAY on (iperf 2 always sets it, so ringperf gets --nodelay), TCP_QUICKACK on iperf 2's server. \
         Not sockperf: its ping-pong keeps one message in flight per client process even with many sockets (-f; measured: 10 sockets gave the rate of 1), so 100 concurrent transactions would need 100 processes. \
         `--no-connect-sync`: iperf 2.1.8 with -P 100 and its connect barrier hangs after the test on this host. Transactions/s = the sum of its per-flow rps; transactions = the sum of its per-flow bounceback counts; ringperf's are its count over its window"
    );
    let _ = writeln!(
        s,
        "- UDP: datagrams received per second = ringperf's receiver udp report (datagrams_received / receiver window), iperf3's sum_received (packets - lost_packets) / seconds; loss = (sent - received) / sent from each tool's own counts; SD per datagram received and per KB received"
    );
    let _ = writeln!(
        s,
        "- GSO part: {}",
        match &plan.gso_rate {
            Some(r) => format!("both paced with -b {r}"),
            None => "both unpaced (--gso-rate 0)".into(),
        }
    );
    let _ = writeln!(s, "- commands:");
    for (p, cases) in parts {
        for c in cases {
            let _ = writeln!(s, "  - {} {}: `{}`", part_tag(*p), c.name, c.describe);
        }
    }
    let _ = writeln!(s);
    s
}

fn iperf3_version() -> String {
    Command::new("iperf3")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Finds the tools, runs the four parts in turn and prints the report.
pub fn run(plan: &ScalePlan) -> Result<()> {
    let host = Host::read()?;
    for cpu in [plan.cpus.0, plan.cpus.1] {
        if cpu >= host.cpus {
            return Err(BenchError::Usage(format!(
                "CPU {cpu} does not exist: this host has CPUs 0..={}; pick others with --cpus",
                host.cpus - 1
            )));
        }
    }
    let tools = Tools {
        iperf3: require("iperf3", "install iperf3 (apt-get install -y iperf3)")?,
        iperf2: require("iperf", "install iperf 2 (apt-get install -y iperf)")?,
        taskset: require("taskset", "install util-linux (apt-get install -y util-linux)")?,
        ringperf: crate::peers::ringperf::locate(plan.ringperf.as_deref())?,
    };
    let parts: Vec<(Part, Vec<Case>)> = vec![
        (Part::Stream, stream_cases(&tools, plan)),
        (Part::Rr, rr_cases(&tools, plan)),
        (Part::Udp64, udp64_cases(&tools, plan)),
        (Part::Gso, gso_cases(&tools, plan)),
    ];
    print!("{}", header(plan, &host, &parts));
    let _ = std::io::stdout().flush();
    let mut first = true;
    let mut meds = Vec::new();
    for (part, cases) in &parts {
        let samples = alternate(plan, *part, cases, &mut first)?;
        let names: Vec<&'static str> = cases.iter().map(|c| c.name).collect();
        let (text, m) = render_part(*part, &names, &samples, host.cpus);
        print!("{text}");
        let _ = std::io::stdout().flush();
        meds.push((*part, m));
    }
    print!("{}", render_targets(plan, &meds));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan() -> ScalePlan {
        ScalePlan {
            secs: 3,
            runs: 2,
            pause: Duration::ZERO,
            cpus: (0, 1),
            size: 131072,
            cc: "cubic".into(),
            gso_rate: None,
            ringperf: None,
        }
    }

    #[test]
    fn commands_match_the_brief() {
        let p = plan();
        assert_eq!(
            ringperf_stream_args(&p).join(" "),
            "stream -l 3 --flows 8 --threads 2 --cpus 0,1 --cc cubic -m 131072 -M 131072 --json"
        );
        assert_eq!(
            ringperf_rr_args(&p).join(" "),
            "rr -l 3 --flows 100 --threads 2 --cpus 0,1 -r 64,64 --nodelay --json"
        );
        assert_eq!(
            ringperf_udp_args(&p, "--gso", 1400, Some("2G")).join(" "),
            "udp-stream -l 3 --gso 1400 -T 0,1 -b 2G --json"
        );
        assert_eq!(
            iperf3_stream_client(&p, 5).join(" "),
            "-c 127.0.0.1 -p 5 -t 3 -P 8 -l 131072 -C cubic -J"
        );
        assert_eq!(iperf3_udp_client(&p, 5).join(" "), "-c 127.0.0.1 -p 5 -t 3 -u -b 0 -l 64 -w 8M -A 0 -J");
        assert_eq!(
            ringperf_udp64_args(&p, true).join(" "),
            "udp-stream -l 3 -m 64 -s 8M -S 8M --flows 2 --threads 2 --cpus 0,1 --json"
        );
        assert_eq!(
            ringperf_udp64_args(&p, false).join(" "),
            "udp-stream -l 3 -m 64 -s 8M -S 8M -T 0,1 --json"
        );
        let mut c = Command::new("iperf3");
        c.args(["-s", "-p", "0", "-A", "0"]);
        assert_eq!(show(&c), "iperf3 -s -p PORT -A 0");
        assert!(iperf2_rr_client(&p, 5)
            .join(" ")
            .contains("--bounceback --bounceback-period 0 -l 64 -P 100 -t 3"));
    }

    #[test]
    fn iperf2_bounceback_lines_parse() {
        let text = "[ ID] Interval            Transfer    Bandwidth         BB cnt=avg/min/max/stdev         Rtry  Cwnd/RTT    RPS\n\
[  2] 0.0000-2.0156 sec  2.93 MBytes  12.2 Mbits/sec    24000=0.080/0.017/9.456/0.258 ms    0  576K/1942 us    12184 rps\n\
[  2] 0.0000-2.0156 sec BB8(f)-PDF: bin(w=100us):cnt(24034)=1:21167,2:2399 (5.00/95.00/99.7%=1/2/29,Outliers=245,obl/obu=0/0)\n\
[  4] 0.0000-2.0177 sec  2.95 MBytes  12.3 Mbits/sec    8000=0.120/0.017/15.805/0.337 ms    0  576K/2155 us    4000 rps\n\
[SUM] 0.0000-2.0002 sec  0.000 Bytes  0.000 bits/sec  0/0         0\n";
        let (rps, n, rtt, flows) = parse_iperf2_bounceback(text).unwrap();
        assert_eq!((rps, n, flows), (16184.0, 32000.0, 2));
        assert!((rtt - 90.0).abs() < 1e-9, "{rtt}");
        assert!(parse_iperf2_bounceback("nothing\n").is_err());
    }

    #[test]
    fn iperf3_udp_received_is_packets_minus_lost() {
        let r = json!({
            "start": {"test_start": {"blksize": 64}},
            "end": {
                "sum_sent": {"packets": 282930, "bytes": 18107520u64},
                "sum_received": {"seconds": 2.0, "packets": 282930, "lost_packets": 104966, "bytes": 11389696u64}
            }
        });
        let (rate, received, sent) = parse_iperf3_udp(&r).unwrap();
        assert_eq!((received, sent), (177964, 282930));
        assert_eq!(rate, 88982.0);
        let mut bad = r.clone();
        bad["end"]["sum_received"]["bytes"] = json!(1);
        assert!(parse_iperf3_udp(&bad).is_err());
    }

    #[test]
    fn ringperf_udp_uses_the_receivers_count() {
        let r = json!({
            "local": {"udp": {"datagrams_sent": 300, "gso_segment": 1400}},
            "remote": {"elapsed_ns": 2_000_000_000u64, "udp": {"datagrams_received": 200, "datagram_size": 1400}}
        });
        assert_eq!(parse_ringperf_udp(&r, Some(1400)).unwrap(), (100.0, 200, 300, 1400));
        assert!(parse_ringperf_udp(&r, None).is_err());
    }

    #[test]
    fn targets_say_met_and_missed() {
        let m = |name, rate, sd, sd_kb| Med {
            name,
            runs: 2,
            rate: Some(rate),
            sd: Some(sd),
            sd_kb: Some(sd_kb),
            payload_bps: Some(rate),
            ..Med::default()
        };
        let parts = vec![
            (Part::Stream, vec![m("ringperf", 2.0, 1.0, 0.0), m("iperf3", 1.0, 1.0, 0.0)]),
            (
                Part::Udp64,
                vec![
                    m("ringperf 2 flows", 1.2, 1.0, 1.0),
                    m("iperf3", 1.0, 1.0, 1.0),
                    m("ringperf 1 flow", 0.9, 1.0, 1.0),
                ],
            ),
            (Part::Gso, vec![m("g", 5.0, 0.5, 0.5), m("p", 1.0, 1.0, 1.0)]),
        ];
        let t = render_targets(&plan(), &parts);
        assert!(t.contains("throughput at least iperf3 -P 8's: 2.00x (met)"), "{t}");
        assert!(t.contains("1.5x iperf3's: 1.20x (MISSED)"), "{t}");
        assert!(t.contains("below -m 1400's: 0.50x (met); per KB: 0.50x (met)"), "{t}");
        assert!(t.contains("ringperf 1 flow (no target; one CPU sends"), "{t}");
        assert!(t.contains("): 0.90x of iperf3's"), "{t}");
        assert!(t.contains("not applicable, both ran unpaced"), "{t}");
    }
}
