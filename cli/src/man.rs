//! `ringperf man [COMMAND]`: man pages in roff, generated from the clap command that --help
//! prints, so a flag added to the registry is in its command's page with its help.

use std::path::Path;

use ringperf_core::Error;

use crate::args::ManArgs;

/// The built command: subcommands then carry their display names (`ringperf-stream`), which
/// become their pages' titles and file names.
fn built() -> clap::Command {
    let mut cmd = crate::args::command();
    cmd.build();
    cmd
}

/// The commands that get a page of their own (clap's generated `help` is not one).
fn commands(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands().filter(|c| c.get_name() != "help")
}

fn render(cmd: clap::Command) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let source = format!("ringperf {}", crate::build_info::VERSION);
    let _ = clap_mangen::Man::new(cmd).manual("ringperf manual").source(source).render(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The page of the tool (`None`) or of one command, or a usage error naming the commands.
pub fn page(command: Option<&str>) -> Result<String, Error> {
    let cmd = built();
    let Some(name) = command else { return Ok(render(cmd)) };
    let found = commands(&cmd).find(|c| c.get_name() == name).cloned();
    match found {
        Some(c) => Ok(render(c)),
        None => {
            let names: Vec<&str> = commands(&cmd).map(clap::Command::get_name).collect();
            Err(Error::Usage(format!(
                "'{name}' is not a command: give one of {}, or none for ringperf's own page",
                names.join(", ")
            )))
        }
    }
}

/// Writes ringperf.1 and ringperf-COMMAND.1 for every command into `dir`; returns the files.
fn write_all(dir: &Path) -> Result<Vec<String>, Error> {
    let cmd = built();
    let pages = std::iter::once(cmd.clone()).chain(commands(&cmd).cloned());
    let mut written = Vec::new();
    for c in pages {
        let man = clap_mangen::Man::new(c.clone());
        let path = dir.join(man.get_filename());
        std::fs::write(&path, render(c)).map_err(|e| {
            Error::Usage(format!(
                "cannot write {}: {e} (give a directory that exists and you can write to)",
                path.display()
            ))
        })?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

pub fn run(a: &ManArgs) -> Result<i32, Error> {
    match &a.out_dir {
        Some(dir) => {
            let written = write_all(dir)?;
            crate::output::print(
                "the list of man pages",
                &format!("wrote {} man pages: {}\n", written.len(), written.join(" ")),
            );
        }
        None => crate::output::print("the man page", &page(a.command.as_deref())?),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How roff writes a flag: `-` is `\-` in a page.
    fn roff(flag: &str) -> String {
        flag.replace('-', "\\-")
    }

    /// The page's first request after the preamble that defines the quote string: `.TH`.
    fn first_request(page: &str) -> &str {
        page.lines().find(|l| !l.starts_with(".ie") && !l.starts_with(".el")).unwrap_or("")
    }

    /// The flags of a command that its --help lists (hidden ones apply elsewhere).
    fn shown_flags(c: &clap::Command) -> Vec<String> {
        c.get_arguments()
            .filter(|a| !a.is_hide_set())
            .flat_map(|a| {
                let long = a.get_long().map(|l| format!("--{l}"));
                let short = a.get_short().map(|s| format!("-{s}"));
                long.into_iter().chain(short)
            })
            .collect()
    }

    /// Every command's page is a man page titled after it that names every flag its --help
    /// lists; ringperf's own page names every command.
    #[test]
    fn every_command_has_a_page_naming_each_of_its_flags() {
        let cmd = built();
        let top = page(None).expect("the tool's page");
        assert!(first_request(&top).starts_with(".TH ringperf 1 "), "{}", &top[..top.len().min(200)]);
        assert!(top.contains(crate::build_info::VERSION), "the page does not say which build it describes");
        let mut checked = 0;
        for c in commands(&cmd) {
            assert!(top.contains(&roff(c.get_name())), "ringperf's page does not name {}", c.get_name());
            let text = page(Some(c.get_name())).expect("a page");
            let title = format!(".TH ringperf-{} 1 ", c.get_name());
            assert!(
                first_request(&text).starts_with(&title),
                "{}: {}",
                c.get_name(),
                &text[..text.len().min(200)]
            );
            for flag in shown_flags(c) {
                assert!(
                    text.contains(&format!("\\fB{}\\fR", roff(&flag))),
                    "{}'s page lacks {flag}",
                    c.get_name()
                );
                checked += 1;
            }
        }
        assert!(checked > 100, "only {checked} flags checked: the registry was not read");
    }

    /// A page keeps the help text of the registry, and a flag hidden from a command is not
    /// on its page either.
    #[test]
    fn a_page_carries_the_flag_help_and_leaves_out_what_does_not_apply() {
        let rr = page(Some("rr")).expect("rr's page");
        let stream = page(Some("stream")).expect("stream's page");
        assert!(rr.contains("\\fB\\-\\-burst\\fR"), "rr's page lacks --burst");
        assert!(
            !stream.contains("\\fB\\-\\-burst\\fR"),
            "--burst applies to rr only, yet is on stream's page"
        );
        assert!(stream.contains("Bytes per send"), "stream's page lacks -m's help");
    }

    #[test]
    fn an_unknown_command_is_refused_naming_the_commands() {
        let e = page(Some("strem")).expect_err("no such command").to_string();
        assert!(e.contains("'strem' is not a command") && e.contains("stream, rr"), "{e}");
    }

    #[test]
    fn out_dir_writes_a_page_per_command() {
        let dir = std::env::temp_dir().join(format!("ringperf-man-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let written = write_all(&dir);
        let files: Vec<String> = std::fs::read_dir(&dir)
            .expect("the directory")
            .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        let written = written.expect("written");
        assert_eq!(written.len(), files.len());
        assert!(
            files.contains(&"ringperf.1".to_string()) && files.contains(&"ringperf-stream.1".to_string()),
            "{files:?}"
        );
        assert_eq!(files.len(), commands(&built()).count() + 1, "{files:?}");
    }
}
