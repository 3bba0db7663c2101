//! Tests that cannot run here: the programs and privileges they need, and the one
//! `SKIPPED` line that says so.

use std::io::{self, Write};
use std::path::Path;

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and has no memory effects.
    unsafe { libc::geteuid() == 0 }
}

/// The environment variable naming a file that [`skip`] appends its line to, so that
/// `tools/test` can count and list the skipped tests after cargo is done.
pub const SKIP_LOG_ENV: &str = "RINGPERF_SKIP_LOG";

/// Says that `test` did not run and why: `SKIPPED: <test>: <reason>` on the process's own
/// stderr and, when `RINGPERF_SKIP_LOG` names a file, appended to it. The test then returns
/// and libtest counts it as passed, so this line is the only sign that it did not run.
///
/// libtest captures `eprintln!` (and shows it only for failures), so the line is written to
/// file descriptor 2 directly.
pub fn skip(test: &str, reason: &str) {
    let line = skip_line(test, reason);
    let bytes = line.as_bytes();
    // SAFETY: write(2) reads `bytes.len()` bytes from a live slice; fd 2 is the process's
    // stderr (a short write or a closed stderr loses the line, nothing else).
    let _ = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    if let Some(log) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        // One write of a short line to a file opened O_APPEND: tests skipping in parallel
        // threads and processes do not interleave their lines.
        if let Err(e) = append_line(Path::new(&log), &line) {
            let warn = format!("warning: cannot append to {}: {e}\n", Path::new(&log).display());
            // SAFETY: as above.
            let _ = unsafe { libc::write(2, warn.as_ptr().cast(), warn.len()) };
        }
    }
}

/// Appends `line` to `log` (created if need be) in one write.
fn append_line(log: &Path, line: &str) -> io::Result<()> {
    std::fs::OpenOptions::new().create(true).append(true).open(log)?.write_all(line.as_bytes())
}

/// The line [`skip`] writes, newline included.
pub fn skip_line(test: &str, reason: &str) -> String {
    format!("SKIPPED: {test}: {reason}\n")
}

/// A program some tests run, and the Debian package it comes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    pub name: &'static str,
    pub package: &'static str,
}

pub const IP: Program = Program { name: "ip", package: "iproute2" };
pub const TC: Program = Program { name: "tc", package: "iproute2" };
pub const SS: Program = Program { name: "ss", package: "iproute2" };
pub const ETHTOOL: Program = Program { name: "ethtool", package: "ethtool" };
pub const NFT: Program = Program { name: "nft", package: "nftables" };
pub const FLOCK: Program = Program { name: "flock", package: "util-linux" };
pub const PYTHON3: Program = Program { name: "python3", package: "python3" };

/// What `tools/lab` checks for before it does anything (its `need_tools`).
pub const LAB_PROGRAMS: &[Program] = &[IP, TC, ETHTOOL, FLOCK];

/// Whether `name` is an executable file in a directory of `PATH`, as the shell and
/// `Command` would find it.
pub fn have_program(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH") else { return false };
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(name)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Why a test that needs `root` (when true) and `programs` cannot run here, or `None`
/// when it can. The reason names the missing programs and the command that installs them.
pub fn missing_requirements(root: bool, programs: &[Program]) -> Option<String> {
    let mut why = Vec::new();
    if root && !is_root() {
        why.push("needs root for network namespaces (CI runs as root)".to_string());
    }
    let missing: Vec<Program> = programs.iter().copied().filter(|p| !have_program(p.name)).collect();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|p| format!("'{}'", p.name)).collect();
        let mut packages: Vec<&str> = missing.iter().map(|p| p.package).collect();
        packages.dedup();
        packages.sort_unstable();
        packages.dedup();
        why.push(format!(
            "needs {} (not found in PATH): apt-get install -y {}",
            names.join(", "),
            packages.join(" ")
        ));
    }
    if why.is_empty() {
        None
    } else {
        Some(why.join("; "))
    }
}

/// [`skip`]s `test` and returns true when it cannot run here (see [`missing_requirements`]).
pub fn skip_unless(test: &str, root: bool, programs: &[Program]) -> bool {
    match missing_requirements(root, programs) {
        Some(why) => {
            skip(test, &why);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_line_is_one_line_tools_test_can_count() {
        let line = skip_line("some_test", "needs root");
        assert_eq!(line, "SKIPPED: some_test: needs root\n");
        let log = std::env::temp_dir().join(format!("ringperf-skiplog-{}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        append_line(&log, &line).expect("first append");
        append_line(&log, &skip_line("other_test", "needs 'nft'")).expect("second append");
        let got = std::fs::read_to_string(&log).expect("the log");
        let _ = std::fs::remove_file(&log);
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines, ["SKIPPED: some_test: needs root", "SKIPPED: other_test: needs 'nft'"]);
    }

    #[test]
    fn a_missing_program_is_named_with_its_package() {
        let absent = Program { name: "ringperf-no-such-program", package: "no-such-package" };
        let why = missing_requirements(false, &[absent, absent]).expect("an absent program is missing");
        assert!(why.contains("'ringperf-no-such-program'"), "{why}");
        assert!(why.ends_with("apt-get install -y no-such-package"), "{why}");
        // `sh` is in every PATH these tests run with.
        let sh = Program { name: "sh", package: "dash" };
        assert_eq!(missing_requirements(false, &[sh]), None);
    }
}
