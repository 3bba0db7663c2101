//! The ringperf command line: parses arguments into a TestSpec, asks the engine to run it,
//! and renders the report. It never touches a socket or a ring.

pub mod args;
mod diff;
mod engines;
pub mod figure;
mod live;
pub mod netperf;
pub mod plot;
mod profile_out;
pub mod render;
mod serve;
pub mod sweep;

mod interrupt;
mod runner;
mod usage;

pub(crate) use usage::one_line;

use std::io::Write;

use ringperf_engine::control::auth::{Psk, PSK_ENV};
use ringperf_engine::measure::confidence::ConfidenceTarget;
use ringperf_engine::spec::{
    CrrOptions, Direction, Explicit, SendEngine, SideSpec, SocketBuffers, SqPoll, Workload,
    PROFILE_BY_DEFAULT,
};
use ringperf_engine::{Error, Target, TestReport, TestSpec};

use crate::args::{Cli, Command, PlotArgs, RrArgs, SendfileArgs, TestArgs};

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let argv: Result<Vec<String>, _> = std::env::args_os().map(|a| a.into_string()).collect();
    let Ok(argv) = argv else {
        eprintln!("ringperf: an argument is not valid UTF-8: give names and values in UTF-8");
        return 2;
    };
    if argv.len() <= 1 {
        eprint!("{}", usage::short_usage());
        return 2;
    }
    // The README's flag table, from the same definitions as the parser.
    if argv.get(1).map(String::as_str) == Some("--help-markdown") {
        print(&args::flags_markdown());
        return 0;
    }
    // A sweep's lists are not what the single-test parsers take: split them out first.
    if argv.get(1).map(String::as_str) == Some("sweep") {
        return sweep::main(argv);
    }
    let argv = match netperf::rewrite(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ringperf: {e}");
            return 2;
        }
    };
    let cli = match args::parse(&argv) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return 0;
        }
        Err(e) => {
            eprintln!("ringperf: {}", one_line(&e, &argv));
            return 2;
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ringperf: {e}");
            e.exit_code()
        }
    }
}

fn run(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Serve(a) => serve::run(&a),
        Command::Probe(a) => {
            let out = if a.json { render::probe::json() } else { render::probe::human() };
            print(&out);
            Ok(0)
        }
        Command::Stream(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::Sendfile(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::Rr(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::Crr(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::UdpStream(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::UdpRr(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::Engines(a) => engines::run(&a),
        Command::Sweep(_) => {
            Err(Error::Usage("give the sweep's workload: ringperf sweep stream|rr|sendfile ...".into()))
        }
        Command::Plot(a) => plot::from_file(&a),
        Command::Diff(a) => diff::run(&a),
    }
}

/// The TestSpec a test command asks for (an error for commands that are not tests).
pub fn test_spec(cmd: &Command) -> Result<TestSpec, Error> {
    match cmd {
        Command::Stream(a) => {
            let mut spec = stream_spec(&a.test, a.send_size, a.recv_size, a.reverse)?;
            spec.bidir = a.bidir;
            Ok(spec)
        }
        Command::Sendfile(a) => sendfile_spec(a),
        Command::Rr(a) => rr_spec(a),
        Command::Crr(a) => {
            let mut spec = base_spec(&a.test, Workload::Crr)?;
            set_sizes(&mut spec, a.sizes);
            spec.crr = CrrOptions { linger0: a.linger0, client_ports: a.client_ports };
            Ok(resolved(spec, &a.test))
        }
        Command::UdpStream(a) => {
            let mut spec = base_spec(&a.test, Workload::UdpStream)?;
            spec.send_size = a.send_size.or(a.gso).unwrap_or(spec.send_size);
            spec.recv_size = spec.send_size;
            spec.udp.gso_segment = a.gso;
            spec.udp.gro = a.gro;
            Ok(resolved(spec, &a.test))
        }
        Command::UdpRr(a) => {
            let mut spec = base_spec(&a.test, Workload::UdpRr)?;
            set_sizes(&mut spec, a.sizes);
            spec.udp.timeout_us = a.timeout_us;
            Ok(resolved(spec, &a.test))
        }
        _ => Err(Error::Usage("not a test command".into())),
    }
}

/// -r REQ,RSP: a side left out keeps the workload's default.
fn set_sizes(spec: &mut TestSpec, (request, response): (Option<u32>, Option<u32>)) {
    spec.request_size = request.unwrap_or(spec.request_size);
    spec.response_size = response.unwrap_or(spec.response_size);
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
    }
}

/// `spec` with every default the flags left open filled in by the engine.
fn resolved(mut spec: TestSpec, t: &TestArgs) -> TestSpec {
    spec.resolve(&explicit(t));
    spec
}

/// Parses a command line (netperf style or native) into the TestSpec it would run.
pub fn spec_from_args(args: &[&str]) -> Result<TestSpec, String> {
    let args = netperf::rewrite(args.iter().map(|s| s.to_string()).collect())?;
    let cli = args::parse(&args).map_err(|e| e.to_string())?;
    test_spec(&cli.command).map_err(|e| e.to_string())
}

/// A sendfile spec: a stream whose sender splices from a file (or a memfd).
pub fn sendfile_spec(a: &SendfileArgs) -> Result<TestSpec, Error> {
    let mut spec = stream_spec(&a.test, a.send_size, a.recv_size, false)?;
    spec.local.send_engine = SendEngine::Splice;
    spec.remote.send_engine = SendEngine::Splice;
    spec.local.splice_file = a.file.clone();
    Ok(resolved(spec, &a.test))
}

/// An rr spec from its flags.
pub fn rr_spec(a: &RrArgs) -> Result<TestSpec, Error> {
    let mut spec = base_spec(&a.test, Workload::Rr)?;
    set_sizes(&mut spec, a.sizes);
    Ok(resolved(spec, &a.test))
}

/// A stream spec from the shared flags.
pub fn stream_spec(t: &TestArgs, send_size: u32, recv_size: u32, reverse: bool) -> Result<TestSpec, Error> {
    let mut spec = base_spec(t, Workload::Stream)?;
    spec.send_size = send_size;
    spec.recv_size = recv_size;
    spec.direction = if reverse { Direction::ServerToClient } else { Direction::ClientToServer };
    Ok(resolved(spec, t))
}

/// Flags whose meaning depends on another flag: each bad combination is a usage error that
/// names both, instead of a run that silently does something else.
fn check_flag_pairs(t: &TestArgs) -> Result<(), Error> {
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

/// The spec fields every test shares, over the workload's defaults; the caller sets the
/// workload's own fields, then [`resolved`] fills what depends on them.
pub fn base_spec(t: &TestArgs, workload: Workload) -> Result<TestSpec, Error> {
    check_flag_pairs(t)?;
    let bufs = |b: Option<(Option<u32>, Option<u32>)>| {
        let (send, recv) = b.unwrap_or((None, None));
        SocketBuffers { send, recv }
    };
    let (lcpu, rcpu) = t.cpus.unwrap_or((None, None));
    let e = &t.engine;
    let side = |socket_buffers, cpu: Option<usize>| SideSpec {
        socket_buffers,
        cpus: match (&t.cpu_list, cpu) {
            (Some(list), _) => list.0.clone(),
            (None, Some(c)) => vec![c],
            (None, None) => Vec::new(),
        },
        send_engine: e.send_engine,
        recv_engine: e.recv_engine,
        splice_file: None,
    };
    let sqpoll = match e.sqpoll.as_deref() {
        None => None,
        Some("any") => Some(SqPoll { cpu: None, idle_ms: 100 }),
        Some(cpu) => Some(SqPoll {
            cpu: Some(cpu.parse().map_err(|_| Error::Usage(format!("--sqpoll={cpu}: give a CPU number")))?),
            idle_ms: 100,
        }),
    };
    // The flags that are spec fields as they are; then those that are not.
    let mut spec = TestSpec::for_workload(workload);
    t.copy_to(&mut spec);
    e.copy_to(&mut spec);
    t.profile.copy_to(&mut spec);
    spec.profile.enabled =
        (PROFILE_BY_DEFAULT || t.profile.show || t.profile.out.is_some()) && !t.profile.no_profile;
    spec.profile.folded = t.profile.out.is_some();
    spec.record_latency = !t.stats.no_latency;
    spec.local = side(bufs(t.local_buffers), lcpu);
    spec.remote = side(bufs(t.remote_buffers), rcpu);
    spec.ring.sqpoll = sqpoll;
    spec.ring.registered_ring_fd = !e.no_registered_ring;
    spec.ring.fixed_files = !e.no_fixed_files;
    Ok(spec)
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

/// Where the test goes: `-H` or the embedded server.
pub fn target(t: &TestArgs) -> Target {
    match &t.host {
        Some(host) => Target::Remote { host: host.clone(), port: t.port },
        None => Target::Embedded,
    }
}

/// The client's key: --psk-file, else RINGPERF_PSK, else none.
pub fn client_psk(t: &TestArgs) -> Result<Option<Psk>, Error> {
    if let Some(path) = &t.psk_file {
        return Psk::from_file(path).map(Some);
    }
    match std::env::var(PSK_ENV) {
        Ok(v) if !v.is_empty() => Psk::from_secret(&v, &format!("the key in {PSK_ENV}")).map(Some),
        _ => Ok(None),
    }
}

/// Runs one test, renders the report (a partial one too), and returns the exit code.
fn run_and_render(spec: &TestSpec, t: &TestArgs, plot: &PlotArgs) -> Result<i32, Error> {
    if plot.plot.is_some() && t.stats.no_intervals && spec.workload != Workload::Rr {
        return Err(Error::Usage("--plot draws the interval samples: drop --no-intervals".into()));
    }
    let units = render::Units::parse(&t.units);
    let format = render::Format::of(t);
    let runner = runner::Runner::new(t)?;
    let confidence = confidence_target(t);
    let mut each = |n: u32, r: &TestReport, println: &dyn Fn(&str)| {
        if let Some(c) = confidence {
            if format == render::Format::Human && t.banner == 1 {
                println(&format!(
                    "ringperf: iteration {n} of at most {}: {}",
                    c.max_iterations,
                    render::human::headline(r, units)
                ));
            }
        }
    };
    let report = runner.run(spec, t, confidence, runner::Progress::Test(format, t), &mut each)?;
    let out = match format {
        render::Format::Json => render::json::render(&report),
        render::Format::Keyval => render::keyval::render(&report, units),
        render::Format::Csv => render::keyval::render_csv(&report, units, t.banner == 1),
        render::Format::Human => render::human::render(&report, units, &render::HumanOptions::of(t)),
    };
    print(&out);
    if let Some(path) = &plot.plot {
        plot::report::draw(&report, path)?;
    }
    if let Some(prefix) = &t.profile.out {
        profile_out::write(&report, prefix)?;
    }
    Ok(runner.partial(&report).unwrap_or_else(|| requirements(&report)))
}

/// Prints what the run failed to meet and returns the exit code (1 if anything).
pub fn requirements(report: &TestReport) -> i32 {
    let failed = report.failed_requirements();
    for f in &failed {
        eprintln!("ringperf: {f}");
    }
    i32::from(!failed.is_empty())
}

pub(crate) fn print(s: &str) {
    // A closed pipe (`| head`) is not an error worth a non-zero exit.
    let _ = std::io::stdout().lock().write_all(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(args: &str) -> TestSpec {
        let mut v = vec!["ringperf"];
        v.extend(args.split_whitespace());
        spec_from_args(&v).unwrap()
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
