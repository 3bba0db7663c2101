//! Measurement: CPU (system and tool), service demand, latency, clocks.

pub mod clock;
pub mod cpu;
pub mod latency;
pub mod service_demand;
