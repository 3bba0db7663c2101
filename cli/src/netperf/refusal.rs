//! A netperf command line refused: what netperf would say, and its exit code.

/// A netperf-form error: the message (netperf-style, without the program name) and the
/// exit code.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub code: i32,
}

pub(super) fn usage(message: impl Into<String>) -> Refusal {
    Refusal { message: message.into(), code: 2 }
}
