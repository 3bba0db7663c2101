//! ringperf invoked as `netserver`: netserver's flags become `ringperf serve`'s, and, as
//! netserver does, it goes to the background unless -D keeps it in the foreground.
//! `ringperf install-links DIR` makes the `netperf` and `netserver` links.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
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
            "-p" => {
                let v = value()?;
                port = v
                    .trim()
                    .parse::<u16>()
                    .map_err(|_| format!("-p {v}: not a port number: give the control port, 0 to 65535"))?
                    .to_string();
            }
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
    let (ready, ready_w) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("netserver: cannot make a pipe to hear from the server ({e}): run 'netserver -D'");
            return 1;
        }
    };
    let ready_fd = ready_w.as_raw_fd();
    let mut cmd = Command::new(exe);
    cmd.args(&call.native[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    cmd.env(READY_FD_ENV, ready_fd.to_string());
    // A process group of its own: the terminal's Ctrl-C no longer reaches it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // SAFETY: runs in the child between fork and exec and only calls fcntl, which is
    // async-signal-safe; `ready_fd` is open in the child (the parent holds it until spawn
    // returns).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            // The pipe is made close-on-exec; the server is to keep its write end.
            if libc::fcntl(ready_fd, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("netserver: cannot start the server ({e}): run 'netserver -D' to see why");
            return 1;
        }
    };
    // Only the server holds the write end now: it writes its address once it is bound, and
    // an end without one means it stopped first.
    drop(ready_w);
    match listening_address(ready) {
        Some(addr) => {
            let host = call
                .native
                .iter()
                .skip_while(|a| *a != "--bind")
                .nth(1)
                .cloned()
                .unwrap_or_else(|| "IN(6)ADDR_ANY".into());
            // The pid is the server's own (it is no shell): what stops it is `kill PID`.
            let line = format!(
                "Starting netserver with host '{host}' port '{}' (ringperf serve, pid {})\n",
                addr.port(),
                child.id()
            );
            if crate::output::stdout("the start line", &line).is_err() {
                eprintln!(
                    "netserver: the server runs on regardless (pid {0}): stop it with 'kill {0}'",
                    child.id()
                );
            }
            0
        }
        None => {
            eprintln!(
                "netserver: the server stopped before it was listening (port {} taken?): run 'netserver -D' to see why",
                call.native.iter().skip_while(|a| *a != "-p").nth(1).map_or("?", String::as_str)
            );
            1
        }
    }
}

/// The variable that tells `ringperf serve` which inherited descriptor to write its
/// listening address to (one line), then close: how the background netserver knows the
/// server is up, and on which port.
pub const READY_FD_ENV: &str = "RINGPERF_READY_FD";

/// How long the background netserver waits for the server to bind.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads the server's address line from `ready`, or `None` if the pipe ends (the server
/// stopped) or nothing comes within READY_TIMEOUT.
fn listening_address(ready: std::io::PipeReader) -> Option<std::net::SocketAddr> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(ready), &mut line);
        let _ = tx.send(line.trim().parse().ok());
    });
    rx.recv_timeout(READY_TIMEOUT).ok().flatten()
}

/// `ringperf serve`'s side of [`READY_FD_ENV`]: writes `addr` to the descriptor it names
/// and closes it. A variable that names no pipe is left alone.
pub fn tell_ready(addr: std::net::SocketAddr) {
    let Some(fd) = std::env::var(READY_FD_ENV).ok().and_then(|v| v.parse::<i32>().ok()) else { return };
    // SAFETY: libc::stat is plain data, for which all zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st`, a stat buffer of the right type; a descriptor that is
    // not open fails it, which is checked.
    let stat_ok = fd > 2 && unsafe { libc::fstat(fd, &mut st) } == 0;
    if !stat_ok || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return;
    }
    // SAFETY: the descriptor is an open pipe that the background netserver made for this
    // process to own; nothing else here uses it.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    let _ = writeln!(pipe, "{addr}");
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
                crate::print(
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
        crate::print("the list of links", &format!("{} -> {}\n", link.display(), exe.display()));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netperf::lines::v;

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
        for bad in ["x", "65536", "-1", "12865,4"] {
            let e = parse(&[String::from("netserver"), "-D".into(), "-p".into(), bad.into()]).unwrap_err();
            assert!(e.contains(&format!("-p {bad}: not a port number")), "{bad}: {e}");
        }
    }
}
