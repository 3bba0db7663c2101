//! `ringperf load --plot`: flent's RRUL picture. The load's throughput per direction on
//! the left axis and the probes' round-trip p50 and p99 per interval on a log axis on the
//! right, one time axis from the probe's window start, the load's start marked.

use std::path::Path;

use plotters::prelude::*;
use ringperf_core::load::{LoadReport, LoadSeriesPoint};
use ringperf_core::Error;

use super::svg::{color, drawing_error, legend, mesh, write, FONT};

const SIZE: (u32, u32) = (1000, 560);

/// Picks one of an interval's probe percentiles.
type Percentile = fn(&LoadSeriesPoint) -> Option<u64>;

pub fn draw(r: &LoadReport, path: &Path) -> Result<(), Error> {
    if r.series.is_empty() {
        return Err(Error::Usage("--plot: the probe took no interval samples to draw".into()));
    }
    let s = &r.series;
    let mid = |p: &LoadSeriesPoint| (p.start_ns as f64 + p.duration_ns as f64 / 2.0) / 1e9;
    let end = s.last().map_or(1.0, |p| (p.start_ns + p.duration_ns) as f64 / 1e9);
    let rate = |p: &LoadSeriesPoint, i: usize| {
        p.load_bytes.get(i).copied().unwrap_or(0) as f64 * 8.0 / (p.duration_ns.max(1) as f64 / 1e9)
    };
    let peak = s.iter().flat_map(|p| (0..r.loads.len()).map(move |i| rate(p, i))).fold(0.0, f64::max);
    let (scale, unit) = if peak >= 1e9 { (1e-9, "load (Gbit/s)") } else { (1e-6, "load (Mbit/s)") };
    let lat: Vec<u64> = s.iter().flat_map(|p| [p.probe_p50_ns, p.probe_p99_ns]).flatten().collect();
    let us = |ns: u64| ns as f64 / 1e3;
    let lo = lat.iter().copied().min().map_or(1.0, us).max(0.1) / 1.5;
    let hi = lat.iter().copied().max().map_or(1000.0, us) * 1.5;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{} probes under load {} (idle, then loaded)", r.probe_test, r.load.name()),
                (FONT, 22),
            )
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .right_y_label_area_size(70)
            .build_cartesian_2d(0f64..end, 0f64..(peak * scale * 1.15).max(1e-9))
            .map_err(drawing_error)?
            .set_secondary_coord(0f64..end, (lo..hi).log_scale());
        mesh(&mut chart, "time since the probes started (s)", unit)?;
        chart
            .configure_secondary_axes()
            .y_desc("probe round trip (us, log)")
            .y_label_formatter(&|v| super::svg::tick(*v))
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 13))
            .draw()
            .map_err(drawing_error)?;
        for (i, part) in r.loads.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    s.iter().map(|p| (mid(p), rate(p, i) * scale)),
                    c.stroke_width(2),
                ))
                .map_err(drawing_error)?
                .label(format!("load {} (left)", part.direction.name()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        }
        let percentiles: [(&str, Percentile); 2] =
            [("probe p50 (right)", |p| p.probe_p50_ns), ("probe p99 (right)", |p| p.probe_p99_ns)];
        for (k, (label, pick)) in percentiles.into_iter().enumerate() {
            let c = color(3 + k);
            let points: Vec<(f64, f64)> = s.iter().filter_map(|p| pick(p).map(|v| (mid(p), us(v)))).collect();
            chart
                .draw_secondary_series(LineSeries::new(points, c.stroke_width(2)))
                .map_err(drawing_error)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        }
        if let Some(start) = r.load_start_ns {
            let x = start as f64 / 1e9;
            let grey = BLACK.mix(0.5);
            chart
                .draw_series(LineSeries::new([(x, 0.0), (x, peak * scale * 1.15)], grey.stroke_width(1)))
                .map_err(drawing_error)?
                .label("load start")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(drawing_error)?;
    }
    write(path, &svg)
}
