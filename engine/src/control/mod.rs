//! The control protocol and its two ends: the server's sessions and the client's
//! orchestration of one test.

pub mod client;
pub mod protocol;
pub mod server;

pub use client::{run_test, Target};
pub use server::{Server, ServerEvent};

/// Default control port (netperf's).
pub const DEFAULT_PORT: u16 = 12866;
