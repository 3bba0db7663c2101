//! `ringperf plot FILE.folded -o OUT.svg`: a flame graph of the folded stacks
//! `--profile-out` wrote, drawn by inferno. Kernel frames (marked `_[k]`) are orange, the
//! tool's Rust frames yellow, the rest red.

use std::path::Path;

use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Options};
use ringperf_core::Error;

/// Whether `text` reads as folded stacks: its first line is "frames count".
pub fn looks_folded(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| l.trim_end().rsplit_once(' '))
        .is_some_and(|(_, n)| n.parse::<u64>().is_ok())
}

/// The flame graph of `text` (folded stacks read from `input`) as SVG.
pub fn render(input: &Path, text: &str) -> Result<String, Error> {
    let mut opts = Options::default();
    opts.colors = Palette::Multi(MultiPalette::Perl);
    opts.title = format!("ringperf kernel cost profile: {}", input.display());
    opts.count_name = "samples".into();
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut opts, text.lines(), &mut svg).map_err(|e| {
        Error::Usage(format!(
            "cannot draw a flame graph of '{}' ({e}): give a file that --profile-out wrote",
            input.display()
        ))
    })?;
    String::from_utf8(svg)
        .map_err(|e| Error::Usage(format!("the flame graph is not UTF-8 ({e}): report it as a bug")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_stacks_draw_and_garbage_is_an_error() {
        let text = "ringperf;tcp_sendmsg_[k] 30\nswapper;default_idle_[k] 10\n";
        assert!(looks_folded(text));
        let svg = render(Path::new("x.folded"), text).unwrap();
        assert!(svg.contains("<svg") && svg.contains("tcp_sendmsg"), "{svg}");
        assert!(!looks_folded("{\"schema_version\": 2}"));
        assert!(render(Path::new("x.folded"), "").is_err());
        assert!(render(Path::new("x.folded"), "no counts here\n\u{0}\u{1}").is_err());
    }
}
