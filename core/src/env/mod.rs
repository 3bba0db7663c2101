//! Environment capture: the facts about a host that a result depends on, recorded with
//! every report so that two results can be told apart. This file is the host (kernel,
//! CPU, io_uring); [`NetworkEnvironment`] is the network path of one side's data, read
//! natively through the modules below (netlink, interface and ethtool ioctls, procfs).

mod ethtool;
mod link_sizes;
pub(crate) mod netdev;
pub(crate) mod netlink;
mod network;
mod qdisc;
mod route;
mod sysctl;
mod uring;

pub use ethtool::{Coalescing, Offloads};
pub use link_sizes::LinkSizes;
pub use network::NetworkEnvironment;
pub use uring::{FeatureBits, IoUringProbe, SetupSupport};

use std::ffi::CStr;
use std::fs;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::setting::Setting;

/// One host's environment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Environment {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub machine: String,
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cpu_count: usize,
    /// The default TCP congestion control (net.ipv4.tcp_congestion_control).
    pub tcp_congestion_control: String,
    /// What this kernel's io_uring supports.
    pub io_uring: IoUringProbe,
}

impl Environment {
    /// This host's environment; `io_uring` is what the engine probed of its kernel
    /// (`ringperf_engine::probe::get`).
    pub fn capture(io_uring: IoUringProbe) -> Environment {
        let u = uname();
        Environment {
            hostname: u.0,
            kernel_release: u.1,
            kernel_version: u.2,
            machine: u.3,
            cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
            cpu_count: online_cpus(),
            tcp_congestion_control: fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            io_uring,
        }
    }
}

/// (nodename, release, version, machine)
fn uname() -> (String, String, String, String) {
    // SAFETY: utsname is plain old data; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let field = |f: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates every field within its fixed-size array.
        unsafe { CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned()
    };
    (field(&u.nodename), field(&u.release), field(&u.version), field(&u.machine))
}

fn cpu_model() -> Option<String> {
    let info = fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines().find_map(|l| {
        l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string())
    })
}

/// Online logical CPUs (sysconf), which is what /proc/stat lists.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory side effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        1
    }
}

/// CPUs this process may run on (its affinity mask), for validating `-T`.
pub fn allowed_cpus() -> Vec<usize> {
    core_affinity::get_core_ids().map(|v| v.into_iter().map(|c| c.id).collect()).unwrap_or_default()
}

/// Checks that `cpu` exists and this process may run on it.
pub fn check_cpu(cpu: usize, side: &str) -> Result<()> {
    let allowed = allowed_cpus();
    if allowed.contains(&cpu) {
        return Ok(());
    }
    let list: Vec<String> = allowed.iter().map(|c| c.to_string()).collect();
    Err(Error::Usage(format!(
        "CPU {cpu} does not exist on the {side} host or is outside its affinity mask (usable: {}): pick one of those for {}",
        list.join(","),
        Setting::Cpus.token()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_fills_the_basics() {
        let e = Environment::capture(IoUringProbe::default());
        assert!(!e.kernel_release.is_empty());
        assert!(!e.hostname.is_empty());
        assert!(e.cpu_count >= 1);
        assert!(!allowed_cpus().is_empty());
    }
}
