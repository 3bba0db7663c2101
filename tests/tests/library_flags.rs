//! Library crates do not spell command-line flags: with two front ends (ringperf's own
//! flags and the netperf drop-in's) a library cannot know which one the user typed, so its
//! messages name a setting (`Setting`, written `{burst}`) and the front end spells it. This
//! counts the flag spellings (`-x`, `--long`) left in the string literals of every library
//! crate of the workspace (every member but the CLI, bench and tests), outside test code.
//! At most [`MAX_SPELLINGS`] may remain, each under a `// flag spelling:` comment that says
//! why it must stay.

use std::path::{Path, PathBuf};

/// The spellings the library crates may keep, each with its reason.
const MAX_SPELLINGS: usize = 5;

/// The crates that are front ends or tools, which spell flags by design.
const NOT_LIBRARIES: &[&str] = &["cli", "bench", "tests"];

/// What marks a spelling that stays: the comment, within this many lines above it.
const REASON: &str = "flag spelling:";
const REASON_REACH: usize = 3;

#[derive(Debug)]
struct Spelling {
    file: PathBuf,
    line: usize,
    flag: String,
    reasoned: bool,
}

#[test]
fn library_crates_spell_at_most_five_flags_each_with_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let libraries = library_crates(&root);
    for lib in ["core", "engine", "control"] {
        assert!(
            libraries.iter().any(|c| c.ends_with(lib)),
            "the library crate {lib} is not counted: {libraries:?}"
        );
    }
    let mut found = Vec::new();
    for lib in &libraries {
        for file in rust_files(&lib.join("src")) {
            let text = std::fs::read_to_string(&file).unwrap();
            found.extend(spellings(&text).into_iter().map(|(line, flag, reasoned)| Spelling {
                file: file.strip_prefix(&root).unwrap().to_path_buf(),
                line,
                flag,
                reasoned,
            }));
        }
    }
    eprintln!("{} flag spellings in library crates ({} allowed)", found.len(), MAX_SPELLINGS);
    let list: Vec<String> = found
        .iter()
        .map(|s| {
            format!(
                "  {}:{}: {}{}",
                s.file.display(),
                s.line,
                s.flag,
                if s.reasoned { "" } else { " (no reason)" }
            )
        })
        .collect();
    assert!(
        found.len() <= MAX_SPELLINGS,
        "{} flag spellings in library crates, over {MAX_SPELLINGS}: name the setting (`Setting::X.token()`) and let the front end spell it\n{}",
        found.len(),
        list.join("\n")
    );
    assert!(
        found.iter().all(|s| s.reasoned),
        "a flag spelling kept in a library needs a `// {REASON} why` comment above it:\n{}",
        list.join("\n")
    );
}

#[test]
fn the_count_sees_flags_and_only_flags() {
    let src = r#"
        fn f() {
            let a = "use -l with 5 s, or --max-rate=1";
            let b = "a non-flag: x-y, 10-20, -1, --, `ulimit -n`, `head -c 32`";
            let d = r"raw -T";
            // flag spelling: an older peer reads this
            let c = "`ringperf serve --psk-file`";
            // "-m" in a comment is not a string
            let e = '-';
        }
        #[cfg(test)]
        mod tests {
            const T: &str = "--burst";
        }
    "#;
    let found: Vec<(String, bool)> = spellings(src).into_iter().map(|(_, f, r)| (f, r)).collect();
    let want = [("-l", false), ("--max-rate", false), ("-T", false), ("--psk-file", true)];
    assert_eq!(found, want.map(|(f, r)| (f.to_string(), r)));
}

/// The workspace members that are libraries.
fn library_crates(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest.split("members").nth(1).and_then(|m| m.split(']').next()).unwrap_or_default();
    members
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|m| !NOT_LIBRARIES.contains(m))
        .map(|m| root.join(m))
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") && p.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Every flag spelling in `src`'s string literals outside test code: its line, the flag,
/// and whether a reason comment stands above it.
fn spellings(src: &str) -> Vec<(usize, String, bool)> {
    let src = without_test_items(src);
    let lines: Vec<&str> = src.lines().collect();
    let reasoned = |line: usize| {
        (line.saturating_sub(REASON_REACH + 1)..line)
            .any(|i| lines.get(i).is_some_and(|l| l.contains(REASON)))
    };
    string_literals(&src)
        .into_iter()
        .flat_map(|(line, text)| flags_in(&text).into_iter().map(move |f| (line, f)))
        .map(|(line, f)| (line, f, reasoned(line)))
        .collect()
}

/// `src` with each `#[cfg(test)]` item blanked out (its lines kept, so numbers still match).
fn without_test_items(src: &str) -> String {
    let mut out = src.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let rest = &out[at..];
        let end = match (rest.find(';'), rest.find('{')) {
            (Some(semi), Some(brace)) if semi < brace => at + semi + 1,
            (_, Some(brace)) => {
                let mut depth = 0;
                let mut end = out.len();
                for (i, c) in out[at + brace..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + brace + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(semi), None) => at + semi + 1,
            (None, None) => out.len(),
        };
        let blank: String = out[at..end].chars().filter(|&c| c == '\n').collect();
        out.replace_range(at..end, &blank);
    }
    out
}

/// The string literals of `src` (plain, byte and raw), each with the line it starts on;
/// comments and char literals skipped.
fn string_literals(src: &str) -> Vec<(usize, String)> {
    let b = src.as_bytes();
    let line_of = |i: usize| src[..i].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(b.len(), |n| i + n);
        } else if src[i..].starts_with("/*") {
            i = src[i..].find("*/").map_or(b.len(), |n| i + n + 2);
        } else if b[i] == b'r' && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) && {
            let hashes = src[i + 1..].bytes().take_while(|&c| c == b'#').count();
            src[i + 1 + hashes..].starts_with('"')
        } {
            let hashes = src[i + 1..].bytes().take_while(|&c| c == b'#').count();
            let start = i + 2 + hashes;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = src[start..].find(&close).map_or(b.len(), |n| start + n);
            out.push((line_of(i), src[start..end].to_string()));
            i = end + close.len();
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push((line_of(i), src[i + 1..j.min(b.len())].to_string()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'); a lifetime has no closing quote near.
            let close = src[i + 1..].char_indices().take(12).find(|&(k, c)| c == '\'' && k > 0);
            let escaped = src[i + 1..].starts_with('\\');
            match close {
                Some((k, _)) if escaped || src[i + 1..i + 1 + k].chars().count() == 1 => i += k + 2,
                _ => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The flags `text` spells: `-x` or `--long-name` standing as a word, outside a backticked
/// command of another program (`ulimit -n`).
fn flags_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (k, piece) in text.split('`').enumerate() {
        let quoted_command = k % 2 == 1;
        let first = piece.split_whitespace().next().unwrap_or("");
        if quoted_command && !["ringperf", "netperf", "netserver"].contains(&first) {
            continue;
        }
        let b = piece.as_bytes();
        let before_ok = |i: usize| i == 0 || b" \t\n([/,;'\"".contains(&b[i - 1]);
        let after_ok = |i: usize| i == b.len() || b" \t\n,.;:)'\"=]/|".contains(&b[i]);
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'-' && before_ok(i) {
                let long = b.get(i + 1) == Some(&b'-');
                let start = if long { i + 2 } else { i + 1 };
                let mut end = start;
                if long {
                    while end < b.len()
                        && (b[end].is_ascii_lowercase() || b[end].is_ascii_digit() || b[end] == b'-')
                    {
                        end += 1;
                    }
                    let name = &piece[start..end];
                    let word = name.starts_with(|c: char| c.is_ascii_lowercase()) && !name.ends_with('-');
                    if word && after_ok(end) {
                        out.push(piece[i..end].to_string());
                    }
                } else if end < b.len() && b[end].is_ascii_alphabetic() && after_ok(end + 1) {
                    end += 1;
                    out.push(piece[i..end].to_string());
                }
                i = end.max(i + 1);
            } else {
                i += 1;
            }
        }
    }
    out
}
