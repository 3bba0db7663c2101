//! What one invocation of the bench asks for and the host it runs on, which the runs, the
//! report and every study read.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use crate::cpu;
use crate::error::Result;
use crate::peers::Config;

/// Everything one invocation asks for.
#[derive(Clone, Debug)]
pub struct Plan {
    pub cfg: Config,
    /// Runs per tool.
    pub runs: u32,
    /// Idle time between runs, outside every measurement window.
    pub pause: Duration,
    /// An explicit ringperf binary.
    pub ringperf: Option<PathBuf>,
    /// Another ringperf binary (an older build) run as one more peer.
    pub baseline: Option<PathBuf>,
    /// Run ringperf on the harness its default rule does not pick, as one more peer
    /// ("ringperf classic" or "ringperf io_uring").
    pub classic: bool,
}

/// What the host looks like, for the report header.
#[derive(Clone, Debug)]
pub struct Host {
    pub kernel: String,
    pub cpus: usize,
    pub default_cc: String,
    pub available_cc: Vec<String>,
}

impl Host {
    pub fn read() -> Result<Host> {
        let sys =
            |p: &str| fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into());
        Ok(Host {
            kernel: sys("/proc/sys/kernel/osrelease"),
            cpus: cpu::cpu_count()?,
            default_cc: sys("/proc/sys/net/ipv4/tcp_congestion_control"),
            available_cc: sys("/proc/sys/net/ipv4/tcp_available_congestion_control")
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// The label of crr's second ringperf member: the server waits for the client's close.
pub const CLIENT_FIRST: &str = "ringperf client-first";
