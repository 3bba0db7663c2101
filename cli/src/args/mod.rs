//! Every flag ringperf takes, defined and documented in one place, one file per job (after
//! ripgrep's `crates/core/flags`):
//!
//! - `registry`: the `flag_group!` macro that declares a group of flags once, with what each
//!   sets in the spec and its `[sweep]`, `[only]` and `[keyval]` marks;
//! - `values`: the value parsers (sizes, pairs, rates, durations, hosts, ports, CPU lists,
//!   engine and figure names);
//! - `test_flags`: the flags every test takes and the groups they flatten;
//! - `commands`: every command and its own flags, and the lists of every group's marks;
//! - `parse`: the clap command, each test command's help cut to its flags, and the parse that
//!   refuses a flag where its mark leaves it out;
//! - `spelling`: how each front end spells the settings the library's messages name, from
//!   the flags' clap definitions;
//! - [`spec`]: flags to what a test runs (the TestSpec and its explicit settings, the target,
//!   the confidence target);
//! - `docs`: the manual's flags table (docs/commands.md).
//!
//! They are layered in that order: a file imports only files listed before it.

mod commands;
mod docs;
mod parse;
mod registry;
pub mod spec;
pub mod spelling;
mod test_flags;
mod values;

pub use commands::{
    direction, keyval_settings, sweep_lists, ChartArgs, Cli, Command, CompletionsArgs, CrrArgs, DiffArgs,
    EnginesArgs, InstallLinksArgs, LoadArgs, ManArgs, PlanArgs, PlotArgs, PlotCmdArgs, ProbeArgs, RrArgs,
    SendfileArgs, ServeArgs, StreamArgs, SweepArgs, SweepList, SweepOutArgs, SweepRrArgs, SweepSendfileArgs,
    SweepStreamArgs, SweepWorkload, UdpRrArgs, UdpStreamArgs,
};
pub use docs::flags_markdown;
pub use parse::{command, parse};
pub use registry::{FlagScope, KeyvalSetting};
pub use test_flags::{EngineArgs, ProfileArgs, StatsArgs, TestArgs};
pub use values::{CpuList, HostPort};
