//! Sockets of the data plane: TCP data connections (`connections`) and UDP flows (`udp`).

pub mod connections;
pub mod udp;

pub use connections::*;
