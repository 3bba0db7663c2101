//! What is wrong with a test spec, naming the settings at fault: validation says which
//! setting and why, the front end that prints it says how the user spells that setting.

use crate::error::Error;
use crate::setting::{settings_in, Setting};

/// A spec a side refuses to run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A setting's value is outside what it takes; `allowed` says what it takes.
    #[error("{} {value} is out of range: use {allowed}", setting.token())]
    OutOfRange { setting: Setting, value: String, allowed: String },
    /// Settings that only some tests take, given to another.
    #[error("{} {} to {tests} only", list(settings), if settings.len() == 1 { "applies" } else { "apply" })]
    NotForThisTest { settings: Vec<Setting>, tests: &'static str },
    /// Anything else: the text names the settings at fault by their tokens.
    #[error("{0}")]
    Invalid(String),
}

impl SpecError {
    /// The settings at fault.
    pub fn settings(&self) -> Vec<Setting> {
        match self {
            SpecError::OutOfRange { setting, .. } => vec![*setting],
            SpecError::NotForThisTest { settings, .. } => settings.clone(),
            SpecError::Invalid(text) => settings_in(text),
        }
    }

    /// A value out of range.
    pub fn out_of_range(setting: Setting, value: impl ToString, allowed: impl Into<String>) -> Self {
        SpecError::OutOfRange { setting, value: value.to_string(), allowed: allowed.into() }
    }
}

/// `{a}`, `{a} and {b}`, `{a}, {b} and {c}`.
fn list(settings: &[Setting]) -> String {
    let tokens: Vec<String> = settings.iter().map(|s| s.token().to_string()).collect();
    match tokens.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

impl From<SpecError> for Error {
    fn from(e: SpecError) -> Self {
        Error::Usage(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setting::spell_settings;

    #[test]
    fn names_its_settings_and_reads_once_spelled() {
        let e = SpecError::out_of_range(Setting::Burst, 0, "1 to 4096");
        assert_eq!(e.settings(), vec![Setting::Burst]);
        let flag = |s: Setting| Some(format!("--{}", s.name()));
        assert_eq!(spell_settings(&e.to_string(), flag), "--burst 0 is out of range: use 1 to 4096");
        let e = SpecError::NotForThisTest {
            settings: vec![Setting::Linger0, Setting::ClientPorts],
            tests: "crr",
        };
        assert_eq!(spell_settings(&e.to_string(), flag), "--linger0 and --client-ports apply to crr only");
        let e = SpecError::Invalid(format!("lower {} or {}", Setting::Burst.token(), Setting::Flows.token()));
        assert_eq!(e.settings(), vec![Setting::Burst, Setting::Flows]);
    }
}
