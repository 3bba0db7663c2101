//! Workloads: state machines over a worker's flows, driving its send and receive paths.

pub mod crr;
pub mod drain;
pub mod driver;
pub mod ending;
pub mod pacer;
pub mod rr;
pub mod schedule;
pub mod sequence;
pub mod standing;
pub mod stream;
pub mod udp_rr;
pub mod udp_stream;

pub use ending::{EARLY_CLOSE_MARGIN_NS, PEER_GRACE_NS};
