//! netperf's command line. Two ways in: `ringperf -t TCP_STREAM -H host -l 10 -- -m 64K` is
//! rewritten into the native subcommand form and runs as a native test; a binary invoked as
//! `netperf` ([`main`]) takes netperf's whole command line and answers in netperf's output
//! contract (classic tables, `-k`/`-o`/`-O` selectors, demo-mode interim lines), so harnesses
//! built on netperf (flent) run unchanged. One file per job: the options and what each
//! becomes ([`options`]), reading a command line with them ([`parse`]) and the words it is
//! made of ([`words`]) into a call ([`call`]) or a refusal ([`refusal`]), running the test
//! ([`run`]), printing its result ([`output`], with netperf's column titles in [`titles`]),
//! and `netserver` ([`netserver`], hearing from its server through [`ready`]) with the
//! links that answer to both names ([`links`]).

mod call;
pub(crate) mod links;
mod mptcpize;
pub(crate) mod netserver;
mod options;
mod output;
mod parse;
pub(crate) mod ready;
mod refusal;
mod run;
mod state;
mod titles;
mod words;

pub use call::{Call, Output, Style, ARGS_ENV, COUNT_CAP_SECS, NETPERF_PORT};
pub use output::{render, value};
pub use parse::{parse, rewrite};
pub use refusal::Refusal;
pub use run::main;

/// Command lines for the tests: the words of `s`, and what parsing them as `netperf` gives.
#[cfg(test)]
mod lines {
    pub fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    pub fn call(s: &str) -> super::Call {
        super::parse(&v(s), true).unwrap()
    }
}
