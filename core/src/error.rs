//! One error type for the engine. Every message says what to do next; the variant says
//! which exit code the CLI maps it to (docs/commands.md, "Flags": 1 requirement, 2 usage, 3
//! peer/network; 130 for Ctrl-C, the shell's convention).

use std::io;

use crate::setting::spelled;

/// Everything that can go wrong in a test, grouped by who can fix it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong (sizes, CPUs, flags): the user must change the command.
    #[error("{}", spelled(.0))]
    Usage(String),
    /// The test ran but did not meet something the user required (e.g. `--require-zc`).
    #[error("{}", spelled(.0))]
    Requirement(String),
    /// The peer or the network failed: refused, unreachable, reset, timed out, wrong version.
    #[error("{}", spelled(.0))]
    Peer(String),
    /// The peer sent something that is not our protocol.
    #[error("protocol error: {}", spelled(.0))]
    Protocol(String),
    /// The user asked to stop (Ctrl-C) before the test could finish.
    #[error("{}", spelled(.0))]
    Interrupted(String),
    /// A local system call failed; `context` names what we were doing.
    #[error("{}: {source}", spelled(context))]
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

    /// The message with its settings still tokens (`{burst}`), for a peer: the side that
    /// prints it spells them as its own front end does.
    pub fn unspelled(&self) -> String {
        match self {
            Error::Usage(m) | Error::Requirement(m) | Error::Peer(m) | Error::Interrupted(m) => m.clone(),
            Error::Protocol(m) => format!("protocol error: {m}"),
            Error::Io { context, source } => format!("{context}: {source}"),
        }
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
