//! netperf's command line. Two ways in: `ringperf -t TCP_STREAM -H host -l 10 -- -m 64K` is
//! rewritten into the native subcommand form and runs as a native test; a binary invoked as
//! `netperf` ([`main`]) takes netperf's whole command line and answers in netperf's output
//! contract (classic tables, `-k`/`-o`/`-O` selectors, demo-mode interim lines), so harnesses
//! built on netperf (flent) run unchanged.

use std::time::{SystemTime, UNIX_EPOCH};

use ringperf_engine::report::IntervalSample;
use ringperf_engine::{Error, TestReport, TestSpec};

use crate::render::Units;
use crate::{args, live, netperf_titles, print, render, runner, test_spec};

/// netperf's control port, where a `netserver` (or `ringperf serve -p 12865`) listens.
pub const NETPERF_PORT: u16 = 12865;

/// The variable whose words join a netperf-form command line as ringperf options, so a
/// harness that cannot change netperf's arguments can still pick engines:
/// `RINGPERF_ARGS="--recv-engine multishot" flent ...`.
pub const ARGS_ENV: &str = "RINGPERF_ARGS";

/// netperf test names and the native arguments they become.
const TESTS: &[(&str, &[&str])] = &[
    ("TCP_STREAM", &["stream"]),
    ("TCP_MAERTS", &["stream", "--reverse"]),
    ("TCP_SENDFILE", &["sendfile"]),
    ("TCP_RR", &["rr"]),
    ("TCP_CRR", &["crr"]),
    ("UDP_STREAM", &["udp-stream"]),
    ("UDP_RR", &["udp-rr"]),
];

/// Global options that mean the same in both tools and take a value.
const GLOBALS: &[&str] = &["-H", "-l", "-T", "-f", "-i", "-I", "-P", "-p", "-D"];
/// Global options without a value that mean the same in both tools.
const GLOBAL_FLAGS: &[&str] = &["-c", "-C"];
/// Test-specific options after `--`: netperf's name -> ringperf's, and whether it takes a value.
const TEST_OPTIONS: &[(&str, &str, bool)] = &[
    ("-m", "-m", true),
    ("-M", "-M", true),
    ("-s", "-s", true),
    ("-S", "-S", true),
    ("-r", "-r", true),
    ("-D", "--nodelay", false),
    ("-C", "--cork", false),
];

/// How the result is printed: netperf's output selectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// -k: NAME=value lines.
    Keyval,
    /// -o: a CSV header line (with -P 1) and a CSV value line.
    Csv,
    /// -O: columns under a header (with -P 1).
    Columns,
}

/// Everything a netperf command line asks that is not the test itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// netperf's test name (TCP_STREAM, ...).
    pub test: &'static str,
    /// -P: banners and headers.
    pub banner: bool,
    /// -v: 0 only the figure, 1 the classic table, 2 and more add detail.
    pub verbosity: u8,
    /// -D: print interim results while the test runs.
    pub demo: bool,
    /// -k/-o/-O with the names asked for (empty: netperf's default set for the style).
    pub select: Option<(Style, Vec<String>)>,
    /// -c or -C: netperf's default selection then adds its CPU names.
    pub cpu: bool,
    /// -f: the throughput unit letter.
    pub units: String,
    /// -Y as netperf would report it: the TOS byte of each side (`None`: left alone).
    pub tos: (Option<u8>, Option<u8>),
    /// -F: the file whose bytes this process's sends carry (TCP_SENDFILE sends the file
    /// itself instead).
    pub fill_file: Option<String>,
}

/// A netperf command line as ringperf runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The native command line (argv[0] first) that gives the test's spec.
    pub native: Vec<String>,
    pub output: Output,
}

/// A netperf-form error: the message (netperf-style, without the program name) and the
/// exit code.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub code: i32,
}

fn usage(message: impl Into<String>) -> Refusal {
    Refusal { message: message.into(), code: 2 }
}

/// Rewrites `args` if it is a netperf-style invocation (a `-t` before any subcommand);
/// anything else comes back unchanged. The result runs as a native test with ringperf's
/// own report.
pub fn rewrite(args: Vec<String>) -> Result<Vec<String>, String> {
    let uses_t = args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "-t" || a.starts_with("-t"));
    let native = args.get(1).is_some_and(|a| !a.starts_with('-'));
    if native || !uses_t {
        return Ok(args);
    }
    parse(&args, false).map(|c| c.native).map_err(|r| r.message)
}

/// Parses netperf's command line (`args[0]` is the program). `by_name`: invoked as
/// `netperf`, so netperf's defaults hold where they differ from ringperf's (TCP_STREAM
/// without -t, a server on localhost:12865 without -H and -p, 10^6bits/s) and the
/// output-only options (-v, -k, -o, -O, -j) are taken; otherwise they are refused, since
/// the native report has its own forms (--keyval, --csv).
pub fn parse(args: &[String], by_name: bool) -> Result<Call, Refusal> {
    let program = args.first().cloned().unwrap_or_else(|| "ringperf".into());
    let mut globals: Vec<String> = Vec::new();
    let mut test = None;
    let mut out = Output {
        test: "TCP_STREAM",
        banner: true,
        verbosity: 1,
        demo: false,
        select: None,
        cpu: false,
        units: "m".into(),
        tos: (None, None),
        fill_file: None,
    };
    let (mut host, mut port, mut family6) = (None::<String>, None::<String>, false);
    let mut fill_file = None;
    // -L before and after `--`: the control and the data connections' local addresses.
    let (mut control_bind, mut data_bind) = (None::<String>, None::<String>);
    // A negative -l: a count instead of a length.
    let mut count = None::<String>;
    let mut it = args.iter().skip(1).peekable();
    let refuse = |a: &str| {
        if !by_name && ["-v", "-j"].contains(&a.get(..2).unwrap_or(a)) {
            return usage(format!(
                "netperf option {a} belongs to netperf's output, which ringperf prints when invoked as netperf: run 'ringperf install-links DIR' and call DIR/netperf"
            ));
        }
        usage(format!("netperf option {a} is not supported by ringperf: see 'ringperf --help'"))
    };
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if is_long(a) {
            // ringperf's own long options may ride along in either part.
            push_long(&mut globals, a, &mut it);
            continue;
        }
        let (flag, attached) = split_attached(a);
        let value = |it: &mut Args<'_>| value_of(&flag, &attached, it);
        match flag.as_str() {
            "-t" => test = Some(value(&mut it)?),
            "-H" => host = Some(first_of_pair(&value(&mut it)?).to_string()),
            "-p" => port = Some(first_of_pair(&value(&mut it)?).to_string()),
            "-4" => family6 = false,
            "-6" => family6 = true,
            "-l" => {
                // The last -l wins, a length or a count.
                let v = value(&mut it)?;
                match v.trim().strip_prefix('-') {
                    Some(n) => count = Some(n.to_string()),
                    None => {
                        count = None;
                        globals.extend(["-l".into(), v]);
                    }
                }
            }
            "-D" => {
                // A negative interval is netperf's "precise" demo mode; ringperf's
                // interval samples are timed on the ring either way.
                let v = value(&mut it)?;
                let secs = first_of_pair(&v).trim_start_matches('-');
                let secs = if secs.is_empty() { "1" } else { secs };
                out.demo = true;
                globals.extend(["-D".into(), secs.to_string()]);
            }
            "-f" => {
                let v = value(&mut it)?;
                out.units = v.clone();
                globals.extend(["-f".into(), v]);
            }
            "-P" => {
                let v = value(&mut it)?;
                out.banner = v.trim() != "0";
                globals.extend(["-P".into(), if out.banner { "1" } else { "0" }.into()]);
            }
            "-v" if by_name => {
                let v = value(&mut it)?;
                out.verbosity = v
                    .trim()
                    .parse()
                    .map_err(|_| usage(format!("-v {v}: give a verbosity, like -v 0, 1 or 2")))?;
            }
            // Latency percentiles are always kept (netperf's -j asks for them).
            "-j" if by_name => {}
            "-F" => fill_file = Some(first_of_pair(&value(&mut it)?).to_string()),
            // The control connection's local address (`addr[,family]`).
            "-L" => control_bind = Some(bracketless(first_of_pair(&value(&mut it)?))),
            "-Y" => {
                let v = value(&mut it)?;
                let (l, r) = v.split_once(',').unwrap_or((&v, ""));
                out.tos = (parse_ipqos(l)?, parse_ipqos(r)?);
            }
            "-c" | "-C" => {
                // netperf takes an optional CPU rate after either; ringperf measures CPU
                // from /proc/stat and needs none.
                if attached.is_none()
                    && it.peek().is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
                {
                    it.next();
                }
                out.cpu = true;
                globals.push(flag);
            }
            f if GLOBALS.contains(&f) => {
                let v = value(&mut it)?;
                globals.extend([flag.clone(), v]);
            }
            f if GLOBAL_FLAGS.contains(&f) => globals.push(flag),
            _ => return Err(refuse(a)),
        }
    }
    let name = test
        .unwrap_or_else(|| if by_name { "TCP_STREAM".into() } else { String::new() })
        .to_ascii_uppercase();
    // omni is TCP_STREAM unless its -d says otherwise (netperf takes -d for omni only).
    let name = if name == "OMNI" { omni_direction(it.clone())?.to_string() } else { name };
    let Some((test_name, native)) = TESTS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = TESTS.iter().map(|(n, _)| *n).collect();
        return Err(usage(format!(
            "netperf test '{name}' is not supported: use one of {}",
            names.join(", ")
        )));
    };
    out.test = test_name;
    if let Some(n) = &count {
        // netperf counts bytes in the stream tests (a UDP_STREAM's in whole datagrams) and
        // transactions in the request/response ones.
        let flag = match *test_name {
            "TCP_STREAM" | "TCP_MAERTS" | "TCP_SENDFILE" | "UDP_STREAM" => "--bytes",
            "TCP_RR" | "TCP_CRR" | "UDP_RR" => "--transactions",
            _ => {
                return Err(usage(format!(
                    "-l -{n}: ringperf counts bytes in the stream tests and transactions in the request/response tests, not in {test_name}: give the test length in seconds"
                )))
            }
        };
        // netperf's "until done", bounded as every ringperf load is.
        globals.extend([flag.into(), n.clone(), "-l".into(), COUNT_CAP_SECS.to_string()]);
    }
    let mut native_args = vec![program];
    native_args.extend(native.iter().map(|s| s.to_string()));
    if by_name {
        // netperf always talks to a netserver: localhost:12865 unless told otherwise.
        let h = host.clone().unwrap_or_else(|| if family6 { "::1".into() } else { "127.0.0.1".into() });
        native_args.extend(["-H".into(), h]);
        native_args.extend(["-p".into(), port.clone().unwrap_or_else(|| NETPERF_PORT.to_string())]);
    } else {
        if let Some(h) = &host {
            native_args.extend(["-H".into(), h.clone()]);
        }
        if let Some(p) = &port {
            native_args.extend(["-p".into(), p.clone()]);
        }
    }
    native_args.extend(globals);
    if let Some(file) = fill_file {
        if *test_name == "TCP_SENDFILE" {
            native_args.extend(["-F".into(), file]);
        } else {
            // netperf reads its fill file before it connects; a file it cannot read is an
            // error there too.
            ringperf_engine::input::read_prefix(std::path::Path::new(&file), "fill file", 1)
                .map_err(|e| usage(format!("-F {file}: {e}")))?;
            out.fill_file = Some(file);
        }
    }
    match out.tos {
        (None, None) => {}
        (Some(l), Some(r)) if l != r => {
            return Err(usage(format!(
                "-Y {l:#04x},{r:#04x}: ringperf marks both sides' data sockets alike: give one TOS for both"
            )))
        }
        (Some(t), _) | (None, Some(t)) => native_args.extend(["--tos".into(), format!("{t:#04x}")]),
    }
    while let Some(a) = it.next() {
        if is_long(a) {
            push_long(&mut native_args, a, &mut it);
            continue;
        }
        let (flag, attached) = split_attached(a);
        let value = |it: &mut Args<'_>| value_of(&flag, &attached, it);
        match flag.as_str() {
            "-b" => {
                // netperf counts the requests beyond the first: -b 3 keeps 4 in flight.
                let v = value(&mut it)?;
                let extra: u32 = v
                    .parse()
                    .map_err(|_| usage(format!("-b {v}: give the extra requests in flight, like -b 3")))?;
                // -b 0 alone asks nothing; after -b 3 it is netperf's last word: one in flight.
                if extra > 0 || native_args.iter().any(|a| a == "--burst") {
                    native_args.extend(["--burst".into(), extra.saturating_add(1).to_string()]);
                }
            }
            "-H" => {
                // The data connection's host: ringperf's data connections go where the
                // control connection went.
                let v = value(&mut it)?;
                let data = first_of_pair(&v);
                if let Some(h) = &host {
                    if !data.is_empty() && data != h.as_str() {
                        return Err(usage(format!(
                            "test option -H {data}: ringperf's data connections go to the control host ({h}): give the same host to both -H"
                        )));
                    }
                } else if !data.is_empty() {
                    host = Some(data.to_string());
                    replace_host(&mut native_args, data);
                }
            }
            "-K" => {
                let v = value(&mut it)?;
                let (l, r) = v.split_once(',').unwrap_or((&v, ""));
                if !r.is_empty() && r != l {
                    return Err(usage(format!(
                        "-K {v}: ringperf uses one congestion control on both sides: give one name"
                    )));
                }
                native_args.extend(["--cc".into(), l.to_string()]);
            }
            "-e" => {
                let v = value(&mut it)?;
                if *test_name != "UDP_RR" {
                    return Err(usage(format!(
                        "test option -e {v}: the socket timeout applies to UDP_RR in ringperf"
                    )));
                }
                let secs: f64 = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| usage(format!("-e {v}: give the timeout in seconds, like -e 1")))?;
                native_args.extend(["--timeout-us".into(), ((secs * 1e6).round() as u64).to_string()]);
            }
            "-k" | "-o" | "-O" if by_name => {
                let style = match flag.as_str() {
                    "-k" => Style::Keyval,
                    "-o" => Style::Csv,
                    _ => Style::Columns,
                };
                // The list is optional: the next word is it unless it is another option.
                let list = attached.clone().or_else(|| it.next_if(|n| !n.starts_with('-')).cloned());
                out.select = Some((style, selection(list.as_deref())?));
            }
            "-4" | "-6" => {}
            // omni's direction, taken before the test was named; netperf ignores it for the
            // other tests.
            "-d" => {
                value(&mut it)?;
            }
            "-L" => data_bind = Some(bracketless(first_of_pair(&value(&mut it)?))),
            _ => {
                let Some((_, ours, takes)) = TEST_OPTIONS.iter().find(|(n, _, _)| *n == flag) else {
                    if matches!(flag.as_str(), "-k" | "-o" | "-O") {
                        return Err(usage(format!(
                            "netperf test option {a} belongs to netperf's output, which ringperf prints when invoked as netperf: run 'ringperf install-links DIR' and call DIR/netperf (or use --keyval)"
                        )));
                    }
                    return Err(usage(format!(
                        "netperf test option {a} is not supported by ringperf: see 'ringperf {} --help'",
                        native[0]
                    )));
                };
                native_args.push(ours.to_string());
                if *takes {
                    native_args.push(value(&mut it)?);
                }
            }
        }
    }
    let bind = match (control_bind.filter(|b| !b.is_empty()), data_bind.filter(|b| !b.is_empty())) {
        (Some(c), Some(d)) if c != d => {
            return Err(usage(format!(
                "-L {c} and test option -L {d}: ringperf's server takes data connections only from the control connection's address: give one local address"
            )))
        }
        (Some(b), _) | (None, Some(b)) => Some(b),
        (None, None) => None,
    };
    if let Some(b) = bind {
        native_args.extend(["-L".into(), b]);
    }
    if by_name {
        if let Ok(extra) = std::env::var(ARGS_ENV) {
            native_args.extend(extra.split_whitespace().map(String::from));
        }
    }
    Ok(Call { native: last_wins(native_args), output: out })
}

/// `native` with each option kept only where it was last given, as netperf takes a repeated
/// option (`-l 1 -l 2` runs 2 s), where ringperf's own parser refuses the repeat. The
/// parser's definitions say which options take a value and which gather a list (kept whole).
fn last_wins(native: Vec<String>) -> Vec<String> {
    let cmd = args::command();
    let Some(sub) = native.get(1).and_then(|n| cmd.find_subcommand(n)) else { return native };
    // (argument id, its words) in command-line order.
    let mut options: Vec<(Option<String>, Vec<String>)> = Vec::new();
    let mut words = native.iter().skip(2).peekable();
    while let Some(w) = words.next() {
        let (name, inline) = match w.split_once('=') {
            Some((n, _)) if w.starts_with("--") => (n, true),
            _ => (w.as_str(), false),
        };
        let arg = sub.get_arguments().find(|a| match name.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long),
            None => name.len() == 2 && name.strip_prefix('-').and_then(|s| s.chars().next()) == a.get_short(),
        });
        let Some(arg) = arg else {
            options.push((None, vec![w.clone()]));
            continue;
        };
        let mut group = vec![w.clone()];
        if !inline && arg.get_action().takes_values() {
            group.extend(words.next().cloned());
        }
        let gathers = matches!(arg.get_action(), clap::ArgAction::Append | clap::ArgAction::Count);
        let id = arg.get_id().to_string();
        if !gathers {
            options.retain(|(o, _)| o.as_deref() != Some(id.as_str()));
        }
        options.push((Some(id), group));
    }
    native.into_iter().take(2).chain(options.into_iter().flat_map(|(_, g)| g)).collect()
}

/// The netperf test an omni test's -d (among the test-specific options in `rest`) makes
/// it: netperf's words for a direction (send, xmit, stream, transmit; recv, receive,
/// maerts; rr), several joined by '|', or its bit values (2 send, 4 receive, 6 both).
fn omni_direction(mut rest: Args<'_>) -> Result<&'static str, Refusal> {
    let mut given = None;
    while let Some(a) = rest.next() {
        let (flag, attached) = split_attached(a);
        if flag == "-d" {
            given = Some(value_of(&flag, &attached, &mut rest)?);
        }
    }
    let Some(given) = given else { return Ok("TCP_STREAM") };
    let (mut send, mut recv) = (false, false);
    for word in given.split('|').map(str::trim).filter(|w| !w.is_empty()) {
        let bits = match word.to_ascii_lowercase().as_str() {
            "send" | "xmit" | "stream" | "transmit" => 2,
            "recv" | "receive" | "maerts" => 4,
            "rr" => 6,
            n => parse_c_number(n).unwrap_or(0),
        };
        if bits == 0 || bits & !6 != 0 {
            return Err(usage(format!(
                "test option -d {given}: '{word}' is no direction: use send, recv or rr (or send|recv)"
            )));
        }
        send |= bits & 2 != 0;
        recv |= bits & 4 != 0;
    }
    Ok(match (send, recv) {
        (true, true) => "TCP_RR",
        (false, true) => "TCP_MAERTS",
        (true, false) => "TCP_STREAM",
        (false, false) => return Err(usage(format!("test option -d {given}: use send, recv or rr"))),
    })
}

/// A number as C's strtol with base 0 reads it: decimal, 0x hex or 0 octal.
fn parse_c_number(t: &str) -> Option<u64> {
    if let Some(hex) = t.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// A long option and, unless it has `=value`, the word after it when that is no option
/// (netperf's command line has no positional arguments, so such a word is its value).
fn push_long<'a>(
    to: &mut Vec<String>,
    a: &str,
    it: &mut std::iter::Peekable<impl Iterator<Item = &'a String>>,
) {
    to.push(a.to_string());
    if !a.contains('=') {
        if let Some(v) = it.next_if(|n| !n.starts_with('-')) {
            to.push(v.clone());
        }
    }
}

fn replace_host(native: &mut [String], host: &str) {
    if let Some(i) = native.iter().position(|a| a == "-H") {
        if let Some(v) = native.get_mut(i + 1) {
            *v = host.to_string();
        }
    }
}

/// An address as netperf takes it, IPv6 perhaps in brackets.
fn bracketless(a: &str) -> String {
    a.trim().trim_start_matches('[').trim_end_matches(']').to_string()
}

/// netperf's `a,b` option values: the first part.
fn first_of_pair(v: &str) -> &str {
    v.split(',').next().unwrap_or("")
}

/// netperf's -Y values: a DSCP name (CS0-CS7, AF11-AF43, EF, LE) or a TOS byte in decimal,
/// hex (0x) or octal (0); empty leaves the side alone.
fn parse_ipqos(s: &str) -> Result<Option<u8>, Refusal> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let up = t.to_ascii_uppercase();
    let dscp = match up.as_str() {
        "EF" => Some(46),
        "LE" => Some(1),
        _ if up.len() == 3 && up.starts_with("CS") => {
            up[2..].parse::<u8>().ok().filter(|n| *n <= 7).map(|n| n * 8)
        }
        _ if up.len() == 4 && up.starts_with("AF") => {
            let (class, drop) = (up[2..3].parse::<u8>().ok(), up[3..4].parse::<u8>().ok());
            match (class, drop) {
                (Some(c @ 1..=4), Some(d @ 1..=3)) => Some(c * 8 + d * 2),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(d) = dscp {
        return Ok(Some(d << 2));
    }
    let parsed = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u8::from_str_radix(hex, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u8::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<u8>()
    };
    parsed
        .map(Some)
        .map_err(|_| usage(format!("-Y {s}: give a DSCP name (CS1, AF41, EF) or a TOS byte (0x20)")))
}

/// The names of a -k/-o/-O argument: a comma (or space) separated list, or a file holding
/// one. A word with a '/' or one that exists as a file is read as a file, as netperf does.
fn selection(arg: Option<&str>) -> Result<Vec<String>, Refusal> {
    let Some(arg) = arg else { return Ok(Vec::new()) };
    let text = if std::path::Path::new(arg).is_file() {
        ringperf_engine::input::read_text(std::path::Path::new(arg), ringperf_engine::input::SELECTION)
            .map_err(|e| usage(e.to_string()))?
    } else {
        arg.to_string()
    };
    Ok(text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
        .map(|n| n.to_ascii_uppercase())
        .collect())
}

fn is_long(a: &str) -> bool {
    a.starts_with("--") && a.len() > 2
}

/// The rest of a command line, as the option loops walk it.
type Args<'a> = std::iter::Peekable<std::iter::Skip<std::slice::Iter<'a, String>>>;

/// An option's value: attached (`-l10`) or the next argument (`-l 10`).
fn value_of(flag: &str, attached: &Option<String>, it: &mut Args<'_>) -> Result<String, Refusal> {
    attached.clone().or_else(|| it.next().cloned()).ok_or_else(|| usage(format!("{flag} needs a value")))
}

/// `-l10` -> ("-l", Some("10")); `-l` -> ("-l", None).
fn split_attached(a: &str) -> (String, Option<String>) {
    if a.len() > 2 && a.starts_with('-') && !a.starts_with("--") {
        (a[..2].to_string(), Some(a[2..].to_string()))
    } else {
        (a.to_string(), None)
    }
}

/// Runs ringperf as `netperf`: `argv` is netperf's command line. Returns the exit code.
pub fn main(argv: Vec<String>) -> i32 {
    let call = match parse(&argv, true) {
        Ok(c) => c,
        Err(r) => {
            eprintln!("netperf: {}", r.message);
            return r.code;
        }
    };
    let cli = match args::parse(&call.native) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            crate::print_help(&e);
            return 0;
        }
        Err(e) => {
            eprintln!("netperf: {}", crate::one_line(&e, &call.native));
            return 2;
        }
    };
    match run(&cli, &call.output) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("netperf: {e}");
            e.exit_code()
        }
    }
}

fn run(cli: &args::Cli, out: &Output) -> Result<i32, Error> {
    let spec = test_spec(&cli.command)?;
    let t = cli.command.test_args().ok_or_else(|| Error::Usage("not a test command".into()))?;
    let units = Units::parse(&out.units);
    if let Some(file) = &out.fill_file {
        if spec.verify {
            return Err(Error::Usage(format!(
                "-F {file} and --verify: the check expects ringperf's pattern: drop one of them"
            )));
        }
        // netperf fills its buffers from the file's start; a megabyte repeats well enough
        // (and /dev/urandom never ends).
        let bytes = ringperf_engine::input::read_prefix(std::path::Path::new(file), "fill file", FILL_BYTES)
            .map_err(|e| Error::Usage(format!("-F {file}: {e}")))?;
        ringperf_engine::verify::set_fill_source(bytes);
    }
    let runner = runner::Runner::new(t)?;
    if out.banner {
        print("the banner", &banner(&spec, out, t.host.as_ref().map_or("127.0.0.1", |h| h.host.as_str())));
        if crate::output::stdout_failed() {
            // Its result could only fail to print too (the exit code says so).
            return Ok(0);
        }
    }
    let rr = spec.workload.is_transactional();
    let keyval_lines = matches!(out.select, Some((Style::Keyval, _)));
    let stop = runner.stopper();
    let printer = out.demo.then(|| {
        let mut n = 0usize;
        let mut origin = None;
        live::Printer::with(&spec, move |s: IntervalSample| {
            // The tick that lands on the end of the window may cover a sliver (or no time
            // at all): flent would divide by its 0.000 s.
            if !live::worth_a_line(&s) {
                return;
            }
            let ending = interval_end(&mut origin, &s);
            let line = if keyval_lines {
                interim_keyval(n, &s, rr, units, ending)
            } else {
                interim_line(&s, rr, units, ending)
            };
            n += 1;
            live::print_or_stop(&line, &stop);
        })
    });
    let confidence = crate::confidence_target(t);
    let report = runner.run(&spec, t, confidence, runner::Progress::Lines(printer), &mut |_, _, _| {})?;
    if std::env::var("DUMP_TCP_INFO").is_ok_and(|v| v != "0" && !v.is_empty()) {
        eprint!("{}", tcp_info_lines(&report));
    }
    print("the result", &render(&report, out, units));
    Ok(runner.partial(&report).unwrap_or_else(|| crate::requirements(&report)))
}

/// The longest a count test (negative -l) may run: netperf has no bound, every ringperf
/// load has one.
pub const COUNT_CAP_SECS: u64 = 600;

/// How much of a fill file the payload repeats.
const FILL_BYTES: u64 = 1 << 20;

/// netperf's demo line without -k.
fn interim_line(s: &IntervalSample, rr: bool, units: Units, ending: f64) -> String {
    let (value, unit) = interim_value(s, rr, units);
    format!(
        "Interim result: {value:7.2} {unit} over {:.3} seconds ending at {ending:.3}\n",
        s.duration_ns as f64 / 1e9
    )
}

/// The interim figure of `s` and its unit.
fn interim_value(s: &IntervalSample, rr: bool, units: Units) -> (f64, &'static str) {
    if rr {
        (s.transactions_per_sec(), "Trans/s")
    } else {
        (units.convert(s.throughput_bits_per_sec()), units.label())
    }
}

/// netperf's demo lines under -k: NETPERF_INTERIM_RESULT[n]= and the rest.
fn interim_keyval(n: usize, s: &IntervalSample, rr: bool, units: Units, ending: f64) -> String {
    let (value, unit) = interim_value(s, rr, units);
    format!(
        "NETPERF_INTERIM_RESULT[{n}]={value:.2}\nNETPERF_UNITS[{n}]={unit}\nNETPERF_INTERVAL[{n}]={:.3}\nNETPERF_ENDING[{n}]={ending:.3}\n",
        s.duration_ns as f64 / 1e9
    )
}

/// The wall-clock end of interval `s`, in seconds: the window's start on the wall clock
/// (`origin`, taken from the first sample, printed as it ends) plus the interval's end in
/// the window. A line printed late on a busy machine still says when its interval ended,
/// so a harness that places the points on a time axis (flent) places them right.
fn interval_end(origin: &mut Option<f64>, s: &IntervalSample) -> f64 {
    let end = (s.start_ns + s.duration_ns) as f64 / 1e9;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    *origin.get_or_insert(now - end) + end
}

/// The first line netperf prints (with -P 1): which test, to where.
fn banner(spec: &TestSpec, out: &Output, host: &str) -> String {
    let family = if host.contains(':') { "AF_INET6" } else { "AF_INET" };
    let what = match out.test {
        "TCP_STREAM" => "TCP STREAM TEST",
        "TCP_MAERTS" => "TCP MAERTS TEST",
        "TCP_SENDFILE" => "TCP SENDFILE TEST",
        "TCP_RR" => "TCP REQUEST/RESPONSE TEST",
        "TCP_CRR" => "TCP Connect/Request/Response TEST",
        "UDP_STREAM" => "UDP STREAM TEST",
        _ => "UDP REQUEST/RESPONSE TEST",
    };
    let demo = if out.demo { " : demo" } else { "" };
    let burst = if spec.workload.is_transactional() {
        format!(" : first burst {}", spec.burst.saturating_sub(1))
    } else {
        String::new()
    };
    format!("RINGPERF {what} to {host} () port 0 {family}{demo}{burst}\n")
}

/// The value of netperf omni output `name` for `r`, or `None` for a name ringperf cannot
/// fill (netperf prints nothing for such a name under -k, and an empty field under -o/-O).
pub fn value(r: &TestReport, name: &str, units: Units) -> Option<String> {
    let stream = !r.spec.workload.is_transactional();
    let remote = r.remote.as_ref();
    let tcp = !r.spec.workload.is_udp();
    let sending = r.local.bytes_sent >= r.local.bytes_received;
    let local_tos = r.spec.socket.tos;
    let tos = |t: Option<u8>| t.map_or_else(|| "0xffffffff".to_string(), |t| format!("{t:#04x}"));
    let size =
        |v: u32, used: bool| if used { v.to_string() } else { if stream { "0" } else { "-1" }.to_string() };
    let reverse = r.spec.direction == ringperf_engine::spec::Direction::ServerToClient;
    Some(match name {
        "THROUGHPUT_UNITS" if stream => units.label().to_string(),
        "PROTOCOL" => if tcp { "TCP" } else { "UDP" }.to_string(),
        "DIRECTION" => match (stream, sending) {
            (false, _) => "Send|Recv".to_string(),
            (true, true) => "Send".to_string(),
            (true, false) => "Receive".to_string(),
        },
        "TRANSPORT_MSS" => r.local.socket.mss.to_string(),
        "LOCAL_SOCKET_TOS" => tos(local_tos),
        "REMOTE_SOCKET_TOS" => tos(local_tos),
        "LOCAL_BYTES_SENT" => r.local.bytes_sent.to_string(),
        "LOCAL_BYTES_RECVD" => r.local.bytes_received.to_string(),
        "REMOTE_BYTES_SENT" => remote?.bytes_sent.to_string(),
        "REMOTE_BYTES_RECVD" => remote?.bytes_received.to_string(),
        "LOCAL_SEND_SIZE" if stream => size(r.spec.send_size, !reverse),
        "LOCAL_RECV_SIZE" if stream => size(r.spec.recv_size, reverse),
        "REMOTE_SEND_SIZE" if stream => size(r.spec.send_size, reverse),
        "REMOTE_RECV_SIZE" if stream => size(r.spec.recv_size, !reverse),
        "LOCAL_SEND_SIZE" | "REMOTE_RECV_SIZE" => r.spec.request_size.to_string(),
        "LOCAL_RECV_SIZE" | "REMOTE_SEND_SIZE" => r.spec.response_size.to_string(),
        "ELAPSED_TIME" => format!("{:.2}", r.local.elapsed_ns as f64 / 1e9),
        "LOCAL_TRANSPORT_RETRANS" => r.local.tcp.as_ref().map_or(0, |t| t.total_retrans).to_string(),
        "REMOTE_TRANSPORT_RETRANS" => remote?.tcp.as_ref().map_or(0, |t| t.total_retrans).to_string(),
        "COMMAND_LINE" => std::env::args().collect::<Vec<_>>().join(" "),
        "TEST" => r.spec.netperf_name().to_string(),
        "LOCAL_VERSION" | "REMOTE_VERSION" => r.tool_version.clone(),
        "MIN_LATENCY" | "MAX_LATENCY" | "P50_LATENCY" | "P90_LATENCY" | "P99_LATENCY" | "MEAN_LATENCY"
        | "RT_LATENCY" => {
            let v = render::keyval::value(r, name, units)?;
            // netperf prints its latency figures in whole microseconds.
            match v.parse::<f64>() {
                Ok(us) if name != "MEAN_LATENCY" && name != "RT_LATENCY" => format!("{}", us.round() as u64),
                _ => v,
            }
        }
        _ => render::keyval::value(r, name, units)?,
    })
}

/// netperf's default -k/-o/-O set when no names are given, as its omni code picks it by
/// the test's direction: sizes for a send, a receive or a request/response, then the
/// throughput, then (with -c or -C) the CPU figures.
fn default_selection(test: &str, cpu: bool) -> Vec<String> {
    const STREAM: &[&str] = &["LSS_SIZE_END", "RSR_SIZE_END", "LOCAL_SEND_SIZE"];
    const MAERTS: &[&str] = &["RSS_SIZE_END", "LSR_SIZE_END", "REMOTE_SEND_SIZE"];
    const RR: &[&str] =
        &["LSS_SIZE_END", "LSR_SIZE_END", "RSR_SIZE_END", "RSS_SIZE_END", "REQUEST_SIZE", "RESPONSE_SIZE"];
    const TPUT: &[&str] = &["ELAPSED_TIME", "THROUGHPUT", "THROUGHPUT_UNITS"];
    const CPU: &[&str] = &[
        "LOCAL_CPU_UTIL",
        "LOCAL_CPU_PERCENT_USER",
        "LOCAL_CPU_PERCENT_SYSTEM",
        "LOCAL_CPU_PERCENT_IOWAIT",
        "LOCAL_CPU_PERCENT_IRQ",
        "LOCAL_CPU_PERCENT_SWINTR",
        "LOCAL_CPU_METHOD",
        "REMOTE_CPU_UTIL",
        "REMOTE_CPU_PERCENT_USER",
        "REMOTE_CPU_PERCENT_SYSTEM",
        "REMOTE_CPU_PERCENT_IOWAIT",
        "REMOTE_CPU_PERCENT_IRQ",
        "REMOTE_CPU_PERCENT_SWINTR",
        "REMOTE_CPU_METHOD",
        "LOCAL_SD",
        "REMOTE_SD",
        "SD_UNITS",
    ];
    let sizes = match test {
        "TCP_MAERTS" => MAERTS,
        "TCP_RR" | "TCP_CRR" | "UDP_RR" => RR,
        _ => STREAM,
    };
    let cpu: &[&str] = if cpu { CPU } else { &[] };
    [sizes, TPUT, cpu].concat().into_iter().map(String::from).collect()
}

/// The final output for `out`: the selected names in their style, or the classic table.
pub fn render(r: &TestReport, out: &Output, units: Units) -> String {
    let Some((style, names)) = &out.select else { return classic(r, out, units) };
    let names: Vec<String> =
        if names.is_empty() { default_selection(out.test, out.cpu) } else { names.clone() };
    let values: Vec<Option<String>> = names.iter().map(|n| value(r, n, units)).collect();
    match style {
        Style::Keyval => {
            names.iter().zip(&values).filter_map(|(n, v)| v.as_ref().map(|v| format!("{n}={v}\n"))).collect()
        }
        Style::Csv => {
            let mut s = String::new();
            if out.banner {
                // netperf's titles, one line each; a name of ringperf's own is its title.
                let titles: Vec<String> =
                    names.iter().map(|n| netperf_titles::joined(n).unwrap_or_else(|| n.clone())).collect();
                s.push_str(&titles.join(","));
                s.push('\n');
            }
            let row: Vec<String> = values.into_iter().map(Option::unwrap_or_default).collect();
            s.push_str(&row.join(","));
            s.push('\n');
            s
        }
        Style::Columns => {
            let row: Vec<String> = values.into_iter().map(Option::unwrap_or_default).collect();
            columns(&names, &row, out.banner)
        }
    }
}

/// `-O`'s table as netperf lays it out: four title lines (a name of ringperf's own is its
/// own one-line title) over the values, each column as wide as its longest title line or
/// its value and one more, then a space; lines keep their trailing blanks, as netperf's do.
fn columns(names: &[String], row: &[String], banner: bool) -> String {
    let titles: Vec<[&str; 4]> =
        names.iter().map(|n| netperf_titles::lines(n).copied().unwrap_or([n.as_str(), "", "", ""])).collect();
    let widths: Vec<usize> = titles
        .iter()
        .zip(row)
        .map(|(t, v)| t.iter().map(|l| l.len()).max().unwrap_or(0).max(v.len() + 1))
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut l: String = cells.zip(&widths).map(|(c, w)| format!("{c:<w$} ")).collect();
        l.push('\n');
        l
    };
    let mut s = String::new();
    if banner {
        for k in 0..4 {
            s.push_str(&line(&mut titles.iter().map(|t| t[k])));
        }
    }
    s.push_str(&line(&mut row.iter().map(String::as_str)));
    s
}

/// netperf's classic tables: -v 0 the figure alone, -v 1 the table (a header with -P 1),
/// -v 2 and more the latency and retransmission lines after it.
fn classic(r: &TestReport, out: &Output, units: Units) -> String {
    let get = |n: &str| value(r, n, units).unwrap_or_default();
    let figure = get("THROUGHPUT");
    if out.verbosity == 0 {
        return format!("{figure}\n");
    }
    let mut s = String::new();
    let elapsed = format!("{:.2}", r.local.elapsed_ns as f64 / 1e9);
    let (lss, lsr) = (r.local.socket.send_buffer, r.local.socket.recv_buffer);
    let (rss, rsr) = r.remote.as_ref().map_or((0, 0), |s| (s.socket.send_buffer, s.socket.recv_buffer));
    let label = units.label();
    let left = |title: [&'static str; 4], min: usize| Column { title, min, right: false };
    let right = |title: [&'static str; 4], min: usize| Column { title, min, right: true };
    match out.test {
        "TCP_RR" | "TCP_CRR" | "UDP_RR" => {
            if out.banner {
                s.push_str("Local /Remote\n");
            }
            let columns = [
                left(["Socket", "Send", "bytes", ""], 6),
                left(["Size", "Recv", "Bytes", ""], 6),
                left(["Request", "Size", "bytes", ""], 8),
                left(["Resp.", "Size", "bytes", ""], 7),
                left(["Elapsed", "Time", "secs.", ""], 8),
                left(["Trans.", "Rate", "per sec", ""], 0),
            ];
            let rows = [
                vec![
                    lss.to_string(),
                    lsr.to_string(),
                    r.spec.request_size.to_string(),
                    r.spec.response_size.to_string(),
                    elapsed,
                    figure,
                ],
                vec![rss.to_string(), rsr.to_string()],
            ];
            s.push_str(&table(&columns, 3, &rows, out.banner));
        }
        "UDP_STREAM" => {
            let columns = [
                left(["Socket", "Size", "bytes", ""], 7),
                left(["Message", "Size", "bytes", ""], 8),
                left(["Elapsed", "Time", "secs", ""], 10),
                // "Messages" heads both counts: it may run into the next column's blank.
                right(["Messages", "Okay", "#", ""], 7),
                right(["", "Errors", "#", ""], 6),
                left(["", "Throughput", label, ""], 0),
            ];
            let rows = [
                vec![
                    lss.to_string(),
                    r.spec.send_size.to_string(),
                    elapsed.clone(),
                    get("DATAGRAMS_SENT"),
                    get("LOST_DATAGRAMS"),
                    figure,
                ],
                vec![
                    rsr.to_string(),
                    r.spec.recv_size.to_string(),
                    elapsed,
                    get("DATAGRAMS_RECEIVED"),
                    String::new(),
                    get("REMOTE_THROUGHPUT"),
                ],
            ];
            s.push_str(&table(&columns, 3, &rows, out.banner));
        }
        _ => {
            let (recv_buf, send_buf) = if out.test == "TCP_MAERTS" { (lsr, rss) } else { (rsr, lss) };
            let columns = [
                left(["Recv", "Socket", "Size", "bytes"], 6),
                left(["Send", "Socket", "Size", "bytes"], 7),
                left(["Send", "Message", "Size", "bytes"], 8),
                left(["", "Elapsed", "Time", "secs."], 8),
                left(["", "", "Throughput", label], 0),
            ];
            let rows = [vec![
                recv_buf.to_string(),
                send_buf.to_string(),
                r.spec.send_size.to_string(),
                elapsed,
                figure,
            ]];
            s.push_str(&table(&columns, 4, &rows, out.banner));
        }
    }
    if out.verbosity >= 2 {
        if r.spec.workload.is_transactional() {
            s.push_str(&format!(
                "\nRound trip (usec): mean {} min {} p50 {} p90 {} p99 {} max {}\n",
                get("MEAN_LATENCY"),
                get("MIN_LATENCY"),
                get("P50_LATENCY"),
                get("P90_LATENCY"),
                get("P99_LATENCY"),
                get("MAX_LATENCY")
            ));
        }
        s.push_str(&format!(
            "\nBytes sent {} received {} (remote sent {} received {}); retransmissions local {} remote {}\n",
            get("LOCAL_BYTES_SENT"),
            get("LOCAL_BYTES_RECVD"),
            get("REMOTE_BYTES_SENT"),
            get("REMOTE_BYTES_RECVD"),
            get("LOCAL_TRANSPORT_RETRANS"),
            get("REMOTE_TRANSPORT_RETRANS")
        ));
    }
    s
}

/// A column of a classic table: its title lines, the width it keeps at least (netperf's
/// own layout), and whether its values stand right-aligned.
struct Column {
    title: [&'static str; 4],
    min: usize,
    right: bool,
}

/// A classic table: `title_lines` lines of titles (with `banner`), a blank line, the rows.
/// Each column is as wide as its widest title or value (at least its `min`), so a large
/// figure (a 4 MiB socket buffer) widens its column instead of pushing the rest out of
/// line. A title may run into the next column where that column's title line is blank.
fn table(columns: &[Column], title_lines: usize, rows: &[Vec<String>], banner: bool) -> String {
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let spills = |k: usize| columns.get(i + 1).is_some_and(|n| n.title[k].is_empty());
            let titles = (0..title_lines).filter(|&k| !spills(k)).map(|k| c.title[k].len());
            let values = rows.iter().filter_map(|r| r.get(i)).map(String::len);
            titles.chain(values).fold(c.min, usize::max)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = (&Column, &str)>| -> String {
        let mut l = String::new();
        for ((c, cell), w) in cells.zip(&widths) {
            if c.right {
                l.push_str(&format!("{cell:>w$} "));
            } else {
                l.push_str(&format!("{cell:<w$} "));
            }
        }
        format!("{}\n", l.trim_end())
    };
    let mut s = String::new();
    if banner {
        for k in 0..title_lines {
            s.push_str(&line(&mut columns.iter().map(|c| (c, c.title[k]))));
        }
        s.push('\n');
    }
    for row in rows {
        s.push_str(&line(&mut columns.iter().zip(row).map(|(c, v)| (c, v.as_str()))));
    }
    s
}

/// netperf's DUMP_TCP_INFO lines (`tcpi_NAME value` pairs, which flent reads from stderr),
/// from the local side's TCP_INFO at the end of the run.
fn tcp_info_lines(r: &TestReport) -> String {
    let Some(t) = r.local.tcp.as_ref().and_then(|t| t.flows.first()) else { return String::new() };
    format!(
        "tcpi_rtt {} tcpi_rttvar {} tcpi_snd_cwnd {} tcpi_snd_mss {}\ntcpi_total_retrans {} tcpi_segs_out {} tcpi_segs_in {}\n",
        t.rtt_us, t.rttvar_us, t.snd_cwnd, t.snd_mss, t.total_retrans, t.segs_out, t.segs_in
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn netperf_lines_become_native_ones() {
        assert_eq!(
            rewrite(v("ringperf -t TCP_STREAM -H host -l 10 -- -m 64K")).unwrap(),
            v("ringperf stream -H host -l 10 -m 64K")
        );
        assert_eq!(
            rewrite(v("ringperf -H h -t tcp_maerts -c -C -T0,1 -- -s 128K,128K -D")).unwrap(),
            v("ringperf stream --reverse -H h -c -C -T 0,1 -s 128K,128K --nodelay")
        );
        assert_eq!(rewrite(v("ringperf -tTCP_RR -- -r 1,1")).unwrap(), v("ringperf rr -r 1,1"));
        let native = v("ringperf stream -t x");
        assert_eq!(rewrite(native.clone()).unwrap(), native);
    }

    /// The whole path: a netperf line and its native twin give the same TestSpec.
    #[test]
    fn netperf_invocations_parse_to_the_native_spec() {
        use crate::spec_from_args;
        let pairs: [(&[&str], &[&str]); 6] = [
            (
                &[
                    "ringperf",
                    "-t",
                    "TCP_STREAM",
                    "-H",
                    "h",
                    "-l",
                    "10",
                    "-T",
                    "0,1",
                    "--",
                    "-m",
                    "64K",
                    "-s",
                    "1M,1M",
                ],
                &["ringperf", "stream", "-H", "h", "-l", "10", "-T", "0,1", "-m", "64K", "-s", "1M,1M"],
            ),
            (&["ringperf", "-t", "TCP_MAERTS", "-l", "5"], &["ringperf", "stream", "--reverse", "-l", "5"]),
            (
                &["ringperf", "-t", "TCP_RR", "-i", "10,3", "-I", "99,5", "--", "-r", "64,1K", "-D"],
                &["ringperf", "rr", "-i", "10,3", "-I", "99,5", "-r", "64,1K", "--nodelay"],
            ),
            (&["ringperf", "-t", "TCP_SENDFILE", "--", "-m", "1M"], &["ringperf", "sendfile", "-m", "1M"]),
            (
                &["ringperf", "-t", "TCP_RR", "--", "-b", "3", "-D"],
                &["ringperf", "rr", "--burst", "4", "--nodelay"],
            ),
            (&["ringperf", "-t", "TCP_RR", "--", "-b0"], &["ringperf", "rr"]),
        ];
        for (np, native) in pairs {
            let a = spec_from_args(np).unwrap();
            let b = spec_from_args(native).unwrap();
            assert_eq!(a, b, "{np:?} vs {native:?}");
        }
        let s = spec_from_args(&["ringperf", "-t", "TCP_STREAM", "--", "-m", "64K"]).unwrap();
        assert_eq!(s.send_size, 65536);
    }

    /// netperf takes a repeated option's last value; so does its drop-in, for global and
    /// test-specific options, flags, and a count given after a length or before one.
    #[test]
    fn a_repeated_option_takes_its_last_value() {
        let twins: [(&str, &str); 12] = [
            ("netperf -l 1 -l 2", "ringperf stream -H 127.0.0.1 -p 12865 -l 2"),
            ("netperf -H 127.0.0.9 -H 127.0.0.1", "ringperf stream -H 127.0.0.1 -p 12865"),
            ("netperf -f k -f g -P 0 -P 1", "ringperf stream -H 127.0.0.1 -p 12865 -f g"),
            ("netperf -T 0,1 -T 1,0 -l 5", "ringperf stream -H 127.0.0.1 -p 12865 -T 1,0 -l 5"),
            ("netperf -i 3,2 -i 5,3", "ringperf stream -H 127.0.0.1 -p 12865 -i 5,3"),
            ("netperf -D 1 -l 3 -D 2", "ringperf stream -H 127.0.0.1 -p 12865 -D 2 -l 3"),
            ("netperf -- -m 1K -m 2K -s 64K -s 128K", "ringperf stream -H 127.0.0.1 -p 12865 -m 2K -s 128K"),
            (
                "netperf -- -K reno -K cubic -D -D",
                "ringperf stream -H 127.0.0.1 -p 12865 --cc cubic --nodelay",
            ),
            ("netperf -t TCP_RR -- -r 1,1 -r 64,64", "ringperf rr -H 127.0.0.1 -p 12865 -r 64,64"),
            ("netperf -t TCP_RR -- -b 3 -b 0", "ringperf rr -H 127.0.0.1 -p 12865"),
            ("netperf -t TCP_RR -l -100 -l 2", "ringperf rr -H 127.0.0.1 -p 12865 -l 2"),
            ("netperf -t TCP_RR -l 2 -l -100", "ringperf rr -H 127.0.0.1 -p 12865 --transactions 100 -l 600"),
        ];
        for (np, native) in twins {
            let a = crate::netperf_spec(&np.split_whitespace().collect::<Vec<_>>())
                .unwrap_or_else(|e| panic!("{np}: {e}"));
            let b = crate::spec_from_args(&native.split_whitespace().collect::<Vec<_>>()).unwrap();
            assert_eq!(a, b, "{np} vs {native}");
        }
        let c = call("netperf -f k -f g");
        assert_eq!(c.output.units, "g", "the unit the output shows is the last -f too");
        assert_eq!(c.native.iter().filter(|a| *a == "-f").count(), 1, "{:?}", c.native);
    }

    #[test]
    fn unsupported_pieces_say_so() {
        assert!(rewrite(v("ringperf -t SCTP_STREAM")).unwrap_err().contains("not supported"));
        assert_eq!(
            rewrite(v("ringperf -t TCP_STREAM -L 1.2.3.4,4")).unwrap(),
            v("ringperf stream -L 1.2.3.4")
        );
        assert!(rewrite(v("ringperf -t TCP_STREAM -L 127.0.0.1 -- -L 127.0.0.2"))
            .unwrap_err()
            .contains("one local address"));
        assert!(rewrite(v("ringperf -t TCP_STREAM -- -P 5000")).unwrap_err().contains("-P"));
        assert!(rewrite(v("ringperf -t")).is_err());
    }

    fn call(s: &str) -> Call {
        parse(&v(s), true).unwrap()
    }

    /// flent's own command line (runners.py) goes through whole, with netperf's defaults.
    #[test]
    fn flents_command_line_parses() {
        let c = call(
            "netperf -P 0 -v 0 -D -0.20 -4 -H 127.0.0.1 -p 12865 -t TCP_STREAM -l 5 -F /dev/null -f m -- -H 127.0.0.1 -k THROUGHPUT,PROTOCOL -K cubic",
        );
        assert_eq!(c.native, v("netperf stream -H 127.0.0.1 -p 12865 -P 0 -D 0.20 -l 5 -f m --cc cubic"));
        assert!(c.output.demo && !c.output.banner && c.output.verbosity == 0);
        assert_eq!(c.output.select, Some((Style::Keyval, v("THROUGHPUT PROTOCOL"))));
        assert_eq!(c.output.fill_file.as_deref(), Some("/dev/null"));
        let c = call("netperf -P 0 -v 0 -D -0.20 -4 -Y EF,EF -H 127.0.0.1 -p 12865 -t UDP_RR -l 5 -- -e 1 -H 127.0.0.1 -k THROUGHPUT");
        assert_eq!(
            c.native,
            v("netperf udp-rr -H 127.0.0.1 -p 12865 -P 0 -D 0.20 -l 5 --tos 0xb8 --timeout-us 1000000")
        );
        assert_eq!(call("netperf").native, v("netperf stream -H 127.0.0.1 -p 12865"), "netperf's defaults");
        assert_eq!(call("netperf -6 -t omni").native, v("netperf stream -H ::1 -p 12865"));
        let k = call("netperf -t TCP_RR -- -k -D");
        assert_eq!(k.output.select, Some((Style::Keyval, vec![])), "-k without a list takes no option");
        assert_eq!(k.native, v("netperf rr -H 127.0.0.1 -p 12865 --nodelay"));
        assert_eq!(
            call("netperf -t TCP_RR -- -O THROUGHPUT").output.select.map(|s| s.0),
            Some(Style::Columns)
        );
        assert_eq!(call("netperf -c 1000 -C -t TCP_RR").native, v("netperf rr -H 127.0.0.1 -p 12865 -c -C"));
    }

    /// -O's layout, as the real netperf (afc51ff) printed `-O THROUGHPUT,PROTOCOL` and
    /// `-k` with no names selects what netperf's omni code selects for the test's direction,
    /// and its CPU names only with -c or -C.
    #[test]
    fn an_empty_selection_is_netperfs_default_for_the_test() {
        let stream = default_selection("TCP_STREAM", false);
        assert_eq!(
            stream,
            v("LSS_SIZE_END RSR_SIZE_END LOCAL_SEND_SIZE ELAPSED_TIME THROUGHPUT THROUGHPUT_UNITS")
        );
        assert_eq!(default_selection("UDP_STREAM", false), stream);
        let maerts = default_selection("TCP_MAERTS", false);
        assert_eq!(&maerts[..3], v("RSS_SIZE_END LSR_SIZE_END REMOTE_SEND_SIZE").as_slice());
        for rr in ["TCP_RR", "TCP_CRR", "UDP_RR"] {
            let names = default_selection(rr, false);
            assert_eq!(&names[4..6], v("REQUEST_SIZE RESPONSE_SIZE").as_slice(), "{rr}");
            assert_eq!(names.len(), 9, "{rr}");
        }
        let cpu = default_selection("TCP_RR", true);
        assert_eq!(cpu.len(), 9 + 17);
        assert_eq!(cpu.last().map(String::as_str), Some("SD_UNITS"));
        let out = call("netperf -c -t TCP_RR -- -k").output;
        assert!(out.cpu && out.select == Some((Style::Keyval, Vec::new())), "{out:?}");
        assert!(!call("netperf -t TCP_RR -- -k").output.cpu);
    }

    /// `-O LSS_SIZE_END,THROUGHPUT_UNITS,ELAPSED_TIME` on loopback: four title lines, each
    /// column its widest title line or value plus one, then a space.
    #[test]
    fn columns_carry_netperfs_titles_in_its_layout() {
        let names = v("THROUGHPUT PROTOCOL");
        let row = v("14861.20 TCP");
        let blank = " ".repeat(20);
        assert_eq!(
            columns(&names, &row, true),
            format!("Throughput Protocol \n{blank}\n{blank}\n{blank}\n14861.20   TCP      \n")
        );
        assert_eq!(columns(&names, &row, false), "14861.20   TCP      \n");
        let names = v("LSS_SIZE_END THROUGHPUT_UNITS ELAPSED_TIME");
        let out = columns(&names, &v("4194304 10^6bits/s 1.00"), true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "Local       Throughput  Elapsed ",
                "Send Socket Units       Time    ",
                "Size                    (sec)   ",
                "Final                           ",
                "4194304     10^6bits/s  1.00    ",
            ]
        );
        // A value wider than its title widens its column instead of running into the next.
        let out = columns(&v("PROTOCOL THROUGHPUT"), &v("A-VERY-LONG-VALUE 1.00"), false);
        assert_eq!(out, "A-VERY-LONG-VALUE  1.00       \n");
    }

    /// omni's -d picks the test as netperf's does; the legacy tests ignore it, as there.
    #[test]
    fn omni_takes_its_direction() {
        let native = |s: &str| call(s).native;
        assert_eq!(native("netperf -t omni -- -d recv"), v("netperf stream --reverse -H 127.0.0.1 -p 12865"));
        for rr in ["rr", "send|recv", "RECV|xmit", "6", "0x6"] {
            let c = call(&format!("netperf -t omni -- -d {rr} -r 1,1"));
            assert_eq!(c.native, v("netperf rr -H 127.0.0.1 -p 12865 -r 1,1"), "-d {rr}");
            assert_eq!(c.output.test, "TCP_RR", "-d {rr}");
        }
        for send in ["send", "xmit", "stream", "transmit", "2", "-dsend"] {
            let line = if send.starts_with('-') {
                format!("netperf -t omni -- {send}")
            } else {
                format!("netperf -t omni -- -d {send}")
            };
            assert_eq!(call(&line).output.test, "TCP_STREAM", "{line}");
        }
        for recv in ["receive", "maerts", "4"] {
            assert_eq!(call(&format!("netperf -t omni -- -d {recv}")).output.test, "TCP_MAERTS", "-d {recv}");
        }
        // A count follows the direction: transactions for rr.
        assert_eq!(
            native("netperf -t omni -l -100 -- -d rr"),
            v("netperf rr -H 127.0.0.1 -p 12865 --transactions 100 -l 600")
        );
        assert_eq!(native("netperf -t TCP_STREAM -- -d recv"), v("netperf stream -H 127.0.0.1 -p 12865"));
        for bad in ["bogus", "send|sideways", "1", "8", "0"] {
            let err = parse(&v(&format!("netperf -t omni -- -d {bad}")), true).unwrap_err();
            assert_eq!(err.code, 2, "-d {bad}");
            assert!(
                err.message.contains("-d") && err.message.contains("send, recv or rr"),
                "{}",
                err.message
            );
        }
    }

    /// Where each word of a line starts.
    fn word_starts(line: &str) -> Vec<usize> {
        let b = line.as_bytes();
        (0..b.len()).filter(|&i| b[i] != b' ' && (i == 0 || b[i - 1] == b' ')).collect()
    }

    /// With -s 4M -S 4M the kernel reports 8 MiB buffers: seven-digit figures that ran past
    /// netperf's six-wide columns. Each column now starts where its title does, with one
    /// space at least between values; small figures keep netperf's widths.
    #[test]
    fn classic_columns_fit_large_socket_sizes() {
        let col = |title: [&'static str; 4], min: usize| Column { title, min, right: false };
        let columns = [
            col(["Recv", "Socket", "Size", "bytes"], 6),
            col(["Send", "Socket", "Size", "bytes"], 7),
            col(["Send", "Message", "Size", "bytes"], 8),
            col(["", "Elapsed", "Time", "secs."], 8),
            col(["", "", "Throughput", "10^6bits/s"], 0),
        ];
        let big = vec![v("8388608 8388608 1400 1.00 3962.97")];
        let out = table(&columns, 4, &big, true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 6, "{out}");
        assert_eq!(lines[4], "", "a blank line under the titles: {out}");
        assert_eq!(word_starts(lines[5]), word_starts(lines[2]), "values under their titles:\n{out}");
        assert_eq!(lines[5].split_whitespace().count(), 5, "{out}");
        let small = table(&columns, 4, &[v("87380 16384 16384 10.00 941.12")], true);
        assert_eq!(
            small,
            "Recv   Send    Send\nSocket Socket  Message  Elapsed\nSize   Size    Size     Time     Throughput\nbytes  bytes   bytes    secs.    10^6bits/s\n\n87380  16384   16384    10.00    941.12\n"
        );
        // A right-aligned count column and a title that runs into the next blank one.
        let counts = [
            Column { title: ["Messages", "Okay", "#", ""], min: 7, right: true },
            Column { title: ["", "Errors", "#", ""], min: 6, right: true },
        ];
        let out = table(&counts, 3, &[v("123456789 0")], true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0].trim_start(), "Messages", "{out}");
        let end = |l: &str, word: &str| l.find(word).map(|i| i + word.len());
        assert_eq!(
            end(lines[1], "Okay"),
            end(lines[4], "123456789"),
            "right-aligned under its title:\n{out}"
        );
        assert_eq!(end(lines[1], "Errors"), Some(lines[4].len()), "{out}");
    }

    #[test]
    fn dscp_names_are_tos_bytes() {
        assert_eq!(parse_ipqos("CS1").unwrap(), Some(0x20));
        assert_eq!(parse_ipqos("cs0").unwrap(), Some(0));
        assert_eq!(parse_ipqos("AF41").unwrap(), Some(0x88));
        assert_eq!(parse_ipqos("0x10").unwrap(), Some(0x10));
        assert_eq!(parse_ipqos("32").unwrap(), Some(32));
        assert_eq!(parse_ipqos("").unwrap(), None);
        assert!(parse_ipqos("CS9").is_err());
    }

    #[test]
    fn what_ringperf_cannot_honour_is_refused_in_netperfs_way() {
        let err = |s: &str| parse(&v(s), true).unwrap_err();
        assert_eq!(err("netperf -Y CS1,CS2").code, 2);
        assert!(err("netperf -t TCP_RR -- -K cubic,reno").message.contains("-K"));
        assert!(err("netperf -t TCP_STREAM -- -e 1").message.contains("UDP_RR"));
        assert!(err("netperf -H a -- -H b").message.contains("same host"));
        assert!(err("netperf -F /nonexistent/fill").message.contains("fill file"));
        assert!(err("netperf -Z x").message.contains("-Z"));
        assert!(rewrite(v("ringperf -t TCP_STREAM -v 0")).unwrap_err().contains("install-links"));
        assert!(rewrite(v("ringperf -t TCP_STREAM -- -k THROUGHPUT")).unwrap_err().contains("install-links"));
    }
}
