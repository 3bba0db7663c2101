//! `ringperf serve`: binds, logs server events to stderr, stops on SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ringperf_engine::{Error, Server, ServerEvent};

use crate::args::ServeArgs;

pub fn run(a: &ServeArgs) -> Result<i32, Error> {
    let server = Server::bind(SocketAddr::new(a.bind, a.port))?;
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
        ServerEvent::SessionFailed { peer, error } => {
            eprintln!("ringperf serve: {peer}: session failed: {error}")
        }
        ServerEvent::Stopping { sessions } => {
            eprintln!("ringperf serve: stopping; waiting for {sessions} session(s) in progress")
        }
    }
}
