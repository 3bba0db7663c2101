//! ringperf as `netperf`: the test run as the native one is, with netperf's demo-mode
//! interim lines while it runs and its output at the end.

use std::time::{SystemTime, UNIX_EPOCH};

use ringperf_core::report::IntervalSample;
use ringperf_core::{Error, TestReport, TestSpec};

use super::call::{Output, Style};
use super::output::render;
use super::parse::parse;
use crate::output::{print, print_help};
use crate::render::Units;
use crate::requirements::requirements;
use crate::{args, live, runner, test_spec};

/// Runs ringperf as `netperf`: `argv` is netperf's command line. Returns the exit code.
pub fn main(argv: Vec<String>) -> i32 {
    let call = match parse(&argv, true) {
        Ok(c) => c,
        Err(r) => {
            eprintln!("netperf: {}", r.message);
            return r.code;
        }
    };
    let cli = match args::parse(&call.native) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            print_help(&e);
            return 0;
        }
        Err(e) => {
            eprintln!("netperf: {}", crate::one_line(&e, &call.native));
            return 2;
        }
    };
    match run(&cli, &call.output) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("netperf: {e}");
            e.exit_code()
        }
    }
}

fn run(cli: &args::Cli, out: &Output) -> Result<i32, Error> {
    let spec = test_spec(&cli.command)?;
    let t = cli.command.test_args().ok_or_else(|| Error::Usage("not a test command".into()))?;
    let units = Units::parse(&out.units);
    if let Some(file) = &out.fill_file {
        if spec.verify {
            return Err(Error::Usage(format!(
                "-F {file} and --verify: the check expects ringperf's pattern: drop one of them"
            )));
        }
        // netperf fills its buffers from the file's start; a megabyte repeats well enough
        // (and /dev/urandom never ends).
        let bytes = ringperf_core::input::read_prefix(std::path::Path::new(file), "fill file", FILL_BYTES)
            .map_err(|e| Error::Usage(format!("-F {file}: {e}")))?;
        ringperf_engine::verify::set_fill_source(bytes);
    }
    let runner = runner::Runner::new(t)?;
    if out.banner {
        print("the banner", &banner(&spec, out, t.host.as_ref().map_or("127.0.0.1", |h| h.host.as_str())));
        if crate::output::stdout_failed() {
            // Its result could only fail to print too (the exit code says so).
            return Ok(0);
        }
    }
    let rr = spec.workload.is_transactional();
    let keyval_lines = matches!(out.select, Some((Style::Keyval, _)));
    let stop = runner.stopper();
    let printer = out.demo.then(|| {
        let mut n = 0usize;
        let mut origin = None;
        live::Printer::with(&spec, move |s: IntervalSample| {
            // The tick that lands on the end of the window may cover a sliver (or no time
            // at all): flent would divide by its 0.000 s.
            if !live::worth_a_line(&s) {
                return;
            }
            let ending = interval_end(&mut origin, &s);
            let line = if keyval_lines {
                interim_keyval(n, &s, rr, units, ending)
            } else {
                interim_line(&s, rr, units, ending)
            };
            n += 1;
            live::print_or_stop(&line, &stop);
        })
    });
    let confidence = crate::confidence_target(t);
    let report = runner.run(&spec, t, confidence, runner::Progress::Lines(printer), &mut |_, _, _| {})?;
    if std::env::var("DUMP_TCP_INFO").is_ok_and(|v| v != "0" && !v.is_empty()) {
        eprint!("{}", tcp_info_lines(&report));
    }
    print("the result", &render(&report, out, units));
    Ok(runner.partial(&report).unwrap_or_else(|| requirements(&report)))
}

/// How much of a fill file the payload repeats.
const FILL_BYTES: u64 = 1 << 20;

/// netperf's demo line without -k.
fn interim_line(s: &IntervalSample, rr: bool, units: Units, ending: f64) -> String {
    let (value, unit) = interim_value(s, rr, units);
    format!(
        "Interim result: {value:7.2} {unit} over {:.3} seconds ending at {ending:.3}\n",
        s.duration_ns as f64 / 1e9
    )
}

/// The interim figure of `s` and its unit.
fn interim_value(s: &IntervalSample, rr: bool, units: Units) -> (f64, &'static str) {
    if rr {
        (s.transactions_per_sec(), "Trans/s")
    } else {
        (units.convert(s.throughput_bits_per_sec()), units.label())
    }
}

/// netperf's demo lines under -k: NETPERF_INTERIM_RESULT[n]= and the rest.
fn interim_keyval(n: usize, s: &IntervalSample, rr: bool, units: Units, ending: f64) -> String {
    let (value, unit) = interim_value(s, rr, units);
    format!(
        "NETPERF_INTERIM_RESULT[{n}]={value:.2}\nNETPERF_UNITS[{n}]={unit}\nNETPERF_INTERVAL[{n}]={:.3}\nNETPERF_ENDING[{n}]={ending:.3}\n",
        s.duration_ns as f64 / 1e9
    )
}

/// The wall-clock end of interval `s`, in seconds: the window's start on the wall clock
/// (`origin`, taken from the first sample, printed as it ends) plus the interval's end in
/// the window. A line printed late on a busy machine still says when its interval ended,
/// so a harness that places the points on a time axis (flent) places them right.
fn interval_end(origin: &mut Option<f64>, s: &IntervalSample) -> f64 {
    let end = (s.start_ns + s.duration_ns) as f64 / 1e9;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    *origin.get_or_insert(now - end) + end
}

/// The first line netperf prints (with -P 1): which test, to where.
fn banner(spec: &TestSpec, out: &Output, host: &str) -> String {
    let family = if host.contains(':') { "AF_INET6" } else { "AF_INET" };
    let what = match out.test {
        "TCP_STREAM" => "TCP STREAM TEST",
        "TCP_MAERTS" => "TCP MAERTS TEST",
        "TCP_SENDFILE" => "TCP SENDFILE TEST",
        "TCP_RR" => "TCP REQUEST/RESPONSE TEST",
        "TCP_CRR" => "TCP Connect/Request/Response TEST",
        "UDP_STREAM" => "UDP STREAM TEST",
        _ => "UDP REQUEST/RESPONSE TEST",
    };
    let demo = if out.demo { " : demo" } else { "" };
    let burst = if spec.workload.is_transactional() {
        format!(" : first burst {}", spec.burst.saturating_sub(1))
    } else {
        String::new()
    };
    format!("RINGPERF {what} to {host} () port 0 {family}{demo}{burst}\n")
}

/// netperf's DUMP_TCP_INFO lines (`tcpi_NAME value` pairs, which flent reads from stderr),
/// from the local side's TCP_INFO at the end of the run.
fn tcp_info_lines(r: &TestReport) -> String {
    let Some(t) = r.local.tcp.as_ref().and_then(|t| t.flows.first()) else { return String::new() };
    format!(
        "tcpi_rtt {} tcpi_rttvar {} tcpi_snd_cwnd {} tcpi_snd_mss {}\ntcpi_total_retrans {} tcpi_segs_out {} tcpi_segs_in {}\n",
        t.rtt_us, t.rttvar_us, t.snd_cwnd, t.snd_mss, t.total_retrans, t.segs_out, t.segs_in
    )
}
