//! The control protocol and its two ends: the server's sessions and the client's
//! orchestration of one test.

pub mod client;
pub mod iterate;
pub mod protocol;
pub mod server;

pub use client::{run_test, run_test_with, RunOptions, Target};
pub use iterate::run_iterations;
pub use server::{Server, ServerEvent};

/// Default control port (netperf's).
pub const DEFAULT_PORT: u16 = 12866;
