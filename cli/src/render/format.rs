//! Which renderer a test's output goes through, and the human renderer's switches, as the
//! command line asks them.

use crate::args::TestArgs;

/// Which renderer a test's output goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    /// `--json-stream`: interval lines while the test runs, then the report on one line.
    JsonStream,
    Keyval,
    Csv,
}

impl Format {
    pub fn of(t: &TestArgs) -> Format {
        if t.json {
            Format::Json
        } else if t.json_stream {
            Format::JsonStream
        } else if t.keyval {
            Format::Keyval
        } else if t.csv {
            Format::Csv
        } else {
            Format::Human
        }
    }
}

/// Switches of the human renderer.
#[derive(Clone, Copy, Debug, Default)]
pub struct HumanOptions {
    /// Headers and banners (netperf -P 1).
    pub banner: bool,
    /// The text latency histogram.
    pub histogram: bool,
    /// How much beyond the default report: 0 the short one (the table, how sure, the tool
    /// overhead, zero-copy proof and what makes the figures doubtful), 1 (`-v`) every
    /// side's every line, 2 (`-vv`) the kernel counters' full per-CPU tables too.
    pub verbosity: u8,
    /// The kernel cost profile's whole tables (--profile).
    pub profile: bool,
}

impl HumanOptions {
    pub fn of(t: &TestArgs) -> HumanOptions {
        HumanOptions {
            banner: t.banner == 1,
            histogram: t.stats.histogram,
            verbosity: t.stats.verbose,
            profile: t.profile.show,
        }
    }
}
