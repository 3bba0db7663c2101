//! What this binary was built from, as `--version` prints it.

/// The version and the git commit (`-modified` when the tree had uncommitted changes).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("RINGPERF_GIT_COMMIT"), ")");
