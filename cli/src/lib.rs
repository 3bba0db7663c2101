//! The ringperf command line: parses arguments into a TestSpec, asks the engine to run it,
//! and renders the report. It never touches a socket or a ring.

pub mod args;
pub mod render;
mod serve;

use std::io::Write;

use clap::Parser;

use ringperf_engine::spec::{Direction, SideSpec, SocketBuffers, Workload};
use ringperf_engine::{run_test, Error, Target, TestReport, TestSpec};

use crate::args::{Cli, Command, TestArgs};

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return 0;
        }
        Err(e) => {
            eprintln!("ringperf: {}", one_line(&e));
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
        Command::Stream(a) => {
            let mut spec = base_spec(&a.test, Workload::Stream);
            spec.send_size = a.send_size;
            spec.recv_size = a.recv_size;
            spec.direction = if a.reverse { Direction::ServerToClient } else { Direction::ClientToServer };
            run_and_render(&spec, &a.test)
        }
        Command::Rr(a) => {
            let mut spec = base_spec(&a.test, Workload::Rr);
            spec.request_size = a.sizes.0.unwrap_or(1);
            spec.response_size = a.sizes.1.unwrap_or(1);
            run_and_render(&spec, &a.test)
        }
    }
}

/// clap's first error line, plus where to look, instead of its multi-line usage dump.
fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let cmd = std::env::args().nth(1).filter(|a| ["stream", "rr", "serve"].contains(&a.as_str()));
    match cmd {
        Some(c) => format!("{first} (see 'ringperf {c} --help')"),
        None => format!("{first} (see 'ringperf --help')"),
    }
}

/// The spec fields every test shares.
pub fn base_spec(t: &TestArgs, workload: Workload) -> TestSpec {
    let bufs = |b: Option<(Option<u32>, Option<u32>)>| {
        let (send, recv) = b.unwrap_or((None, None));
        SocketBuffers { send, recv }
    };
    let (lcpu, rcpu) = t.cpus.unwrap_or((None, None));
    TestSpec {
        workload,
        duration_ms: t.length_ms,
        congestion_control: t.congestion_control.clone(),
        local: SideSpec { socket_buffers: bufs(t.local_buffers), cpu: lcpu, ..SideSpec::default() },
        remote: SideSpec { socket_buffers: bufs(t.remote_buffers), cpu: rcpu, ..SideSpec::default() },
        ..TestSpec::default()
    }
}

/// Where the test goes: `-H` or the embedded server.
pub fn target(t: &TestArgs) -> Target {
    match &t.host {
        Some(host) => Target::Remote { host: host.clone(), port: t.port },
        None => Target::Embedded,
    }
}

fn run_and_render(spec: &TestSpec, t: &TestArgs) -> Result<i32, Error> {
    let report: TestReport = run_test(spec, &target(t))?;
    let out = if t.json {
        render::json::render(&report)
    } else {
        render::human::render(&report, render::Units::parse(&t.units))
    };
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a non-zero exit.
    let _ = stdout.write_all(out.as_bytes());
    Ok(0)
}
