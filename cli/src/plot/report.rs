//! The chart of one test: the rate and CPU over time, and for rr the round-trip CDF
//! beside it.

use std::path::Path;

use plotters::prelude::*;
use ringperf_core::{Error, TestReport};

use super::svg::{drawing_error, write};
use super::{cdf, timeseries};

const PANEL: (u32, u32) = (760, 480);

/// Draws `r` into an SVG at `path`.
pub fn draw(r: &TestReport, path: &Path) -> Result<(), Error> {
    let latency = r.local.latency.as_ref().filter(|l| l.count > 0);
    if r.local.intervals.is_empty() && latency.is_none() {
        return Err(Error::Usage(
            "--plot: the report has no interval samples or latency histogram to draw: drop --no-intervals"
                .into(),
        ));
    }
    let panels = u32::from(!r.local.intervals.is_empty()) + u32::from(latency.is_some());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (PANEL.0 * panels, PANEL.1)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        let areas = root.split_evenly((1, panels as usize));
        let mut next = areas.iter();
        if !r.local.intervals.is_empty() {
            if let Some(a) = next.next() {
                timeseries::draw(r, a)?;
            }
        }
        if let (Some(l), Some(a)) = (latency, next.next()) {
            cdf::draw(r, l, a)?;
        }
        root.present().map_err(drawing_error)?;
    }
    write(path, &svg)
}
