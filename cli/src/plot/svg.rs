//! What every chart shares: the palette, the font, axis ticks, the legend and axes in the
//! house style, the drawing error, and writing the SVG with only the characters XML allows.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::RGBColor;
use ringperf_core::Error;

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
