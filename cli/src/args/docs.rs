//! What the flag definitions render for a reader outside `--help`: the README's table of
//! the flags every test takes (`ringperf --help-markdown`).

use super::commands::sweep_lists;
use super::test_flags::TestArgs;

/// The README's table of the flags every test takes, rendered from their clap definitions
/// in `test_flags` (help, value names, defaults, whether `sweep` takes a list):
/// `ringperf --help-markdown` prints it, and a test fails when the README's copy differs.
pub fn flags_markdown() -> String {
    use clap::Args as _;
    let mut cmd = TestArgs::augment_args(clap::Command::new("test"));
    cmd.build();
    let lists = sweep_lists();
    let mut o = String::from("| flag | meaning | default | sweep |\n|---|---|---|---|\n");
    for arg in cmd.get_arguments() {
        let (short, long) =
            (arg.get_short().map(|s| format!("-{s}")), arg.get_long().map(|l| format!("--{l}")));
        let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
        let value = match arg.get_value_names().and_then(|v| v.first()) {
            Some(v) if takes_value && arg.get_num_args().is_some_and(|n| n.min_values() == 0) => {
                format!("[={v}]")
            }
            Some(v) if takes_value => format!(" {v}"),
            _ => String::new(),
        };
        let flag = match (&short, &long) {
            _ if arg.get_id() == "help" => continue,
            (Some(s), Some(l)) => format!("`{s}`, `{l}{value}`"),
            (Some(n), None) | (None, Some(n)) => format!("`{n}{value}`"),
            (None, None) => continue,
        };
        let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        // A "[default: ...]" at the end of the help is the default column's text.
        let (meaning, default) = match help.rfind("[default: ") {
            Some(at) if help.ends_with(']') => {
                (help[..at].trim_end().to_string(), help[at + 10..help.len() - 1].to_string())
            }
            _ => {
                let values: Vec<String> =
                    arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
                let default = if takes_value { values.join(",") } else { String::new() };
                (help, default)
            }
        };
        let sweep = lists
            .iter()
            .find(|l| Some(l.flag.as_str()) == short.as_deref() || Some(l.flag.as_str()) == long.as_deref())
            .map_or("", |l| if l.separator == ',' { "comma list" } else { "':' list" });
        let cell = |s: &str| s.replace('|', "\\|");
        o.push_str(&format!("| {} | {} | {} | {sweep} |\n", cell(&flag), cell(&meaning), cell(&default)));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's flag table is the one the definitions render; `ringperf --help-markdown`
    /// prints the table to paste between the markers.
    #[test]
    fn readme_flag_table_is_rendered_from_the_definitions() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"));
        let (begin, end) = ("<!-- flags: ringperf --help-markdown -->\n", "<!-- end of flags -->");
        let start = readme.find(begin).expect("README has the flags marker") + begin.len();
        let len = readme[start..].find(end).expect("README has the end-of-flags marker");
        assert!(
            readme[start..start + len] == flags_markdown(),
            "README's flag table differs from the flag definitions: regenerate it with `ringperf --help-markdown`"
        );
    }
}
