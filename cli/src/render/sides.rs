//! The sides of a report that every part of the human output walks.

use ringperf_core::report::SideReport;
use ringperf_core::TestReport;

/// The sides that reported: the local one always, the remote one unless a partial run's
/// server never did.
pub(crate) fn sides(r: &TestReport) -> Vec<(&'static str, &SideReport)> {
    [("local ", Some(&r.local)), ("remote", r.remote.as_ref())]
        .into_iter()
        .filter_map(|(n, s)| Some((n, s?)))
        .collect()
}
