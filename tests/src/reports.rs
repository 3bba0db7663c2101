//! Reading reports as the types they are: a test parses the JSON the binary printed into
//! [`TestReport`] (or the plan, load and sweep reports) and reads fields, so that a renamed
//! field breaks the tests when they compile, not when they run. The extension traits give
//! the parts a report may lack (the remote side of a partial run, a side's send
//! accounting) as plain references that fail the test, naming the part, when it is absent.
//!
//! The dotted-path readers at the end ([`at`], [`u64_at`], ...) are for the few tests
//! whose point is the JSON itself: a field's name or presence as a user's script sees it.

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use ringperf_cli::sweep_file::{Entry as SweepEntry, PartialSweep};
pub use ringperf_control::plan::{HostFigures, PlanReport, PlanTest};
pub use ringperf_core::env::{Environment, NetworkEnvironment};
pub use ringperf_core::harness::{EngineChoice, EngineReason};
pub use ringperf_core::load::{LoadDirection, LoadReport};
pub use ringperf_core::measure::confidence::ConfidenceReport;
pub use ringperf_core::measure::kernel::{KernelCounters, NicCounters};
pub use ringperf_core::measure::profile::{Category, CategoryCost, ProfileReport};
pub use ringperf_core::measure::tcp_info::TcpReport;
pub use ringperf_core::payload::Payload;
pub use ringperf_core::report::{
    ClockReport, CrrReport, IntervalSample, IterationFigures, LatencyPhases, LatencySummary, OneWayReport,
    OpenLoopReport, RecvReport, RrReport, SendReport, SideReport, SpliceReport, SyscallCounters, UdpReport,
    VerifyReport, ZeroCopyReport,
};
pub use ringperf_core::spec::{Direction, RecvEngine, Role, SendEngine, Workload};
pub use ringperf_core::TestReport;

/// `text` parsed as a `T`; the test fails naming `what` it came from.
pub fn parse<T: DeserializeOwned>(what: &str, text: &str) -> T {
    serde_json::from_str(text).unwrap_or_else(|e| {
        let head: String = text.chars().take(4000).collect();
        panic!("{what} is not a {} ({e}): {head}", std::any::type_name::<T>())
    })
}

/// A report read from a JSON value (one an array held, or one a test edited).
pub fn report_of(v: &Value) -> TestReport {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("not a TestReport ({e}): {v}"))
}

/// The parts of a [`TestReport`] a run may lack, for a test that expects them.
pub trait TestReportExt {
    /// The server's side; fails the test when it never reported (a partial run).
    fn remote(&self) -> &SideReport;
    /// Both sides with their names, the client's first.
    fn sides(&self) -> [(&'static str, &SideReport); 2];
    /// The confidence report of a run with -i / -I.
    fn confidence(&self) -> &ConfidenceReport;
    /// How the server's clock was put on the client's (UDP tests that stamp datagrams).
    fn clock(&self) -> &ClockReport;
}

impl TestReportExt for TestReport {
    fn remote(&self) -> &SideReport {
        let why = self.partial_reason.as_deref().unwrap_or("no reason given");
        self.remote.as_ref().unwrap_or_else(|| panic!("the server's side never reported ({why})"))
    }

    fn sides(&self) -> [(&'static str, &SideReport); 2] {
        [("local", &self.local), ("remote", self.remote())]
    }

    fn confidence(&self) -> &ConfidenceReport {
        self.confidence.as_ref().unwrap_or_else(|| panic!("the report has no confidence part"))
    }

    fn clock(&self) -> &ClockReport {
        self.clock.as_ref().unwrap_or_else(|| panic!("the report has no clock part"))
    }
}

/// The parts of a [`SideReport`] only some runs have, for a test that expects them.
pub trait SideReportExt {
    fn send(&self) -> &SendReport;
    /// The zero-copy accounting of its sends.
    fn zero_copy(&self) -> &ZeroCopyReport;
    /// The splice accounting of its sends.
    fn splice(&self) -> &SpliceReport;
    fn recv(&self) -> &RecvReport;
    fn verify(&self) -> &VerifyReport;
    fn latency(&self) -> &LatencySummary;
    fn latency_phases(&self) -> &LatencyPhases;
    fn window_start_ns(&self) -> u64;
    /// The system calls of a classic (ringless) side.
    fn syscalls(&self) -> &SyscallCounters;
    fn tcp(&self) -> &TcpReport;
    fn network(&self) -> &NetworkEnvironment;
    fn crr(&self) -> &CrrReport;
    fn udp(&self) -> &UdpReport;
    fn rr(&self) -> &RrReport;
    /// The schedule of an open-loop rr client.
    fn open_loop(&self) -> &OpenLoopReport;
    /// The one-way delays of the datagrams this side received.
    fn one_way(&self) -> &OneWayReport;
    fn kernel(&self) -> &KernelCounters;
    fn profile(&self) -> &ProfileReport;
}

/// `part` of `side`, or a failed test naming what is missing where.
fn present<'a, T>(part: &'a Option<T>, side: &SideReport, what: &str) -> &'a T {
    part.as_ref().unwrap_or_else(|| panic!("the {:?} side reports no {what}", side.role))
}

impl SideReportExt for SideReport {
    fn send(&self) -> &SendReport {
        present(&self.send, self, "send")
    }
    fn zero_copy(&self) -> &ZeroCopyReport {
        present(&self.send().zero_copy, self, "send.zero_copy")
    }
    fn splice(&self) -> &SpliceReport {
        present(&self.send().splice, self, "send.splice")
    }
    fn recv(&self) -> &RecvReport {
        present(&self.recv, self, "recv")
    }
    fn verify(&self) -> &VerifyReport {
        present(&self.verify, self, "verify")
    }
    fn latency(&self) -> &LatencySummary {
        present(&self.latency, self, "latency")
    }
    fn latency_phases(&self) -> &LatencyPhases {
        present(&self.latency_phases, self, "latency_phases")
    }
    fn window_start_ns(&self) -> u64 {
        *present(&self.window_start_ns, self, "window_start_ns")
    }
    fn syscalls(&self) -> &SyscallCounters {
        present(&self.ring.syscalls, self, "ring.syscalls")
    }
    fn tcp(&self) -> &TcpReport {
        present(&self.tcp, self, "tcp")
    }
    fn network(&self) -> &NetworkEnvironment {
        present(&self.network, self, "network")
    }
    fn crr(&self) -> &CrrReport {
        present(&self.crr, self, "crr")
    }
    fn udp(&self) -> &UdpReport {
        present(&self.udp, self, "udp")
    }
    fn rr(&self) -> &RrReport {
        present(&self.rr, self, "rr")
    }
    fn open_loop(&self) -> &OpenLoopReport {
        present(&self.rr().open_loop, self, "rr.open_loop")
    }
    fn one_way(&self) -> &OneWayReport {
        present(&self.udp().one_way, self, "udp.one_way")
    }
    fn kernel(&self) -> &KernelCounters {
        present(&self.kernel, self, "kernel")
    }
    fn profile(&self) -> &ProfileReport {
        present(&self.profile, self, "profile")
    }
}

// ---------------------------------------------------------------------------------------
// The JSON as a user's script sees it, for tests whose point is its shape.

/// The value at a dotted path (`local.cpu.system.busy_percent`); panics naming the path.
pub fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for key in path.split('.') {
        cur = cur.get(key).unwrap_or_else(|| panic!("report has no field '{path}' (missing '{key}')"));
    }
    cur
}

pub fn u64_at(v: &Value, path: &str) -> u64 {
    at(v, path).as_u64().unwrap_or_else(|| panic!("'{path}' is not an unsigned integer: {}", at(v, path)))
}

pub fn f64_at(v: &Value, path: &str) -> f64 {
    let x = at(v, path).as_f64().unwrap_or_else(|| panic!("'{path}' is not a number: {}", at(v, path)));
    assert!(x.is_finite(), "'{path}' is not finite: {x}");
    x
}

pub fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path).as_str().unwrap_or_else(|| panic!("'{path}' is not a string: {}", at(v, path)))
}

pub fn bool_at(v: &Value, path: &str) -> bool {
    at(v, path).as_bool().unwrap_or_else(|| panic!("'{path}' is not a boolean: {}", at(v, path)))
}
