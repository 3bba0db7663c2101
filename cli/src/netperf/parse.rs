//! Reading a netperf command line with the option tables ([`super::options`]): the global
//! options, then the test they name and the native command line it becomes, then the
//! test-specific options after `--`.

use super::call::{Call, ARGS_ENV, COUNT_CAP_SECS, NETPERF_PORT};
use super::options::{Does, Opt, Takes, GLOBAL, TEST};
use super::refusal::{usage, Refusal};
use super::state::Parse;
use super::words::{is_long, parse_c_number, push_long, split_attached, value_of, Args};
use crate::args;

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
    let mut p = Parse::new(args.first().cloned().unwrap_or_else(|| "ringperf".into()), by_name);
    let mut it = args.iter().skip(1).peekable();
    p.walk(&mut it, Part::Global)?;
    let native = p.choose_test(it.clone())?;
    p.start_native(native)?;
    p.walk(&mut it, Part::Test)?;
    let mut call = p.finish()?;
    super::mptcpize::apply(&mut call, super::mptcpize::preloaded());
    Ok(call)
}

/// The two parts of the command line, around `--`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Global,
    Test,
}

impl Part {
    fn options(self) -> &'static [Opt] {
        match self {
            Part::Global => GLOBAL,
            Part::Test => TEST,
        }
    }
}

impl Parse {
    /// Where `part`'s options pass ringperf's own (long) options and the native ones.
    fn words(&mut self, part: Part) -> &mut Vec<String> {
        match part {
            Part::Global => &mut self.globals,
            Part::Test => &mut self.native,
        }
    }

    /// Takes `part`'s options, up to `--` for the global ones; ringperf's own long options
    /// may ride along in either part.
    fn walk(&mut self, it: &mut Args<'_>, part: Part) -> Result<(), Refusal> {
        while let Some(a) = it.next() {
            if part == Part::Global && a == "--" {
                break;
            }
            if is_long(a) {
                push_long(self.words(part), a, it);
                continue;
            }
            let (flag, attached) = split_attached(a);
            let by_name = self.by_name;
            let found = part.options().iter().find(|o| o.name == flag);
            let Some(opt) = found.filter(|o| by_name || !o.output_only) else {
                return Err(self.refuse(part, a, found.is_some()));
            };
            let value = match opt.takes {
                Takes::Nothing => String::new(),
                Takes::Value => value_of(&flag, &attached, it)?,
                // The list is optional: the next word is it unless it is another option.
                Takes::List => {
                    attached.or_else(|| it.next_if(|n| !n.starts_with('-')).cloned()).unwrap_or_default()
                }
                Takes::Rate => {
                    if attached.is_none()
                        && it.peek().is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
                    {
                        it.next();
                    }
                    String::new()
                }
            };
            match opt.does {
                Does::Native(ours) => {
                    let words = self.words(part);
                    words.push(ours.to_string());
                    if opt.takes == Takes::Value {
                        words.push(value);
                    }
                }
                Does::Ignore => {}
                Does::Handle(handle) => handle(self, &flag, value)?,
            }
        }
        Ok(())
    }

    /// Why option `a` of `part` is refused: it shapes netperf's output (`output_only`
    /// given but not invoked by name), or ringperf does not take it.
    fn refuse(&self, part: Part, a: &str, output_only: bool) -> Refusal {
        const LINKS: &str = "which ringperf prints when invoked as netperf: run 'ringperf install-links DIR' and call DIR/netperf";
        usage(match (part, output_only) {
            (Part::Global, true) => format!("netperf option {a} belongs to netperf's output, {LINKS}"),
            (Part::Global, false) => {
                format!("netperf option {a} is not supported by ringperf: see 'ringperf --help'")
            }
            (Part::Test, true) => {
                format!("netperf test option {a} belongs to netperf's output, {LINKS} (or use --keyval)")
            }
            (Part::Test, false) => format!(
                "netperf test option {a} is not supported by ringperf: see 'ringperf {} --help'",
                self.command
            ),
        })
    }

    /// The test the global options named (omni's from its -d among the test options in
    /// `rest`) and the native arguments it becomes; a count (negative -l) becomes the
    /// test's count of bytes or transactions.
    fn choose_test(&mut self, rest: Args<'_>) -> Result<&'static [&'static str], Refusal> {
        let by_name = self.by_name;
        let name = self
            .test
            .take()
            .unwrap_or_else(|| if by_name { "TCP_STREAM".into() } else { String::new() })
            .to_ascii_uppercase();
        // omni is TCP_STREAM unless its -d says otherwise (netperf takes -d for omni only).
        let name = if name == "OMNI" { omni_direction(rest)?.to_string() } else { name };
        let Some(&(test_name, native)) = TESTS.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = TESTS.iter().map(|(n, _)| *n).collect();
            return Err(usage(format!(
                "netperf test '{name}' is not supported: use one of {}",
                names.join(", ")
            )));
        };
        self.out.test = test_name;
        self.command = native[0];
        if let Some(n) = self.count.clone() {
            // netperf counts bytes in the stream tests (a UDP_STREAM's in whole datagrams)
            // and transactions in the request/response ones.
            let flag = match test_name {
                "TCP_STREAM" | "TCP_MAERTS" | "TCP_SENDFILE" | "UDP_STREAM" => "--bytes",
                "TCP_RR" | "TCP_CRR" | "UDP_RR" => "--transactions",
                _ => {
                    return Err(usage(format!(
                        "-l -{n}: ringperf counts bytes in the stream tests and transactions in the request/response tests, not in {test_name}: give the test length in seconds"
                    )))
                }
            };
            // netperf's "until done", bounded as every ringperf load is.
            self.globals.extend([flag.into(), n, "-l".into(), COUNT_CAP_SECS.to_string()]);
        }
        Ok(native)
    }

    /// The native command line up to the test-specific options: the command, where to,
    /// the global options, the fill file and the TOS byte.
    fn start_native(&mut self, command: &[&str]) -> Result<(), Refusal> {
        let mut native = vec![self.program.clone()];
        native.extend(command.iter().map(|s| s.to_string()));
        if self.by_name {
            // netperf always talks to a netserver: localhost:12865 unless told otherwise.
            let local = if self.family6 { "::1" } else { "127.0.0.1" };
            native.extend(["-H".into(), self.host.clone().unwrap_or_else(|| local.into())]);
            native.extend(["-p".into(), self.port.clone().unwrap_or_else(|| NETPERF_PORT.to_string())]);
        } else {
            if let Some(h) = &self.host {
                native.extend(["-H".into(), h.clone()]);
            }
            if let Some(p) = &self.port {
                native.extend(["-p".into(), p.clone()]);
            }
        }
        native.append(&mut self.globals);
        if let Some(file) = self.fill_file.take() {
            if self.out.test == "TCP_SENDFILE" {
                native.extend(["-F".into(), file]);
            } else {
                // netperf reads its fill file before it connects; a file it cannot read is
                // an error there too.
                ringperf_core::input::read_prefix(std::path::Path::new(&file), "fill file", 1)
                    .map_err(|e| usage(format!("-F {file}: {e}")))?;
                self.out.fill_file = Some(file);
            }
        }
        match self.out.tos {
            (None, None) => {}
            (Some(l), Some(r)) if l != r => {
                return Err(usage(format!(
                "-Y {l:#04x},{r:#04x}: ringperf marks both sides' data sockets alike: give one TOS for both"
            )))
            }
            (Some(t), _) | (None, Some(t)) => native.extend(["--tos".into(), format!("{t:#04x}")]),
        }
        self.native = native;
        Ok(())
    }

    /// The one local address, `RINGPERF_ARGS`, and each option's last value.
    fn finish(mut self) -> Result<Call, Refusal> {
        let bind = match (self.control_bind.filter(|b| !b.is_empty()), self.data_bind.filter(|b| !b.is_empty())) {
            (Some(c), Some(d)) if c != d => {
                return Err(usage(format!(
                    "-L {c} and test option -L {d}: ringperf's server takes data connections only from the control connection's address: give one local address"
                )))
            }
            (Some(b), _) | (None, Some(b)) => Some(b),
            (None, None) => None,
        };
        if let Some(b) = bind {
            self.native.extend(["-L".into(), b]);
        }
        if self.by_name {
            if let Ok(extra) = std::env::var(ARGS_ENV) {
                self.native.extend(extra.split_whitespace().map(String::from));
            }
        }
        Ok(Call { native: last_wins(self.native), output: self.out })
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netperf::lines::{call, v};
    use crate::netperf::Style;

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

    /// Every option the tables pass on to a native one takes its last value when repeated,
    /// in either part, as netperf takes it; a flag given twice is passed once.
    #[test]
    fn each_passed_on_option_keeps_only_its_last_value() {
        use crate::netperf::options::{Does, Takes, GLOBAL, TEST};
        for (part, table) in [("global", GLOBAL), ("test", TEST)] {
            for o in table {
                let Does::Native(ours) = o.does else { continue };
                let (first, last) = if o.name == "-r" { ("1,1", "64,64") } else { ("1", "2") };
                let given = match o.takes {
                    Takes::Value => format!("{0} {first} {0} {last}", o.name),
                    _ => format!("{0} {0}", o.name),
                };
                // A test whose native command has the option.
                let test = if o.name == "-r" { "TCP_RR" } else { "TCP_STREAM" };
                let line = match part {
                    "global" => format!("netperf -t {test} {given}"),
                    _ => format!("netperf -t {test} -- {given}"),
                };
                let native = call(&line).native;
                assert_eq!(native.iter().filter(|a| *a == ours).count(), 1, "{line}: {native:?}");
                if o.takes == Takes::Value {
                    let at = native.iter().position(|a| a == ours).expect("passed on");
                    assert_eq!(native[at + 1], last, "{line}: {native:?}");
                }
            }
        }
    }

    /// The four refusals: an option of netperf's output outside `netperf` (either part,
    /// pointing at install-links), and an option ringperf does not take (pointing at the
    /// help of the command the test became).
    #[test]
    fn each_refusal_says_where_to_look() {
        let refused = |s: &str, by_name: bool| parse(&v(s), by_name).unwrap_err();
        let r = refused("ringperf -t TCP_STREAM -v 1", false);
        assert_eq!(r.code, 2);
        assert!(r.message.starts_with("netperf option -v belongs to netperf's output"), "{}", r.message);
        assert!(r.message.contains("install-links") && !r.message.contains("--keyval"), "{}", r.message);
        let r = refused("ringperf -t TCP_STREAM -- -o THROUGHPUT", false);
        assert!(r.message.starts_with("netperf test option -o belongs"), "{}", r.message);
        assert!(r.message.ends_with("(or use --keyval)"), "{}", r.message);
        let r = refused("netperf -Q 1", true);
        assert_eq!(r.message, "netperf option -Q is not supported by ringperf: see 'ringperf --help'");
        let r = refused("netperf -t UDP_RR -- -Q", true);
        assert_eq!(
            r.message,
            "netperf test option -Q is not supported by ringperf: see 'ringperf udp-rr --help'"
        );
        assert_eq!(refused("netperf -l", true).message, "-l needs a value");
    }
}
