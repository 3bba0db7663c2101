//! `ringperf serve`: binds (both address families by default), logs server events to
//! stderr with a timestamp, and stops on SIGINT, SIGTERM or SIGHUP (unless ignored, as
//! under `nohup`), saying which: once the sessions in progress end, or when its grace is
//! over (cutting those still running), and at once on a second signal.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use ringperf_control::auth::{Endpoint, Psk};
use ringperf_control::limits::{default_total_memory, Limits};
use ringperf_control::{Server, ServerConfig, ServerEvent, DEFAULT_PORT};
use ringperf_core::payload::PayloadFiles;
use ringperf_core::setting::spelled;
use ringperf_core::spec::{MAX_DURATION_MS, MAX_FLOWS};
use ringperf_core::text::{one_line, peer_text};
use ringperf_core::units::format_bytes;
use ringperf_core::Error;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::flag;

use crate::args::ServeArgs;

/// Exit code of a server stopped by a second signal while sessions were still running.
const STOPPED_NOW: i32 = 130;

pub fn run(a: &ServeArgs) -> Result<i32, Error> {
    let config = ServerConfig {
        psk: a.psk_file.as_deref().map(Psk::from_file).transpose()?,
        limits: Limits {
            max_duration_ms: a.max_duration.unwrap_or(MAX_DURATION_MS),
            max_flows: a.max_flows.unwrap_or(MAX_FLOWS),
            max_sessions: a.max_sessions,
            max_sessions_per_host: a.max_sessions_per_host,
            max_handshakes: a.max_handshakes,
            max_rate_bps: a.max_rate,
            max_message: a.max_message,
            max_memory: a.max_memory,
            max_total_memory: a.max_total_memory.unwrap_or_else(default_total_memory),
        },
        allow: a.allow.clone(),
        in_client_process: false,
        allow_third_party: a.allow_third_party,
        public_endpoints: public_endpoints(&a.public_endpoint)?,
        payload_files: PayloadFiles::new(a.payload_files.clone())?,
    };
    let server = match &a.bind {
        Some(b) => {
            let port = b.port_or("--bind", "-p", a.port, DEFAULT_PORT).map_err(Error::Usage)?;
            let ip = b.host.parse().map_err(|_| Error::Usage(format!("--bind {b}: give an IP address")))?;
            Server::bind(SocketAddr::new(ip, port))?
        }
        None => Server::bind_all(a.port.unwrap_or(DEFAULT_PORT))?,
    };
    let addr = server.local_addr();
    // Bound and listening: a background netserver waiting to hear so can report and return.
    crate::netperf::ready::tell_ready(addr);
    let l = &config.limits;
    say(&format!(
        "{}; limits: {} sessions ({} per host), {} of payload memory in all and {} per test, tests up to {} s on {} flows",
        match &config.psk {
            Some(_) => "clients must prove they hold the key (--psk-file)",
            None => "no key: any client that reaches the port may run tests",
        },
        l.max_sessions,
        l.max_sessions_per_host,
        format_bytes(l.max_total_memory),
        format_bytes(l.max_memory),
        l.max_duration_ms / 1000,
        l.max_flows,
    ));
    if config.psk.is_none() && !addr.ip().is_loopback() {
        let reach = if config.allow.is_empty() { "this host" } else { "this host from the --allow list" };
        say(&format!(
            "warning: no key, and bound to {addr}: anyone who can reach {reach} on port {} can run tests: use --psk-file",
            addr.port()
        ));
    }
    if !config.public_endpoints.is_empty() {
        let listed: Vec<String> = config.public_endpoints.iter().map(ToString::to_string).collect();
        say(&format!(
            "proves it is the host dialled at the address a connection arrives on and at {} (--public-endpoint)",
            listed.join(", ")
        ));
    }
    if config.allow_third_party {
        say("third-party runs allowed (--allow-third-party): a controller with the key may have this agent send to or receive from another agent that proves it holds the same key");
    }
    for f in config.payload_files.iter() {
        say(&format!("payload file {f} may be sent for a peer that names its label (--payload-file)"));
    }
    if server.is_dual_stack() {
        say("one IPv6 socket serves IPv4 clients too (shown as their IPv4 addresses)");
    }
    let server = server.with_config(config);

    let stop = Arc::new(AtomicBool::new(false));
    // The signal that stopped the server, for the log.
    let which = Arc::new(AtomicUsize::new(0));
    STOP_ON_LOG_FAILURE.get_or_init(|| stop.clone());
    for sig in crate::interrupt::stop_signals() {
        let fail = |e| Error::io("installing a signal handler", e);
        // Registered first, so it sees the flag before this signal sets it: the second
        // signal ends the process at once, sessions or not.
        flag::register_conditional_shutdown(sig, STOPPED_NOW, stop.clone()).map_err(fail)?;
        flag::register_usize(sig, which.clone(), sig as usize).map_err(fail)?;
        flag::register(sig, stop.clone()).map_err(fail)?;
    }
    server.serve(&stop, Arc::new(move |e| log(e, which.load(Ordering::SeqCst))))?;
    Ok(0)
}

/// The endpoints of --public-endpoint, each name resolved once, here, to its addresses.
fn public_endpoints(given: &[String]) -> Result<Vec<Endpoint>, Error> {
    let mut all = Vec::new();
    for g in given {
        let addrs = g.to_socket_addrs().map_err(|e| {
            Error::Usage(format!(
                "cannot use --public-endpoint '{g}': {e}: give the HOST:PORT clients dial, e.g. 203.0.113.5:12866 or [2001:db8::5]:12866"
            ))
        })?;
        let before = all.len();
        all.extend(addrs.map(Endpoint::of));
        if all.len() == before {
            return Err(Error::Usage(format!(
                "--public-endpoint '{g}' resolves to no address: check the name"
            )));
        }
    }
    all.dedup();
    Ok(all)
}

/// The name of a stop signal, for the log.
fn signal_name(sig: usize) -> &'static str {
    match sig as i32 {
        SIGINT => "SIGINT (Ctrl-C)",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// One log line: a timestamp, then `line` kept to one line.
/// Set once serving: a log line that cannot be written stops the server through it.
static STOP_ON_LOG_FAILURE: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// One log line: a timestamp, then `line` kept to one line. A server whose log cannot be
/// written (its reader gone, a full disk) would go on serving with no record of who it
/// served and whom it refused: it stops instead, as on SIGTERM (the sessions running end
/// first), and its exit code says so (see crate::output).
fn say(line: &str) {
    // The engine escapes what a peer sent; this keeps any line to one line regardless.
    let line = format!("{} ringperf serve: {}\n", timestamp(SystemTime::now()), one_line(line));
    if crate::output::log(&line).is_err() {
        if let Some(stop) = STOP_ON_LOG_FAILURE.get() {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Logs `e`; `signal`: the signal that stopped the server (0: none yet).
fn log(e: ServerEvent, signal: usize) {
    // Reasons name settings by token: the operator reads them as this front end's flags.
    say(&spelled(&match e {
        ServerEvent::Listening { addr } => format!("listening on {addr}"),
        ServerEvent::SessionStarted { peer } => format!("{peer}: session started"),
        ServerEvent::TestAccepted { peer, test, client_side, memory, in_use, budget, running } => format!(
            "{peer}: {test} accepted: {} of payload memory reserved{} ({} of {} in use by {running} running tests)",
            format_bytes(memory),
            if client_side { " for its client side" } else { "" },
            format_bytes(in_use),
            format_bytes(budget)
        ),
        ServerEvent::ThirdParty { peer, test, target, address } => format!(
            "{peer}: third party: running the client side of {test} against {target} ({address}) for this controller"
        ),
        ServerEvent::PayloadFile { peer, label, path } => {
            format!("{peer}: sending payload file '{label}' ({}) for this peer", path.display())
        }
        ServerEvent::TestDone { peer, test, bytes, transactions } => {
            format!("{peer}: {test} done ({bytes} bytes, {transactions} transactions)")
        }
        ServerEvent::TestStopped { peer, test, bytes, transactions } => format!(
            "{peer}: {test} stopped by the client ({bytes} bytes, {transactions} transactions until then)"
        ),
        ServerEvent::SessionFailed { peer, error } => format!("{peer}: session failed: {error}"),
        ServerEvent::ForeignDatagrams { peer, datagrams, first } => format!(
            "{peer}: dropped {datagrams} datagrams sent to this session's UDP ports from other addresses than {}, the control connection's (the first from {}): a hello claiming another host's address, or a NAT mapping UDP elsewhere",
            peer.ip().to_canonical(),
            peer_text(&first.to_string())
        ),
        ServerEvent::Rejected { peer, reason } => format!("{peer}: rejected: {reason}"),
        ServerEvent::Stopping { sessions: 0, .. } => format!("stopping on {}", signal_name(signal)),
        ServerEvent::Stopping { sessions, grace } => format!(
            "stopping on {}: waiting up to {} s for {sessions} session(s) to end, then cutting them; press Ctrl-C again (or send the signal again) to stop now",
            signal_name(signal),
            grace.as_secs()
        ),
        ServerEvent::SessionCut { peer, test, stopping } => format!(
            "{peer}: {} cut: {}; its connections are closed",
            test.unwrap_or("session"),
            if stopping {
                "still running at the end of the stopping server's grace"
            } else {
                "stopped making progress: still running past its deadline (its test's length plus the peer grace)"
            }
        ),
        ServerEvent::Stopped { unfinished } => format!(
            "stopped: {unfinished} session(s) did not end even once cut (blocked outside their sockets); exiting without them"
        ),
    }));
}

/// RFC 3339 in UTC with milliseconds, e.g. 2026-12-03T13:55:17.123Z.
fn timestamp(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_date(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01. Counts in 400-year eras (146097
/// days each) from 0000-03-01, so that the leap day ends a year and every month length
/// follows from the month alone.
fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days from 0000-03-01 to 1970-01-01
    let era = z / 146_097;
    let doe = z % 146_097; // day of the era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of the era
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the year from March 1st
    let mp = (5 * doy + 2) / 153; // month from March, 0..=11
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = era * 400 + yoe + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn help_defaults_are_the_engine_defaults() {
        use clap::Parser;
        use ringperf_control::limits::{DEFAULT_MAX_MEMORY, DEFAULT_MAX_MESSAGE};
        let cli = crate::args::Cli::try_parse_from(["ringperf", "serve"]).unwrap();
        let crate::args::Command::Serve(a) = cli.command else { panic!("not serve") };
        assert_eq!(a.max_message, DEFAULT_MAX_MESSAGE);
        assert_eq!(a.max_memory, DEFAULT_MAX_MEMORY);
        assert_eq!(a.bind, None, "both families by default");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let at = |s: u64, ms: u64| timestamp(UNIX_EPOCH + Duration::from_millis(s * 1000 + ms));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_796_305_717, 123), "2026-12-03T13:48:37.123Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
    }
}
