//! `ringperf engines`: the same stream once per engine combination, one table.

use ringperf_engine::spec::{RecvEngine, SendEngine, Workload};
use ringperf_engine::{Error, TestReport};

use crate::args::EnginesArgs;
use crate::runner::{Progress, Runner};
use crate::{explicit, print, render, requirements, stream_spec};

/// The combinations to run: every send engine with the chosen receive engine, then the
/// chosen send engine with every other receive engine; with --matrix, every pair. Without
/// lists, the io_uring engines, each classic engine right after the pair it is the
/// counterpart of: syscall on both sides after copy/recv, msg-zerocopy after zc, and
/// zerocopy-receive after the ring's receive engines.
pub fn combinations(a: &EnginesArgs) -> Vec<(SendEngine, RecvEngine)> {
    let defaults = a.send_engines.is_empty() && a.recv_engines.is_empty() && !a.matrix;
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
        return sends.iter().flat_map(|&s| recvs.iter().map(move |&r| (s, r))).collect();
    }
    // `engines` runs streams, so an unnamed receive engine is the stream's.
    let base = (
        a.test.engine.send_engine,
        a.test.engine.recv_engine.unwrap_or(RecvEngine::default_for(Workload::Stream)),
    );
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
    out
}

pub fn run(a: &EnginesArgs) -> Result<i32, Error> {
    let units = render::Units::parse(&a.test.units);
    let runner = Runner::new(&a.test)?;
    let mut reports: Vec<TestReport> = Vec::new();
    let mut failure = None;
    let pairs = combinations(a);
    for (n, &(send, recv)) in pairs.iter().enumerate() {
        let mut spec = stream_spec(&a.test, a.send_size, a.recv_size, a.reverse)?;
        for side in [&mut spec.local, &mut spec.remote] {
            side.send_engine = send;
            side.recv_engine = recv;
        }
        // Each engine gets its own defaults (chain length) unless the user fixed them for all.
        spec.resolve(&explicit(&a.test));
        // --require-zc makes sense per zero-copy engine only.
        spec.require_zero_copy &= send.is_zero_copy();
        // On a terminal: which pair runs and how many remain, with the run's status line.
        let heading = format!(
            "[{}/{}] {}/{} ({} left after this)",
            n + 1,
            pairs.len(),
            send.name(),
            recv.name(),
            pairs.len() - n - 1
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
        render::engines::render(&reports, units)
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
