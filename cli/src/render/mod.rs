//! Renderers over the one TestReport: a human table and JSON, side by side.

pub mod diff;
pub mod engine_choice;
pub mod engines;
pub mod histogram;
pub mod human;
pub mod json;
pub mod kernel;
pub mod keyval;
pub mod load;
pub mod probe;
pub mod profile;
pub mod sweep;

/// Throughput units of `-f` (the figures' registry formats rates with them).
pub use ringperf_engine::units::Units;

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
    /// The kernel counters' full per-CPU tables.
    pub verbose: bool,
    /// The kernel cost profile's whole tables (--profile).
    pub profile: bool,
}

impl HumanOptions {
    pub fn of(t: &TestArgs) -> HumanOptions {
        HumanOptions {
            banner: t.banner == 1,
            histogram: t.stats.histogram,
            verbose: t.stats.verbose,
            profile: t.profile.show,
        }
    }
}

/// A `host:port` as it should be read: an IPv6 address in brackets (`[::1]:12866`), so the
/// port cannot be taken for part of the address. Anything else is returned as it is.
pub fn socket_addr(s: &str) -> String {
    if s.starts_with('[') {
        return s.to_string();
    }
    match s.rsplit_once(':') {
        Some((host, port)) if host.parse::<std::net::Ipv6Addr>().is_ok() => format!("[{host}]:{port}"),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_socket_addresses_get_brackets() {
        assert_eq!(socket_addr("::1:40124"), "[::1]:40124");
        assert_eq!(socket_addr("fe80::1:2:12866"), "[fe80::1:2]:12866");
        assert_eq!(socket_addr("[::1]:40124"), "[::1]:40124");
        assert_eq!(socket_addr("127.0.0.1:12866"), "127.0.0.1:12866");
        assert_eq!(socket_addr("host.example:12866"), "host.example:12866");
    }
}
