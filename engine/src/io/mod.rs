//! Send and receive paths: how payload gets onto and off a socket through the ring.
//! Workloads are generic over these traits, so an engine is chosen per side without
//! touching the workload's state machine.

pub mod recv;
pub mod send;

pub use recv::{CopyRecv, RecvPath};
pub use send::{CopySend, SendPath};
