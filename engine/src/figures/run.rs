//! One row of script output: the report, and which run's headline figures it shows.

use crate::report::{IterationFigures, SideReport};
use crate::units::Units;
use crate::TestReport;

/// What a figure's text is taken from: one run's figures (`figures`) over the whole report.
pub struct Run<'a> {
    pub report: &'a TestReport,
    /// The summary's (keyval, netperf) or one iteration's (a CSV row).
    pub figures: IterationFigures,
    /// A CSV row's iteration (from 0); `None`: the whole report.
    pub iteration: Option<usize>,
    /// The throughput unit (`-f`).
    pub units: Units,
    /// Request/response: throughput is transactions/s and sizes are -r's.
    pub rr: bool,
    pub sender: Option<&'a SideReport>,
    pub receiver: Option<&'a SideReport>,
}

impl<'a> Run<'a> {
    /// The whole report, under its summary figures.
    pub fn whole(report: &'a TestReport, units: Units) -> Run<'a> {
        Run::with(report, report.summary_figures(), None, units)
    }

    /// Iteration `i` (from 0) of the report, as a CSV row shows it.
    pub fn iteration(report: &'a TestReport, i: usize, units: Units) -> Option<Run<'a>> {
        let figures = *report.iterations.get(i)?;
        Some(Run::with(report, figures, Some(i), units))
    }

    fn with(
        report: &'a TestReport,
        figures: IterationFigures,
        iteration: Option<usize>,
        units: Units,
    ) -> Self {
        let (sender, receiver) = report.sender_and_receiver();
        let rr = report.spec.workload.is_transactional();
        Run { report, figures, iteration, units, rr, sender, receiver }
    }
}
