//! `--plot` and `ringperf plot`: SVG charts of a report (throughput over time, latency CDF)
//! or of a sweep (a figure over the grid). One file per chart kind, what they share in
//! `svg`; this file holds `ringperf plot FILE.json`.

pub mod cdf;
pub mod flamegraph;
pub mod load;
pub mod report;
pub mod svg;
pub mod sweep;
pub mod timeseries;

use std::path::Path;

use ringperf_core::report::SCHEMA_VERSION;
use ringperf_core::{report_upgrade, Error, TestReport};

use crate::args::PlotCmdArgs;
use crate::sweep_file::{Entry, PartialSweep};
use svg::write;

/// `ringperf plot INPUT.json -o OUT.svg`: a single report gets the report charts, a sweep's
/// array the sweep chart, folded stacks (`--profile-out`) a flame graph.
pub fn from_file(a: &PlotCmdArgs) -> Result<i32, Error> {
    let text = ringperf_core::input::read_text_or_stdin(&a.input, ringperf_core::input::REPORT)?;
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
