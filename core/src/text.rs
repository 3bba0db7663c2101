//! Text that came from a peer, made safe to put in a log line or an error reply. A peer
//! controls message types, field names and string values; written verbatim, a newline
//! would let it forge whole log lines and a terminal escape would let it rewrite the
//! operator's screen. Everything a peer sent is shown escaped and cut to a bound.

use std::fmt::Write;

/// Most characters of one piece of peer text shown in a log line or an error reply.
pub const PEER_TEXT_MAX: usize = 120;

/// `s` with every control or invisible character escaped (`\n`, `\x1b`, `\u{202e}`) and a
/// backslash doubled, so the result is one printable line that cannot be mistaken for
/// anything else; cut after `max` characters with "…(N more bytes)".
pub fn escape_bounded(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 2) + 24);
    for (shown, (at, c)) in s.char_indices().enumerate() {
        if shown == max {
            let _ = write!(out, "…({} more bytes)", s.len() - at);
            return out;
        }
        push_escaped(&mut out, c, true);
    }
    out
}

/// `s`, already one line, cut after `max` characters with "…(N more bytes)".
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…({} more bytes)", &s[..at], s.len() - at),
        None => s.to_string(),
    }
}

/// [`escape_bounded`] with [`PEER_TEXT_MAX`].
pub fn peer_text(s: &str) -> String {
    escape_bounded(s, PEER_TEXT_MAX)
}

/// `s` with control and invisible characters escaped but backslashes kept, and no bound:
/// for a whole line the server composed, whose peer parts are already escaped, so that
/// nothing unescaped ever reaches the log even if a peer string slipped through.
pub fn one_line(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        push_escaped(&mut out, c, false);
    }
    out
}

fn push_escaped(out: &mut String, c: char, backslash: bool) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\\' if backslash => out.push_str("\\\\"),
        c if needs_escape(c) && (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if needs_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// Control characters (C0, DEL, C1), and the format and separator characters that change
/// how a line reads without showing themselves: bidi overrides and isolates, zero-width
/// characters, line and paragraph separators, the BOM, interlinear annotation marks.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00ad}'
                | '\u{061c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisibles_are_escaped_and_nothing_else() {
        let forged = "x\nringperf serve: 10.66.66.66:4444: TCP_STREAM done\x1b[2K\r\u{202e}\u{9b}é\\";
        let e = peer_text(forged);
        assert!(!e.chars().any(needs_escape), "{e}");
        assert_eq!(
            e,
            "x\\nringperf serve: 10.66.66.66:4444: TCP_STREAM done\\x1b[2K\\r\\u{202e}\\u{9b}é\\\\"
        );
        assert_eq!(peer_text("plain `name`"), "plain `name`");
        assert_eq!(one_line("a\\b\nc"), "a\\b\\nc");
    }

    #[test]
    fn long_text_is_cut_with_the_bytes_left_out() {
        let long = "é".repeat(200);
        let e = escape_bounded(&long, 120);
        assert_eq!(e, format!("{}…(160 more bytes)", "é".repeat(120)));
        assert_eq!(escape_bounded("short", 120), "short");
        assert_eq!(escape_bounded("abc", 3), "abc");
        assert_eq!(cut(&"é".repeat(200), 120), format!("{}…(160 more bytes)", "é".repeat(120)));
        assert_eq!(cut("a\\b", 120), "a\\b", "cut escapes nothing");
    }
}
