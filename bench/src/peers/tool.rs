//! The one thing every tool under comparison does.

use super::config::Config;
use super::run_result::RunResult;
use crate::error::Result;

pub trait Tool {
    fn name(&self) -> &'static str;
    /// A one-line description of the exact commands, for the report header.
    fn describe(&self, cfg: &Config) -> String;
    fn run(&self, cfg: &Config) -> Result<RunResult>;
}
