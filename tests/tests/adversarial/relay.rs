//! A relay: a keyless host that agent A is pointed at (a wrong or stale address, a DNS
//! answer) forwards A's login to a real agent C of the same key, hoping A takes C's proof
//! as its own. The proofs are bound to the endpoint A dialled, so A must refuse before it
//! proves anything or sends a byte of data, and C must not log the relay in. The same
//! holds for a plain client with a key. A forward that C's operator lists with
//! `--public-endpoint` (a port forward) works.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use ringperf_tests::fabric::KeyFile;
use ringperf_tests::{ringperf, Ringperf, Server, TestReportExt};

use crate::{baseline, still_serves};

/// What the relay does to the first frame the client sends (its Hello).
#[derive(Clone)]
enum Hello {
    /// Passes it on byte for byte.
    AsIs,
    /// Rewrites the endpoint it names to this one (the real server's), so that the server
    /// answers with its proof instead of refusing.
    NamingEndpoint(String),
}

/// What the relay saw of one connection from its client.
#[derive(Default)]
struct Seen {
    /// Every byte the client sent.
    bytes: Vec<u8>,
    /// The client closed its side.
    closed: bool,
}

/// A TCP forwarder on 127.0.0.1 to `upstream`, recording everything its clients send.
struct Forwarder {
    port: u16,
    connections: Arc<Mutex<Vec<Arc<Mutex<Seen>>>>>,
    stop: Arc<AtomicBool>,
    accepting: Option<JoinHandle<()>>,
}

impl Forwarder {
    /// Binds the forwarder's port; it forwards once [`Forwarder::start`] names the server.
    fn bind() -> TcpListener {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding the forwarder")
    }

    fn start(listener: TcpListener, upstream: SocketAddr, hello: Hello) -> Forwarder {
        let port = listener.local_addr().expect("forwarder address").port();
        let connections: Arc<Mutex<Vec<Arc<Mutex<Seen>>>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let accepting = {
            let (connections, stop) = (connections.clone(), stop.clone());
            thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let seen = Arc::new(Mutex::new(Seen::default()));
                    connections.lock().expect("lock").push(seen.clone());
                    let Ok(server) = TcpStream::connect(upstream) else { continue };
                    relay(client, server, seen, hello.clone());
                }
            })
        };
        Forwarder { port, connections, stop, accepting: Some(accepting) }
    }

    fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn port_arg(&self) -> String {
        self.port.to_string()
    }

    /// Waits until every connection's client has closed; returns what each sent.
    fn sent_once_closed(&self, within: Duration) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + within;
        loop {
            let all = self.connections.lock().expect("lock").clone();
            let closed = all.iter().all(|s| s.lock().expect("lock").closed);
            if closed || Instant::now() > deadline {
                assert!(closed, "a client of the relay never closed its connection");
                return all.iter().map(|s| s.lock().expect("lock").bytes.clone()).collect();
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the blocking accept so the thread sees the flag.
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(t) = self.accepting.take() {
            let _ = t.join();
        }
    }
}

/// Copies both ways until either side closes; what the client sends is recorded.
fn relay(client: TcpStream, server: TcpStream, seen: Arc<Mutex<Seen>>, hello: Hello) {
    let (mut from_client, mut to_server) =
        (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
    thread::spawn(move || {
        let mut first = true;
        let mut pending = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match from_client.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            seen.lock().expect("lock").bytes.extend_from_slice(&buf[..n]);
            let out = match (&hello, first) {
                (Hello::NamingEndpoint(real), true) => {
                    pending.extend_from_slice(&buf[..n]);
                    let Some(frame) = rewrite_hello(&pending, real) else { continue };
                    first = false;
                    frame
                }
                _ => buf[..n].to_vec(),
            };
            if to_server.write_all(&out).is_err() {
                break;
            }
        }
        seen.lock().expect("lock").closed = true;
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let (mut from_server, mut to_client) = (server, client);
    thread::spawn(move || {
        let _ = std::io::copy(&mut from_server, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Write);
    });
}

/// The client's first frame, once whole, with its `server_endpoint` replaced by `real`.
fn rewrite_hello(bytes: &[u8], real: &str) -> Option<Vec<u8>> {
    let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let body = bytes.get(4..4 + len)?;
    let mut hello: serde_json::Value = serde_json::from_slice(body).expect("the client's hello is JSON");
    hello["server_endpoint"] = serde_json::json!(real);
    let body = serde_json::to_vec(&hello).expect("JSON");
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame.extend_from_slice(&bytes[4 + len..]);
    Some(frame)
}

/// The frames in `bytes` (length-prefixed JSON), as message types.
fn frame_types(bytes: &[u8]) -> Vec<String> {
    let mut types = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let Some(body) = rest.get(4..4 + len) else {
            types.push(format!("a cut frame of {} bytes", rest.len()));
            break;
        };
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        types.push(v["type"].as_str().unwrap_or("not JSON").to_string());
        rest = &rest[4 + len..];
    }
    if !rest.is_empty() && rest.len() < 4 {
        types.push(format!("{} stray bytes", rest.len()));
    }
    types
}

/// Agent A (third party) and agent C, both of `key`; C with `extra` flags.
fn agents(rp: &Ringperf, key: &KeyFile, extra: &[&str]) -> (Server, Server) {
    let a = Server::spawn_with(rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    let mut c_args = vec!["--psk-file", key.arg()];
    c_args.extend_from_slice(extra);
    let c = Server::spawn_with(rp, &c_args);
    (a, c)
}

/// The controller's stream from `a` against the host at `port`, and a plain client's.
fn through(
    rp: &Ringperf,
    a: &Server,
    port: &str,
    key: &KeyFile,
) -> (ringperf_tests::Outcome, ringperf_tests::Outcome) {
    let ap = a.port_arg();
    let base = ["stream", "-H", "127.0.0.1", "-p", port, "-l", "0.5", "--json", "--psk-file", key.arg()];
    let mut third_party = base.to_vec();
    third_party.extend(["--from", "127.0.0.1", "--from-port", &ap]);
    (rp.run(&third_party), rp.run(&base))
}

#[test]
fn an_agent_pointed_at_a_relay_refuses_it_before_proving_or_sending_anything() {
    let rp = ringperf!();
    let key = KeyFile::new("relay");
    let (mut a, mut c) = agents(&rp, &key, &[]);
    let (base_a, base_c) = (baseline(&a), baseline(&c));
    let c_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, c.port()));

    for hello in [Hello::AsIs, Hello::NamingEndpoint(c_addr.to_string())] {
        let relay = Forwarder::start(Forwarder::bind(), c_addr, hello.clone());
        let (third_party, direct) = through(&rp, &a, &relay.port_arg(), &key);
        // The controller is told the peer did not prove it is the host A dialled.
        let said = third_party.failure(3, &["prove it is the host dialled", &relay.endpoint()]);
        // So is a plain client with the key.
        direct.failure(3, &["prove it is the host dialled", &relay.endpoint()]);
        let sent = relay.sent_once_closed(Duration::from_secs(15));
        // Two connections, A's and the plain client's; each sent its Hello and nothing
        // more: no proof, no spec, and no data connection came this way.
        assert_eq!(sent.len(), 2, "the relay saw {} connections", sent.len());
        for bytes in &sent {
            assert_eq!(frame_types(bytes), ["hello"], "a client sent more than its hello: {said}");
        }
        // A named the relay as it was given and as it resolved it.
        let against = format!("against {0} ({0})", relay.endpoint());
        assert!(a.wait_for_log(&against, Duration::from_secs(5)).is_some(), "{:?}", a.log());
        // C logged no one in: it refused the relay's Hello, or saw it leave after the challenge.
        let refusal = match hello {
            Hello::AsIs => "not this server's endpoint",
            Hello::NamingEndpoint(_) => "after the challenge",
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.log().iter().filter(|l| l.contains(refusal)).count() < 2 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(c.log().iter().filter(|l| l.contains(refusal)).count(), 2, "{:?}", c.log());
        assert!(
            !c.log().iter().any(|l| l.contains("session started")),
            "C logged the relay in: {:?}",
            c.log()
        );
        c.log().iter().filter(|l| l.contains(refusal)).for_each(|l| assert!(l.contains("rejected"), "{l}"));
    }
    still_serves(&rp, &mut c, base_c, Some(key.path()));
    still_serves(&rp, &mut a, base_a, Some(key.path()));
}

#[test]
fn a_forward_the_server_lists_as_its_public_endpoint_works() {
    let rp = ringperf!();
    let key = KeyFile::new("relay-listed");
    // The forward's port is C's public endpoint (a port forward to it).
    let listener = Forwarder::bind();
    let public = format!("127.0.0.1:{}", listener.local_addr().expect("address").port());
    let (mut a, mut c) = agents(&rp, &key, &["--public-endpoint", &public]);
    let base_c = baseline(&c);
    assert!(c.log().iter().any(|l| l.contains(&public) && l.contains("--public-endpoint")), "{:?}", c.log());
    let forward = Forwarder::start(listener, SocketAddr::from((Ipv4Addr::LOCALHOST, c.port())), Hello::AsIs);

    let (third_party, direct) = through(&rp, &a, &forward.port_arg(), &key);
    for (who, o) in [("through agent A", third_party), ("direct", direct)] {
        let r = o.success().report();
        assert!(!r.partial, "{who}: {:?}", r.partial_reason);
        assert!(r.local.bytes_sent > 0, "{who}: nothing moved");
        assert_eq!(r.local.bytes_sent, r.remote().bytes_received, "{who}");
        assert_eq!(r.server, public, "{who}");
    }
    let against = format!("against {public} ({public})");
    assert!(a.log().iter().any(|l| l.contains(&against)), "{:?}", a.log());
    // The control connections went through the forward; each logged in on C.
    assert_eq!(forward.sent_once_closed(Duration::from_secs(15)).len(), 2);
    assert_eq!(c.log().iter().filter(|l| l.contains("session started")).count(), 2, "{:?}", c.log());
    still_serves(&rp, &mut c, base_c, Some(key.path()));
    a.assert_running();
}
