//! ringperf's own command line (a `ringperf -t ...` netperf form included): parsed, sent
//! to its command, and a test run and rendered.

use ringperf_core::spec::Workload;
use ringperf_core::{Error, TestReport, TestSpec};

use crate::args::spec::{confidence_target, test_spec};
use crate::args::{self, Cli, Command, PlotArgs, TestArgs};
use crate::netperf::links::install_links;
use crate::output::{print, print_help};
use crate::requirements::requirements;
use crate::usage::{self, one_line};
use crate::{
    completions, diff, engines, load, man, netperf, plan, plot, profile_out, render, runner, serve, sweep,
};

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
        Command::InstallLinks(a) => install_links(&a.dir),
        Command::Man(a) => man::run(&a),
        Command::Completions(a) => completions::run(&a),
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
