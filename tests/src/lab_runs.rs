//! Tests run across a `tools/lab` lab: a client on one host against a server on another,
//! so the traffic crosses the lab's veths instead of loopback.

use std::path::Path;

use crate::clients::RUN_TIMEOUT;
use crate::namespaces::Lab;
use crate::process::run_with_timeout;
use crate::reports::TestReport;
use crate::servers::Server;

/// A 1 s `stream --json` from host a of `lab` to a `ringperf serve` on host b (198.18.0.2),
/// both run with the binary `ringperf`: the client's report. The run must succeed and leave
/// the server running; the server is stopped before this returns, so the lab can go down
/// whenever the test is done with it.
pub fn lab_stream_a_to_b(lab: &Lab, ringperf: &Path) -> TestReport {
    let mut server =
        Server::start(lab.exec("b", ringperf, &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    let port = server.port_arg();
    let o = run_with_timeout(
        lab.exec("a", ringperf, &["stream", "-H", "198.18.0.2", "-p", &port, "-l", "1", "--json"]),
        RUN_TIMEOUT,
    )
    .success();
    server.assert_running();
    o.report()
}
