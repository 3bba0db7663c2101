//! `ringperf serve`: binds, logs server events to stderr, stops on SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ringperf_engine::control::auth::Psk;
use ringperf_engine::control::limits::Limits;
use ringperf_engine::spec::{MAX_DURATION_MS, MAX_FLOWS};
use ringperf_engine::{Error, Server, ServerConfig, ServerEvent};

use crate::args::ServeArgs;

pub fn run(a: &ServeArgs) -> Result<i32, Error> {
    let config = ServerConfig {
        psk: a.psk_file.as_deref().map(Psk::from_file).transpose()?,
        limits: Limits {
            max_duration_ms: a.max_duration.unwrap_or(MAX_DURATION_MS),
            max_flows: a.max_flows.unwrap_or(MAX_FLOWS),
            max_sessions: a.max_sessions,
            max_handshakes: a.max_handshakes,
            max_rate_bps: a.max_rate,
            max_message: a.max_message,
            max_memory: a.max_memory,
        },
        allow: a.allow.clone(),
    };
    let server = Server::bind(SocketAddr::new(a.bind, a.port))?.with_config(config);
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| Error::io("installing a signal handler", e))?;
    }
    server.serve(&stop, Arc::new(log))?;
    Ok(0)
}

fn log(e: ServerEvent) {
    match e {
        ServerEvent::Listening { addr } => eprintln!("ringperf serve: listening on {addr}"),
        ServerEvent::SessionStarted { peer } => eprintln!("ringperf serve: {peer}: session started"),
        ServerEvent::TestDone { peer, test, bytes, transactions } => {
            eprintln!("ringperf serve: {peer}: {test} done ({bytes} bytes, {transactions} transactions)")
        }
        ServerEvent::TestStopped { peer, test, bytes, transactions } => eprintln!(
            "ringperf serve: {peer}: {test} stopped by the client ({bytes} bytes, {transactions} transactions until then)"
        ),
        ServerEvent::SessionFailed { peer, error } => {
            eprintln!("ringperf serve: {peer}: session failed: {error}")
        }
        ServerEvent::Rejected { peer, reason } => eprintln!("ringperf serve: {peer}: rejected: {reason}"),
        ServerEvent::Stopping { sessions } => {
            eprintln!("ringperf serve: stopping; waiting for {sessions} session(s) in progress")
        }
    }
}
