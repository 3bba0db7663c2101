//! Throughput (or transactions/s) over time from the local side's interval samples, with
//! the system CPU busy share on a second axis: warm-up, stalls and drift show at a glance.

use plotters::coord::Shift;
use plotters::prelude::*;
use ringperf_core::{Error, TestReport};

use super::svg::{color, drawing_error, legend, mesh, FONT};

pub fn draw<DB: DrawingBackend>(r: &TestReport, area: &DrawingArea<DB, Shift>) -> Result<(), Error> {
    let rr = r.summary.transactions_per_sec.is_some();
    let iv = &r.local.intervals;
    let rates: Vec<f64> =
        iv.iter().map(|s| if rr { s.transactions_per_sec() } else { s.throughput_bits_per_sec() }).collect();
    let peak = rates.iter().cloned().fold(0.0, f64::max);
    // Gbit/s reads better than five-digit Mbit/s.
    let (scale, unit) = match (rr, peak) {
        (true, _) => (1.0, "transactions/s"),
        (false, p) if p >= 1e9 => (1e-9, "throughput (Gbit/s)"),
        _ => (1e-6, "throughput (Mbit/s)"),
    };
    let mid =
        |s: &ringperf_core::report::IntervalSample| (s.start_ns as f64 + s.duration_ns as f64 / 2.0) / 1e9;
    let end = iv.last().map(|s| (s.start_ns + s.duration_ns) as f64 / 1e9).unwrap_or(1.0);
    let ymax = (peak * scale * 1.15).max(1e-9);
    let iterations = if r.iterations.len() > 1 { " (last iteration)" } else { "" };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{} over time{iterations}", if rr { "Transactions" } else { "Throughput" }),
            (FONT, 22),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0f64..end, 0f64..ymax)
        .map_err(drawing_error)?
        .set_secondary_coord(0f64..end, 0f64..105f64);
    mesh(&mut chart, "time since start (s)", unit)?;
    chart
        .configure_secondary_axes()
        .y_desc("system CPU busy (% of all CPUs)")
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .draw()
        .map_err(drawing_error)?;
    let rate_color = color(0);
    chart
        .draw_series(LineSeries::new(
            iv.iter().zip(&rates).map(|(s, v)| (mid(s), v * scale)),
            rate_color.stroke_width(2),
        ))
        .map_err(drawing_error)?
        .label(if rr { "transactions/s (local)" } else { "throughput (local)" })
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], rate_color.stroke_width(2)));
    chart
        .draw_series(
            iv.iter().zip(&rates).map(|(s, v)| Circle::new((mid(s), v * scale), 3, rate_color.filled())),
        )
        .map_err(drawing_error)?;
    let cpu: Vec<(f64, f64)> = iv.iter().filter_map(|s| s.busy_percent.map(|b| (mid(s), b))).collect();
    if !cpu.is_empty() {
        let cpu_color = color(1);
        chart
            .draw_secondary_series(LineSeries::new(cpu, cpu_color.stroke_width(2)))
            .map_err(drawing_error)?
            .label("CPU busy (local host, right axis)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], cpu_color.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    area.draw(&Text::new(
        describe(r),
        (80, area.dim_in_pixel().1 as i32 - 14),
        (FONT, 11).into_font().color(&BLACK.mix(0.6)),
    ))
    .map_err(drawing_error)?;
    Ok(())
}

/// "TCP_RR to 198.18.0.2:12866, copy/recv, 5.0 s" for chart captions.
fn describe(r: &TestReport) -> String {
    let s = &r.spec;
    format!(
        "{} to {}, {}/{}, {:.1} s",
        r.test,
        crate::render::socket_addr(&r.server),
        s.local.send_engine.name(),
        s.local.recv_engine.name(),
        s.duration_ms as f64 / 1000.0
    )
}
