//! Finding the peers Debian does not package (netperf, neper), installed from source under
//! some PREFIX/bin. The bench looks in PATH, then in `$RINGPERF_ANCHORS` (a PREFIX or its
//! bin/), then in ~/.cache/ringperf-anchors/bin.

use std::env;
use std::path::PathBuf;

use crate::error::{BenchError, Result};
use crate::process::{find_in_path, is_executable};

/// The environment variable naming the prefix the peers are installed under.
pub const ANCHORS_ENV: &str = "RINGPERF_ANCHORS";

/// How to get the peers, for the error when one is missing.
pub const BUILD_HINT: &str = "Debian packages neither netperf nor neper: clone \
     github.com/HewlettPackard/netperf and github.com/google/neper and run \
     `tools/build-peers --netperf NETPERF_SRC --neper NEPER_SRC` from the ringperf checkout \
     (it installs into ~/.cache/ringperf-anchors; docs/benchmarks.md, \"The peers\", says how \
     to build them by hand), or put their bin/ directory in PATH or set RINGPERF_ANCHORS to \
     the prefix they are installed under";

/// Where to look after PATH, in order.
fn directories() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(prefix) = env::var_os(ANCHORS_ENV).filter(|p| !p.is_empty()) {
        let prefix = PathBuf::from(prefix);
        dirs.push(prefix.join("bin"));
        dirs.push(prefix);
    }
    if let Some(home) = env::var_os("HOME").filter(|h| !h.is_empty()) {
        dirs.push(PathBuf::from(home).join(".cache/ringperf-anchors/bin"));
    }
    dirs
}

/// The path of the anchor program `name`, or an error that says how to build it.
pub fn locate(name: &str) -> Result<PathBuf> {
    if let Some(p) = find_in_path(name) {
        return Ok(p);
    }
    directories().into_iter().map(|d| d.join(name)).find(|p| is_executable(p)).ok_or_else(|| {
        BenchError::Missing {
            tool: name.into(),
            hint: format!("nor in ${ANCHORS_ENV} or ~/.cache/ringperf-anchors/bin: {BUILD_HINT}"),
        }
    })
}
