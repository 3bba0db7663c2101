//! Helpers shared by the integration tests: run the binary under test with a deadline,
//! spawn a standalone server, speak raw control frames, read JSON reports, and make
//! throw-away network namespaces. Every child process is killed and reaped by a guard, so a
//! failing test never leaves one behind, and every wait has a deadline, so no test hangs.
//!
//! The binary's path is only known when an integration test is compiled; use the
//! [`ringperf!`] macro there to get a [`Ringperf`] for it.

pub mod fabric;

mod ce_marker;
mod checks;
mod clients;
mod control;
mod lab_runs;
mod namespaces;
mod process;
mod reports;
mod servers;
mod skips;

pub use ce_marker::*;
pub use checks::*;
pub use clients::*;
pub use control::*;
pub use lab_runs::*;
pub use namespaces::*;
pub use process::*;
pub use reports::*;
pub use servers::*;
pub use skips::*;
