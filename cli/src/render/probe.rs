//! `ringperf probe`: this kernel's io_uring, for people and for scripts.

use std::fmt::Write;

use ringperf_core::env::Environment;
use ringperf_core::spec::{RecvEngine, SendEngine};
use ringperf_engine::probe::IoUringProbe;

pub fn json() -> String {
    let env = Environment::capture(ringperf_engine::probe::get().clone());
    let mut s = serde_json::to_string_pretty(&env).expect("Environment serializes");
    s.push('\n');
    s
}

pub fn human() -> String {
    let env = Environment::capture(ringperf_engine::probe::get().clone());
    let p: &IoUringProbe = &env.io_uring;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kernel {} on {} ({} CPUs, {})",
        env.kernel_release, env.hostname, env.cpu_count, env.cpu_model
    );
    if !p.available {
        let _ = writeln!(o, "io_uring: NOT available: {}", p.error.as_deref().unwrap_or("unknown"));
        return o;
    }
    let yes = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(o, "opcodes:  {}", p.opcodes.join(" "));
    if !p.missing_opcodes.is_empty() {
        let _ = writeln!(o, "missing:  {}", p.missing_opcodes.join(" "));
    }
    let s = &p.setup;
    let _ = writeln!(
        o,
        "setup:    SINGLE_ISSUER {}  DEFER_TASKRUN {}  COOP_TASKRUN {}  SUBMIT_ALL {}  NO_SQARRAY {}  SQPOLL {}",
        yes(s.single_issuer),
        yes(s.defer_taskrun),
        yes(s.coop_taskrun),
        yes(s.submit_all),
        yes(s.no_sqarray),
        yes(s.sqpoll)
    );
    let f = &p.features;
    let _ = writeln!(
        o,
        "features: NODROP {}  FAST_POLL {}  EXT_ARG {}  SKIP_CQE {}  RECVSEND_BUNDLE {}  MIN_TIMEOUT {}  NO_IOWAIT {}",
        yes(f.nodrop),
        yes(f.fast_poll),
        yes(f.ext_arg),
        yes(f.skip_cqe_on_success),
        yes(f.recvsend_bundle),
        yes(f.min_timeout),
        yes(f.no_iowait)
    );
    let _ = writeln!(o, "buffer rings: {}", yes(p.buffer_rings));
    let _ = writeln!(
        o,
        "SendZc REPORT_USAGE: {}{}",
        p.send_zc_reports_usage.map_or("not probed", yes),
        match p.send_zc_copied_on_loopback {
            Some(true) => " (loopback copies, as it always does)",
            Some(false) => " (loopback did not copy)",
            None => "",
        }
    );
    let _ = writeln!(o, "engines:");
    for e in SendEngine::ALL {
        let ok = p.check_engines(e, RecvEngine::Recv);
        let _ = writeln!(o, "  send {:<10} {}", e.name(), ok.map_or_else(|e| e.to_string(), |_| "ok".into()));
    }
    for e in RecvEngine::ALL {
        let ok = p.check_engines(SendEngine::Copy, e);
        let _ = writeln!(o, "  recv {:<10} {}", e.name(), ok.map_or_else(|e| e.to_string(), |_| "ok".into()));
    }
    o
}
