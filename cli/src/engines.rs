//! `ringperf engines`: one workload once per engine pair, one table, and the default
//! harness against the other one.

use ringperf_core::harness::Harness;
use ringperf_core::spec::{Explicit, RecvEngine, SendEngine, Workload};
use ringperf_core::{Error, TestReport, TestSpec};

use crate::args::EnginesArgs;
use crate::output::print;
use crate::requirements::requirements;
use crate::runner::{Progress, Runner};
use crate::{base_spec, explicit, render};

/// The workload `engines` was given.
pub fn workload(a: &EnginesArgs) -> Workload {
    match a.workload.as_str() {
        "rr" => Workload::Rr,
        "crr" => Workload::Crr,
        "udp-rr" => Workload::UdpRr,
        "udp-stream" => Workload::UdpStream,
        _ => Workload::Stream,
    }
}

/// The spec of one row: the workload with the flags given, on `engines` (both sides).
pub fn spec(a: &EnginesArgs, engines: Option<(SendEngine, RecvEngine)>) -> Result<TestSpec, Error> {
    let w = workload(a);
    let mut spec = base_spec(&a.test, w)?;
    let refuse = |flag: &str, applies: &str| {
        Err(Error::Usage(format!("{flag} applies to engines {applies}, not {}: drop it", a.workload)))
    };
    match w {
        Workload::Stream | Workload::UdpStream => {
            if a.sizes.is_some() {
                return refuse("-r", "rr, crr and udp-rr");
            }
            if let Some(m) = a.send_size {
                spec.send_size = m;
                spec.recv_size = m;
            }
            if w == Workload::Stream {
                spec.recv_size = a.recv_size.unwrap_or(spec.recv_size);
            } else if a.recv_size.is_some() {
                return refuse("-M", "stream");
            }
        }
        Workload::Rr | Workload::Crr | Workload::UdpRr => {
            if a.send_size.is_some() || a.recv_size.is_some() {
                return refuse("-m and -M", "stream and udp-stream (-r gives rr's sizes)");
            }
            if let Some((request, response)) = a.sizes {
                spec.request_size = request.unwrap_or(spec.request_size);
                spec.response_size = response.unwrap_or(spec.response_size);
            }
        }
    }
    if a.reverse && w != Workload::Stream {
        return refuse("--reverse", "stream");
    }
    spec.direction = crate::args::direction(a.reverse);
    // Each pair gets its own defaults (chain length) unless the user fixed them for all.
    let (send_engine, recv_engine) = engines.unzip();
    spec.resolve(&Explicit { send_engine, recv_engine, ..explicit(&a.test) });
    // --require-zc makes sense per zero-copy engine only.
    spec.require_zero_copy &= spec.local.send_engine.is_zero_copy();
    Ok(spec)
}

/// The harness the rule picks for the workload as the flags give it.
pub fn default_harness(a: &EnginesArgs) -> Result<Harness, Error> {
    let s = spec(a, None)?;
    Ok(Harness::of_send(s.local.send_engine))
}

/// The pairs to run. Without lists: a stream's every send engine with the default receive
/// engine, then the default send engine with every other receive engine, the io_uring
/// engines each with their classic counterpart right after (syscall on both sides after
/// copy/recv, msg-zerocopy after zc, and zerocopy-receive after the ring's receive
/// engines); another workload's default harness, then its other harness. With lists: each
/// send engine against --recv-engine, then each receive engine against --send-engine, or
/// with --matrix every pair.
pub fn combinations(a: &EnginesArgs) -> Result<Vec<(SendEngine, RecvEngine)>, Error> {
    let w = workload(a);
    let lists = !(a.send_engines.is_empty() && a.recv_engines.is_empty() && !a.matrix);
    if w != Workload::Stream && !lists {
        if a.test.engine.send_engine.is_some() || a.test.engine.recv_engine.is_some() {
            return Err(Error::Usage(format!(
                "engines {} runs its default harness and the other one: drop --send-engine and --recv-engine, or give --send-engines/--recv-engines lists to run them against",
                a.workload
            )));
        }
        let first = default_harness(a)?;
        return Ok(vec![first.engines(w), first.other().engines(w)]);
    }
    let defaults = !lists;
    let sends = if a.send_engines.is_empty() {
        SendEngine::ALL.into_iter().filter(|e| !(defaults && e.is_classic())).collect()
    } else {
        a.send_engines.clone()
    };
    let recvs = if a.recv_engines.is_empty() {
        RecvEngine::ALL.into_iter().filter(|e| !(defaults && e.is_classic())).collect()
    } else {
        a.recv_engines.clone()
    };
    if a.matrix {
        return Ok(sends.iter().flat_map(|&s| recvs.iter().map(move |&r| (s, r))).collect());
    }
    // An unnamed engine of the other side is the ring's default for the workload.
    let (ring_send, ring_recv) = Harness::IoUring.engines(w);
    let base =
        (a.test.engine.send_engine.unwrap_or(ring_send), a.test.engine.recv_engine.unwrap_or(ring_recv));
    let mut out: Vec<(SendEngine, RecvEngine)> = sends.iter().map(|&s| (s, base.1)).collect();
    for r in recvs {
        if !out.contains(&(base.0, r)) {
            out.push((base.0, r));
        }
    }
    if defaults {
        let counterparts = [
            ((SendEngine::Copy, base.1), (SendEngine::Syscall, RecvEngine::Syscall)),
            ((SendEngine::Zc, base.1), (SendEngine::MsgZerocopy, base.1)),
        ];
        for (ring, classic) in counterparts {
            if let Some(at) = out.iter().position(|&p| p == ring).filter(|_| !out.contains(&classic)) {
                out.insert(at + 1, classic);
            }
        }
        let zero_copy_receive = (base.0, RecvEngine::ZerocopyReceive);
        if !out.contains(&zero_copy_receive) {
            out.push(zero_copy_receive);
        }
    }
    Ok(out)
}

pub fn run(a: &EnginesArgs) -> Result<i32, Error> {
    let units = render::Units::parse(&a.test.units);
    let pairs = combinations(a)?;
    let default = default_harness(a)?;
    let runner = Runner::new(&a.test)?;
    let mut reports: Vec<TestReport> = Vec::new();
    let mut failure = None;
    for (n, &(send, recv)) in pairs.iter().enumerate() {
        let spec = spec(a, Some((send, recv)))?;
        // On a terminal: which pair runs, how many remain and how long they take (one run
        // each, of the same length), with the run's bar.
        let left = pairs.len() - n - 1;
        let heading = format!(
            "[{}/{}] {}/{} ({left} left after this, about {})",
            n + 1,
            pairs.len(),
            send.name(),
            recv.name(),
            crate::progress::seconds(std::time::Duration::from_millis(spec.duration_ms) * left as u32)
        );
        match runner.run(&spec, &a.test, None, Progress::Status(heading), &mut |_, _, _| {}) {
            // A partial run ends the table: the reason and exit code follow it.
            Ok(r) if r.partial => {
                reports.push(r);
                break;
            }
            Ok(r) => reports.push(r),
            Err(e) => {
                // Keep what was measured; report the failure after the table.
                failure = Some((send, recv, e));
                break;
            }
        }
    }
    let out = if a.test.json {
        render::json::render_all(&reports)
    } else {
        render::engines::render(&reports, units, default)
    };
    print("the engines table", &out);
    if let Some(code) = reports.last().and_then(|r| runner.partial(r)) {
        return Ok(code);
    }
    if let Some((s, r, e)) = failure {
        eprintln!("ringperf: engines {} / {} failed: {e}", s.name(), r.name());
        return Ok(e.exit_code());
    }
    Ok(reports.iter().map(requirements).max().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> EnginesArgs {
        let mut v = vec!["ringperf".to_string(), "engines".to_string()];
        v.extend(line.split_whitespace().map(String::from));
        match crate::args::parse(&v).expect("parses").command {
            crate::args::Command::Engines(a) => a,
            _ => unreachable!("engines parses as engines"),
        }
    }

    /// A workload other than stream runs its default harness, then the other one; a
    /// stream runs every engine pair as before, both harnesses' pairs among them.
    #[test]
    fn each_workload_runs_its_default_harness_then_the_other() {
        let classic = (SendEngine::Syscall, RecvEngine::Syscall);
        let pairs = |line: &str| combinations(&args(line)).expect(line);
        assert_eq!(pairs("rr"), vec![classic, (SendEngine::Copy, RecvEngine::Multishot)]);
        assert_eq!(pairs("crr"), vec![classic, (SendEngine::Copy, RecvEngine::Recv)]);
        assert_eq!(pairs("udp-rr"), vec![(SendEngine::Copy, RecvEngine::Recv), classic]);
        assert_eq!(pairs("udp-stream"), vec![(SendEngine::Copy, RecvEngine::Recv), classic]);
        assert_eq!(pairs("rr --flows 4"), vec![(SendEngine::Copy, RecvEngine::Multishot), classic]);
        assert_eq!(default_harness(&args("rr")).expect("rr"), Harness::Classic);
        assert_eq!(default_harness(&args("stream")).expect("stream"), Harness::IoUring);
        let stream = pairs("");
        assert_eq!(&stream[..2], &[(SendEngine::Copy, RecvEngine::Multishot), classic]);
        assert_eq!(stream.len(), 10, "{stream:?}");
        assert_eq!(
            pairs("rr --send-engines copy,zc --recv-engines multishot"),
            vec![(SendEngine::Copy, RecvEngine::Multishot), (SendEngine::Zc, RecvEngine::Multishot)]
        );
        for bad in ["rr --send-engine zc", "rr -m 4K", "stream -r 1,1", "rr --reverse", "udp-stream -M 1K"] {
            let a = args(bad);
            let e = combinations(&a).and_then(|_| spec(&a, None)).expect_err(bad);
            assert!(matches!(e, Error::Usage(_)), "{bad}: {e}");
        }
    }

    /// Each row's spec runs the pair it names, with the workload's sizes as given.
    #[test]
    fn each_row_runs_its_pair_with_the_sizes_given() {
        let s = spec(&args("rr -r 64,128"), Some((SendEngine::Copy, RecvEngine::Bundle))).expect("rr");
        assert_eq!((s.request_size, s.response_size), (64, 128));
        assert_eq!((s.remote.send_engine, s.remote.recv_engine), (SendEngine::Copy, RecvEngine::Bundle));
        let s = spec(&args("udp-stream -m 64"), None).expect("udp-stream");
        assert_eq!((s.send_size, s.recv_size), (64, 64));
        let s =
            spec(&args("-m 16K -M 8K --reverse"), Some((SendEngine::Splice, RecvEngine::Recv))).expect("s");
        assert_eq!((s.send_size, s.recv_size, s.ring.send_depth), (16384, 8192, 32));
    }
}
