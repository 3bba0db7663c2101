//! HOST:PORT wherever a host is taken, against real servers on loopback: `-H`, `--from` and
//! a plan's agent addresses, `[::1]:PORT` where this host has IPv6 loopback; a port named
//! twice with two values is refused before anything connects, both values named.

use ringperf_tests::fabric::{KeyFile, PlanFile};
use ringperf_tests::{bool_at, ringperf, run_with_timeout, skip, str_at, Server, RUN_TIMEOUT};

#[test]
fn a_test_reaches_a_server_given_as_host_colon_port() {
    let rp = ringperf!();
    let server = rp.serve();
    let hostport = format!("127.0.0.1:{}", server.port());
    for (workload, host) in [("stream", hostport.as_str()), ("rr", &format!("localhost:{}", server.port()))] {
        let r = rp.run_json(&[workload, "-H", host, "-l", "0.3"]);
        assert!(!bool_at(&r, "partial"), "{workload} -H {host}: partial: {r}");
        assert!(!bool_at(&r, "embedded_server"), "-H {host} ran on the embedded server");
        assert!(str_at(&r, "server").ends_with(&format!(":{}", server.port())), "-H {host}: {r}");
    }
    // The same port twice is one port; two different ones are refused, both named.
    rp.run_json(&["stream", "-H", &hostport, "-p", &server.port_arg(), "-l", "0.2"]);
    let line = rp.run(&["stream", "-H", &hostport, "-p", "1", "-l", "0.2"]).failure(2, &[&hostport, "-p 1"]);
    assert!(line.contains("give the port once"), "{line}");
}

#[test]
fn an_ipv6_server_is_reached_as_bracketed_address_and_port() {
    let test = "an_ipv6_server_is_reached_as_bracketed_address_and_port";
    if let Err(e) = std::net::TcpListener::bind("[::1]:0") {
        skip(test, &format!("this host has no IPv6 loopback ::1 ({e})"));
        return;
    }
    let rp = ringperf!();
    let server = Server::start(rp.command(&["serve", "--bind", "::1", "--port", "0"]));
    let want = format!("[::1]:{}", server.port());
    let r = rp.run_json(&["rr", "-H", &want, "-l", "0.3"]);
    assert_eq!(str_at(&r, "server"), want);
    // A bare IPv6 address names no port: -p gives it.
    let r = rp.run_json(&["rr", "-H", "::1", "-p", &server.port_arg(), "-l", "0.3"]);
    assert_eq!(str_at(&r, "server"), want);
}

#[test]
fn a_third_party_agent_and_plan_agents_are_given_as_host_colon_port() {
    let rp = ringperf!();
    let key = KeyFile::new("hostport");
    let a = Server::spawn_with(&rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    let b = Server::spawn_with(&rp, &["--psk-file", key.arg()]);
    let (agent, peer) = (format!("127.0.0.1:{}", a.port()), format!("127.0.0.1:{}", b.port()));
    let r = rp.run_json(&["stream", "-H", &peer, "--from", &agent, "--psk-file", key.arg(), "-l", "0.3"]);
    assert!(!bool_at(&r, "partial"), "partial: {r}");
    assert_eq!(str_at(&r, "client"), agent, "the agent that ran the client side");
    assert_eq!(str_at(&r, "server"), peer);
    // The case: a port in --from is no longer refused with a hint to -p; a second,
    // different one is refused naming --from-port, the flag that gave it.
    let line = rp
        .run(&["stream", "-H", &peer, "--from", &agent, "--from-port", "2", "--psk-file", key.arg()])
        .failure(2, &[&format!("--from {agent}"), "--from-port 2", "give the port once"]);
    assert!(!line.contains("-p "), "the hint names the wrong flag: {line}");

    let b2 = Server::spawn_with(&rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    let plan = format!(
        "[[agent]]\nname = \"a\"\naddress = \"{agent}\"\nkey_file = \"{k}\"\n\n\
         [[agent]]\nname = \"b\"\naddress = \"127.0.0.1\"\nport = {bp}\nkey_file = \"{k}\"\n\n\
         [[test]]\nworkload = \"rr\"\noptions = \"-l 0.3\"\npairs = [[\"a\", \"b\"]]\n",
        k = key.arg(),
        bp = b2.port()
    );
    let plan = PlanFile::new("hostport", &plan);
    let o = run_with_timeout(rp.command(&["plan", plan.arg(), "--json"]), RUN_TIMEOUT).success();
    let r = o.json();
    let test = &r["tests"][0];
    assert!(test["report"].is_object(), "the plan's test has no report: {r}");
    assert_eq!(str_at(&test["report"], "client"), agent, "{r}");
}

#[test]
fn a_server_listens_on_an_address_given_with_its_port() {
    let rp = ringperf!();
    // A port free a moment ago; the server takes it at once.
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let at = format!("127.0.0.1:{port}");
    let server = Server::start(rp.command(&["serve", "--bind", &at]));
    assert_eq!(server.port(), port, "--bind {at} listened elsewhere");
    let r = rp.run_json(&["rr", "-H", &at, "-l", "0.2"]);
    assert!(!bool_at(&r, "partial"), "partial: {r}");
    rp.run(&["serve", "--bind", "127.0.0.1:1", "-p", "2"])
        .failure(2, &["--bind 127.0.0.1:1", "-p 2", "give the port once"]);
    rp.run(&["stream", "-L", "127.0.0.1:5"])
        .failure(2, &["names port 5", "give the address alone (127.0.0.1)"]);
}
