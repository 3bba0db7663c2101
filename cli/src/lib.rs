//! The ringperf command line: parses arguments into a TestSpec, asks the engine to run it,
//! and renders the report. It never touches a socket or a ring.

pub mod args;
mod build_info;
mod completions;
mod diff;
mod engines;
mod live;
mod load;
mod man;
pub mod netperf;
pub mod output;
pub mod plan;
pub mod plot;
mod profile_out;
pub mod render;
mod serve;
pub mod sweep;
pub mod sweep_file;

mod interrupt;
mod progress;
mod runner;
mod usage;

pub(crate) use netperf::netserver;
pub(crate) use usage::one_line;

use ringperf_control::auth::{Psk, PSK_ENV};
use ringperf_core::spec::Workload;
use ringperf_core::{Error, TestReport, TestSpec};

pub(crate) use crate::args::spec::agent_names_no_path;
pub use crate::args::spec::{
    base_spec, confidence_target, explicit, rr_spec, sendfile_spec, stream_spec, target, test_spec,
};
use crate::args::{Cli, Command, PlotArgs, TestArgs};

/// Runs the command line and returns the process exit code: an output that could not be
/// written decides it (see [`output`]).
pub fn main() -> i32 {
    output::exit_code(dispatch())
}

/// Runs the command line under the name it was invoked by.
fn dispatch() -> i32 {
    let argv: Result<Vec<String>, _> = std::env::args_os().map(|a| a.into_string()).collect();
    let Ok(argv) = argv else {
        eprintln!("ringperf: an argument is not valid UTF-8: give names and values in UTF-8");
        return 2;
    };
    // Invoked through a link named netperf or netserver: that program's command line.
    let invoked_as = argv.first().and_then(|a| std::path::Path::new(a).file_name()).and_then(|n| n.to_str());
    // The library's messages name settings; this front end says how the user spells them.
    let spelling =
        if invoked_as == Some("netperf") { args::spelling::netperf } else { args::spelling::native };
    ringperf_core::setting::set_spelling(spelling);
    match invoked_as {
        Some("netperf") => {
            output::set_program("netperf");
            return netperf::main(argv);
        }
        Some("netserver") => {
            output::set_program("netserver");
            return netserver::main(argv);
        }
        _ => {}
    }
    run_native(argv)
}

/// Runs ringperf's own command line (a `ringperf -t ...` netperf form included).
pub(crate) fn run_native(argv: Vec<String>) -> i32 {
    if argv.len() <= 1 {
        eprint!("{}", usage::short_usage());
        return 2;
    }
    // The manual's flag table (docs/commands.md), from the same definitions as the parser.
    if argv.get(1).map(String::as_str) == Some("--help-markdown") {
        print("the flags table", &args::flags_markdown());
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
            print_help(&e);
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
            print("the probe's report", &out);
            Ok(0)
        }
        Command::Stream(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::Sendfile(ref a) => {
            if a.payload.is_some() && a.test.from.is_none() {
                return Err(Error::Usage(
                    "--payload names a file that an agent's operator listed, which only that agent sends: give --from AGENT (for a file of this host, -F FILE)".into(),
                ));
            }
            run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot)
        }
        Command::Rr(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::Crr(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::UdpStream(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::UdpRr(ref a) => run_and_render(&test_spec(&cli.command)?, &a.test, &a.plot),
        Command::Engines(a) => engines::run(&a),
        Command::Load(a) => load::run(&a),
        Command::Sweep(_) => {
            Err(Error::Usage("give the sweep's workload: ringperf sweep stream|rr|sendfile ...".into()))
        }
        Command::Plot(a) => plot::from_file(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Plan(a) => plan::run(&a),
        Command::InstallLinks(a) => netserver::install_links(&a.dir),
        Command::Man(a) => man::run(&a),
        Command::Completions(a) => completions::run(&a),
    }
}

/// Parses a command line (netperf style or native) into the TestSpec it would run.
pub fn spec_from_args(args: &[&str]) -> Result<TestSpec, String> {
    let args = netperf::rewrite(args.iter().map(|s| s.to_string()).collect())?;
    let cli = args::parse(&args).map_err(|e| e.to_string())?;
    test_spec(&cli.command).map_err(|e| e.to_string())
}

/// Parses a command line given to ringperf invoked as `netperf` into the TestSpec it would
/// run (a dry run: nothing connects).
pub fn netperf_spec(args: &[&str]) -> Result<TestSpec, String> {
    let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let call = netperf::parse(&argv, true).map_err(|r| r.message)?;
    let cli = args::parse(&call.native).map_err(|e| e.to_string())?;
    test_spec(&cli.command).map_err(|e| e.to_string())
}

/// The client's key: --psk-file, else RINGPERF_PSK, else none.
pub fn client_psk(t: &TestArgs) -> Result<Option<Psk>, Error> {
    psk_from(t.psk_file.as_deref())
}

/// The key in `file`, else RINGPERF_PSK, else none.
pub fn psk_from(file: Option<&std::path::Path>) -> Result<Option<Psk>, Error> {
    if let Some(path) = file {
        return Psk::from_file(path).map(Some);
    }
    match std::env::var(PSK_ENV) {
        Ok(v) if !v.is_empty() => Psk::from_secret(&v, &format!("the key in {PSK_ENV}")).map(Some),
        _ => Ok(None),
    }
}

/// Runs one test, renders the report (a partial one too), and returns the exit code.
fn run_and_render(spec: &TestSpec, t: &TestArgs, plot: &PlotArgs) -> Result<i32, Error> {
    let spec = &t.profile.with_default(spec);
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
        render::Format::JsonStream => render::json::line(&report),
        render::Format::Keyval => render::keyval::render(&report, units),
        render::Format::Csv => render::keyval::render_csv(&report, units, t.banner == 1),
        render::Format::Human => render::human::render(&report, units, &render::HumanOptions::of(t)),
    };
    // Each output is written even if another failed: what was measured survives in any of them.
    print("the report", &out);
    let drawn = plot.plot.as_ref().map(|path| plot::report::draw(&report, path));
    if let Some(prefix) = &t.profile.out {
        profile_out::write(&report, prefix);
    }
    drawn.transpose()?;
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

/// Prints `s` (`what`, for the error line if standard output fails: see [`output`]).
pub(crate) fn print(what: &str, s: &str) {
    let _ = output::stdout(what, s);
}

/// Prints clap's --help or --version text (coloured on a terminal, as clap would).
pub(crate) fn print_help(e: &clap::Error) {
    use std::io::IsTerminal;
    let text =
        if std::io::stdout().is_terminal() { e.render().ansi().to_string() } else { e.render().to_string() };
    print("the help", &text);
}
