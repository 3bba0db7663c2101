//! `ringperf plan FILE`: reads a TOML plan (agents listed once; tests as pairs, incast,
//! one-to-many or mesh, each with a workload and the same options the test commands take),
//! checks all of it before anything starts, has the engine run every test at once, and
//! renders a row per test and the aggregates.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ringperf_control::auth::Psk;
use ringperf_control::plan::{run_plan, Agent, PlanReport, PlannedTest};
use ringperf_control::DEFAULT_PORT;
use ringperf_core::payload::Payload;
use ringperf_core::{Error, TestSpec};
use serde::Deserialize;

use crate::args::{self, HostPort, PlanArgs};
use crate::interrupt::Interrupt;
use crate::progress;
use crate::render::{self, Units};

/// The file as written.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    #[serde(rename = "agent", default)]
    pub agents: Vec<AgentEntry>,
    #[serde(rename = "test", default)]
    pub tests: Vec<TestEntry>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    pub name: String,
    /// Where the controller reaches it, and where its peers do: a host as -H takes it, with
    /// the agent's control port or without (`192.0.2.1:12866`, `[2001:db8::1]:12866`).
    pub address: String,
    /// The agent's control port, when `address` names none [default: 12866].
    pub port: Option<u16>,
    /// Where the other agents reach it, when that is another network than the
    /// controller's [default: address]; a host only: they reach it at its control port.
    pub data_address: Option<String>,
    /// The key the controller logs in with (relative to the plan's folder); the agent's own
    /// `serve --psk-file` must hold the same key, and so must every agent it tests against.
    pub key_file: Option<PathBuf>,
}

/// A group of tests with one workload and its options. The sender runs the test's client
/// side (for stream, it sends; with --reverse in the options, it receives).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct TestEntry {
    pub name: Option<String>,
    pub workload: String,
    /// The test command's own flags, e.g. "-l 5 -m 64K --flows 2".
    #[serde(default)]
    pub options: String,
    /// A list of [sender, receiver] pairs. Read as lists and checked for two names each:
    /// the TOML reader would fill a two-name array from the first two of a longer list.
    pub pairs: Option<Vec<Vec<String>>>,
    /// Incast: each of `senders` into `receiver`.
    pub senders: Option<Vec<String>>,
    pub receiver: Option<String>,
    /// One-to-many: `sender` into each of `receivers`.
    pub sender: Option<String>,
    pub receivers: Option<Vec<String>>,
    /// Mesh: every ordered pair of these agents.
    pub mesh: Option<Vec<String>>,
}

/// Settings (clap argument ids) that choose hosts, addresses or keys: a plan gives those
/// itself, per agent. Checked on what clap parsed, so every spelling is caught (`-H x`,
/// `-Hx`, `--host=x`, an abbreviation).
const HOST_SETTINGS: &[&str] = &["host", "port", "local_bind", "from", "from_port", "psk_file"];
/// Settings about the output of one test, which a plan renders its own way (`out` is
/// --profile-out's files).
const OUTPUT_SETTINGS: &[&str] =
    &["json", "json_stream", "keyval", "csv", "plot", "iterations", "confidence", "out"];
const WORKLOADS: &[&str] = &["stream", "rr", "crr", "udp-stream", "udp-rr", "sendfile"];

pub fn run(a: &PlanArgs) -> Result<i32, Error> {
    let (agents, tests) = load(&a.file)?;
    descriptors_for(tests.len())?;
    let stop = Interrupt::install()?;
    // On a terminal: the tests run together, so one bar over the longest of them.
    let longest = tests.iter().map(|t| t.spec.duration_ms).max().unwrap_or(0);
    let heading = format!("plan: {} tests between {} agents, all at once", tests.len(), agents.len());
    let bar = progress::Timed::start(&heading, Duration::from_millis(longest), progress::shown(a.json));
    let report = run_plan(&agents, &tests, Some(stop.fd()));
    bar.finish();
    let report = report?;
    let out = if a.json {
        let mut s = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::Protocol(format!("cannot encode the plan report: {e}")))?;
        s.push('\n');
        s
    } else {
        human(&report, Units::parse(&a.units))
    };
    crate::output::print("the plan report", &out);
    if report.partial {
        for t in report.tests.iter().filter(|t| t.error.is_some()) {
            let error = t.error.as_deref().unwrap_or("");
            eprintln!("ringperf: {}: {error}{}", t.name, key_advice(error));
        }
        eprintln!("ringperf: partial plan: the other tests' figures stand");
        return Ok(if stop.fired() { 130 } else { 3 });
    }
    Ok(0)
}

/// Descriptors the controller needs beyond one control connection per test.
const SPARE_DESCRIPTORS: u64 = 64;

/// Raises this process's open-file limit to what a plan of `tests` tests holds at once (a
/// control connection each), as far as the hard limit allows; a plan that would still
/// not fit is refused before it starts anything.
fn descriptors_for(tests: usize) -> Result<(), Error> {
    let need = tests as u64 + SPARE_DESCRIPTORS;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into `lim`, which is valid and ours.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur >= need {
        return Ok(());
    }
    if lim.rlim_max < need {
        return Err(Error::Usage(format!(
            "a plan of {tests} tests holds {tests} control connections at once, and this process may open at most {} files: raise the hard limit (ulimit -Hn, or LimitNOFILE= for a service) to {need}, or split the plan",
            lim.rlim_max
        )));
    }
    lim.rlim_cur = need;
    // SAFETY: setrlimit reads one valid rlimit; the soft limit stays within the hard one.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(Error::io("raising the open-file limit for the plan", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// A key error's advice in a plan's words: the engine's names --psk-file, which a plan
/// spells `key_file`.
fn key_advice(error: &str) -> &'static str {
    if error.contains("--psk-file") {
        " (in a plan: the agent's key_file, or RINGPERF_PSK)"
    } else {
        ""
    }
}

/// Reads and checks the whole plan: every name, option and key, before anything starts.
pub fn load(path: &Path) -> Result<(Vec<Agent>, Vec<PlannedTest>), Error> {
    let text = ringperf_core::input::read_text(path, ringperf_core::input::PLAN)?;
    parse(&text, path)
}

/// The plan in `text`, read from `path` (which names it in errors; its folder is where
/// relative key files are): every name, option and key checked.
pub fn parse(text: &str, path: &Path) -> Result<(Vec<Agent>, Vec<PlannedTest>), Error> {
    let file: PlanFile = toml::from_str(text).map_err(|e| {
        Error::Usage(format!("{}: {}", path.display(), ringperf_core::text::one_line(&e.to_string())))
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    plan(&file, dir)
}

/// An agent's host and control port: its `address`, with the port it names or `port`
/// (refused when both name one and they differ).
fn agent_address(a: &AgentEntry) -> Result<(String, u16), Error> {
    let usage = |e: String| Error::Usage(format!("agent {}: {e}", a.name));
    let address = HostPort::parse(&a.address).map_err(|e| usage(format!("address {e}")))?;
    match (address.port, a.port) {
        (Some(named), Some(port)) if named != port => Err(usage(format!(
            "address = \"{}\" names port {named} and port = {port} another: give the port once, in the address or as port",
            a.address
        ))),
        (_, Some(0)) => Err(usage("port = 0 is not a port: give 1 to 65535".into())),
        (Some(port), _) | (None, Some(port)) => Ok((address.host, port)),
        (None, None) => Ok((address.host, DEFAULT_PORT)),
    }
}

/// The engine's agents and tests of a parsed plan, or what is wrong with it.
pub fn plan(file: &PlanFile, dir: &Path) -> Result<(Vec<Agent>, Vec<PlannedTest>), Error> {
    if file.agents.is_empty() || file.tests.is_empty() {
        return Err(Error::Usage(
            "a plan needs [[agent]] entries and [[test]] entries: see docs/multi-host.md".into(),
        ));
    }
    let mut index = HashMap::new();
    let mut agents = Vec::with_capacity(file.agents.len());
    for a in &file.agents {
        if index.insert(a.name.clone(), agents.len()).is_some() {
            return Err(Error::Usage(format!("agent {} is listed twice: list each agent once", a.name)));
        }
        // Like every client: the agent's key_file, else RINGPERF_PSK.
        let psk = match &a.key_file {
            Some(f) => Some(Psk::from_file(&dir.join(f))?),
            None => crate::psk::psk_from(None)?,
        };
        let (host, port) = agent_address(a)?;
        let data_host = match &a.data_address {
            None => host.clone(),
            Some(d) => match HostPort::parse(d) {
                Ok(HostPort { host, port: None }) => host,
                Ok(HostPort { port: Some(p), .. }) => {
                    return Err(Error::Usage(format!(
                        "agent {}: data_address '{d}' names port {p}, but the other agents reach an agent at its control port ({port}): give data_address without a port",
                        a.name
                    )))
                }
                Err(e) => return Err(Error::Usage(format!("agent {}: data_address {e}", a.name))),
            },
        };
        agents.push(Agent { name: a.name.clone(), host, port, data_host, psk });
    }
    let find = |name: &str| {
        index.get(name).copied().ok_or_else(|| {
            Error::Usage(format!(
                "'{name}' is not an agent of this plan: a plan sends traffic only between its [[agent]] entries; add it there or fix the name"
            ))
        })
    };
    let mut tests = Vec::new();
    for (k, t) in file.tests.iter().enumerate() {
        let group = t.name.clone().unwrap_or_else(|| format!("test{}", k + 1));
        let spec = spec_of(t, &group)?;
        let pairs = pairs_of(t, &group)?;
        for (from, to) in pairs {
            if from == to {
                return Err(Error::Usage(format!("{group}: {from} to itself: a test needs two agents")));
            }
            tests.push(PlannedTest {
                name: format!("{group}:{from}>{to}"),
                from: find(&from)?,
                to: find(&to)?,
                spec: spec.clone(),
            });
        }
    }
    Ok((agents, tests))
}

/// The (sender, receiver) pairs of one entry: exactly one of its shapes.
fn pairs_of(t: &TestEntry, group: &str) -> Result<Vec<(String, String)>, Error> {
    let shapes = [
        t.pairs.is_some(),
        t.senders.is_some() || t.receiver.is_some(),
        t.sender.is_some() || t.receivers.is_some(),
        t.mesh.is_some(),
    ];
    if shapes.iter().filter(|&&s| s).count() != 1 {
        return Err(Error::Usage(format!(
            "{group}: give exactly one of pairs, senders+receiver (incast), sender+receivers (one-to-many) or mesh"
        )));
    }
    let missing = |what: &str| Error::Usage(format!("{group}: {what} is missing"));
    Ok(if let Some(p) = &t.pairs {
        let mut out = Vec::with_capacity(p.len());
        for pair in p {
            let [a, b] = pair.as_slice() else {
                return Err(Error::Usage(format!(
                    "{group}: pairs: {pair:?} is not a pair: give each as [\"sender\", \"receiver\"]"
                )));
            };
            out.push((a.clone(), b.clone()));
        }
        out
    } else if t.senders.is_some() || t.receiver.is_some() {
        let r = t.receiver.clone().ok_or_else(|| missing("receiver"))?;
        t.senders.clone().ok_or_else(|| missing("senders"))?.into_iter().map(|s| (s, r.clone())).collect()
    } else if t.sender.is_some() || t.receivers.is_some() {
        let s = t.sender.clone().ok_or_else(|| missing("sender"))?;
        t.receivers.clone().ok_or_else(|| missing("receivers"))?.into_iter().map(|r| (s.clone(), r)).collect()
    } else {
        let m = t.mesh.clone().unwrap_or_default();
        let mut out = Vec::new();
        for a in &m {
            for b in m.iter().filter(|b| *b != a) {
                out.push((a.clone(), b.clone()));
            }
        }
        out
    })
}

/// The spec the test command would build from the same workload and options.
fn spec_of(t: &TestEntry, group: &str) -> Result<TestSpec, Error> {
    if !WORKLOADS.contains(&t.workload.as_str()) {
        return Err(Error::Usage(format!(
            "{group}: workload '{}' is not one of {}",
            t.workload,
            WORKLOADS.join(", ")
        )));
    }
    let options: Vec<&str> = t.options.split_whitespace().collect();
    let mut argv = vec!["ringperf".to_string(), t.workload.clone()];
    argv.extend(options.iter().map(|s| s.to_string()));
    refuse_settings(&argv, group)?;
    let cli =
        args::parse(&argv).map_err(|e| Error::Usage(format!("{group}: {}", crate::one_line(&e, &argv))))?;
    let spec = crate::test_spec(&cli.command).map_err(|e| match e {
        Error::Usage(m) => Error::Usage(format!("{group}: {m}")),
        e => e,
    })?;
    // By meaning, not by token: whatever spelled it, a path never goes to an agent.
    if let Payload::File(_) = spec.local.payload {
        return Err(Error::Usage(format!(
            "{group}: -F in options {}",
            crate::agent_names_no_path("that sends")
        )));
    }
    Ok(spec)
}

/// Refuses options that set what a plan decides itself (see [`HOST_SETTINGS`] and
/// [`OUTPUT_SETTINGS`]), whichever way they were spelled. The rest of `argv` is checked
/// after, by the parser itself: here a rule such as --from's need of -H must not speak first.
fn refuse_settings(argv: &[String], group: &str) -> Result<(), Error> {
    use clap::parser::ValueSource;
    let cmd = args::command();
    let Ok(matches) = cmd.clone().ignore_errors(true).try_get_matches_from(argv) else { return Ok(()) };
    let (Some((name, m)), Some(sub)) =
        (matches.subcommand(), argv.get(1).and_then(|n| cmd.find_subcommand(n)))
    else {
        return Ok(());
    };
    let given = |id: &str| {
        sub.get_arguments().any(|a| a.get_id() == id) && m.value_source(id) == Some(ValueSource::CommandLine)
    };
    for (ids, why) in [
        (HOST_SETTINGS, "a plan names its hosts and keys under [[agent]]"),
        (
            OUTPUT_SETTINGS,
            "a plan runs each test once and renders one report (give --json to `ringperf plan`)",
        ),
    ] {
        if let Some(id) = ids.iter().find(|id| given(id)) {
            let flag = sub.get_arguments().find(|a| a.get_id() == *id).map_or_else(
                || id.to_string(),
                |a| match (a.get_long(), a.get_short()) {
                    (Some(l), Some(s)) => format!("-{s}/--{l}"),
                    (Some(l), None) => format!("--{l}"),
                    (None, Some(s)) => format!("-{s}"),
                    (None, None) => id.to_string(),
                },
            );
            return Err(Error::Usage(format!("{group}: {flag} in the {name} options: {why}")));
        }
    }
    Ok(())
}

/// The table: a row per test, then each host, then the aggregates.
pub fn human(r: &PlanReport, units: Units) -> String {
    let mut o = String::new();
    let label = units.label();
    let _ = writeln!(
        o,
        "ringperf plan: {} tests{}, start skew {} (clocks known to {}), set up in {:.1} ms",
        r.tests.len(),
        if r.partial { " (PARTIAL)" } else { "" },
        r.start.skew_ns.map_or_else(|| "-".to_string(), |n| format!("{:.3} ms", n as f64 / 1e6)),
        r.start.uncertainty_ns.map_or_else(|| "-".to_string(), |n| format!("±{:.3} ms", n as f64 / 1e6)),
        r.start.setup_ns as f64 / 1e6
    );
    let _ = writeln!(
        o,
        "{:<24} {:>6} {:>6} {:>10} {:>14} {:>14} {:>10}",
        "test", "from", "to", "workload", label, "trans/s", "late ms"
    );
    for t in &r.tests {
        let (rate, tps) = match &t.report {
            Some(rep) => (
                format!("{:.2}", units.convert(rep.summary.throughput_bits_per_sec)),
                rep.summary.transactions_per_sec.map_or_else(|| "-".into(), |v| format!("{v:.1}")),
            ),
            None => ("-".into(), "-".into()),
        };
        let late = t.start_late_ns.map_or_else(|| "-".into(), |n| format!("{:.3}", n as f64 / 1e6));
        let mark = match (&t.report, &t.error) {
            (None, Some(_)) => "  FAILED",
            (Some(_), Some(_)) => "  PARTIAL",
            _ => "",
        };
        let _ = writeln!(
            o,
            "{:<24} {:>6} {:>6} {:>10} {rate:>14} {tps:>14} {late:>10}{mark}",
            t.name, t.from, t.to, t.workload
        );
    }
    let _ = writeln!(o, "\nper host ({label}; CPU measured once per host):");
    let _ = writeln!(
        o,
        "{:<10} {:>5} {:>14} {:>14} {:>8} {:>12}",
        "host", "tests", "sent", "received", "CPU %", "us/KB"
    );
    for h in r.hosts.iter().filter(|h| h.tests > 0) {
        let _ = writeln!(
            o,
            "{:<10} {:>5} {:>14.2} {:>14.2} {:>8} {:>12}",
            h.name,
            h.tests,
            units.convert(h.sent_bits_per_sec),
            units.convert(h.received_bits_per_sec),
            h.busy_percent.map_or_else(|| "-".into(), |v| format!("{v:.1}")),
            h.service_demand_us_per_kb.map_or_else(|| "-".into(), |v| format!("{v:.3}")),
        );
    }
    let fairness: Vec<String> = r.fairness.iter().map(|(w, f)| format!("{w} {f:.4}")).collect();
    let _ = writeln!(
        o,
        "\nall tests: {:.2} {label}; Jain's fairness across tests: {}",
        units.convert(r.total_bits_per_sec),
        if fairness.is_empty() { "-".to_string() } else { fairness.join(", ") }
    );
    if let Some(l) = &r.latency {
        o.push_str("merged ");
        render::statistics::latency_lines(&mut o, l);
    }
    let c = &r.controller;
    let _ = writeln!(
        o,
        "controller: {} control connections, CPU {:.1} ms over {:.1} ms, {} bytes of reports",
        c.connections,
        c.cpu_ns as f64 / 1e6,
        c.wall_ns as f64 / 1e6,
        c.report_bytes
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(tests: &str) -> PlanFile {
        let agents: String = ["a", "b", "c", "d"]
            .iter()
            .map(|n| format!("[[agent]]\nname = \"{n}\"\naddress = \"192.0.2.1\"\n"))
            .collect();
        toml::from_str(&format!("{agents}{tests}")).unwrap()
    }

    fn pairs(tests: &str) -> Result<Vec<(usize, usize)>, Error> {
        let (_, t) = plan(&file(tests), Path::new("."))?;
        Ok(t.iter().map(|t| (t.from, t.to)).collect())
    }

    #[test]
    fn each_shape_makes_its_pairs() {
        let w = "[[test]]\nworkload = \"stream\"\n";
        assert_eq!(pairs(&format!("{w}pairs = [[\"a\", \"b\"], [\"c\", \"d\"]]")).unwrap(), [(0, 1), (2, 3)]);
        assert_eq!(
            pairs(&format!("{w}senders = [\"a\", \"b\", \"c\"]\nreceiver = \"d\"")).unwrap(),
            [(0, 3), (1, 3), (2, 3)]
        );
        assert_eq!(
            pairs(&format!("{w}sender = \"a\"\nreceivers = [\"b\", \"c\"]")).unwrap(),
            [(0, 1), (0, 2)]
        );
        let mesh = pairs(&format!("{w}mesh = [\"a\", \"b\", \"c\"]")).unwrap();
        assert_eq!(mesh, [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]);
    }

    /// An agent's address takes a host as -H does, its port in it or as `port`; a port
    /// named both ways differently, or on data_address, is refused saying what to do.
    #[test]
    fn an_agent_address_takes_host_port_and_ipv6() {
        let agents = |a: &str| {
            let text = format!(
                "[[agent]]\nname = \"a\"\n{a}\n[[agent]]\nname = \"b\"\naddress = \"b.example\"\n[[test]]\nworkload = \"stream\"\npairs = [[\"a\", \"b\"]]\n"
            );
            let file: PlanFile = toml::from_str(&text).expect("TOML");
            plan(&file, Path::new("."))
                .map(|(agents, _)| {
                    let a = &agents[0];
                    (a.host.clone(), a.port, a.data_host.clone())
                })
                .map_err(|e| e.to_string())
        };
        let ok = |host: &str, port: u16, data: &str| Ok((host.to_string(), port, data.to_string()));
        assert_eq!(agents("address = \"192.0.2.1\""), ok("192.0.2.1", 12866, "192.0.2.1"));
        assert_eq!(agents("address = \"192.0.2.1:12866\""), ok("192.0.2.1", 12866, "192.0.2.1"));
        assert_eq!(agents("address = \"192.0.2.1\"\nport = 12867"), ok("192.0.2.1", 12867, "192.0.2.1"));
        assert_eq!(agents("address = \"192.0.2.1:7\"\nport = 7"), ok("192.0.2.1", 7, "192.0.2.1"));
        assert_eq!(agents("address = \"[2001:db8::1]:9\""), ok("2001:db8::1", 9, "2001:db8::1"));
        assert_eq!(agents("address = \"::1\""), ok("::1", 12866, "::1"));
        assert_eq!(
            agents("address = \"192.0.2.1:9\"\ndata_address = \"[2001:db8::2]\""),
            ok("192.0.2.1", 9, "2001:db8::2")
        );
        let refused = |a: &str| agents(a).expect_err(a);
        let m = refused("address = \"192.0.2.1:1\"\nport = 2");
        assert!(m.starts_with("agent a: address = \"192.0.2.1:1\" names port 1 and port = 2 another"), "{m}");
        let m = refused("address = \"192.0.2.1\"\ndata_address = \"10.0.0.1:5\"");
        assert!(m.contains("data_address '10.0.0.1:5' names port 5") && m.contains("without a port"), "{m}");
        assert!(refused("address = \"h:x\"").starts_with("agent a: address 'x' in 'h:x' is not a port"));
        assert!(refused("address = \"h\"\nport = 0").contains("port = 0 is not a port"));
    }

    #[test]
    fn a_bad_plan_is_a_usage_error_that_says_what() {
        let w = "[[test]]\nworkload = \"stream\"\n";
        let err = |t: &str| match pairs(t) {
            Err(Error::Usage(m)) => m,
            other => panic!("{t}: expected a usage error, got {other:?}"),
        };
        assert!(err(&format!("{w}pairs = [[\"a\", \"x\"]]")).contains("'x' is not an agent of this plan"));
        assert!(err(&format!("{w}pairs = [[\"a\", \"b\"]]\nmesh = [\"a\"]")).contains("exactly one of"));
        assert!(err(&format!("{w}receiver = \"d\"")).contains("senders is missing"));
        assert!(err(&format!("{w}pairs = [[\"a\", \"a\"]]")).contains("needs two agents"));
        assert!(err("[[test]]\nworkload = \"ping\"\npairs = [[\"a\", \"b\"]]").contains("not one of"));
        // By meaning, not by token: every spelling clap takes is refused alike.
        for flag in [
            "-H 192.0.2.9",
            "-H127.0.0.3",
            "--host=127.0.0.3",
            "--from x",
            "--psk-file k",
            "-p 1",
            "-p41005",
            "--port=12866",
            "-L 127.0.0.1",
            "-L127.0.0.1",
            "--from-port 2",
            "--json",
            "--json-stream",
            "--keyval",
            "--csv",
            "--plot x.svg",
            "-i 3,2",
            "-i3",
            "-I99,5",
            "-I 99,5",
            "--profile-out p",
            "--profile-out=p",
        ] {
            let m = err(&format!(
                "[[test]]\nworkload = \"stream\"\noptions = \"{flag}\"\npairs = [[\"a\", \"b\"]]"
            ));
            assert!(m.contains("in the stream options: a plan"), "{flag}: {m}");
        }
        let m = err("[[test]]\nworkload = \"rr\"\noptions = \"-l 1 -r 1,1 -Hx\"\npairs = [[\"a\", \"b\"]]");
        assert!(m.contains("-H/--host in the rr options"), "{m}");
        let unknown =
            "[[test]]\nworkload = \"stream\"\noptions = \"--no-such-flag\"\npairs = [[\"a\", \"b\"]]";
        assert!(err(unknown).starts_with("test1: "), "the group is named");
    }

    /// Each setting the refusal checks is an argument of every workload's command, so a
    /// renamed flag cannot slip past it unchecked.
    #[test]
    fn every_refused_setting_is_a_real_argument() {
        let cmd = args::command();
        for w in WORKLOADS {
            let sub = cmd.find_subcommand(w).unwrap_or_else(|| panic!("no {w} command"));
            for id in HOST_SETTINGS.iter().chain(OUTPUT_SETTINGS) {
                assert!(sub.get_arguments().any(|a| a.get_id() == *id), "{w} has no argument '{id}'");
            }
        }
    }

    #[test]
    fn a_pair_is_two_names() {
        let w = "[[test]]\nworkload = \"stream\"\n";
        for bad in ["[[\"a\", \"b\", \"c\"]]", "[[\"a\", \"b\"], [\"a\"]]", "[[]]"] {
            match pairs(&format!("{w}pairs = {bad}")) {
                Err(Error::Usage(m)) => assert!(m.contains("is not a pair"), "{bad}: {m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn options_build_the_spec_the_test_command_would() {
        let (_, t) = plan(&file("[[test]]\nworkload = \"rr\"\noptions = \"-l 3 -r 64,128 --flows 2\"\npairs = [[\"a\", \"b\"]]"), Path::new(".")).unwrap();
        let direct =
            crate::spec_from_args(&["ringperf", "rr", "-l", "3", "-r", "64,128", "--flows", "2"]).unwrap();
        assert_eq!(t[0].spec, direct);
    }

    /// The plan parser on what a user or a mangled file can give it: never a panic, always
    /// a plan or a usage error; and a plan written out from its parts reads back as them.
    /// Bounded case counts keep it to a few seconds.
    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// A folder with nothing in it: a key_file the generators make names no file.
        fn empty_dir() -> std::path::PathBuf {
            let d = std::env::temp_dir().join(format!("ringperf-plan-props-{}", std::process::id()));
            let _ = std::fs::create_dir_all(&d);
            d.join("plan.toml")
        }

        fn parses_or_refuses(text: &str) -> Result<(), TestCaseError> {
            match parse(text, &empty_dir()) {
                Ok(_) | Err(Error::Usage(_)) => Ok(()),
                Err(e) => Err(TestCaseError::fail(format!("not a usage error: {e:?}"))),
            }
        }

        /// A value of every TOML kind, the plan's own among them.
        fn toml_value() -> impl Strategy<Value = String> {
            prop_oneof![
                "\"[a-d]\"",
                "\"[a-z0-9 .:-]{0,12}\"",
                "-?[0-9]{1,12}",
                Just("true".to_string()),
                "\\[(\"[a-d]\", ?){0,4}\\]",
                "\\[(\\[(\"[a-d]\",? ?){0,3}\\],? ?){0,3}\\]",
                "\"(stream|rr|crr|udp-stream|udp-rr|sendfile|ping)\"",
                "\"(-l 0.1|-m 1K|-H ?x|-p1|--json|-i3|-r 1,1|--flows 2|-L 1.2.3.4|--nope|-b 1g)( -l 1)?\"",
                "[^\n]{0,10}",
            ]
        }

        /// A value for `key`: mostly of the kind the plan expects there, else any.
        fn value_for(key: &'static str) -> BoxedStrategy<String> {
            let typed: BoxedStrategy<String> = match key {
                "port" => "[0-9]{1,6}".boxed(),
                "pairs" => "\\[(\\[(\"[a-d]\", ){0,3}\\], ){0,3}\\]".boxed(),
                "senders" | "receivers" | "mesh" => "\\[(\"[a-d]\", ){0,4}\\]".boxed(),
                "workload" => "\"(stream|rr|crr|udp-stream|udp-rr|sendfile|ping)\"".boxed(),
                "options" => {
                    "\"(-l 0.1|-m 1K|-H ?x|-p1|--json|-i3|-r 1,1|--flows 2|-L 1.2.3.4|--nope|-b 1g)( -l 1)?\""
                        .boxed()
                }
                "name" | "receiver" | "sender" => "\"[a-d]\"".boxed(),
                _ => "\"[a-z0-9 .:-]{0,12}\"".boxed(),
            };
            prop_oneof![15 => typed, 1 => toml_value()].boxed()
        }

        /// TOML of the plan's shape: tables of its kinds and others, each with keys of its
        /// own kind, the other kind's and unknown ones, with values of every kind.
        fn toml_plan() -> impl Strategy<Value = String> {
            fn keys(own: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
                let any = prop_oneof![
                    Just("name"),
                    Just("address"),
                    Just("port"),
                    Just("data_address"),
                    Just("key_file"),
                    Just("workload"),
                    Just("options"),
                    Just("pairs"),
                    Just("senders"),
                    Just("receiver"),
                    Just("sender"),
                    Just("receivers"),
                    Just("mesh"),
                    Just("other"),
                ];
                prop_oneof![6 => proptest::sample::select(own), 1 => any]
            }
            const AGENT: &[&str] = &["name", "address", "port", "data_address", "key_file"];
            const TEST: &[&str] = &[
                "name",
                "workload",
                "options",
                "pairs",
                "senders",
                "receiver",
                "sender",
                "receivers",
                "mesh",
            ];
            let lines = |own| {
                proptest::collection::vec(
                    keys(own).prop_flat_map(|k| value_for(k).prop_map(move |v| (k, v))),
                    0..7,
                )
            };
            // Mostly with the keys a table needs first, so that many reach the plan's checks.
            let needed = |first: &'static [&'static str]| {
                proptest::sample::subsequence(first, 0..=first.len()).prop_flat_map(|ks| {
                    let fixed: Vec<BoxedStrategy<(&'static str, String)>> =
                        ks.into_iter().map(|k| value_for(k).prop_map(move |v| (k, v)).boxed()).collect();
                    fixed
                })
            };
            let with = |h: &'static str, first: &'static [&'static str], own: &'static [&'static str]| {
                (needed(first), lines(own)).prop_map(move |(mut a, b)| {
                    a.extend(b);
                    (h.to_string(), a)
                })
            };
            let table = prop_oneof![
                4 => with("[[agent]]", &["name", "address"], AGENT),
                4 => with("[[test]]", &["workload", "pairs"], TEST),
                2 => with("[[test]]", &["workload", "mesh"], TEST),
                1 => ("\\[[a-z\\[\\]]{0,8}\\]?", lines(TEST)),
            ]
            .prop_map(|(h, kv)| {
                // A key twice in a table is a TOML error every time: keep the first.
                let mut seen = std::collections::HashSet::new();
                let body: Vec<String> = kv
                    .into_iter()
                    .filter(|(k, _)| seen.insert(*k))
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect();
                format!("{h}\n{}\n", body.join("\n"))
            });
            proptest::collection::vec(table, 0..7).prop_map(|t| t.concat())
        }

        /// A valid plan: agents with unique names, and tests of each shape over them.
        #[derive(Debug, Clone)]
        struct Written {
            agents: Vec<(String, String, u16)>,
            tests: Vec<(String, String, Shape)>,
        }

        #[derive(Debug, Clone)]
        enum Shape {
            Pairs(Vec<(usize, usize)>),
            Incast(Vec<usize>, usize),
            OneToMany(usize, Vec<usize>),
            Mesh(Vec<usize>),
        }

        fn written() -> impl Strategy<Value = Written> {
            (2usize..6)
                .prop_flat_map(|n| {
                    let agents = proptest::collection::vec((any::<[u8; 2]>(), 1u16..), n).prop_map(|v| {
                        v.into_iter()
                            .enumerate()
                            .map(|(i, (ip, port))| {
                                (format!("h{i}"), format!("198.18.{}.{}", ip[0], ip[1]), port)
                            })
                            .collect::<Vec<_>>()
                    });
                    let pair = (0..n, 1..n).prop_map(move |(a, d)| (a, (a + d) % n));
                    let others = move |k| {
                        proptest::collection::btree_set(0..n, 1..n)
                            .prop_map(move |s| s.into_iter().filter(|&x| x != k).collect::<Vec<_>>())
                    };
                    let shape = prop_oneof![
                        proptest::collection::vec(pair, 1..4).prop_map(Shape::Pairs),
                        (0..n).prop_flat_map(move |r| others(r).prop_map(move |s| Shape::Incast(s, r))),
                        (0..n).prop_flat_map(move |s| others(s).prop_map(move |r| Shape::OneToMany(s, r))),
                        proptest::collection::btree_set(0..n, 2..=n)
                            .prop_map(|s| Shape::Mesh(s.into_iter().collect())),
                    ];
                    let test = (
                        prop_oneof![Just("stream"), Just("rr"), Just("crr"), Just("udp-rr")]
                            .prop_map(String::from),
                        prop_oneof![Just(""), Just("-l 0.5"), Just("-l 2 --flows 2"), Just("-l 1 -b 10m")]
                            .prop_map(String::from),
                        shape,
                    );
                    (agents, proptest::collection::vec(test, 1..4))
                        .prop_map(|(agents, tests)| Written { agents, tests })
                })
                .prop_filter("a shape with a test in it", |w| {
                    w.tests.iter().all(|(_, _, s)| match s {
                        Shape::Incast(v, _) | Shape::OneToMany(_, v) => !v.is_empty(),
                        _ => true,
                    })
                })
        }

        fn names(w: &Written, ix: &[usize]) -> String {
            let q: Vec<String> = ix.iter().map(|&i| format!("\"{}\"", w.agents[i].0)).collect();
            format!("[{}]", q.join(", "))
        }

        /// `w` as a plan file.
        fn text(w: &Written) -> String {
            let mut t = String::new();
            for (name, address, port) in &w.agents {
                t.push_str(&format!(
                    "[[agent]]\nname = \"{name}\"\naddress = \"{address}\"\nport = {port}\n\n"
                ));
            }
            for (workload, options, shape) in &w.tests {
                t.push_str(&format!("[[test]]\nworkload = \"{workload}\"\noptions = \"{options}\"\n"));
                match shape {
                    Shape::Pairs(p) => {
                        let p: Vec<String> = p.iter().map(|&(a, b)| names(w, &[a, b])).collect();
                        t.push_str(&format!("pairs = [{}]\n", p.join(", ")));
                    }
                    Shape::Incast(s, r) => {
                        t.push_str(&format!("senders = {}\nreceiver = \"{}\"\n", names(w, s), w.agents[*r].0))
                    }
                    Shape::OneToMany(s, r) => {
                        t.push_str(&format!("sender = \"{}\"\nreceivers = {}\n", w.agents[*s].0, names(w, r)))
                    }
                    Shape::Mesh(m) => t.push_str(&format!("mesh = {}\n", names(w, m))),
                }
                t.push('\n');
            }
            t
        }

        /// The (sender, receiver) pairs `w`'s tests expand to, in order.
        fn expected_pairs(w: &Written) -> Vec<(usize, usize)> {
            let mut out = Vec::new();
            for (_, _, shape) in &w.tests {
                match shape {
                    Shape::Pairs(p) => out.extend(p.iter().copied()),
                    Shape::Incast(s, r) => out.extend(s.iter().map(|&x| (x, *r))),
                    Shape::OneToMany(s, r) => out.extend(r.iter().map(|&x| (*s, x))),
                    Shape::Mesh(m) => {
                        for &a in m {
                            out.extend(m.iter().filter(|&&b| b != a).map(|&b| (a, b)));
                        }
                    }
                }
            }
            out
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

            #[test]
            fn arbitrary_bytes_parse_or_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
                if let Ok(text) = std::str::from_utf8(&bytes) {
                    parses_or_refuses(text)?;
                }
                parses_or_refuses(&String::from_utf8_lossy(&bytes))?;
            }

            #[test]
            fn toml_shaped_input_parses_or_is_refused(text in toml_plan()) {
                parses_or_refuses(&text)?;
            }

            #[test]
            fn a_valid_plan_reads_back_as_written(w in written()) {
                let (agents, tests) = parse(&text(&w), &empty_dir())
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{}", text(&w))))?;
                let read: Vec<(String, String, u16)> =
                    agents.iter().map(|a| (a.name.clone(), a.host.clone(), a.port)).collect();
                prop_assert_eq!(&read, &w.agents);
                prop_assert!(agents.iter().all(|a| a.data_host == a.host));
                let pairs: Vec<(usize, usize)> = tests.iter().map(|t| (t.from, t.to)).collect();
                prop_assert_eq!(pairs, expected_pairs(&w));
                // Each test of a group carries the spec its options make on the command line.
                let mut at = 0;
                for t in &w.tests {
                    let (workload, options, _) = t;
                    let mut argv = vec!["ringperf", workload.as_str()];
                    argv.extend(options.split_whitespace());
                    let spec = crate::spec_from_args(&argv).map_err(TestCaseError::fail)?;
                    let count = expected_pairs(&Written { agents: w.agents.clone(), tests: vec![t.clone()] }).len();
                    for planned in &tests[at..at + count] {
                        prop_assert_eq!(&planned.spec, &spec, "{} {}", workload, options);
                    }
                    at += count;
                }
            }
        }
    }
}
