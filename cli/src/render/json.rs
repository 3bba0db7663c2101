//! `--json`: the report, serialized unchanged; `--json-stream`: one object per line, an
//! interval object per interval as the test runs and the report last.

use serde::Serialize;

use ringperf_core::report::IntervalSample;
use ringperf_core::TestReport;

pub fn render(report: &TestReport) -> String {
    // TestReport has only plain data and string keys, so serialization cannot fail.
    let mut s = serde_json::to_string_pretty(report).expect("TestReport serializes");
    s.push('\n');
    s
}

/// Several reports (one per engine combination, iteration or sweep point) as one array.
pub fn render_all(reports: &[TestReport]) -> String {
    let mut s = serde_json::to_string_pretty(reports).expect("TestReport serializes");
    s.push('\n');
    s
}

/// `--json-stream`'s last line: the same object `--json` prints, on one line.
pub fn line(report: &TestReport) -> String {
    let mut s = serde_json::to_string(report).expect("TestReport serializes");
    s.push('\n');
    s
}

/// One interval of `--json-stream`: the local side's sample as the report's
/// `local.intervals[]` has it, tagged, with its end and its rates worked out.
#[derive(Serialize)]
struct IntervalLine<'a> {
    /// Always "interval": what tells these lines from the report, which has no `type`.
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    sample: &'a IntervalSample,
    /// Offset of the interval's end from the window start.
    end_ns: u64,
    throughput_bits_per_sec: f64,
    /// For the tests that count transactions; null otherwise.
    transactions_per_sec: Option<f64>,
}

/// An interval object of `--json-stream`, on one line.
pub fn interval_line(sample: &IntervalSample, transactional: bool) -> String {
    let line = IntervalLine {
        kind: "interval",
        sample,
        end_ns: sample.start_ns + sample.duration_ns,
        throughput_bits_per_sec: sample.throughput_bits_per_sec(),
        transactions_per_sec: transactional.then(|| sample.transactions_per_sec()),
    };
    // Plain numbers and strings: serialization cannot fail.
    let mut s = serde_json::to_string(&line).expect("an interval serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_line_is_one_tagged_object_with_its_rates() {
        let s = IntervalSample {
            start_ns: 500_000_000,
            index: 5,
            duration_ns: 100_000_000,
            bytes_sent: 1000,
            bytes_received: 3000,
            transactions: 10,
            ..IntervalSample::default()
        };
        let line = interval_line(&s, true);
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["type"], "interval");
        assert_eq!((v["index"].as_u64(), v["end_ns"].as_u64()), (Some(5), Some(600_000_000)));
        assert_eq!(v["throughput_bits_per_sec"].as_f64(), Some(240_000.0));
        assert_eq!(v["transactions_per_sec"].as_f64(), Some(100.0));
        let v: serde_json::Value = serde_json::from_str(&interval_line(&s, false)).expect("JSON");
        assert!(v["transactions_per_sec"].is_null());
    }
}
