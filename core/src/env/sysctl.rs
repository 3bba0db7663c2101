//! The sysctls that change network results, read from procfs. They are read in this
//! process's network namespace (most net.* sysctls are per namespace), so a test run
//! inside a lab host records that host's settings.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What is read, and why each one matters.
pub const NAMES: &[&str] = &[
    // TCP small queues: how many bytes one flow may have queued below TCP. Caps a single
    // flow's throughput on fast paths.
    "net.ipv4.tcp_limit_output_bytes",
    // The default congestion control (a test's --cc overrides it per socket).
    "net.ipv4.tcp_congestion_control",
    // Autotuning bounds of the socket buffers (min, default, max).
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    // The largest SO_RCVBUF/SO_SNDBUF a socket may ask for (-s/-S are clamped to these).
    "net.core.rmem_max",
    "net.core.wmem_max",
    // Busy polling instead of waiting for an interrupt (us; 0 is off).
    "net.core.busy_poll",
    "net.core.busy_read",
    // Small sends coalesce while the previous one is still queued: changes small-message rr.
    "net.ipv4.tcp_autocorking",
    // Bytes not yet sent that make a socket writable: changes how sends batch.
    "net.ipv4.tcp_notsent_lowat",
];

/// The procfs file of a dotted sysctl name under `root` (normally /proc/sys).
pub fn path_of(root: &Path, name: &str) -> PathBuf {
    root.join(name.replace('.', "/"))
}

/// A sysctl's text as one line: vectors like tcp_rmem are tab-separated, which no reader
/// of a report wants.
pub fn normalize(raw: &str) -> String {
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every sysctl of [`NAMES`] under `root`, and a note for each that could not be read.
pub fn read_all(root: &Path) -> (BTreeMap<String, String>, Vec<String>) {
    let mut values = BTreeMap::new();
    let mut notes = Vec::new();
    for name in NAMES {
        match fs::read_to_string(path_of(root, name)) {
            Ok(s) => {
                values.insert((*name).to_string(), normalize(&s));
            }
            // busy_poll and busy_read are global: the kernel lists them only in the initial
            // network namespace, so a test inside a lab host cannot see them.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => notes.push(format!(
                "sysctl {name}: not present here (a global setting shown only in the initial network namespace, or not in this kernel)"
            )),
            Err(e) => notes.push(format!("sysctl {name}: {e}")),
        }
    }
    (values, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_become_one_spaced_line() {
        assert_eq!(normalize("4096\t131072\t6291456\n"), "4096 131072 6291456");
        assert_eq!(normalize("bbr\n"), "bbr");
        assert_eq!(normalize("  1048576 \n"), "1048576");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn dotted_names_map_to_procfs_paths() {
        assert_eq!(
            path_of(Path::new("/proc/sys"), "net.ipv4.tcp_rmem"),
            PathBuf::from("/proc/sys/net/ipv4/tcp_rmem")
        );
    }

    #[test]
    fn missing_files_are_noted_not_fatal() {
        let root = std::env::temp_dir().join(format!("ringperf-sysctl-test-{}", std::process::id()));
        let file = path_of(&root, "net.ipv4.tcp_rmem");
        fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        fs::write(&file, "4096\t131072\t6291456\n").expect("write");
        let (values, notes) = read_all(&root);
        let _ = fs::remove_dir_all(&root);
        assert_eq!(values.len(), 1);
        assert_eq!(values["net.ipv4.tcp_rmem"], "4096 131072 6291456");
        assert_eq!(notes.len(), NAMES.len() - 1);
        assert!(notes.iter().any(|n| n.contains("net.core.busy_poll")), "{notes:?}");
    }

    #[test]
    fn this_host_has_the_tcp_ones() {
        let (values, _) = read_all(Path::new("/proc/sys"));
        for n in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_limit_output_bytes", "net.core.rmem_max"] {
            assert!(values.contains_key(n), "{n} missing from {values:?}");
        }
    }
}
