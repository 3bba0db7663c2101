//! `ringperf completions SHELL`: a completion script from the clap command that --help
//! prints, so every command and flag in the registry completes.

use ringperf_core::Error;

use crate::args::CompletionsArgs;

/// The completion script of `shell` for ringperf.
pub fn script(shell: clap_complete::Shell) -> String {
    let mut cmd = crate::args::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "ringperf", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

pub fn run(a: &CompletionsArgs) -> Result<i32, Error> {
    crate::output::print("the completion script", &script(a.shell));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap_complete::Shell;

    /// Each shell's script offers every command, and a test command's flags.
    #[test]
    fn every_script_completes_every_command() {
        let cmd = crate::args::command();
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let s = script(shell);
            for c in cmd.get_subcommands() {
                assert!(s.contains(c.get_name()), "{shell}: no {}", c.get_name());
            }
            assert!(s.contains("--psk-file") || s.contains("psk-file"), "{shell}: no --psk-file");
        }
        let bash = script(Shell::Bash);
        assert!(bash.contains("complete -F") && bash.contains("ringperf"), "not a bash completion script");
        // bash's script lists the subcommands at the top level as words to complete.
        let top =
            bash.lines().find(|l| l.contains("opts=") && l.contains("stream")).expect("the top-level words");
        for c in cmd.get_subcommands() {
            assert!(
                top.split_whitespace().any(|w| w.trim_matches('"') == c.get_name()),
                "bash: {} not offered: {top}",
                c.get_name()
            );
        }
    }
}
