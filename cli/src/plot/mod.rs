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

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::RGBColor;
use ringperf_engine::report::SCHEMA_VERSION;
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

/// Draws `chart`'s legend in the house style, at `position`.
pub fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), Error> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(drawing_error)
}

/// Draws a chart's primary axes in the house style: their descriptions, the y ticks
/// through [`tick`], no light grid.
pub fn mesh<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    x_desc: &str,
    y_desc: &str,
) -> Result<(), Error> {
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_label_formatter(&|v| tick(*v))
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(drawing_error)
}

/// Drawing into an in-memory SVG cannot fail for I/O reasons; what can fail is a chart
/// with nothing sensible to show, reported as such.
pub fn drawing_error<E: std::fmt::Debug>(e: E) -> Error {
    Error::Usage(format!("cannot draw the chart ({e:?}): report it with the command line that made it"))
}

/// Writes a chart to `path` (see [`crate::output::file`]: a failure is said and decides the
/// exit code, and the caller goes on to its other outputs).
pub fn write(path: &Path, svg: &str) -> Result<(), Error> {
    let _ = crate::output::file(path, "the chart", &xml_chars(svg));
    Ok(())
}

/// `svg` with every character XML 1.0 does not allow (C0 controls but tab, newline and
/// carriage return; U+FFFE, U+FFFF) replaced by U+FFFD. The markup itself has none: only
/// text taken from a report (a host name, a function name) can bring them, and one would
/// make the whole file unreadable to an XML parser. (`<`, `&` and quotes are escaped where
/// the text is placed.)
pub fn xml_chars(svg: &str) -> std::borrow::Cow<'_, str> {
    let allowed =
        |c: char| matches!(c, '\t' | '\n' | '\r') || !(c < ' ' || c == '\u{fffe}' || c == '\u{ffff}');
    if svg.chars().all(allowed) {
        return std::borrow::Cow::Borrowed(svg);
    }
    svg.chars().map(|c| if allowed(c) { c } else { '\u{fffd}' }).collect::<String>().into()
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
        warn_unknown_schema(&a.input, entries.iter().filter_map(|e| e.report.as_ref()));
        sweep::draw(&entries, &a.chart, &a.output)?;
    } else if let Ok(sweep) = report_upgrade::parse::<PartialSweep>(&text) {
        // A sweep stopped early: the points it has.
        warn_unknown_schema(&a.input, sweep.points.iter().filter_map(|e| e.report.as_ref()));
        sweep::draw(&sweep.points, &a.chart, &a.output)?;
    } else {
        let r: TestReport = report_upgrade::parse(&text).map_err(|e| {
            Error::Usage(format!("'{}' is not a ringperf --json report ({e})", a.input.display()))
        })?;
        warn_unknown_schema(&a.input, [&r]);
        report::draw(&r, &a.output)?;
    }
    Ok(0)
}

/// Says on stderr when a report read from `path` has a schema version this ringperf does
/// not know (1 to [`SCHEMA_VERSION`]): it parsed, but a field may have changed meaning
/// since (see SCHEMA_VERSION), so its figures may be misread.
pub fn warn_unknown_schema<'a>(path: &Path, reports: impl IntoIterator<Item = &'a TestReport>) {
    let mut unknown: Vec<u32> =
        reports.into_iter().map(|r| r.schema_version).filter(|v| !(1..=SCHEMA_VERSION).contains(v)).collect();
    unknown.sort_unstable();
    unknown.dedup();
    if let Some(v) = unknown.last() {
        eprintln!(
            "ringperf: warning: '{}' has schema_version {v}, which this ringperf (schema {SCHEMA_VERSION}) does not know: a figure may have changed meaning since; read it with the ringperf that wrote it (its tool_version)",
            path.display()
        );
    }
}
