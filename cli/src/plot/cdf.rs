//! The round-trip CDF of an rr run, from the HDR histogram in the report: latency on a log
//! axis so the tail (p99.9, p99.99) is as readable as the median.

use plotters::coord::Shift;
use plotters::prelude::*;
use ringperf_core::measure::latency::cdf_points;
use ringperf_core::report::LatencySummary;
use ringperf_core::{Error, TestReport};

use super::svg::{color, drawing_error, legend, FONT};

pub fn draw<DB: DrawingBackend>(
    r: &TestReport,
    l: &LatencySummary,
    area: &DrawingArea<DB, Shift>,
) -> Result<(), Error> {
    let pts: Vec<(f64, f64)> =
        cdf_points(l).into_iter().map(|(ns, q)| (ns.max(1) as f64 / 1e3, q * 100.0)).collect();
    if pts.is_empty() {
        return Err(Error::Usage("--plot: the latency histogram in the report cannot be decoded".into()));
    }
    let lo = pts.first().map(|p| p.0).unwrap_or(1.0);
    let hi = pts.last().map(|p| p.0).unwrap_or(1.0);
    let (lo, hi) = (lo / 1.3, (hi * 1.3).max(lo * 2.0));
    let iterations = if r.iterations.len() > 1 {
        format!(", {} iterations merged", r.iterations.len())
    } else {
        String::new()
    };
    let mut chart = ChartBuilder::on(area)
        .caption(format!("Round-trip CDF ({} transactions{iterations})", l.count), (FONT, 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..100.5f64)
        .map_err(drawing_error)?;
    chart
        .configure_mesh()
        .x_desc("round trip (us, log scale)")
        .y_desc("transactions at or below (%)")
        .x_label_formatter(&|v| if *v >= 100.0 { format!("{v:.0}") } else { format!("{v:.1}") })
        .light_line_style(TRANSPARENT)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .draw()
        .map_err(drawing_error)?;
    let c = color(0);
    chart
        .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
        .map_err(drawing_error)?
        .label("local side (client)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    // Mark the percentiles the table prints, so the picture and the numbers meet.
    let marks = [("p50", l.p50_ns, 50.0), ("p99", l.p99_ns, 99.0), ("p99.9", l.p999_ns, 99.9)];
    let mark_color = color(3);
    chart
        .draw_series(
            marks.iter().map(|(_, ns, q)| Circle::new((*ns as f64 / 1e3, *q), 4, mark_color.filled())),
        )
        .map_err(drawing_error)?
        .label("p50, p99, p99.9")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, mark_color.filled()));
    chart
        .draw_series(marks.iter().map(|(name, ns, q)| {
            Text::new(
                format!("{name} {:.1} us", *ns as f64 / 1e3),
                (*ns as f64 / 1e3 * 1.08, *q - 4.0),
                (FONT, 12),
            )
        }))
        .map_err(drawing_error)?;
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    Ok(())
}
