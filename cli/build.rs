//! Stamps the binary with the git commit it was built from, for `ringperf --version`: a
//! report or a bug is only comparable when the build it came from is known.

use std::process::Command;

/// git's output for `args`, run in this crate's folder, or None outside a checkout or
/// without git (a crate built from a tarball).
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        // Uncommitted changes to tracked files: the commit alone does not say what was built.
        Some(c) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(s) if !s.is_empty() => format!("{c}-modified"),
            _ => c,
        },
        None => "unknown commit".to_string(),
    };
    println!("cargo:rustc-env=RINGPERF_GIT_COMMIT={commit}");
    // Again when a commit is made or checked out, and when a source changes (which may make
    // the tree modified or clean again).
    for path in ["HEAD", "index"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &branch]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    for source in ["src", "build.rs", "../engine/src", "../Cargo.lock"] {
        println!("cargo:rerun-if-changed={source}");
    }
}
