//! What a netperf command line has said so far: the state the option handlers
//! ([`super::options`]) fill in and the parse ([`super::parse`]) turns into a native call.

use super::call::Output;

/// What a netperf command line has said so far.
pub(super) struct Parse {
    pub by_name: bool,
    pub program: String,
    /// The global options as native ones, in the order given.
    pub globals: Vec<String>,
    pub test: Option<String>,
    pub out: Output,
    pub host: Option<String>,
    pub port: Option<String>,
    pub family6: bool,
    pub fill_file: Option<String>,
    /// -L before and after `--`: the control and the data connections' local addresses.
    pub control_bind: Option<String>,
    pub data_bind: Option<String>,
    /// A negative -l: a count instead of a length.
    pub count: Option<String>,
    /// The native command line, once the test is known.
    pub native: Vec<String>,
    /// The native command the test became, where a refusal points for help.
    pub command: &'static str,
}

impl Parse {
    pub(super) fn new(program: String, by_name: bool) -> Parse {
        Parse {
            by_name,
            program,
            globals: Vec::new(),
            test: None,
            out: Output::default(),
            host: None,
            port: None,
            family6: false,
            fill_file: None,
            control_bind: None,
            data_bind: None,
            count: None,
            native: Vec::new(),
            command: "",
        }
    }

    /// The data connections' host, given after `--` where no global -H named one.
    pub(super) fn replace_host(&mut self, host: &str) {
        if let Some(i) = self.native.iter().position(|a| a == "-H") {
            if let Some(v) = self.native.get_mut(i + 1) {
                *v = host.to_string();
            }
        }
    }
}
