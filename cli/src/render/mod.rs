//! Renderers over the one TestReport: a human table and JSON, side by side.

mod address;
pub mod diff;
pub mod doubt;
pub mod engine_choice;
pub mod engines;
mod format;
pub mod histogram;
pub mod human;
pub mod json;
pub mod kernel;
pub mod keyval;
pub mod limits;
pub mod load;
pub mod mptcp;
pub mod probe;
pub mod profile;
pub mod short;
pub(crate) mod sides;
pub(crate) mod statistics;
pub mod sweep;

pub use address::socket_addr;
pub use format::{Format, HumanOptions};

/// Throughput units of `-f` (the figures' registry formats rates with them).
pub use ringperf_core::units::Units;
