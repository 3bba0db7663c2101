//! The command line, parsed: the clap command with each test command's help cut to the
//! flags its `[only ...]` marks leave it, and a parse that refuses a hidden flag, saying
//! where it applies, instead of silently ignoring it.

use super::commands::{flag_scopes, Cli};
use super::registry::FlagScope;

/// Hides from a test command's help each flag whose `[only ...]` mark leaves it out, so each
/// command's help lists what applies to it; given anyway, [`parse`] refuses it.
fn hide_unused(mut cmd: clap::Command) -> clap::Command {
    let name = cmd.get_name().to_string();
    for scope in flag_scopes() {
        let takes = cmd.get_arguments().any(|a| a.get_id() == scope.id);
        if takes && !scope.commands.contains(&name.as_str()) {
            cmd = cmd.mut_arg(scope.id, |a| a.hide(true));
        }
    }
    cmd
}

/// The clap command with each test command's help cut to the flags it uses; `sweep`'s
/// workloads get the same as their single-test commands.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let names: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_string()).collect();
    for name in &names {
        cmd = cmd.mut_subcommand(name, hide_unused);
    }
    cmd.mut_subcommand("sweep", |mut sweep| {
        let names: Vec<String> = sweep.get_subcommands().map(|c| c.get_name().to_string()).collect();
        for name in &names {
            sweep = sweep.mut_subcommand(name, hide_unused);
        }
        sweep
    })
}

/// Where a hidden flag does apply, for the message that refuses it elsewhere.
fn applies_to(id: &str) -> String {
    flag_scopes().find(|s| s.id == id).map_or_else(|| "other commands".to_string(), FlagScope::applies_to)
}

/// Parses a command line with [`command`]; a flag hidden from the command's help is
/// refused, saying where it applies, instead of being silently ignored.
pub fn parse(argv: &[String]) -> Result<Cli, clap::Error> {
    use clap::parser::ValueSource;
    use clap::FromArgMatches;
    let cmd = command();
    let mut matches = cmd.clone().try_get_matches_from(argv)?;
    let (mut name, mut sub) = (String::new(), matches.subcommand());
    let mut c = &cmd;
    while let Some((n, m)) = sub {
        let Some(next) = c.find_subcommand(n) else { break };
        c = next;
        name = if name.is_empty() { n.to_string() } else { format!("{name} {n}") };
        if m.subcommand().is_none() {
            for arg in c.get_arguments().filter(|a| a.is_hide_set()) {
                let id = arg.get_id().as_str();
                if m.value_source(id) == Some(ValueSource::CommandLine) {
                    let flag = arg.get_long().map_or_else(
                        || arg.get_short().map_or_else(|| id.to_string(), |s| format!("-{s}")),
                        |l| format!("--{l}"),
                    );
                    return Err(clap::Error::raw(
                        clap::error::ErrorKind::ArgumentConflict,
                        format!("{flag} does not apply to {name}: it applies to {}", applies_to(id)),
                    ));
                }
            }
        }
        sub = m.subcommand();
    }
    Cli::from_arg_matches_mut(&mut matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A misspelt command in an `[only ...]` mark would hide the flag everywhere.
    #[test]
    fn only_marks_name_commands_that_exist() {
        let cmd = command();
        for scope in flag_scopes() {
            for name in scope.commands {
                assert!(cmd.find_subcommand(name).is_some(), "--{}: no command {name}", scope.id);
            }
        }
    }

    /// Help and refusal come from the same mark: a flag hidden from a command's help is the
    /// one refused there, with where its mark says it applies.
    #[test]
    fn a_flag_is_hidden_and_refused_where_its_mark_leaves_it_out() {
        let refusal = |args: &[&str]| {
            let argv: Vec<String> = ["ringperf"].iter().chain(args).map(|a| a.to_string()).collect();
            parse(&argv).map(|_| ()).expect_err("refused").to_string()
        };
        let hidden = |path: &[&str], id: &str| {
            let mut c = command();
            for name in path {
                c = c.find_subcommand(name).expect("a command").clone();
            }
            let is_hidden = c.get_arguments().find(|a| a.get_id() == id).expect("the flag").is_hide_set();
            is_hidden
        };
        assert!(refusal(&["udp-rr", "--send-depth", "4"]).contains(
            "--send-depth does not apply to udp-rr: it applies to stream, sendfile, engines and udp-stream"
        ));
        assert!(hidden(&["udp-rr"], "send_depth") && !hidden(&["udp-stream"], "send_depth"));
        assert!(refusal(&["udp-stream", "--cc", "cubic"]).contains("it applies to the TCP tests"));
        assert!(refusal(&["sweep", "sendfile", "--send-engine", "zc"])
            .contains("does not apply to sweep sendfile: it applies to stream, rr, crr, udp-stream, udp-rr and engines (sendfile always splices)"));
        assert!(
            hidden(&["sweep", "sendfile"], "send_engine") && !hidden(&["sweep", "stream"], "send_engine")
        );
        assert!(refusal(&["udp-rr", "--verify"])
            .contains("stream, rr, crr, sendfile and engines (the UDP tests use their own operations)"));
        assert!(parse(
            &["ringperf", "crr", "--send-engine", "zc", "--recv-engine", "bundle", "--verify"]
                .map(String::from)
        )
        .is_ok());
        assert!(parse(&["ringperf".to_string(), "rr".to_string(), "--histogram".to_string()]).is_ok());
    }
}
