//! `ringperf load`: latency under load. The probe test starts alone; when its interval tick
//! at the end of the idle phase comes in (its live samples say so), the load tests start,
//! each on its own thread and control session against the same server. Every test ends by
//! its own deadline; the probe's report carries both latency phases, and the engine's
//! [`LoadReport`] puts the reports together.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use ringperf_control::auth::Psk;
use ringperf_control::server::ServerConfig;
use ringperf_control::{run_test_with, RunOptions, Server, Target};
use ringperf_core::load::{LoadDirection, LoadKind, LoadReport};
use ringperf_core::report::IntervalSample;
use ringperf_core::spec::{Direction, Explicit, OpenLoop, RecvEngine, SendEngine, Workload, DEFAULT_BACKLOG};
use ringperf_core::{Error, TestSpec};

use crate::args::LoadArgs;
use crate::interrupt::Interrupt;
use crate::output::print;
use crate::psk::psk_from;
use crate::{plot, render};

/// Probe requests per second per flow when none is given: light, as flent's RRUL probes are.
pub const DEFAULT_PROBE_RATE: u64 = 200;

/// Flag combinations the parser cannot see: each is a usage error that says what to give.
fn check(a: &LoadArgs) -> Result<(), Error> {
    let secs = |ms: u64| ms as f64 / 1e3;
    if a.load == LoadKind::Udp && a.load_rate.is_none() {
        return Err(Error::Usage(
            "--load udp needs --load-rate (e.g. --load-rate 1g): an unpaced flood measures only how fast the sender drops datagrams".into(),
        ));
    }
    if a.interval_ms > a.idle_ms {
        return Err(Error::Usage(format!(
            "-D {} s is longer than the idle phase (--idle {} s): the idle phase ends on an interval tick; give -D of at most --idle",
            secs(a.interval_ms),
            secs(a.idle_ms)
        )));
    }
    if a.interval_ms > a.length_ms {
        return Err(Error::Usage(format!(
            "-D {} s is longer than the loaded phase (-l {} s): give -D of at most -l",
            secs(a.interval_ms),
            secs(a.length_ms)
        )));
    }
    Ok(())
}

/// CPUs and congestion control of one part (probe or load), on both sides; the engines it
/// names, for the engine's defaults to keep (the others follow its rule, as a test's do).
fn place(
    spec: &mut TestSpec,
    send: Option<SendEngine>,
    recv: Option<RecvEngine>,
    cpus: Option<&[usize]>,
    cc: Option<&String>,
) -> Explicit {
    if let Some(cpus) = cpus {
        spec.local.cpus = cpus.to_vec();
        spec.remote.cpus = cpus.to_vec();
    }
    if !spec.workload.is_udp() {
        spec.congestion_control = cc.cloned();
    }
    Explicit { send_engine: send, recv_engine: recv, ..Explicit::default() }
}

/// The probe test: the whole run long, its latency split at the end of the idle phase.
/// With it, why it runs closed loop when it does.
pub fn probe_spec(a: &LoadArgs) -> Result<(TestSpec, Option<String>), Error> {
    let udp = a.probe == "udp-rr";
    let mut spec = TestSpec::for_workload(if udp { Workload::UdpRr } else { Workload::Rr });
    spec.duration_ms = a.idle_ms + a.length_ms;
    spec.flows = a.probe_flows;
    if let Some((request, response)) = a.probe_sizes {
        spec.request_size = request.unwrap_or(spec.request_size);
        spec.response_size = response.unwrap_or(spec.response_size);
    }
    let cpus = a.probe_cpus.as_ref().map(|c| c.0.as_slice());
    let named = place(&mut spec, a.probe_send_engine, a.probe_recv_engine, cpus, a.cc.as_ref());
    let closed = if a.probe_closed_loop {
        Some("--probe-closed-loop: one transaction in flight per flow".into())
    } else {
        let rate = a.probe_rate.unwrap_or(DEFAULT_PROBE_RATE);
        spec.open_loop = Some(OpenLoop { rate, total: false, backlog: DEFAULT_BACKLOG });
        None
    };
    // Open-loop requests overlap when the path is slow: without TCP_NODELAY, Nagle would
    // hold each behind the previous one's ACK and add up to a round trip to the figure.
    spec.socket.nodelay = !udp;
    spec.latency_split_ms = Some(a.idle_ms);
    spec.profile.enabled = a.profile;
    spec.resolve(&Explicit { interval_ms: Some(a.interval_ms), ..named });
    spec.validate()?;
    Ok((spec, closed))
}

/// One load test: the loaded phase long, in direction `d`.
pub fn load_spec(a: &LoadArgs, d: LoadDirection) -> Result<TestSpec, Error> {
    let udp = d == LoadDirection::UdpUp;
    let mut spec = TestSpec::for_workload(if udp { Workload::UdpStream } else { Workload::Stream });
    spec.direction =
        if d == LoadDirection::Down { Direction::ServerToClient } else { Direction::ClientToServer };
    spec.duration_ms = a.length_ms;
    spec.flows = a.load_flows;
    if let Some(m) = a.load_send_size {
        spec.send_size = m;
        if udp {
            spec.recv_size = m;
        }
    }
    spec.pacing.total_bps = a.load_rate;
    let cpus = a.load_cpus.as_ref().map(|c| c.0.as_slice());
    let named = place(&mut spec, a.load_send_engine, a.load_recv_engine, cpus, a.cc.as_ref());
    spec.resolve(&Explicit { interval_ms: Some(a.interval_ms), ..named });
    spec.validate()?;
    Ok(spec)
}

/// A server on 127.0.0.1 that the probe and the load sessions share, stopped (after its
/// sessions end) when dropped.
struct SharedServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    serving: Option<JoinHandle<()>>,
}

impl SharedServer {
    fn start() -> Result<SharedServer, Error> {
        // In this process: the probe's sampler covers the server's side too.
        let server = Server::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?
            .with_config(ServerConfig { in_client_process: true, ..ServerConfig::default() });
        let addr = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let serving = thread::Builder::new()
            .name("ringperf-load-server".into())
            .spawn(move || {
                let _ = server.serve(&flag, Arc::new(|_| {}));
            })
            .map_err(|e| Error::io("starting the embedded server", e))?;
        Ok(SharedServer { addr, stop, serving: Some(serving) })
    }
}

impl Drop for SharedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.serving.take() {
            let _ = t.join();
        }
    }
}

/// Whether a probe interval sample is the one whose tick ends the idle phase: the same rule
/// the probe's sampler splits its latency by (the tick at most half an interval early).
fn ends_idle_phase(s: &IntervalSample, idle_ns: u64, interval_ns: u64) -> bool {
    s.start_ns + s.duration_ns + interval_ns / 2 >= idle_ns
}

pub fn run(a: &LoadArgs) -> Result<i32, Error> {
    check(a)?;
    let (probe, closed_loop_reason) = probe_spec(a)?;
    let loads: Vec<(LoadDirection, TestSpec)> =
        a.load.parts().iter().map(|&d| load_spec(a, d).map(|s| (d, s))).collect::<Result<_, _>>()?;
    let psk = psk_from(a.psk_file.as_deref())?;
    let stop = Interrupt::install()?;
    let embedded = match &a.host {
        None => Some(SharedServer::start()?),
        Some(_) => None,
    };
    let target = match (&embedded, &a.host) {
        (Some(s), _) => Target::Remote { host: s.addr.ip().to_string(), port: s.addr.port() },
        (None, Some(host)) => Target::Remote {
            host: host.host.clone(),
            port: host.port_or("-H", "-p", a.port, ringperf_control::DEFAULT_PORT).map_err(Error::Usage)?,
        },
        (None, None) => return Err(Error::Usage("give -H HOST or none for the embedded server".into())),
    };
    let (probe_result, load_results) = run_parts(a, &probe, &loads, &target, psk.as_ref(), &stop);
    drop(embedded);
    let mut probe_report = probe_result?;
    probe_report.server = render::socket_addr(&probe_report.server);
    let load_error_code = load_results.iter().find_map(|(_, r)| r.as_ref().err().map(Error::exit_code));
    let parts = load_results.into_iter().map(|(d, r)| (d, r.map_err(|e| e.to_string()))).collect();
    let mut report =
        LoadReport::assemble(a.load, a.idle_ms, a.length_ms, probe_report, parts, closed_loop_reason);
    report.embedded_server = a.host.is_none();
    let units = render::Units::parse(&a.units);
    let out = if a.json {
        render::load::json(&report)
    } else if a.keyval {
        render::load::keyval(&report, units)
    } else if a.csv {
        render::load::csv(&report, units)
    } else {
        render::load::human(&report, units)
    };
    print("the report", &out);
    if let Some(path) = &a.plot {
        plot::load::draw(&report, path)?;
    }
    if !report.partial {
        return Ok(0);
    }
    eprintln!(
        "ringperf: partial result: {}",
        report.partial_reason.as_deref().unwrap_or("the run did not finish")
    );
    Ok(if stop.fired() { 130 } else { load_error_code.unwrap_or(3) })
}

type PartResults = (
    Result<ringperf_core::TestReport, Error>,
    Vec<(LoadDirection, Result<ringperf_core::TestReport, Error>)>,
);

/// Runs the probe, and the load tests once the probe's idle phase is over (none if the
/// probe ends first or Ctrl-C came).
fn run_parts(
    a: &LoadArgs,
    probe: &TestSpec,
    loads: &[(LoadDirection, TestSpec)],
    target: &Target,
    psk: Option<&Psk>,
    stop: &Interrupt,
) -> PartResults {
    let options = |live| RunOptions {
        live,
        level: None,
        psk: psk.cloned(),
        interrupt: Some(stop.fd()),
        server_in_process: a.host.is_none(),
        local_bind: None,
        ..RunOptions::default()
    };
    thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let probe_opts = options(Some(tx));
        let probe_run = scope.spawn(move || run_test_with(probe, target, &probe_opts));
        let (idle_ns, interval_ns) = (a.idle_ms * 1_000_000, a.interval_ms * 1_000_000);
        let mut idle_over = false;
        while !idle_over {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(s) => idle_over = ends_idle_phase(&s, idle_ns, interval_ns),
                Err(mpsc::RecvTimeoutError::Timeout) if !probe_run.is_finished() => {}
                Err(_) => break,
            }
        }
        let mut load_results = Vec::new();
        if idle_over && !stop.fired() {
            let runs: Vec<_> = loads
                .iter()
                .map(|(d, spec)| {
                    let opts = options(None);
                    (*d, scope.spawn(move || run_test_with(spec, target, &opts)))
                })
                .collect();
            for (d, run) in runs {
                let r = run.join().unwrap_or_else(|_| Err(Error::Peer("a load thread panicked".into())));
                load_results.push((d, r));
            }
        }
        drop(rx);
        let probe_result =
            probe_run.join().unwrap_or_else(|_| Err(Error::Peer("the probe thread panicked".into())));
        (probe_result, load_results)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_phase_ends_on_the_tick_the_sampler_splits_at() {
        let ms = 1_000_000;
        let s =
            |start, dur| IntervalSample { start_ns: start * ms, duration_ns: dur * ms, ..Default::default() };
        assert!(!ends_idle_phase(&s(1600, 200), 2000 * ms, 200 * ms));
        assert!(ends_idle_phase(&s(1800, 199), 2000 * ms, 200 * ms), "a tick a little early still ends it");
        assert!(ends_idle_phase(&s(2000, 200), 2000 * ms, 200 * ms));
    }
}
