//! netperf's options, global (before `--`) and test-specific (after it), one table each:
//! what follows each option and what it becomes. An option not in its table is refused;
//! one marked output-only (it shapes netperf's own output) is taken only by `netperf`
//! invoked by name. A repeated option's handler runs again, so its last value holds, as
//! in netperf.

use super::call::Style;
use super::refusal::{usage, Refusal};
use super::state::Parse;
use super::words::{bracketless, first_of_pair, parse_ipqos, selection};

/// What follows an option.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Takes {
    Nothing,
    /// A value, attached (`-l10`) or the next word.
    Value,
    /// An optional list: attached, or the next word unless it is an option (-k/-o/-O).
    List,
    /// An optional number, skipped: netperf's CPU rate after -c/-C, which ringperf's
    /// /proc/stat accounting needs none of.
    Rate,
}

/// What an option does with its value (empty where it takes none).
pub(super) type Handler = fn(&mut Parse, &str, String) -> Result<(), Refusal>;

#[derive(Clone, Copy)]
pub(super) enum Does {
    /// Becomes the native option named (with its value, if it takes one).
    Native(&'static str),
    /// Nothing ringperf needs.
    Ignore,
    /// Its own handling (the option as given, its value).
    Handle(Handler),
}

/// One of netperf's options.
pub(super) struct Opt {
    pub name: &'static str,
    pub takes: Takes,
    /// It shapes netperf's output, which only `netperf` invoked by name prints.
    pub output_only: bool,
    pub does: Does,
}

const fn opt(name: &'static str, takes: Takes, does: Does) -> Opt {
    Opt { name, takes, output_only: false, does }
}

const fn output(name: &'static str, takes: Takes, does: Does) -> Opt {
    Opt { name, takes, output_only: true, does }
}

use Does::{Handle, Ignore, Native};
use Takes::{List, Nothing, Rate, Value};

/// The global options.
pub(super) const GLOBAL: &[Opt] = &[
    opt(
        "-t",
        Value,
        Handle(|p, _, v| {
            p.test = Some(v);
            Ok(())
        }),
    ),
    opt(
        "-H",
        Value,
        Handle(|p, _, v| {
            p.host = Some(first_of_pair(&v).to_string());
            Ok(())
        }),
    ),
    opt(
        "-p",
        Value,
        Handle(|p, _, v| {
            p.port = Some(first_of_pair(&v).to_string());
            Ok(())
        }),
    ),
    opt(
        "-4",
        Nothing,
        Handle(|p, _, _| {
            p.family6 = false;
            Ok(())
        }),
    ),
    opt(
        "-6",
        Nothing,
        Handle(|p, _, _| {
            p.family6 = true;
            Ok(())
        }),
    ),
    opt("-l", Value, Handle(length)),
    opt("-D", Value, Handle(demo)),
    opt("-f", Value, Handle(units)),
    opt("-P", Value, Handle(banner)),
    output("-v", Value, Handle(verbosity)),
    // Latency percentiles are always kept (netperf's -j asks for them).
    output("-j", Nothing, Ignore),
    opt(
        "-F",
        Value,
        Handle(|p, _, v| {
            p.fill_file = Some(first_of_pair(&v).to_string());
            Ok(())
        }),
    ),
    // The control connection's local address (`addr[,family]`).
    opt(
        "-L",
        Value,
        Handle(|p, _, v| {
            p.control_bind = Some(bracketless(first_of_pair(&v)));
            Ok(())
        }),
    ),
    opt("-Y", Value, Handle(tos)),
    opt("-c", Rate, Handle(cpu)),
    opt("-C", Rate, Handle(cpu)),
    opt("-T", Value, Native("-T")),
    opt("-i", Value, Native("-i")),
    opt("-I", Value, Native("-I")),
];

/// The test-specific options, after `--`.
pub(super) const TEST: &[Opt] = &[
    opt("-m", Value, Native("-m")),
    opt("-M", Value, Native("-M")),
    opt("-s", Value, Native("-s")),
    opt("-S", Value, Native("-S")),
    opt("-r", Value, Native("-r")),
    opt("-D", Nothing, Native("--nodelay")),
    opt("-C", Nothing, Native("--cork")),
    opt("-b", Value, Handle(burst)),
    opt("-H", Value, Handle(data_host)),
    opt("-K", Value, Handle(congestion_control)),
    opt("-e", Value, Handle(udp_timeout)),
    output("-k", List, Handle(select)),
    output("-o", List, Handle(select)),
    output("-O", List, Handle(select)),
    opt("-4", Nothing, Ignore),
    opt("-6", Nothing, Ignore),
    // omni's direction, taken before the test was named; netperf ignores it for the
    // other tests.
    opt("-d", Value, Ignore),
    opt(
        "-L",
        Value,
        Handle(|p, _, v| {
            p.data_bind = Some(bracketless(first_of_pair(&v)));
            Ok(())
        }),
    ),
];

/// -l: a length, or a count when negative; the last one given wins, either kind.
fn length(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    match v.trim().strip_prefix('-') {
        Some(n) => p.count = Some(n.to_string()),
        None => {
            p.count = None;
            p.globals.extend(["-l".into(), v]);
        }
    }
    Ok(())
}

/// -D: demo mode. A negative interval is netperf's "precise" demo mode; ringperf's
/// interval samples are timed on the ring either way.
fn demo(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    let secs = first_of_pair(&v).trim_start_matches('-');
    let secs = if secs.is_empty() { "1" } else { secs };
    p.out.demo = true;
    p.globals.extend(["-D".into(), secs.to_string()]);
    Ok(())
}

fn units(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    p.out.units = v.clone();
    p.globals.extend(["-f".into(), v]);
    Ok(())
}

fn banner(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    p.out.banner = v.trim() != "0";
    p.globals.extend(["-P".into(), if p.out.banner { "1" } else { "0" }.into()]);
    Ok(())
}

fn verbosity(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    p.out.verbosity =
        v.trim().parse().map_err(|_| usage(format!("-v {v}: give a verbosity, like -v 0, 1 or 2")))?;
    Ok(())
}

fn tos(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    let (l, r) = v.split_once(',').unwrap_or((&v, ""));
    p.out.tos = (parse_ipqos(l)?, parse_ipqos(r)?);
    Ok(())
}

fn cpu(p: &mut Parse, flag: &str, _: String) -> Result<(), Refusal> {
    p.out.cpu = true;
    p.globals.push(flag.to_string());
    Ok(())
}

/// -b N: netperf counts the requests beyond the first, so -b 3 keeps 4 in flight.
fn burst(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    let extra: u32 =
        v.parse().map_err(|_| usage(format!("-b {v}: give the extra requests in flight, like -b 3")))?;
    // -b 0 alone asks nothing; after -b 3 it is netperf's last word: one in flight.
    if extra > 0 || p.native.iter().any(|a| a == "--burst") {
        p.native.extend(["--burst".into(), extra.saturating_add(1).to_string()]);
    }
    Ok(())
}

/// The data connection's host: ringperf's data connections go where the control
/// connection went.
fn data_host(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    let data = first_of_pair(&v);
    if let Some(h) = &p.host {
        if !data.is_empty() && data != h.as_str() {
            return Err(usage(format!(
                "test option -H {data}: ringperf's data connections go to the control host ({h}): give the same host to both -H"
            )));
        }
    } else if !data.is_empty() {
        p.host = Some(data.to_string());
        p.replace_host(data);
    }
    Ok(())
}

fn congestion_control(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    let (l, r) = v.split_once(',').unwrap_or((&v, ""));
    if !r.is_empty() && r != l {
        return Err(usage(format!(
            "-K {v}: ringperf uses one congestion control on both sides: give one name"
        )));
    }
    p.native.extend(["--cc".into(), l.to_string()]);
    Ok(())
}

fn udp_timeout(p: &mut Parse, _: &str, v: String) -> Result<(), Refusal> {
    if p.out.test != "UDP_RR" {
        return Err(usage(format!("test option -e {v}: the socket timeout applies to UDP_RR in ringperf")));
    }
    let secs: f64 = v
        .trim()
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0)
        .ok_or_else(|| usage(format!("-e {v}: give the timeout in seconds, like -e 1")))?;
    p.native.extend(["--timeout-us".into(), ((secs * 1e6).round() as u64).to_string()]);
    Ok(())
}

/// -k, -o, -O with the names (none: netperf's default for the test).
fn select(p: &mut Parse, flag: &str, v: String) -> Result<(), Refusal> {
    let style = match flag {
        "-k" => Style::Keyval,
        "-o" => Style::Csv,
        _ => Style::Columns,
    };
    p.out.select = Some((style, selection(&v)?));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An option listed twice in a part would never reach its second entry.
    #[test]
    fn each_option_is_listed_once_in_its_part() {
        for table in [GLOBAL, TEST] {
            let mut names: Vec<&str> = table.iter().map(|o| o.name).collect();
            let all = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), all);
            for o in table {
                assert!(o.name.len() == 2 && o.name.starts_with('-'), "{}: one letter after '-'", o.name);
                if let Native(n) = o.does {
                    assert!(n.starts_with('-'), "{} becomes an option", o.name);
                    assert!(o.takes == Value || o.takes == Nothing, "{}: passes on what it takes", o.name);
                }
            }
        }
    }
}
