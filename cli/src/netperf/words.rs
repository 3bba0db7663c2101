//! The words of a netperf command line: options with their values attached or not, netperf's
//! `a,b` pairs, and the values that have netperf's own spellings (TOS bytes, C numbers,
//! selector lists).

use super::refusal::{usage, Refusal};

/// The rest of a command line, as the option loops walk it.
pub(super) type Args<'a> = std::iter::Peekable<std::iter::Skip<std::slice::Iter<'a, String>>>;

pub(super) fn is_long(a: &str) -> bool {
    a.starts_with("--") && a.len() > 2
}

/// `-l10` -> ("-l", Some("10")); `-l` -> ("-l", None).
pub(super) fn split_attached(a: &str) -> (String, Option<String>) {
    if a.len() > 2 && a.starts_with('-') && !a.starts_with("--") {
        (a[..2].to_string(), Some(a[2..].to_string()))
    } else {
        (a.to_string(), None)
    }
}

/// An option's value: attached (`-l10`) or the next argument (`-l 10`).
pub(super) fn value_of(flag: &str, attached: &Option<String>, it: &mut Args<'_>) -> Result<String, Refusal> {
    attached.clone().or_else(|| it.next().cloned()).ok_or_else(|| usage(format!("{flag} needs a value")))
}

/// A long option and, unless it has `=value`, the word after it when that is no option
/// (netperf's command line has no positional arguments, so such a word is its value).
pub(super) fn push_long(to: &mut Vec<String>, a: &str, it: &mut Args<'_>) {
    to.push(a.to_string());
    if !a.contains('=') {
        if let Some(v) = it.next_if(|n| !n.starts_with('-')) {
            to.push(v.clone());
        }
    }
}

/// netperf's `a,b` option values: the first part.
pub(super) fn first_of_pair(v: &str) -> &str {
    v.split(',').next().unwrap_or("")
}

/// An address as netperf takes it, IPv6 perhaps in brackets.
pub(super) fn bracketless(a: &str) -> String {
    a.trim().trim_start_matches('[').trim_end_matches(']').to_string()
}

/// A number as C's strtol with base 0 reads it: decimal, 0x hex or 0 octal.
pub(super) fn parse_c_number(t: &str) -> Option<u64> {
    if let Some(hex) = t.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// netperf's -Y values: a DSCP name (CS0-CS7, AF11-AF43, EF, LE) or a TOS byte in decimal,
/// hex (0x) or octal (0); empty leaves the side alone.
pub(super) fn parse_ipqos(s: &str) -> Result<Option<u8>, Refusal> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Some(d) = dscp(&t.to_ascii_uppercase()) {
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

/// The DSCP code point of a name (upper case), `None` for no DSCP name.
fn dscp(up: &str) -> Option<u8> {
    match up {
        "EF" => Some(46),
        "LE" => Some(1),
        _ if up.len() == 3 && up.starts_with("CS") => {
            up[2..].parse::<u8>().ok().filter(|n| *n <= 7).map(|n| n * 8)
        }
        _ if up.len() == 4 && up.starts_with("AF") => {
            match (up[2..3].parse::<u8>().ok(), up[3..4].parse::<u8>().ok()) {
                (Some(c @ 1..=4), Some(d @ 1..=3)) => Some(c * 8 + d * 2),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The names of a -k/-o/-O argument: a comma (or space) separated list, or a file holding
/// one. A word with a '/' or one that exists as a file is read as a file, as netperf does.
pub(super) fn selection(arg: &str) -> Result<Vec<String>, Refusal> {
    let text = if std::path::Path::new(arg).is_file() {
        ringperf_core::input::read_text(std::path::Path::new(arg), ringperf_core::input::SELECTION)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_absent_selection_is_an_empty_one() {
        assert_eq!(selection("").unwrap(), Vec::<String>::new());
        assert_eq!(selection("throughput, PROTOCOL").unwrap(), ["THROUGHPUT", "PROTOCOL"]);
    }
}
