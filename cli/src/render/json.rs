//! `--json`: the report, serialized unchanged.

use ringperf_engine::TestReport;

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
