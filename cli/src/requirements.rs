//! What a run was required to meet and did not: said on stderr, and the exit code.

use ringperf_core::TestReport;

/// Prints what the run failed to meet and returns the exit code (1 if anything).
pub fn requirements(report: &TestReport) -> i32 {
    let failed = report.failed_requirements();
    for f in &failed {
        eprintln!("ringperf: {f}");
    }
    i32::from(!failed.is_empty())
}
