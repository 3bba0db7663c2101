//! One error type for the engine. Every message says what to do next; the variant says
//! which exit code the CLI maps it to (docs/commands.md, "Flags": 1 requirement, 2 usage, 3
//! peer/network; 130 for Ctrl-C, the shell's convention).

use std::io;

/// Everything that can go wrong in a test, grouped by who can fix it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong (sizes, CPUs, flags): the user must change the command.
    #[error("{0}")]
    Usage(String),
    /// The test ran but did not meet something the user required (e.g. `--require-zc`).
    #[error("{0}")]
    Requirement(String),
    /// The peer or the network failed: refused, unreachable, reset, timed out, wrong version.
    #[error("{0}")]
    Peer(String),
    /// The peer sent something that is not our protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The user asked to stop (Ctrl-C) before the test could finish.
    #[error("{0}")]
    Interrupted(String),
    /// A local system call failed; `context` names what we were doing.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with what we were doing when it happened.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }

    /// The process exit code of this error (docs/commands.md, "Flags", lists them).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Requirement(_) => 1,
            Error::Usage(_) => 2,
            Error::Peer(_) | Error::Protocol(_) | Error::Io { .. } => 3,
            // The shell's convention for a process stopped by SIGINT (128 + 2).
            Error::Interrupted(_) => 130,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
