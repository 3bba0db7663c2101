//! `--profile-out PREFIX`: each side's folded stacks to PREFIX.local.folded and
//! PREFIX.remote.folded, the input `ringperf plot` (and FlameGraph, and inferno) draw.

use std::path::{Path, PathBuf};

use ringperf_core::report::SideReport;
use ringperf_core::TestReport;

/// Writes the folded stacks each side sent; a side without them (no profile, or the
/// kernel refused) gets no file and a line on stderr that says why. Returns the files written.
pub fn write(report: &TestReport, prefix: &Path) -> Vec<PathBuf> {
    let mut written = Vec::new();
    for (name, side) in [("local", Some(&report.local)), ("remote", report.remote.as_ref())] {
        let path = side_path(prefix, name);
        match side.map(folded) {
            // A file that cannot be written is said and decides the exit code (see
            // output); the other side's is still written.
            Some(Ok(text)) => {
                if crate::output::file(&path, &format!("the {name} side's folded stacks"), text).is_ok() {
                    written.push(path);
                }
            }
            Some(Err(why)) => eprintln!("ringperf: no {}: {why}", path.display()),
            None => eprintln!("ringperf: no {}: the {name} side never reported", path.display()),
        }
    }
    written
}

/// A side's folded stacks, or why it has none.
fn folded(s: &SideReport) -> Result<&str, String> {
    match s.profile.as_ref() {
        Some(p) => match (&p.folded, &p.unavailable) {
            (Some(text), _) => Ok(text),
            (None, Some(why)) => Err(why.clone()),
            (None, None) => Err("the side sent no folded stacks".into()),
        },
        None => Err("the side took no profile (a server older than profiles, or --no-profile)".into()),
    }
}
/// PREFIX.SIDE.folded (a prefix that names a directory writes into it).
pub fn side_path(prefix: &Path, side: &str) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(format!(".{side}.folded"));
    PathBuf::from(name)
}
