//! Measurement: CPU (system and tool), service demand, latency, clocks.

pub mod clock;
pub mod confidence;
pub mod cpu;
pub mod intervals;
pub mod kernel;
pub mod latency;
pub mod mptcp;
pub mod one_way;
pub mod profile;
pub mod service_demand;
pub mod tcp_info;
pub mod tcp_limits;
