//! Bad input: each mistake gets its exit code (2 usage, 3 peer or network) and a one-line
//! message on stderr that says what is wrong and what to do.

use ringperf_tests::{ringperf, run_with_timeout, skip, skip_unless, Netns, RefusingPort, IP, RUN_TIMEOUT};

#[test]
fn refused_port_exits_3_and_says_refused() {
    let closed = RefusingPort::new();
    let port = closed.port().to_string();
    let o = ringperf!().run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "1"]);
    let line = o.failure(3, &["refused", &port]);
    assert!(line.contains("ringperf serve"), "the message does not say to start the server: {line}");
}

#[test]
fn zero_send_size_exits_2() {
    let o = ringperf!().run(&["stream", "-m", "0", "-l", "1"]);
    o.failure(2, &["-m", "at least 1 byte"]);
}

#[test]
fn send_size_over_1_gib_exits_2() {
    let o = ringperf!().run(&["stream", "-m", "2G", "-l", "1"]);
    o.failure(2, &["-m", "1 GiB"]);
}

#[test]
fn malformed_size_exits_2() {
    let o = ringperf!().run(&["stream", "-m", "12Q", "-l", "1"]);
    o.failure(2, &["-m", "64K"]);
}

#[test]
fn zero_rr_size_exits_2() {
    let o = ringperf!().run(&["rr", "-r", "0", "-l", "1"]);
    o.failure(2, &["-r", "at least 1 byte"]);
}

#[test]
fn negative_length_exits_2() {
    let o = ringperf!().run(&["stream", "-l", "-1"]);
    o.failure(2, &["length", "positive"]);
}

#[test]
fn zero_length_exits_2() {
    let o = ringperf!().run(&["rr", "-l", "0"]);
    o.failure(2, &["length", "positive"]);
}

#[test]
fn unknown_flag_exits_2() {
    let o = ringperf!().run(&["stream", "--no-such-flag", "-l", "1"]);
    o.failure(2, &["--no-such-flag", "--help"]);
}

#[test]
fn unknown_subcommand_exits_2() {
    let o = ringperf!().run(&["launch"]);
    o.failure(2, &["launch", "--help"]);
}

#[test]
fn nonexistent_local_cpu_exits_2_and_names_it() {
    let o = ringperf!().run(&["stream", "-T", "999,0", "-l", "1"]);
    o.failure(2, &["CPU 999", "-T"]);
}

/// The remote CPU is checked by the server, whose error reply becomes the client's.
#[test]
fn nonexistent_remote_cpu_exits_2_and_names_it() {
    let o = ringperf!().run(&["stream", "-T", ",999", "-l", "1"]);
    o.failure(2, &["CPU 999", "remote", "-T"]);
}

#[test]
fn unknown_congestion_control_exits_2() {
    let o = ringperf!().run(&["stream", "--cc", "nosuchcc", "-l", "1"]);
    o.failure(2, &["nosuchcc", "tcp_available_congestion_control"]);
}

#[test]
fn invalid_congestion_control_name_exits_2() {
    let o = ringperf!().run(&["stream", "--cc", "../etc", "-l", "1"]);
    o.failure(2, &["../etc", "not a valid name"]);
}

#[test]
fn serve_on_a_port_in_use_exits_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let o = ringperf!().run(&["serve", "--bind", "127.0.0.1", "--port", &port]);
    o.failure(2, &["already in use", "--port"]);
}

#[test]
fn serve_on_a_foreign_address_exits_2() {
    // 198.18.0.1 (benchmarking range) is not an address of this host; binding sends nothing.
    let o = ringperf!().run(&["serve", "--bind", "198.18.0.1", "--port", "0"]);
    o.failure(2, &["198.18.0.1", "--bind"]);
}

/// An unreachable host, inside an empty network namespace made for this test: it has no
/// route at all, so connect fails at once with ENETUNREACH and no packet leaves.
#[test]
fn unreachable_host_exits_3_and_says_so() {
    if skip_unless("unreachable_host_exits_3_and_says_so", true, &[IP]) {
        return;
    }
    let name = format!("rpt-unreach-{}", std::process::id());
    let ns = match Netns::create(&name) {
        Ok(ns) => ns,
        Err(why) => {
            skip("unreachable_host_exits_3_and_says_so", &why);
            return;
        }
    };
    let rp = ringperf!();
    let cmd = ns.exec(rp.path(), &["stream", "-H", "198.18.0.1", "-l", "1"]);
    let o = run_with_timeout(cmd, RUN_TIMEOUT);
    o.failure(3, &["cannot reach", "198.18.0.1", "route"]);
    drop(ns);
    let left = run_with_timeout(
        {
            let mut c = std::process::Command::new("ip");
            c.args(["netns", "list"]);
            c
        },
        std::time::Duration::from_secs(10),
    );
    assert!(!left.stdout.contains(&name), "namespace {name} was not removed");
}
