//! Flags to what a test runs: the TestSpec a test command asks for (the shared flags, then
//! the command's own, each as its declaration says, then the engine's one defaults function
//! over the settings the flags give explicitly), where it goes, and how often it repeats.

use ringperf_control::{Target, DEFAULT_PORT};
use ringperf_core::measure::confidence::ConfidenceTarget;
use ringperf_core::spec::{Explicit, SendEngine, SqPoll, Workload};
use ringperf_core::{Error, TestSpec};

use super::commands::{direction, Command, RrArgs, SendfileArgs};
use super::test_flags::TestArgs;
use super::values::HostPort;

/// The TestSpec a test command asks for (an error for commands that are not tests): the
/// shared flags, then the command's own, each as its declaration says (`copy_to`).
pub fn test_spec(cmd: &Command) -> Result<TestSpec, Error> {
    let (spec, test) = match cmd {
        Command::Stream(a) => (own(base_spec(&a.test, Workload::Stream)?, |s| a.copy_to(s)), &a.test),
        Command::Sendfile(a) => return sendfile_spec(a),
        Command::Rr(a) => return rr_spec(a),
        Command::Crr(a) => (own(base_spec(&a.test, Workload::Crr)?, |s| a.copy_to(s)), &a.test),
        Command::UdpStream(a) => (own(base_spec(&a.test, Workload::UdpStream)?, |s| a.copy_to(s)), &a.test),
        Command::UdpRr(a) => (own(base_spec(&a.test, Workload::UdpRr)?, |s| a.copy_to(s)), &a.test),
        _ => return Err(Error::Usage("not a test command".into())),
    };
    Ok(resolved(spec, test))
}

/// `spec` with a command's own flags applied.
fn own(mut spec: TestSpec, apply: impl FnOnce(&mut TestSpec)) -> TestSpec {
    apply(&mut spec);
    spec
}

/// An rr spec from its flags.
pub fn rr_spec(a: &RrArgs) -> Result<TestSpec, Error> {
    let mut spec = base_spec(&a.test, Workload::Rr)?;
    a.copy_to(&mut spec);
    Ok(resolved(spec, &a.test))
}

/// A sendfile spec: a stream whose sender splices from a file (or a memfd).
pub fn sendfile_spec(a: &SendfileArgs) -> Result<TestSpec, Error> {
    if let (Some(agent), Some(_)) = (&a.test.from, &a.file) {
        return Err(Error::Usage(format!("-F {}", agent_names_no_path(&agent.to_string()))));
    }
    let mut spec = base_spec(&a.test, Workload::Stream)?;
    a.copy_to(&mut spec);
    // The command names the send engine: splice, on both sides.
    spec.resolve(&Explicit { send_engine: Some(SendEngine::Splice), ..explicit(&a.test) });
    Ok(spec)
}

/// Why a file of the controller's host cannot be what `agent` sends, and what to do instead
/// (after the flag that named it).
pub(crate) fn agent_names_no_path(agent: &str) -> String {
    format!(
        "names a file of this host, and the agent {agent} never opens a path a controller names: have its operator list the file (`ringperf serve --payload-file LABEL=PATH`) and give --payload LABEL"
    )
}

/// A stream spec from the shared flags and the sizes and direction a sweep point gives.
pub fn stream_spec(t: &TestArgs, send_size: u32, recv_size: u32, reverse: bool) -> Result<TestSpec, Error> {
    let mut spec = base_spec(t, Workload::Stream)?;
    spec.send_size = send_size;
    spec.recv_size = recv_size;
    spec.direction = direction(reverse);
    Ok(resolved(spec, t))
}

/// The spec fields every test shares, over the workload's defaults; the caller applies
/// the command's own flags, then [`resolved`] fills what depends on them. Every flag says
/// where it goes where it is declared (`=> spec.PATH` or `=> with { ... }`), except
/// --sqpoll, whose CPU is checked here.
pub fn base_spec(t: &TestArgs, workload: Workload) -> Result<TestSpec, Error> {
    check_flag_pairs(t)?;
    let e = &t.engine;
    let sqpoll = match e.sqpoll.as_deref() {
        None => None,
        Some("any") => Some(SqPoll { cpu: None, idle_ms: 100 }),
        Some(cpu) => Some(SqPoll {
            cpu: Some(cpu.parse().map_err(|_| Error::Usage(format!("--sqpoll={cpu}: give a CPU number")))?),
            idle_ms: 100,
        }),
    };
    let mut spec = TestSpec::for_workload(workload);
    t.copy_to(&mut spec);
    t.stats.copy_to(&mut spec);
    e.copy_to(&mut spec);
    t.profile.copy_to(&mut spec);
    spec.ring.sqpoll = sqpoll;
    Ok(spec)
}

/// Flags whose meaning depends on another flag: each bad combination is a usage error that
/// names both, instead of a run that silently does something else.
fn check_flag_pairs(t: &TestArgs) -> Result<(), Error> {
    target(t)?;
    let e = &t.engine;
    if let Some(batch) = e.sq_batch {
        if batch > e.sq_entries {
            return Err(Error::Usage(format!(
                "--sq-batch {batch} is larger than the ring (--sq-entries {}): the ring fills first; give --sq-batch of at most {}",
                e.sq_entries, e.sq_entries
            )));
        }
    }
    if let Some(ms) = t.stats.interval {
        if ms > t.length_ms {
            return Err(Error::Usage(format!(
                "-D {} s is longer than the test (-l {} s): no interval would end; give -D of at most -l",
                ms as f64 / 1e3,
                t.length_ms as f64 / 1e3
            )));
        }
    }
    if let (Some(total), Some(per_flow)) = (t.rate, t.flow_rate) {
        if per_flow > total {
            return Err(Error::Usage(format!(
                "--flow-rate {per_flow} bits/s is above the total -b {total} bits/s: one flow can never reach it; give --flow-rate of at most -b"
            )));
        }
    }
    Ok(())
}

/// The settings the flags give explicitly, for the engine's one defaults function.
pub fn explicit(t: &TestArgs) -> Explicit {
    let e = &t.engine;
    Explicit {
        send_depth: e.send_depth,
        recv_depth: e.recv_depth,
        buf_count: e.buf_count,
        buf_size: e.buf_size,
        sq_batch: e.sq_batch,
        interval_ms: if t.stats.no_intervals { Some(0) } else { t.stats.interval },
        send_engine: e.send_engine,
        recv_engine: e.recv_engine,
        harness: e.harness,
    }
}

/// `spec` with every default the flags left open filled in by the engine.
fn resolved(mut spec: TestSpec, t: &TestArgs) -> TestSpec {
    spec.resolve(&explicit(t));
    spec
}

/// The confidence target of -i / -I, if any.
pub fn confidence_target(t: &TestArgs) -> Option<ConfidenceTarget> {
    let s = &t.stats;
    if s.iterations.is_none() && s.confidence.is_none() {
        return None;
    }
    let (max, min) = s.iterations.unwrap_or((10, 3));
    let (level, width) = s.confidence.unwrap_or((99.0, 5.0));
    Some(ConfidenceTarget {
        level: level / 100.0,
        width_percent: width,
        max_iterations: max,
        min_iterations: min,
    })
}

/// Where the test goes: `-H`, `-H` from the `--from` agent, or the embedded server; each
/// port from its host or its flag (refused when both name one and they differ).
pub fn target(t: &TestArgs) -> Result<Target, Error> {
    let port = |host: &HostPort, host_flag, port_flag, given| {
        host.port_or(host_flag, port_flag, given, DEFAULT_PORT).map_err(Error::Usage)
    };
    Ok(match (&t.host, &t.from) {
        (Some(host), Some(agent)) => Target::ThirdParty {
            agent_host: agent.host.clone(),
            agent_port: port(agent, "--from", "--from-port", t.from_port)?,
            peer_host: host.host.clone(),
            peer_port: port(host, "-H", "-p", t.port)?,
        },
        (Some(host), None) => {
            Target::Remote { host: host.host.clone(), port: port(host, "-H", "-p", t.port)? }
        }
        (None, _) => Target::Embedded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{netperf_spec, spec_from_args};
    use ringperf_core::payload::Payload;
    use ringperf_core::spec::{CloseFirst, CrrOptions, Direction, RecvEngine};

    fn spec(args: &str) -> TestSpec {
        let mut v = vec!["ringperf"];
        v.extend(args.split_whitespace());
        spec_from_args(&v).unwrap()
    }

    /// A third-party sendfile names the agent's file by its operator's label; a path of
    /// this host with --from is refused, saying what to do instead.
    #[test]
    fn an_agent_is_given_a_label_never_a_path() {
        let s = spec("sendfile -H b --from a --payload big.bin");
        assert_eq!(s.local.payload, Payload::Label("big.bin".into()));
        let refused = |args: &str| {
            let mut v = vec!["ringperf"];
            v.extend(args.split_whitespace());
            spec_from_args(&v).expect_err(args)
        };
        let e = refused("sendfile -F /etc/shadow -H b --from a");
        assert!(e.starts_with("-F names a file of this host, and the agent a never opens"), "{e}");
        assert!(e.contains("--payload-file LABEL=PATH") && e.contains("--payload LABEL"), "{e}");
        assert!(refused("sendfile -F /x --payload big -H b --from a").contains("cannot be used with"));
        assert!(refused("sendfile --payload ../etc -H b --from a").contains("is not a label"));
    }

    /// Unnamed engines follow the engine's rule (classic where one transaction waits alone
    /// per worker, the ring otherwise) in the native and both netperf forms alike; a named
    /// engine wins, and its partner follows its harness where one loop needs both; a named
    /// harness overrides the rule.
    #[test]
    fn the_engines_follow_the_rule_unless_an_engine_or_a_harness_is_named() {
        use ringperf_core::harness::EngineReason;
        let engines = |s: &TestSpec, args: &str| {
            assert_eq!(
                (s.local.send_engine, s.local.recv_engine),
                (s.remote.send_engine, s.remote.recv_engine),
                "{args}: both sides get one pair"
            );
            (s.local.send_engine, s.local.recv_engine)
        };
        let pair = |args: &str| engines(&spec(args), args);
        let classic = (SendEngine::Syscall, RecvEngine::Syscall);
        let ring = |r| (SendEngine::Copy, r);
        for (args, want) in [
            ("rr", classic),
            ("-t TCP_RR", classic),
            ("crr", classic),
            ("udp-rr", ring(RecvEngine::Recv)),
            ("rr --threads 2 --flows 2", classic),
            ("stream", ring(RecvEngine::Multishot)),
            ("stream --reverse", ring(RecvEngine::Multishot)),
            ("udp-stream", ring(RecvEngine::Recv)),
            ("rr --flows 4", ring(RecvEngine::Multishot)),
            ("rr --burst 4", ring(RecvEngine::Multishot)),
            ("rr --rate 1000", ring(RecvEngine::Multishot)),
            ("rr --transactions 100", ring(RecvEngine::Multishot)),
            ("crr --flows 2", ring(RecvEngine::Recv)),
            ("udp-rr -r 64", ring(RecvEngine::Recv)),
            ("rr --sqpoll", ring(RecvEngine::Multishot)),
            ("rr --harness io-uring", ring(RecvEngine::Multishot)),
            ("crr --harness io-uring", ring(RecvEngine::Recv)),
            ("rr --flows 4 --harness classic", classic),
            ("stream --harness classic", classic),
            ("rr --recv-engine recv", ring(RecvEngine::Recv)),
            ("rr --send-engine zc", (SendEngine::Zc, RecvEngine::Multishot)),
            ("rr --send-engine syscall --flows 4", classic),
            ("rr --recv-engine syscall --flows 4", classic),
            ("rr --send-engine copy --recv-engine bundle --harness classic", ring(RecvEngine::Bundle)),
            ("stream --send-engine msg-zerocopy", (SendEngine::MsgZerocopy, RecvEngine::Syscall)),
            (
                "stream --send-engine msg-zerocopy --recv-engine multishot",
                (SendEngine::MsgZerocopy, RecvEngine::Multishot),
            ),
            ("stream --recv-engine syscall", ring(RecvEngine::Syscall)),
            ("sendfile", (SendEngine::Splice, RecvEngine::Multishot)),
        ] {
            assert_eq!(pair(args), want, "{args}");
        }
        let why = |args: &str| spec(args).engine_choice.expect("a resolved spec says why");
        assert_eq!(why("rr").send, EngineReason::OneInFlight);
        assert_eq!(why("rr --flows 4").recv, EngineReason::SeveralFlows);
        assert_eq!(why("rr --harness io-uring").send, EngineReason::HarnessAsked);
        assert_eq!(why("rr --send-engine zc").send, EngineReason::Asked);
        assert_eq!(why("rr --send-engine zc").recv, EngineReason::Paired);
        assert_eq!(why("sendfile").send, EngineReason::Asked, "the command names splice");
        // ringperf invoked as netperf builds its spec through the same rule.
        for (argv, want) in [
            (&["netperf", "-t", "TCP_RR"][..], classic),
            (&["netperf", "-t", "TCP_CRR", "-H", "127.0.0.1"][..], classic),
            (&["netperf", "-t", "UDP_RR"][..], ring(RecvEngine::Recv)),
            (&["netperf", "-t", "TCP_STREAM"][..], ring(RecvEngine::Multishot)),
        ] {
            let s = netperf_spec(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            assert_eq!(engines(&s, &argv.join(" ")), want, "{argv:?}");
        }
    }

    #[test]
    fn the_task_run_mode_is_left_to_the_roles_unless_given() {
        use ringperf_core::spec::TaskRun;
        assert_eq!(spec("rr").ring.task_run, None);
        assert_eq!(spec("rr --task-run cooperative").ring.task_run, Some(TaskRun::Cooperative));
        assert_eq!(spec("stream --task-run deferred").ring.task_run, Some(TaskRun::Deferred));
        let mut v = vec!["ringperf"];
        v.extend("rr --task-run cooperative --sqpoll".split_whitespace());
        assert!(spec_from_args(&v).is_err(), "the kernel refuses task-run modes with SQPOLL");
    }

    /// Every flag that is not a plain spec field reaches the spec through the setter its
    /// declaration carries: both sides, negations, pairs, each command's own flags.
    #[test]
    fn each_flag_lands_where_its_declaration_says() {
        let s = spec(
            "crr -r 100,200 --linger0 --client-ports 4000-4100 --close-first client -s 64K,96K -S ,32K -T 0,1 \
             --send-engine zc --recv-engine bundle --no-latency --no-fixed-files --no-registered-ring",
        );
        assert_eq!((s.request_size, s.response_size), (100, 200));
        assert_eq!(
            s.crr,
            CrrOptions { linger0: true, client_ports: Some((4000, 4100)), close_first: CloseFirst::Client }
        );
        assert_eq!(spec("crr").crr.close_first, CloseFirst::Server, "netperf's order by default");
        assert_eq!(
            (s.local.socket_buffers.send, s.local.socket_buffers.recv),
            (Some(64 << 10), Some(96 << 10))
        );
        assert_eq!((s.remote.socket_buffers.send, s.remote.socket_buffers.recv), (None, Some(32 << 10)));
        assert_eq!((s.local.cpus.as_slice(), s.remote.cpus.as_slice()), (&[0][..], &[1][..]));
        for side in [&s.local, &s.remote] {
            assert_eq!((side.send_engine, side.recv_engine), (SendEngine::Zc, RecvEngine::Bundle));
        }
        assert!(!s.record_latency && !s.ring.fixed_files && !s.ring.registered_ring_fd);
        let s = spec("rr -r ,64 --cpus 2-3");
        assert_eq!((s.request_size, s.response_size), (1, 64), "a side left out keeps its default");
        assert_eq!((s.local.cpus.clone(), s.remote.cpus.clone()), (vec![2, 3], vec![2, 3]));
        assert!(s.record_latency && s.ring.fixed_files && s.ring.registered_ring_fd);
        let s = spec("stream --reverse -m 4K -M 8K");
        assert_eq!((s.direction, s.send_size, s.recv_size), (Direction::ServerToClient, 4096, 8192));
        assert!(spec("stream --bidir").bidir);
        let s = spec("sendfile -F /etc/hostname -m 4K -M 8K");
        assert_eq!(s.local.payload, Payload::File("/etc/hostname".into()));
        assert_eq!((s.send_size, s.recv_size), (4096, 8192));
        assert_eq!(s.local.send_engine, SendEngine::Splice);
        let s = spec("udp-stream --gso 1400 --gro");
        assert_eq!((s.send_size, s.recv_size, s.udp.gso_segment, s.udp.gro), (1400, 1400, Some(1400), true));
        let s = spec("udp-stream -m 500 --gso 1400");
        assert_eq!((s.send_size, s.udp.gso_segment), (500, Some(1400)), "-m gives the datagram size");
        let s = spec("udp-rr -r 16,32 --timeout-us 500");
        assert_eq!((s.request_size, s.response_size, s.udp.timeout_us), (16, 32, 500));
    }

    #[test]
    fn provided_buffers_default_to_a_cache_sized_ring() {
        let s = spec("stream -M 1M --verify");
        assert_eq!((s.ring.buf_size, s.ring.buf_count), (64 * 1024, 16), "checked: 1 MiB of 64 KiB buffers");
        let s = spec("stream -M 4K --verify");
        assert_eq!((s.ring.buf_size, s.ring.buf_count), (4 * 1024, 256));
        let s = spec("stream -M 64K --flows 64 --threads 2 --verify");
        assert_eq!(s.ring.buf_count, 128, "at least 4 per flow a worker serves");
        let s = spec("stream -M 1M");
        assert_eq!(
            (s.ring.buf_size, s.ring.buf_count),
            (64 * 1024, 256),
            "unchecked: one landing area, many entries"
        );
        let s = spec("stream --flows 200");
        assert_eq!(s.ring.buf_count, 1024, "unchecked: still at least 4 per flow");
        let s = spec("rr -r 1,1 --flows 100 --threads 2");
        assert_eq!((s.ring.buf_size, s.ring.buf_count), (4 * 1024, 256), "rr: small buffers, plenty");
        let s = spec("stream --buf-size 1M --buf-count 8");
        assert_eq!((s.ring.buf_size, s.ring.buf_count), (1 << 20, 8), "flags win");
    }

    #[test]
    fn a_command_without_flags_runs_the_engines_default_spec() {
        assert_eq!(spec("stream"), TestSpec::default());
        for (cmd, workload) in [
            ("stream", Workload::Stream),
            ("rr", Workload::Rr),
            ("crr", Workload::Crr),
            ("udp-stream", Workload::UdpStream),
            ("udp-rr", Workload::UdpRr),
        ] {
            assert_eq!(spec(cmd), TestSpec::for_workload(workload), "{cmd}");
        }
        let long = spec("stream -l 30");
        assert_eq!(long, TestSpec { duration_ms: 30_000, interval_ms: 1000, ..TestSpec::default() });
    }

    #[test]
    fn send_depth_defaults_by_engine_and_workload() {
        assert_eq!(spec("stream").ring.send_depth, 4);
        assert_eq!(spec("sendfile").ring.send_depth, 32);
        assert_eq!(spec("stream --send-engine splice").ring.send_depth, 32);
        assert_eq!(spec("stream --send-depth 1").ring.send_depth, 1);
        assert_eq!(spec("udp-stream -m 64").ring.send_depth, 32, "32 datagrams per chain");
        assert_eq!(spec("udp-stream --gso 1400").ring.send_depth, 1, "one GSO send holds many");
        assert_eq!(spec("udp-stream --send-depth 1").ring.send_depth, 1, "an explicit 1 is kept");
        assert_eq!(spec("rr").ring.send_depth, 1);
        assert_eq!(spec("stream").ring.recv_depth, 4);
        assert_eq!(spec("sendfile").ring.recv_depth, 4);
        assert_eq!(spec("stream --recv-depth 1").ring.recv_depth, 1);
        assert_eq!(spec("rr").ring.recv_depth, 1);
    }
}
