//! ringperf-control: the control plane on `ringperf-core` and `ringperf-engine`. The
//! control protocol and its two ends: the server's sessions and the client's
//! orchestration of one test.

pub mod access;
pub mod auth;
pub mod client;
pub mod connection;
pub mod handshake;
pub mod iterate;
pub mod limits;
pub mod plan;
pub mod protocol;
pub mod reclaim;
pub mod run;
pub mod server;
pub mod third_party;
pub mod wire;

pub use client::{run_test, run_test_with, Target};
pub use iterate::run_iterations;
pub use run::{BeforeGo, RunOptions};
pub use server::{Server, ServerConfig, ServerEvent};

/// Default control port (netperf's).
pub const DEFAULT_PORT: u16 = 12866;
