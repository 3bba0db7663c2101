//! The client side of one test: where the server is (started here for the test, reached
//! over the network, or behind an agent that runs the client side for a controller) and
//! the one entry that runs a test against it. The connection is `connection`'s, the run
//! over it `run`'s, a third-party request `third_party`'s.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use crate::connection::{connect, open_control, resolve};
use crate::run::{run_on, RunOptions};
use crate::server::{Server, ServerConfig};
use crate::wire::{to_wire, Recipient};
use ringperf_core::env::check_cpu;
use ringperf_core::error::{Error, Result};
use ringperf_core::payload::Payload;
use ringperf_core::report::TestReport;
use ringperf_core::setting::Setting;
use ringperf_core::spec::TestSpec;

/// Where the server is.
#[derive(Clone, Debug)]
pub enum Target {
    /// A server started inside this process on 127.0.0.1, for this one test.
    Embedded,
    Remote {
        host: String,
        port: u16,
    },
    /// Third party: the agent at `agent_host`:`agent_port` runs the client side against the
    /// agent at `peer_host`:`peer_port` (as the first agent resolves and reaches it) and
    /// sends back the whole report; this host carries only the control connection.
    ThirdParty {
        agent_host: String,
        agent_port: u16,
        peer_host: String,
        peer_port: u16,
    },
}

/// Runs one test and returns the merged report of both sides.
pub fn run_test(spec: &TestSpec, target: &Target) -> Result<TestReport> {
    run_test_with(spec, target, &RunOptions::default())
}

/// [`run_test`] with options (live samples, confidence level, a key, an interrupt). A run
/// cut short after its window opened returns Ok with `partial` set; the caller decides
/// the exit code.
pub fn run_test_with(spec: &TestSpec, target: &Target, opts: &RunOptions<'_>) -> Result<TestReport> {
    spec.validate()?;
    for &cpu in &spec.local.cpus {
        check_cpu(cpu, "local")?;
    }
    match (&spec.local.payload, target) {
        // Checked before connecting, so a FIFO or a typo fails here, not mid-setup.
        (Payload::File(path), Target::Embedded | Target::Remote { .. }) => {
            ringperf_core::input::open_regular(path, "payload file")?;
        }
        (Payload::Label(label), Target::Embedded | Target::Remote { .. }) => {
            return Err(Error::Usage(format!(
                "payload label '{label}' names a file that an agent's operator listed, which only that agent sends: run the test from that agent"
            )))
        }
        _ => {}
    }
    match target {
        Target::Embedded => {
            let server = Server::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?
                .with_config(ServerConfig { in_client_process: true, ..ServerConfig::default() });
            let addr = server.local_addr();
            let stop = Arc::new(AtomicBool::new(false));
            let serving = {
                let stop = stop.clone();
                thread::Builder::new()
                    .name("ringperf-embedded-server".into())
                    .spawn(move || server.serve(&stop, Arc::new(|_| {})))
                    .map_err(|e| Error::io("starting the embedded server", e))?
            };
            let result = open_control(&[addr], spec, opts.local_bind, "127.0.0.1")
                .and_then(|s| run_on(s, spec, addr.to_string(), true, opts));
            stop.store(true, Ordering::Relaxed);
            let _ = serving.join();
            result
        }
        Target::Remote { host, port } => {
            let addrs = resolve(host, *port, Setting::Host.token())?;
            let stream = open_control(&addrs, spec, opts.local_bind, host)?;
            run_on(stream, spec, format!("{host}:{port}"), false, opts)
        }
        Target::ThirdParty { agent_host, agent_port, peer_host, peer_port } => {
            // Before connecting: a spec that names a path of this host never leaves it.
            to_wire(spec, Recipient::Agent)?;
            let stream = connect(&resolve(agent_host, *agent_port, Setting::From.token())?)?;
            let agent = format!("{agent_host}:{agent_port}");
            crate::third_party::request(stream, spec, &agent, peer_host, *peer_port, opts)
        }
    }
}
