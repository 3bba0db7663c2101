//! `ringperf install-links DIR`: the `netperf` and `netserver` links that make ringperf
//! answer as netperf's programs.

use std::path::Path;

/// The names ringperf answers to as netperf's programs.
pub const LINK_NAMES: [&str; 2] = ["netperf", "netserver"];

/// `ringperf install-links DIR`: symlinks named `netperf` and `netserver` to this binary
/// in DIR, so harnesses that run netperf find ringperf.
pub fn install_links(dir: &Path) -> Result<i32, ringperf_core::Error> {
    use ringperf_core::Error;
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("finding this program's path (for the links to point at)", e))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    for name in LINK_NAMES {
        let link = dir.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&link) {
            let ours = meta.file_type().is_symlink() && std::fs::read_link(&link).is_ok_and(|t| t == exe);
            if ours {
                crate::output::print(
                    "the list of links",
                    &format!("{} -> {} (already there)\n", link.display(), exe.display()),
                );
                continue;
            }
            return Err(Error::Usage(format!(
                "{} exists and is not a link to this ringperf: remove it or pick another directory",
                link.display()
            )));
        }
        std::os::unix::fs::symlink(&exe, &link)
            .map_err(|e| Error::io(format!("making the link {}", link.display()), e))?;
        crate::output::print("the list of links", &format!("{} -> {}\n", link.display(), exe.display()));
    }
    Ok(0)
}
