//! The ringperf command line: parses arguments into a TestSpec, asks the engine to run it,
//! and renders the report. It never touches a socket or a ring.

pub mod args;
mod build_info;
mod completions;
mod diff;
mod engines;
mod live;
mod load;
mod man;
mod native;
pub mod netperf;
pub mod output;
pub mod plan;
pub mod plot;
mod profile_out;
mod psk;
pub mod render;
mod requirements;
mod serve;
pub mod sweep;
pub mod sweep_file;

mod interrupt;
mod progress;
mod runner;
mod usage;

pub(crate) use netperf::netserver;
pub(crate) use usage::one_line;

use ringperf_core::TestSpec;

pub(crate) use crate::args::spec::agent_names_no_path;
pub use crate::args::spec::{
    base_spec, confidence_target, explicit, rr_spec, sendfile_spec, stream_spec, target, test_spec,
};
pub use crate::psk::{client_psk, psk_from};
pub use crate::requirements::requirements;

/// Runs the command line and returns the process exit code: an output that could not be
/// written decides it (see [`output`]).
pub fn main() -> i32 {
    output::exit_code(dispatch())
}

/// Runs the command line under the name it was invoked by.
fn dispatch() -> i32 {
    let argv: Result<Vec<String>, _> = std::env::args_os().map(|a| a.into_string()).collect();
    let Ok(argv) = argv else {
        eprintln!("ringperf: an argument is not valid UTF-8: give names and values in UTF-8");
        return 2;
    };
    // Invoked through a link named netperf or netserver: that program's command line.
    let invoked_as = argv.first().and_then(|a| std::path::Path::new(a).file_name()).and_then(|n| n.to_str());
    // The library's messages name settings; this front end says how the user spells them.
    let spelling =
        if invoked_as == Some("netperf") { args::spelling::netperf } else { args::spelling::native };
    ringperf_core::setting::set_spelling(spelling);
    match invoked_as {
        Some("netperf") => {
            output::set_program("netperf");
            return netperf::main(argv);
        }
        Some("netserver") => {
            output::set_program("netserver");
            return netserver::main(argv);
        }
        _ => {}
    }
    native::run_native(argv)
}

/// Parses a command line (netperf style or native) into the TestSpec it would run.
pub fn spec_from_args(args: &[&str]) -> Result<TestSpec, String> {
    let args = netperf::rewrite(args.iter().map(|s| s.to_string()).collect())?;
    let cli = args::parse(&args).map_err(|e| e.to_string())?;
    test_spec(&cli.command).map_err(|e| e.to_string())
}

/// Parses a command line given to ringperf invoked as `netperf` into the TestSpec it would
/// run (a dry run: nothing connects).
pub fn netperf_spec(args: &[&str]) -> Result<TestSpec, String> {
    let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let call = netperf::parse(&argv, true).map_err(|r| r.message)?;
    let cli = args::parse(&call.native).map_err(|e| e.to_string())?;
    test_spec(&cli.command).map_err(|e| e.to_string())
}
