//! ringperf invoked as `netserver`: netserver's flags become `ringperf serve`'s, and, as
//! netserver does, it goes to the background unless -D keeps it in the foreground.
//! `ringperf install-links DIR` makes the `netperf` and `netserver` links.

use std::path::Path;
use std::process::{Command, Stdio};

use ringperf_engine::control::limits::DEFAULT_MAX_SESSIONS;

use crate::netperf::NETPERF_PORT;

/// The names ringperf answers to as netperf's programs.
pub const LINK_NAMES: [&str; 2] = ["netperf", "netserver"];

/// What netserver's command line asks.
#[derive(Debug, PartialEq, Eq)]
pub struct ServerCall {
    /// `ringperf serve` with its options (argv[0] first).
    pub native: Vec<String>,
    /// -D: stay in the foreground.
    pub foreground: bool,
}

/// Parses netserver's command line (`args[0]` is the program).
pub fn parse(args: &[String]) -> Result<ServerCall, String> {
    let mut port = NETPERF_PORT.to_string();
    let (mut bind, mut family6, mut family4) = (None::<String>, false, false);
    let mut foreground = false;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let (flag, attached) = if a.len() > 2 && a.starts_with('-') && !a.starts_with("--") {
            (&a[..2], Some(a[2..].to_string()))
        } else {
            (a.as_str(), None)
        };
        let mut value =
            || attached.clone().or_else(|| it.next().cloned()).ok_or(format!("option {flag} needs a value"));
        match flag {
            "-D" => foreground = true,
            // One process serves every session already (netserver's -f: do not fork).
            "-f" => {}
            "-p" => port = value()?,
            "-L" => {
                let v = value()?;
                let (addr, family) = v.split_once(',').unwrap_or((&v, ""));
                if !addr.is_empty() {
                    bind = Some(addr.trim_start_matches('[').trim_end_matches(']').to_string());
                }
                match family {
                    "6" | "inet6" => family6 = true,
                    "4" | "inet" => family4 = true,
                    _ => {}
                }
            }
            "-4" => family4 = true,
            "-6" => family6 = true,
            // Verbosity and debug: the server's log lines on stderr are all it says.
            "-v" | "-d" => {
                if flag == "-v" {
                    value()?;
                }
            }
            _ => return Err(format!("invalid option -- '{}'", flag.trim_start_matches('-'))),
        }
    }
    let bind = bind.or_else(|| {
        if family4 && !family6 {
            Some("0.0.0.0".into())
        } else if family6 && !family4 {
            Some("::".into())
        } else {
            None
        }
    });
    let mut native: Vec<String> =
        vec![args.first().cloned().unwrap_or_else(|| "ringperf".into()), "serve".into()];
    native.extend(["-p".into(), port]);
    // netserver limits no host to fewer sessions than the whole server takes, and harnesses
    // count on it: flent's rrul alone runs 11 netperfs from one host at once.
    native.extend(["--max-sessions-per-host".into(), DEFAULT_MAX_SESSIONS.to_string()]);
    if let Some(b) = bind {
        native.extend(["--bind".into(), b]);
    }
    Ok(ServerCall { native, foreground })
}

/// Runs ringperf as `netserver`. Returns the exit code (or runs the server until a signal).
pub fn main(argv: Vec<String>) -> i32 {
    let call = match parse(&argv) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("netserver: {e}");
            return 2;
        }
    };
    if call.foreground {
        return crate::run_native(call.native);
    }
    // netserver without -D daemonizes: the server runs on in a process of its own,
    // detached from this terminal, and this one reports and returns.
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("netserver: cannot find this program to start the server ({e}): run 'netserver -D'");
            return 1;
        }
    };
    let mut cmd = Command::new(exe);
    cmd.args(&call.native[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // A process group of its own: the terminal's Ctrl-C no longer reaches it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    match cmd.spawn() {
        Ok(child) => {
            let after = |flag: &str| call.native.iter().skip_while(|a| *a != flag).nth(1).cloned();
            let port = after("-p").unwrap_or_default();
            let host = after("--bind").unwrap_or_else(|| "IN(6)ADDR_ANY".into());
            println!(
                "Starting netserver with host '{host}' port '{port}' (ringperf serve, pid {})",
                child.id()
            );
            0
        }
        Err(e) => {
            eprintln!("netserver: cannot start the server ({e}): run 'netserver -D' to see why");
            1
        }
    }
}

/// `ringperf install-links DIR`: symlinks named `netperf` and `netserver` to this binary
/// in DIR, so harnesses that run netperf find ringperf.
pub fn install_links(dir: &Path) -> Result<i32, ringperf_engine::Error> {
    use ringperf_engine::Error;
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("finding this program's path (for the links to point at)", e))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    for name in LINK_NAMES {
        let link = dir.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&link) {
            let ours = meta.file_type().is_symlink() && std::fs::read_link(&link).is_ok_and(|t| t == exe);
            if ours {
                println!("{} -> {} (already there)", link.display(), exe.display());
                continue;
            }
            return Err(Error::Usage(format!(
                "{} exists and is not a link to this ringperf: remove it or pick another directory",
                link.display()
            )));
        }
        std::os::unix::fs::symlink(&exe, &link)
            .map_err(|e| Error::io(format!("making the link {}", link.display()), e))?;
        println!("{} -> {}", link.display(), exe.display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn netserver_flags_become_serve_flags() {
        assert_eq!(
            parse(&v("netserver -D")).unwrap(),
            ServerCall { native: v("netserver serve -p 12865 --max-sessions-per-host 64"), foreground: true }
        );
        assert_eq!(
            parse(&v("netserver -p 20000 -4")).unwrap().native,
            v("netserver serve -p 20000 --max-sessions-per-host 64 --bind 0.0.0.0")
        );
        assert_eq!(
            parse(&v("netserver -D -L 127.0.0.1,inet -p1234")).unwrap().native,
            v("netserver serve -p 1234 --max-sessions-per-host 64 --bind 127.0.0.1")
        );
        assert_eq!(
            parse(&v("netserver -6 -D -f")).unwrap().native,
            v("netserver serve -p 12865 --max-sessions-per-host 64 --bind ::")
        );
        assert!(parse(&v("netserver -Z key")).unwrap_err().contains("invalid option -- 'Z'"));
    }
}
