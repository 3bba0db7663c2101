//! Memory: a controller holding the key asks an agent for a third-party run whose client
//! side, which the agent runs, needs far more than the agent's `--max-memory`, while its
//! server side (what the agent used to reserve) needs almost nothing. The agent must check
//! and reserve the side it runs: refuse the probe with the limit's name before allocating
//! anything, reserve a run that fits at its client side's estimate, and hold that run's
//! resident memory within the limit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use clap::Parser;
use ringperf_cli::args::Cli;
use ringperf_control::limits::side_memory;
use ringperf_core::units::format_bytes;
use ringperf_tests::fabric::KeyFile;
use ringperf_tests::{check_stream_report, rss_kib, Outcome, Ringperf, Server};

use crate::{baseline, still_serves};

/// The agent's limits in the probe: 64 MiB per test, 128 MiB in all.
const MAX_MEMORY: u64 = 64 << 20;
const AGENT_LIMITS: [&str; 4] = ["--max-memory", "64M", "--max-total-memory", "128M"];

/// The probe's test: 64 MiB zero-copy sends on 8 flows and 8 threads, received in 4 KiB.
const PROBE: [&str; 12] =
    ["stream", "-m", "64M", "-M", "4K", "--send-engine", "zc", "--flows", "8", "--threads", "8", "-l"];

/// The spec the CLI makes of `args` (a test command line), as the agent receives it.
fn spec_of(args: &[&str]) -> ringperf_core::TestSpec {
    let cli = Cli::try_parse_from([&["ringperf"], args].concat()).expect("a valid command line");
    ringperf_cli::test_spec(&cli.command).expect("a valid spec")
}

/// Agent A (third party allowed, `limits`) and agent B, both holding `key`.
fn agents(rp: &Ringperf, key: &KeyFile, limits: &[&str]) -> (Server, Server) {
    let mut a_args = vec!["--psk-file", key.arg(), "--allow-third-party"];
    a_args.extend_from_slice(limits);
    let a = Server::spawn_with(rp, &a_args);
    let b = Server::spawn_with(rp, &["--psk-file", key.arg()]);
    (a, b)
}

/// Runs `test` (a command line) from agent `a` against agent `b`, sampling `a`'s resident
/// memory meanwhile; returns the outcome and the most `a` held above what it held before,
/// in bytes.
fn through(rp: &Ringperf, a: &Server, b: &Server, key: &KeyFile, test: &[&str]) -> (Outcome, u64) {
    let (ap, bp) = (a.port_arg(), b.port_arg());
    let mut args = test.to_vec();
    args.extend(["-H", "127.0.0.1", "-p", &bp, "--from", "127.0.0.1", "--from-port", &ap]);
    args.extend(["--psk-file", key.arg(), "--json"]);
    let before = a.rss_kib();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (done, pid) = (done.clone(), a.pid());
        thread::spawn(move || {
            let mut peak = 0;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(rss_kib(pid).unwrap_or(0));
                thread::sleep(Duration::from_millis(5));
            }
            peak.max(rss_kib(pid).unwrap_or(0))
        })
    };
    let outcome = rp.run(&args);
    done.store(true, Ordering::Relaxed);
    let peak = sampler.join().expect("the sampler");
    (outcome, peak.saturating_sub(before) << 10)
}

/// The probe: refused by A with --max-memory and its value, before A allocates anything;
/// A's server side would have reserved 32 KiB, its client side needs gigabytes.
#[test]
fn an_agent_refuses_a_client_side_beyond_its_max_memory() {
    let rp = ringperf_tests::ringperf!();
    let key = KeyFile::new("memprobe");
    let (mut a, b) = agents(&rp, &key, &AGENT_LIMITS);
    let base = baseline(&a);
    let probe = [&PROBE[..], &["1"]].concat();
    let need = side_memory(&spec_of(&probe), true);
    assert!(need > 3 << 30, "the probe's client side is estimated at {need} bytes");
    let (o, grew) = through(&rp, &a, &b, &key, &probe);
    let line = o.failure(2, &["--max-memory of 64 MiB", "client side", &format!("{} MiB", need >> 20)]);
    eprintln!("figures: the probe was refused with: {line}; the agent grew by {grew} bytes");
    assert!(grew < 16 << 20, "the agent grew by {grew} bytes for a run it refused");
    assert!(
        a.wait_for_log(
            "session failed: third-party request refused (TCP_STREAM against 127.0.0.1:",
            Duration::from_secs(5)
        )
        .filter(|l| l.contains("this test would make this agent's client side"))
        .is_some(),
        "{:?}",
        a.log()
    );
    still_serves(&rp, &mut a, base, Some(key.path()));
}

/// A client side that fits --max-memory but not what --max-total-memory has left is
/// refused with that limit's name.
#[test]
fn an_agent_refuses_a_client_side_beyond_its_max_total_memory() {
    let rp = ringperf_tests::ringperf!();
    let key = KeyFile::new("memtotal");
    let (mut a, b) = agents(&rp, &key, &["--max-memory", "64M", "--max-total-memory", "8M"]);
    let base = baseline(&a);
    let test = ["stream", "-m", "1M", "--send-engine", "zc", "--flows", "2", "--threads", "2", "-l", "1"];
    let need = side_memory(&spec_of(&test), true);
    assert!((8 << 20..MAX_MEMORY).contains(&need), "the test's client side is estimated at {need} bytes");
    let (o, _) = through(&rp, &a, &b, &key, &test);
    o.failure(3, &["--max-total-memory", "this test needs", &format_bytes(need)]);
    still_serves(&rp, &mut a, base, Some(key.path()));
}

/// A run that fits is reserved at its client side's estimate (A's log says so), and A's
/// resident memory stays within --max-memory while it runs.
#[test]
fn an_agent_reserves_the_client_side_it_runs_and_stays_within_it() {
    let rp = ringperf_tests::ringperf!();
    let key = KeyFile::new("memfit");
    let (mut a, b) = agents(&rp, &key, &AGENT_LIMITS);
    let base = baseline(&a);
    let test = [
        "stream",
        "-m",
        "1M",
        "-M",
        "4K",
        "--send-engine",
        "zc",
        "--flows",
        "2",
        "--threads",
        "2",
        "-l",
        "2",
    ];
    let spec = spec_of(&test);
    let (client, server) = (side_memory(&spec, true), side_memory(&spec, false));
    assert!(client > 4 * server, "the client side ({client} B) should dwarf the server's ({server} B)");
    let (o, grew) = through(&rp, &a, &b, &key, &test);
    check_stream_report(&o.success().report(), false);
    let reserved =
        format!("accepted: {} of payload memory reserved for its client side", format_bytes(client));
    assert!(a.wait_for_log(&reserved, Duration::from_secs(5)).is_some(), "no '{reserved}': {:?}", a.log());
    eprintln!("figures: zc 1M x 2 flows x 2 threads through an agent: reserved {client} B, resident grew by {grew} B");
    assert!(grew <= MAX_MEMORY, "the agent grew by {grew} bytes under --max-memory 64M");
    assert!(
        grew >= client / 2,
        "the agent grew by only {grew} bytes for a {client}-byte client side: was the run measured?"
    );
    still_serves(&rp, &mut a, base, Some(key.path()));
}
