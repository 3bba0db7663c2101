//! Send and receive paths: how payload gets onto and off a socket through the ring.
//! Workloads drive these traits, so an engine is chosen per side without touching the
//! workload's state machine.

pub mod path;
pub mod recv;
pub mod send;

pub use path::{op, PerOp, RecvEvent, RecvPath, SendEvent, SendPath};
pub use recv::{AnyRecv, RecvSetup};
pub use send::AnySend;
