//! The bench's one error type. Messages say what to do about the problem.

use std::io;

pub type Result<T> = std::result::Result<T, BenchError>;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad flags or a host that cannot run the requested layout (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A tool the comparison needs is not installed (exit 3).
    #[error("{tool} was not found on PATH: {hint}")]
    Missing { tool: String, hint: String },
    /// A tool ran but failed, hung, or printed something the bench cannot read (exit 3).
    #[error("{0}")]
    Tool(String),
    #[error("{context}: {source}")]
    Io { context: String, source: io::Error },
}

impl BenchError {
    pub fn io(context: impl Into<String>, source: io::Error) -> BenchError {
        BenchError::Io { context: context.into(), source }
    }

    /// The repository's exit code convention: 2 usage error, 3 peer or tool error.
    pub fn exit_code(&self) -> i32 {
        match self {
            BenchError::Usage(_) => 2,
            _ => 3,
        }
    }
}

impl From<ringperf_core::Error> for BenchError {
    fn from(e: ringperf_core::Error) -> BenchError {
        BenchError::Tool(e.to_string())
    }
}
