//! ringperf invoked as `netserver`: netserver's flags become `ringperf serve`'s, and, as
//! netserver does, it goes to the background unless -D keeps it in the foreground, and
//! hears from the server when it is up ([`super::ready`]).

use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

use ringperf_control::limits::DEFAULT_MAX_SESSIONS;

use super::call::NETPERF_PORT;
use super::ready::{listening_address, READY_FD_ENV};

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
        return crate::native::run_native(call.native);
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
