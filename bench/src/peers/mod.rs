//! The tools under comparison. Each one knows how to run itself once with the shared
//! settings and how to read its own output; the CPU window around the run is taken the
//! same way for all of them (see `process::run_measured`).

mod config;
mod run_result;
mod tool;
mod tool_output;

pub mod anchors;
pub mod iperf2;
pub mod iperf3;
pub mod neper;
pub mod netperf;
pub mod ringperf;
pub mod sockperf;

pub use config::{Config, Layout, StreamOptions, Workload, LISTEN_TIMEOUT, PORT_ATTEMPTS};
pub use run_result::{RunResult, Work};
pub use tool::Tool;
pub(crate) use tool_output::{json_f64, json_u64, key_values, kv_f64};
