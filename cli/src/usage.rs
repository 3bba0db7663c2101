//! What a user sees when the command line is wrong: a short usage for a bare `ringperf`,
//! and clap's errors cut to one line that names the argument, lists the values it takes,
//! and points at the help of the (sub)command that was typed.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The usage printed (to stderr, exit 2) when `ringperf` gets no command at all.
pub fn short_usage() -> String {
    let cli = crate::args::command();
    let mut o = String::new();
    if let Some(about) = cli.get_about() {
        o.push_str(&format!("ringperf: {about}.\n\n"));
    }
    o.push_str("usage: ringperf COMMAND [FLAGS]\n\ncommands:\n");
    let width = cli.get_subcommands().map(|c| c.get_name().len()).max().unwrap_or(0);
    for c in cli.get_subcommands().filter(|c| c.get_name() != "help") {
        // The first sentence of each command's doc comment.
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        let first = about.split(". ").next().unwrap_or("").trim_end_matches('.');
        o.push_str(&format!("  {:<width$}  {first}\n", c.get_name()));
    }
    o.push_str(
        "\nstart with:\n  \
         ringperf stream            a 10 s TCP_STREAM against a server embedded on 127.0.0.1\n  \
         ringperf serve             on another host, then 'ringperf stream -H HOST' from here\n  \
         ringperf --help            every command; 'ringperf COMMAND --help' for its flags\n",
    );
    o
}

/// The subcommand path a command line asks for, for "see 'ringperf X --help'": `stream`,
/// `sweep rr`, or nothing when argv[1] is not a command.
fn command_path(argv: &[String]) -> Option<String> {
    let cli = crate::args::command();
    let first = argv.get(1)?;
    let sub = cli.get_subcommands().find(|c| c.get_name() == first)?;
    let nested = argv.get(2).and_then(|second| sub.get_subcommands().find(|c| c.get_name() == second));
    Some(match nested {
        Some(n) => format!("{} {}", sub.get_name(), n.get_name()),
        None => sub.get_name().to_string(),
    })
}

fn strings(e: &clap::Error, kind: ContextKind) -> Vec<String> {
    match e.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    }
}

/// One line for a clap error: what is wrong, with the argument named and the valid values
/// listed, then where to read more.
pub fn one_line(e: &clap::Error, argv: &[String]) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first).trim_end_matches(':').trim();
    let args = strings(e, ContextKind::InvalidArg);
    let mut line = match e.kind() {
        ErrorKind::MissingRequiredArgument if !args.is_empty() => {
            let what = if args.len() == 1 { "argument" } else { "arguments" };
            format!("missing the required {what} {}", args.join(", "))
        }
        ErrorKind::MissingSubcommand => {
            let valid = strings(e, ContextKind::ValidSubcommand);
            format!("give a command: one of {}", valid.join(", "))
        }
        _ => first.to_string(),
    };
    let valid = strings(e, ContextKind::ValidValue);
    if !valid.is_empty() && e.kind() == ErrorKind::InvalidValue {
        line.push_str(&format!(": use one of {}", valid.join(", ")));
    }
    let suggested: Vec<String> =
        [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand, ContextKind::SuggestedValue]
            .into_iter()
            .flat_map(|k| strings(e, k))
            .collect();
    if !suggested.is_empty() && !line.contains("did you mean") {
        line.push_str(&format!("; did you mean '{}'?", suggested.join("' or '")));
    }
    match command_path(argv) {
        Some(c) => format!("{line} (see 'ringperf {c} --help')"),
        None => format!("{line} (see 'ringperf --help')"),
    }
}
