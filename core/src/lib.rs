//! ringperf-core: what a test asks and what it found, and the host instruments that find
//! it: the spec, the report, units, errors, peer-text escaping, the host environment, the
//! measurements, merging, comparing, load reports and the figure registry. Nothing here
//! touches io_uring; the data plane (`ringperf-engine`) and the control plane
//! (`ringperf-control`) build on it.

pub mod compare;
pub mod env;
pub mod error;
pub mod figures;
pub mod harness;
pub mod input;
pub mod load;
pub mod measure;
pub mod merge;
pub mod payload;
pub mod report;
pub mod report_upgrade;
mod retype;
pub mod setting;
pub mod spec;
pub mod spec_error;
pub mod text;
pub mod units;

pub use error::{Error, Result};
pub use report::TestReport;
pub use setting::Setting;
pub use spec::TestSpec;
pub use spec_error::SpecError;
