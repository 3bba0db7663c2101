//! netperf's command line, `ringperf -t TCP_STREAM -H host -l 10 -- -m 64K`, rewritten into
//! the native subcommand form before parsing, so existing scripts keep working.

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

/// Global options that mean the same in both tools (each takes a value unless listed in
/// FLAGS).
const GLOBALS: &[&str] = &["-H", "-l", "-T", "-f", "-i", "-I", "-P", "-p", "-D"];
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

/// Rewrites `args` if it is a netperf-style invocation (a `-t` before any subcommand);
/// anything else comes back unchanged.
pub fn rewrite(args: Vec<String>) -> Result<Vec<String>, String> {
    let uses_t = args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "-t" || a.starts_with("-t"));
    let native = args.get(1).is_some_and(|a| !a.starts_with('-'));
    if native || !uses_t {
        return Ok(args);
    }
    let mut out = vec![args[0].clone()];
    let mut globals = Vec::new();
    let mut test = None;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if is_long(a) {
            // ringperf's own long options may ride along in either part.
            globals.push(a.clone());
            continue;
        }
        let (flag, attached) = split_attached(a);
        if flag == "-t" {
            let name =
                attached.or_else(|| it.next().cloned()).ok_or("-t needs a test name, like -t TCP_STREAM")?;
            test = Some(name);
        } else if GLOBALS.contains(&flag.as_str()) {
            let v = attached.or_else(|| it.next().cloned()).ok_or(format!("{flag} needs a value"))?;
            globals.push(flag);
            globals.push(v);
        } else if GLOBAL_FLAGS.contains(&flag.as_str()) {
            globals.push(flag);
        } else {
            return Err(format!("netperf option {a} is not supported by ringperf: see 'ringperf --help'"));
        }
    }
    let name = test.unwrap_or_default().to_ascii_uppercase();
    let Some((_, native)) = TESTS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = TESTS.iter().map(|(n, _)| *n).collect();
        return Err(format!("netperf test '{name}' is not supported: use one of {}", names.join(", ")));
    };
    out.extend(native.iter().map(|s| s.to_string()));
    out.extend(globals);
    while let Some(a) = it.next() {
        if is_long(a) {
            out.push(a.clone());
            continue;
        }
        let (flag, attached) = split_attached(a);
        if flag == "-b" {
            // netperf counts the requests beyond the first: -b 3 keeps 4 in flight.
            let v = attached.or_else(|| it.next().cloned()).ok_or("-b needs a value")?;
            let extra: u32 =
                v.parse().map_err(|_| format!("-b {v}: give the extra requests in flight, like -b 3"))?;
            out.push("--burst".into());
            out.push(extra.saturating_add(1).to_string());
            continue;
        }
        let Some((_, ours, takes)) = TEST_OPTIONS.iter().find(|(n, _, _)| *n == flag) else {
            return Err(format!(
                "netperf test option {a} is not supported by ringperf: see 'ringperf {} --help'",
                native[0]
            ));
        };
        out.push(ours.to_string());
        if *takes {
            out.push(attached.or_else(|| it.next().cloned()).ok_or(format!("{flag} needs a value"))?);
        }
    }
    Ok(out)
}

fn is_long(a: &str) -> bool {
    a.starts_with("--") && a.len() > 2
}

/// `-l10` -> ("-l", Some("10")); `-l` -> ("-l", None).
fn split_attached(a: &str) -> (String, Option<String>) {
    if a.len() > 2 && a.starts_with('-') && !a.starts_with("--") {
        (a[..2].to_string(), Some(a[2..].to_string()))
    } else {
        (a.to_string(), None)
    }
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

    #[test]
    fn unsupported_pieces_say_so() {
        assert!(rewrite(v("ringperf -t SCTP_STREAM")).unwrap_err().contains("not supported"));
        assert!(rewrite(v("ringperf -t TCP_STREAM -L 1.2.3.4")).unwrap_err().contains("-L"));
        assert!(rewrite(v("ringperf -t TCP_STREAM -- -P 5000")).unwrap_err().contains("-P"));
        assert!(rewrite(v("ringperf -t")).is_err());
    }
}
