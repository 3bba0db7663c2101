//! ringperf-engine: an io_uring traffic engine. It moves bytes and measures them; it never
//! prints. The CLI renders the [`report::TestReport`] it returns.

pub mod buf;
pub mod classic;
pub mod compare;
pub mod control;
pub mod env;
pub mod error;
pub mod figures;
pub mod harness;
pub mod input;
pub mod io;
pub mod load;
pub mod measure;
pub mod merge;
pub mod net;
pub mod payload;
pub mod probe;
pub mod report;
pub mod report_upgrade;
pub mod ring;
pub mod setting;
pub mod side;
pub mod spec;
pub mod spec_error;
pub mod units;
pub mod verify;
pub mod window;
pub mod worker;
pub mod workload;

pub use control::{
    run_iterations, run_test, run_test_with, RunOptions, Server, ServerConfig, ServerEvent, Target,
    DEFAULT_PORT,
};
pub use error::{Error, Result};
pub use report::TestReport;
pub use setting::Setting;
pub use spec::TestSpec;
pub use spec_error::SpecError;
