//! The sweep chart: one figure over one swept parameter, a line per combination of the
//! other swept parameters (e.g. per engine), error bars from each point's confidence
//! interval when the sweep iterated (-i/-I).

use std::path::Path;

use plotters::prelude::*;
use ringperf_engine::figures::{self, Figure, Value};
use ringperf_engine::{Error, TestReport};

use super::{color, drawing_error, write, FONT};
use crate::args::ChartArgs;
use crate::sweep::Entry;

/// A line: its label and its (x index, value) points.
type Series = (String, Vec<(usize, Value)>);

/// Parameters whose value differs between points, in command-line order.
fn varied(entries: &[Entry]) -> Vec<String> {
    let Some(first) = entries.first() else { return Vec::new() };
    first
        .point
        .0
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| entries.iter().any(|e| e.point.get(n) != first.point.get(n)))
        .collect()
}

/// Draws the sweep chart of `entries` to `path`: the `--figure` over the `--x` parameter, a
/// line per combination of the other varied parameters.
pub fn draw(entries: &[Entry], chart_args: &ChartArgs, path: &Path) -> Result<(), Error> {
    let reports: Vec<&TestReport> = entries.iter().filter_map(|e| e.report.as_ref()).collect();
    let Some(first) = reports.first() else {
        return Err(Error::Usage("--plot: no point of the sweep produced a report to draw".into()));
    };
    let fig = match &chart_args.figure {
        Some(n) => figures::by_name(n).ok_or_else(|| Error::Usage(format!("unknown figure '{n}'")))?,
        None => figures::default_for(first),
    };
    let rr = first.summary.transactions_per_sec.is_some();
    let name = fig.name.unwrap_or_default();
    let label = fig.axis_label().replace("us/KB or us/Tr", if rr { "us/Tr" } else { "us/KB" });
    let (x_name, others) = axes(entries, chart_args)?;
    let (xs, series) = lines(entries, fig, &x_name, &others);
    if series.is_empty() {
        let what = if fig.needs_profile() {
            "it comes from the kernel cost profile: run the sweep with --profile"
        } else {
            "use --figure"
        };
        return Err(Error::Usage(format!("--plot: no point has the figure '{name}' ({what})")));
    }
    let caption = format!("{} {label} by {x_name}{}", first.test, error_bars(&reports));
    let axes = Axes { caption, x_name, y_label: label, xs };
    write(path, &render(&axes, &series, name)?)
}

/// The parameter on the x axis (`--x`, else the first that varies, else the first) and the
/// other varied ones, whose combinations make the lines.
fn axes(entries: &[Entry], chart_args: &ChartArgs) -> Result<(String, Vec<String>), Error> {
    let all: Vec<String> =
        entries.first().map(|e| e.point.0.iter().map(|(n, _)| n.clone()).collect()).unwrap_or_default();
    let swept = varied(entries);
    let x_name = match &chart_args.x {
        Some(x) if all.contains(x) => x.clone(),
        Some(x) => {
            return Err(Error::Usage(format!(
                "--x {x}: not a parameter of this sweep; use one of: {}",
                all.join(", ")
            )))
        }
        None => swept.first().or(all.first()).cloned().unwrap_or_default(),
    };
    let others = swept.into_iter().filter(|n| *n != x_name).collect();
    Ok((x_name, others))
}

/// The x axis's values in the order the points first give them, and a line per
/// combination of `others` (labelled `name=value, ...`) with the figure at each x it has.
fn lines(entries: &[Entry], fig: &Figure, x_name: &str, others: &[String]) -> (Vec<String>, Vec<Series>) {
    let mut xs: Vec<String> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for e in entries {
        let xv = e.point.get(x_name).unwrap_or("-").to_string();
        let xi = xs.iter().position(|v| *v == xv).unwrap_or_else(|| {
            xs.push(xv);
            xs.len() - 1
        });
        let key = others
            .iter()
            .map(|n| format!("{n}={}", e.point.get(n).unwrap_or("-")))
            .collect::<Vec<_>>()
            .join(", ");
        let Some(v) = e.report.as_ref().and_then(|r| fig.of(r)) else { continue };
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, pts)) => pts.push((xi, v)),
            None => series.push((key, vec![(xi, v)])),
        }
    }
    (xs, series)
}

/// The caption's note on error bars, when the sweep iterated (-i/-I): their confidence level.
fn error_bars(reports: &[&TestReport]) -> String {
    if !reports.iter().any(|r| r.confidence.is_some()) {
        return String::new();
    }
    let level = reports.iter().find_map(|r| r.confidence.as_ref()).map(|c| c.target.level * 100.0);
    format!(", error bars: {:.0} % confidence", level.unwrap_or(0.0))
}

/// What frames the lines: the caption, the axes' names and the x axis's values.
struct Axes {
    caption: String,
    x_name: String,
    y_label: String,
    xs: Vec<String>,
}

/// The chart as SVG: a line, its points and their error bars per series (named `figure`
/// when there is one line), and a legend.
fn render(axes: &Axes, series: &[Series], figure: &str) -> Result<String, Error> {
    let top = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, v)| v.mean + v.half_width.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    let ymax = (top * 1.15).max(1e-9);
    // Categories: an integer range covers both ends, so 0..n-1 is n segments.
    let n = axes.xs.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&axes.caption, (FONT, 20))
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0f64..ymax)
            .map_err(drawing_error)?;
        chart
            .configure_mesh()
            .x_desc(axes.x_name.as_str())
            .y_desc(axes.y_label.as_str())
            .y_label_formatter(&|v| super::tick(*v))
            .x_labels(n)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    axes.xs.get(*i).cloned().unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 13))
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(drawing_error)?;
        for (i, (key, pts)) in series.iter().enumerate() {
            let c = color(i);
            let name = if key.is_empty() { figure.to_string() } else { key.clone() };
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|(x, v)| (SegmentValue::CenterOf(*x), v.mean)),
                    c.stroke_width(2),
                ))
                .map_err(drawing_error)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
            chart
                .draw_series(
                    pts.iter().map(|(x, v)| Circle::new((SegmentValue::CenterOf(*x), v.mean), 4, c.filled())),
                )
                .map_err(drawing_error)?;
            chart
                .draw_series(pts.iter().filter_map(|(x, v)| {
                    let hw = v.half_width?;
                    Some(ErrorBar::new_vertical(
                        SegmentValue::CenterOf(*x),
                        (v.mean - hw).max(0.0),
                        v.mean,
                        v.mean + hw,
                        c.stroke_width(2),
                        12,
                    ))
                }))
                .map_err(drawing_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(drawing_error)?;
        root.present().map_err(drawing_error)?;
    }
    Ok(svg)
}
