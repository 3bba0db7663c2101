//! `ringperf sweep WORKLOAD ...`: the list-taking flags (args::sweep_lists) are split out of
//! the command line, multiplied out into points, and each point's command line is parsed
//! by the same clap definitions as a single test, so every flag means exactly what it means
//! there. Each point runs through run_iterations (-i/-I per point); a failed point is
//! reported and the others still run.

use ringperf_core::{Error, TestSpec};

use crate::args::{sweep_lists, Command, SweepOutArgs, SweepWorkload, TestArgs};
use crate::output::{self, print, print_help};
use crate::requirements::requirements;
use crate::runner::{Progress, Runner};
use crate::sweep_file::{Entry, PartialSweep, Point};
use crate::{confidence_target, one_line, plot, render};

/// A list flag found on the command line.
struct Dimension {
    name: &'static str,
    values: Vec<String>,
    /// argv index of the token holding the list, and what precedes the list in it
    /// (`-m1K,2K` -> "-m", `--cc=a,b` -> "--cc=", `-m 1K,2K` -> "").
    at: usize,
    prefix: String,
}

/// Splits the list flags out of `argv` and returns one command line per point with its
/// parameters. Flags after `--` are left alone.
pub fn expand(argv: &[String]) -> Result<Vec<(Point, Vec<String>)>, Error> {
    let lists = sweep_lists();
    let mut dims: Vec<Dimension> = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        let tok = &argv[i];
        if tok == "--" {
            break;
        }
        for l in &lists {
            let (at, prefix, list) = if *tok == l.flag {
                let Some(v) = argv.get(i + 1) else { break };
                (i + 1, String::new(), v.clone())
            } else if l.flag.starts_with("--") && tok.starts_with(&format!("{}=", l.flag)) {
                (i, format!("{}=", l.flag), tok[l.flag.len() + 1..].to_string())
            } else if !l.flag.starts_with("--") && tok.starts_with(l.flag.as_str()) && !tok.starts_with("--")
            {
                (i, l.flag.clone(), tok[l.flag.len()..].to_string())
            } else {
                continue;
            };
            if dims.iter().any(|d| d.name == l.name) {
                return Err(Error::Usage(format!("{} given twice: give it once, as a list", l.flag)));
            }
            let values: Vec<String> = list.split(l.separator).map(str::to_string).collect();
            if values.iter().any(|v| v.trim().is_empty()) {
                let how =
                    if l.separator == ':' { "pairs separated by ':'" } else { "values separated by ','" };
                return Err(Error::Usage(format!("{} '{list}': an empty value; give {how}", l.flag)));
            }
            dims.push(Dimension { name: l.name, values, at, prefix });
            i = at;
            break;
        }
        i += 1;
    }
    let mut points = vec![(Point::default(), argv.to_vec())];
    for d in &dims {
        let mut next = Vec::with_capacity(points.len() * d.values.len());
        for (p, line) in &points {
            for v in &d.values {
                let mut p = p.clone();
                p.0.push((d.name.to_string(), v.clone()));
                let mut line = line.clone();
                line[d.at] = format!("{}{v}", d.prefix);
                next.push((p, line));
            }
        }
        points = next;
    }
    Ok(points)
}

/// One parsed point: its spec and the flags that shape how it runs and renders.
struct Parsed {
    point: Point,
    spec: TestSpec,
    test: TestArgs,
    plot: Option<std::path::PathBuf>,
    out: SweepOutArgs,
}

fn parse_point(point: Point, line: &[String]) -> Result<Parsed, clap::Error> {
    let cli = crate::args::parse(line)?;
    let Command::Sweep(s) = cli.command else {
        unreachable!("argv[1] is 'sweep'");
    };
    let built = match s.workload {
        SweepWorkload::Stream(a) => (
            crate::stream_spec(&a.args.test, a.args.send_size, a.args.recv_size, a.args.reverse),
            a.args.test,
            a.args.plot,
            a.out,
        ),
        SweepWorkload::Rr(a) => (crate::rr_spec(&a.args), a.args.test, a.args.plot, a.out),
        SweepWorkload::Sendfile(a) => (crate::sendfile_spec(&a.args), a.args.test, a.args.plot, a.out),
    };
    let (spec, test, plot, out) = built;
    // Spec errors (e.g. --sqpoll=x) surface as usage errors below.
    let spec = spec.map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, e.to_string()))?;
    Ok(Parsed { point, spec, test, plot: plot.plot, out })
}

/// Runs `ringperf sweep ...` from the whole argv and returns the exit code.
pub fn main(argv: Vec<String>) -> i32 {
    let lines = match expand(&argv) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ringperf: {e}");
            return e.exit_code();
        }
    };
    let mut parsed = Vec::with_capacity(lines.len());
    for (point, line) in lines {
        match parse_point(point, &line) {
            Ok(p) => parsed.push(p),
            Err(e) if !e.use_stderr() => {
                print_help(&e);
                return 0;
            }
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                eprintln!("ringperf: give the workload: ringperf sweep stream|rr|sendfile ... (see 'ringperf sweep --help')");
                return 2;
            }
            Err(e) => {
                eprintln!("ringperf: {}", one_line(&e, &line));
                return 2;
            }
        }
    }
    match run(&parsed) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ringperf: {e}");
            e.exit_code()
        }
    }
}

/// How long the points after this one take: their lengths times their iterations (at most,
/// when -I may stop them early).
fn time_left(points: &[Parsed]) -> String {
    let mut most = std::time::Duration::ZERO;
    let mut iterated = false;
    for p in points {
        let iterations = confidence_target(&p.test).map_or(1, |c| c.max_iterations);
        iterated |= iterations > 1;
        most += std::time::Duration::from_millis(p.spec.duration_ms) * iterations;
    }
    format!("{}{}", if iterated { "at most " } else { "about " }, crate::progress::seconds(most))
}

fn run(points: &[Parsed]) -> Result<i32, Error> {
    let Some(first) = points.first() else { return Ok(0) };
    let (test, out) = (&first.test, &first.out);
    if test.json_stream {
        return Err(Error::Usage(
            "--json-stream follows one test, and a sweep runs many: give --json for the array of every point's report".into(),
        ));
    }
    let units = render::Units::parse(&test.units);
    let human = !test.json && test.banner == 1;
    let figure = out.chart.figure.as_deref().and_then(ringperf_core::figures::by_name);
    if let Some(f) = figure.filter(|f| f.needs_profile() && !first.spec.profile.enabled) {
        return Err(Error::Usage(format!(
            "--figure {} comes from the kernel cost profile, which is off by default: add --profile",
            f.name.unwrap_or_default()
        )));
    }
    let runner = Runner::new(test)?;
    let mut entries: Vec<Entry> = Vec::with_capacity(points.len());
    let mut failure: Option<Error> = None;
    let mut stopped: Option<String> = None;
    for (n, p) in points.iter().enumerate() {
        // On a terminal: which point runs, how many remain and how long they take, with the
        // run's bar.
        let heading = format!(
            "[{}/{}] {} ({} left after this, {})",
            n + 1,
            points.len(),
            p.point,
            points.len() - n - 1,
            time_left(&points[n + 1..])
        );
        let progress = Progress::Status(heading);
        let result = runner.run(&p.spec, &p.test, confidence_target(&p.test), progress, &mut |_, _, _| {});
        match result {
            Ok(r) => {
                if human {
                    eprintln!(
                        "ringperf: point {} of {} ({}): {}",
                        n + 1,
                        points.len(),
                        p.point,
                        render::human::headline(&r, units)
                    );
                }
                let cut = r.partial && runner.stopped();
                entries.push(Entry { point: p.point.clone(), report: Some(r), error: None });
                if cut {
                    stopped = Some(stopped_reason(n, points.len(), true));
                }
            }
            // Ctrl-C before this point measured anything.
            Err(_) if runner.stopped() => {
                stopped = Some(stopped_reason(n, points.len(), false));
            }
            Err(e) => {
                eprintln!("ringperf: point {} of {} ({}) failed: {e}", n + 1, points.len(), p.point);
                entries.push(Entry { point: p.point.clone(), report: None, error: Some(e.to_string()) });
                if failure.is_none() {
                    failure = Some(e);
                }
            }
        }
        if stopped.is_none() && runner.stopped() {
            stopped = Some(stopped_reason(n + 1, points.len(), false));
        }
        // A file is rewritten after every point, so an interrupted sweep keeps what it
        // measured; a device or a FIFO is a stream, and gets the whole once, below.
        if let Some(path) = out.output.as_ref().filter(|p| output::replaces(p)) {
            let _ = output::file(path, "the sweep's JSON", &json(&entries, stopped.as_deref()));
        }
        if stopped.is_some() {
            break;
        }
    }
    if let Some(path) = out.output.as_ref().filter(|p| !output::replaces(p)) {
        let _ = output::file(path, "the sweep's JSON", &json(&entries, stopped.as_deref()));
    }
    if test.json {
        print("the sweep's JSON", &json(&entries, stopped.as_deref()));
    } else {
        let mut table = render::sweep::render(&entries, units, test.banner == 1, figure);
        if let Some(why) = &stopped {
            table.push_str(&format!("PARTIAL SWEEP: {why}.\n"));
        }
        print("the sweep's table", &table);
    }
    if let Some(path) = &first.plot {
        plot::sweep::draw(&entries, &out.chart, path)?;
    }
    if let Some(why) = stopped {
        eprintln!("ringperf: partial result: {why}");
        return Ok(130);
    }
    if let Some(e) = failure {
        return Ok(e.exit_code());
    }
    Ok(entries.iter().filter_map(|e| e.report.as_ref()).map(requirements).max().unwrap_or(0))
}

/// Why a sweep is partial: `done` points finished; the next one was cut short (its partial
/// report kept) or never measured.
fn stopped_reason(done: usize, total: usize, kept_cut_point: bool) -> String {
    let left = total - done;
    if kept_cut_point {
        format!(
            "stopped by Ctrl-C during point {} of {total}: {done} whole, point {} partial, {} not run",
            done + 1,
            done + 1,
            left - 1
        )
    } else {
        format!("stopped by Ctrl-C after {done} of {total} points: {left} not run")
    }
}

/// The sweep as JSON: an array of {point, report} (or {point, error}); a sweep stopped
/// early is {"partial": true, "partial_reason", "points": [that array]}.
pub fn json(entries: &[Entry], stopped: Option<&str>) -> String {
    // Points are strings and reports plain data, so serialization cannot fail.
    let mut s = match stopped {
        None => serde_json::to_string_pretty(entries),
        Some(why) => serde_json::to_string_pretty(&PartialSweep {
            partial: true,
            partial_reason: why.to_string(),
            points: entries.to_vec(),
        }),
    }
    .expect("sweep entries serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn lists_multiply_out_first_slowest() {
        let pts = expand(&argv("ringperf sweep stream -m 1K,16K --send-engine=copy,zc -l 1")).unwrap();
        let lines: Vec<String> = pts.iter().map(|(_, l)| l.join(" ")).collect();
        assert_eq!(
            lines,
            [
                "ringperf sweep stream -m 1K --send-engine=copy -l 1",
                "ringperf sweep stream -m 1K --send-engine=zc -l 1",
                "ringperf sweep stream -m 16K --send-engine=copy -l 1",
                "ringperf sweep stream -m 16K --send-engine=zc -l 1",
            ]
        );
        assert_eq!(pts[1].0.to_string(), "send_size=1K send_engine=zc");
    }

    #[test]
    fn pairs_split_on_colons_and_attached_values_work() {
        let pts = expand(&argv("ringperf sweep rr -r1,1:64,64 -i 5,3")).unwrap();
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[1].1[3], "-r64,64");
        assert_eq!(pts[1].0.get("req_rsp"), Some("64,64"));
        assert_eq!(pts[1].1[5], "5,3", "-i is not a list");
    }

    #[test]
    fn empty_values_and_repeats_are_refused() {
        assert!(expand(&argv("ringperf sweep stream -m 1K,,2K")).is_err());
        assert!(expand(&argv("ringperf sweep stream -m 1K -m 2K")).is_err());
    }

    #[test]
    fn points_keep_their_order_through_json() {
        let p = Point(vec![("send_size".into(), "1K".into()), ("cc".into(), "cubic".into())]);
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(text, r#"{"send_size":"1K","cc":"cubic"}"#);
        let back: Point = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
    }
}
