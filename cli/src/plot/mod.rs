//! `--plot` and `ringperf plot`: SVG charts of a report (throughput over time, latency CDF)
//! or of a sweep (a figure over the grid). One file per chart kind; this file holds what
//! they share: the palette, the error mapping and `ringperf plot FILE.json`.

pub mod cdf;
pub mod flamegraph;
pub mod load;
pub mod report;
pub mod sweep;
pub mod timeseries;

use std::path::Path;

use plotters::style::RGBColor;
use ringperf_engine::{report_upgrade, Error, TestReport};

use crate::args::PlotCmdArgs;
use crate::sweep::{Entry, PartialSweep};

/// A palette that stays distinguishable in print and for common colour blindness (Tableau 10).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub const FONT: &str = "sans-serif";

/// An axis tick without the noise of decimals the scale does not need.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Drawing into an in-memory SVG cannot fail for I/O reasons; what can fail is a chart
/// with nothing sensible to show, reported as such.
pub fn drawing_error<E: std::fmt::Debug>(e: E) -> Error {
    Error::Usage(format!("cannot draw the chart ({e:?}): report it with the command line that made it"))
}

pub fn write(path: &Path, svg: &str) -> Result<(), Error> {
    std::fs::write(path, svg).map_err(|e| {
        Error::Usage(format!("cannot write '{}': {e}: give a writable path for --plot", path.display()))
    })
}

/// `ringperf plot INPUT.json -o OUT.svg`: a single report gets the report charts, a sweep's
/// array the sweep chart, folded stacks (`--profile-out`) a flame graph.
pub fn from_file(a: &PlotCmdArgs) -> Result<i32, Error> {
    let text = ringperf_engine::input::read_text_or_stdin(&a.input, ringperf_engine::input::REPORT)?;
    if flamegraph::looks_folded(&text) {
        write(&a.output, &flamegraph::render(&a.input, &text)?)?;
    } else if text.trim_start().starts_with('[') {
        let entries: Vec<Entry> = report_upgrade::parse(&text).map_err(|e| {
            Error::Usage(format!(
                "'{}' is not a sweep's JSON ({e}): give the output of sweep --json",
                a.input.display()
            ))
        })?;
        sweep::draw(&entries, &a.chart, &a.output)?;
    } else if let Ok(sweep) = report_upgrade::parse::<PartialSweep>(&text) {
        // A sweep stopped early: the points it has.
        sweep::draw(&sweep.points, &a.chart, &a.output)?;
    } else {
        let r: TestReport = report_upgrade::parse(&text).map_err(|e| {
            Error::Usage(format!("'{}' is not a ringperf --json report ({e})", a.input.display()))
        })?;
        report::draw(&r, &a.output)?;
    }
    Ok(0)
}
