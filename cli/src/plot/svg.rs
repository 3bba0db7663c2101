//! What every chart shares: the palette, the font, axis ticks, the drawing error, and
//! writing the SVG with only the characters XML allows.

use std::path::Path;

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
