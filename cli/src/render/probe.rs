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
    let _ = writeln!(o, "opcodes:  {}", p.opcodes.join(" "));
    if !p.missing_opcodes.is_empty() {
        let _ = writeln!(o, "missing:  {}", p.missing_opcodes.join(" "));
    }
    let s = &p.setup;
    flag_line(
        &mut o,
        "setup:    ",
        &[
            ("SINGLE_ISSUER", s.single_issuer),
            ("DEFER_TASKRUN", s.defer_taskrun),
            ("COOP_TASKRUN", s.coop_taskrun),
            ("SUBMIT_ALL", s.submit_all),
            ("NO_SQARRAY", s.no_sqarray),
            ("SQPOLL", s.sqpoll),
        ],
    );
    let f = &p.features;
    flag_line(
        &mut o,
        "features: ",
        &[
            ("NODROP", f.nodrop),
            ("FAST_POLL", f.fast_poll),
            ("EXT_ARG", f.ext_arg),
            ("SKIP_CQE", f.skip_cqe_on_success),
            ("RECVSEND_BUNDLE", f.recvsend_bundle),
            ("MIN_TIMEOUT", f.min_timeout),
            ("NO_IOWAIT", f.no_iowait),
        ],
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

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// `label`, then each flag's name and yes or no, two spaces apart.
fn flag_line(o: &mut String, label: &str, flags: &[(&str, bool)]) {
    let shown: Vec<String> = flags.iter().map(|&(name, on)| format!("{name} {}", yes(on))).collect();
    let _ = writeln!(o, "{label}{}", shown.join("  "));
}
