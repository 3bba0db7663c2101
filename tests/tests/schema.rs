//! The JSON report's shape is fixed: for a representative set of runs, the report goes
//! through `TestReport` and back to the same JSON (the type loses and renames nothing), and
//! its key paths with their types match the snapshot committed in
//! `tests/fixtures/report_schema/<run>.txt`. A refactor that keeps these passing keeps
//! the output's shape; one that changes the shape on purpose regenerates the snapshots:
//!
//! ```text
//! RINGPERF_UPDATE_SCHEMA=1 cargo test -p ringperf-tests --test schema
//! ```
//!
//! A path is its object keys joined by `.`, `[]` for an array's elements and `{}` for the
//! entries of a map (an object whose keys are data, such as the sysctls read). Its type is
//! what the JSON holds there: object, array, string, bool, int, float or null. What a run
//! measured decides some of the shape: a field that may be absent is null in one run and
//! an object in another, and an array may be empty. So null matches any type, and what lies
//! under a null or an empty array or map was not seen and is not compared; everything seen
//! on both sides must agree.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use ringperf_tests::{parse, ringperf, ChildGuard, TestReport};
use serde_json::Value;

/// Set to regenerate the snapshots from this host's runs instead of comparing with them.
const UPDATE_ENV: &str = "RINGPERF_UPDATE_SCHEMA";

/// Objects whose keys are data, not field names.
const MAPS: &[&str] = &["sysctls"];

/// Each path of a report and the JSON types seen there.
type Shape = BTreeMap<String, BTreeSet<&'static str>>;

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The name [`json_type`] gives, as it reads in a snapshot.
fn type_named(name: &str) -> &'static str {
    const TYPES: [&str; 7] = ["null", "bool", "float", "int", "string", "array", "object"];
    TYPES.into_iter().find(|t| *t == name).unwrap_or_else(|| panic!("no JSON type is named '{name}'"))
}

fn shape_of(v: &Value) -> Shape {
    fn walk(v: &Value, path: &str, is_map: bool, out: &mut Shape) {
        out.entry(path.to_string()).or_default().insert(json_type(v));
        match v {
            Value::Object(fields) => {
                for (k, x) in fields {
                    let child = if is_map {
                        format!("{path}{{}}")
                    } else if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(x, &child, !is_map && MAPS.contains(&k.as_str()), out);
                }
            }
            Value::Array(items) => {
                for x in items {
                    walk(x, &format!("{path}[]"), false, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Shape::new();
    walk(v, "", false, &mut out);
    out.remove("");
    out
}

/// The snapshot's text: one `path type|type` line a path, sorted.
fn render(shape: &Shape) -> String {
    let mut s = String::new();
    for (path, types) in shape {
        let types: Vec<&str> = types.iter().copied().collect();
        s.push_str(&format!("{path} {}\n", types.join("|")));
    }
    s
}

fn read_snapshot(text: &str) -> Shape {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (path, types) =
                l.rsplit_once(' ').unwrap_or_else(|| panic!("a snapshot line without a type: {l}"));
            let types = types.split('|').map(type_named).collect();
            (path.to_string(), types)
        })
        .collect()
}

/// Whether what lies under `path` went unseen in `shape`: the path was only ever null, or
/// it is an array or map with nothing in it.
fn unseen_below(shape: &Shape, path: &str) -> bool {
    let Some(types) = shape.get(path) else { return false };
    if types.iter().all(|t| *t == "null") {
        return true;
    }
    let container = types.iter().all(|t| matches!(*t, "null" | "array" | "object"));
    let may_be_empty = types.contains("array") || MAPS.iter().any(|m| path.ends_with(&format!(".{m}")));
    let below = [format!("{path}."), format!("{path}[]"), format!("{path}{{}}")];
    container && may_be_empty && !shape.keys().any(|k| below.iter().any(|b| k.starts_with(b.as_str())))
}

/// The paths that enclose `path`, nearest last.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.char_indices().filter(|&(i, c)| i > 0 && matches!(c, '.' | '[' | '{')).map(|(i, _)| &path[..i])
}

/// How `got` differs from `want`, as lines; empty when it matches (see the module's doc).
fn differences(want: &Shape, got: &Shape) -> Vec<String> {
    let mut out = Vec::new();
    let hidden = |shape: &Shape, path: &str| ancestors(path).any(|a| unseen_below(shape, a));
    for (path, types) in got {
        match want.get(path) {
            None if !hidden(want, path) => out.push(format!("+ {path} {}", join(types))),
            Some(w) => {
                let (w_seen, g_seen) = (non_null(w), non_null(types));
                if !w_seen.is_empty() && !g_seen.is_empty() && w_seen != g_seen {
                    out.push(format!("~ {path} {} (snapshot: {})", join(types), join(w)));
                }
            }
            None => {}
        }
    }
    for (path, types) in want {
        if !got.contains_key(path) && !hidden(got, path) {
            out.push(format!("- {path} {}", join(types)));
        }
    }
    out
}

fn non_null(types: &BTreeSet<&'static str>) -> BTreeSet<&'static str> {
    types.iter().copied().filter(|t| *t != "null").collect()
}

fn join(types: &BTreeSet<&'static str>) -> String {
    types.iter().copied().collect::<Vec<_>>().join("|")
}

/// What `report` loses or changes on its way through [`TestReport`] and back: one line a
/// path whose value differs; empty when it comes back the same.
fn round_trip_changes(report: &Value) -> Vec<String> {
    fn diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let at = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    match (x.get(k), y.get(k)) {
                        (Some(va), Some(vb)) => diff(va, vb, &at, out),
                        (Some(_), None) => out.push(format!("{at}: lost")),
                        (None, _) => out.push(format!("{at}: added")),
                    }
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                    diff(va, vb, &format!("{path}[{i}]"), out);
                }
            }
            _ if a != b => out.push(format!("{path}: {a} became {b}")),
            _ => {}
        }
    }
    let typed: TestReport = serde_json::from_value(report.clone())
        .unwrap_or_else(|e| panic!("the report does not read as a TestReport: {e}"));
    let again = serde_json::to_value(&typed).expect("a report serializes");
    let mut out = Vec::new();
    diff(report, &again, "", &mut out);
    out
}

fn snapshot_path(run: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/report_schema").join(format!("{run}.txt"))
}

/// Checks one report: it goes through `TestReport` and back unchanged, and its shape is
/// the snapshot's for `run` (or becomes it, with RINGPERF_UPDATE_SCHEMA set).
fn check(run: &str, command: &str, json: &str) {
    let value: Value = parse(&format!("the report of {command}"), json);
    let changes = round_trip_changes(&value);
    assert!(
        changes.is_empty(),
        "{run}: the JSON of {command} changed on its way through TestReport: {changes:#?}"
    );

    let shape = shape_of(&value);
    let file = snapshot_path(run);
    if std::env::var_os(UPDATE_ENV).is_some_and(|v| !v.is_empty()) {
        let header = format!(
            "# The key paths of the JSON report of `ringperf {command}`, with their JSON types.\n\
             # Written by tests/tests/schema.rs with {UPDATE_ENV}=1; see its doc for the rules.\n"
        );
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("the snapshot folder");
        std::fs::write(&file, header + &render(&shape)).expect("writing the snapshot");
        eprintln!("{run}: wrote {}", file.display());
        return;
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!("{run}: no snapshot at {} ({e}): run with {UPDATE_ENV}=1 to write it", file.display())
    });
    let diff = differences(&read_snapshot(&text), &shape);
    assert!(
        diff.is_empty(),
        "{run}: the report of {command} has another shape than {} (+ new, - gone, ~ retyped); if \
         the change is meant, run with {UPDATE_ENV}=1 and commit the snapshot:\n{}",
        file.display(),
        diff.join("\n")
    );
}

/// Runs `ringperf <args> --json` and checks its report as `run`; returns the report.
fn whole(run: &str, args: &[&str]) -> Value {
    let out = ringperf!().run(&[args, &["--json"]].concat()).success();
    check(run, &args.join(" "), &out.stdout);
    out.json()
}

/// A plain stream, and the round trip's own check: a field the type does not know is
/// lost on the way through it, and that is found.
#[test]
fn stream_keeps_its_shape() {
    let mut report = whole("stream", &["stream", "-l", "0.5"]);
    report["local"]["not_in_the_type"] = Value::from(1);
    assert_eq!(round_trip_changes(&report), ["local.not_in_the_type: lost"]);
}

#[test]
fn maerts_keeps_its_shape() {
    whole("maerts", &["stream", "--reverse", "-l", "0.5"]);
}

#[test]
fn bidir_keeps_its_shape() {
    whole("bidir", &["stream", "--bidir", "-l", "0.5"]);
}

/// Zero copy, --verify, two flows and iterations fill the parts a plain stream leaves null.
#[test]
fn a_verified_zero_copy_stream_with_iterations_keeps_its_shape() {
    whole(
        "stream_zc_verify_iterations",
        &["stream", "-l", "0.3", "--send-engine", "zc", "--verify", "--flows", "2", "-i", "3,3"],
    );
}

#[test]
fn sendfile_keeps_its_shape() {
    whole("sendfile", &["sendfile", "-l", "0.5"]);
}

#[test]
fn rr_keeps_its_shape() {
    whole("rr", &["rr", "-l", "0.5"]);
}

#[test]
fn crr_keeps_its_shape() {
    whole("crr", &["crr", "-l", "0.5"]);
}

#[test]
fn udp_stream_keeps_its_shape() {
    whole("udp_stream", &["udp-stream", "-l", "0.5"]);
}

#[test]
fn udp_rr_keeps_its_shape() {
    whole("udp_rr", &["udp-rr", "-l", "0.5"]);
}

#[test]
fn a_profiled_run_keeps_its_shape() {
    whole("profile", &["rr", "-l", "0.5", "--profile"]);
}

/// A run stopped by Ctrl-C once its window is open: a partial report with both sides.
#[test]
fn a_partial_run_keeps_its_shape() {
    let rp = ringperf!();
    let server = rp.serve();
    let port = server.port_arg();
    let args = ["stream", "-H", "127.0.0.1", "-p", &port, "-l", "20", "-D", "0.2", "--json-stream"];
    let mut cmd = rp.command(&args);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut client = ChildGuard::spawn(cmd);
    let stdout = client.child_mut().stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    // The first interval: the window is open.
    assert!(
        lines.next().and_then(Result::ok).is_some(),
        "the client printed no interval: {:?}",
        server.log()
    );
    client.signal(libc::SIGINT);
    // Read on another thread, so that a client that ignores Ctrl-C fails the test below
    // (and is killed) instead of blocking the read for ever.
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).last());
    let status = client.wait_timeout(Duration::from_secs(15)).expect("the client ignored Ctrl-C for 15 s");
    let last = rest.join().expect("the reader thread").unwrap_or_default();
    assert_eq!(status.code(), Some(130), "Ctrl-C exit code");
    let report: TestReport = parse("the partial report", &last);
    assert!(report.partial, "a run stopped by Ctrl-C is not marked partial");
    check("partial", "stream (stopped by Ctrl-C)", &last);
}

#[test]
fn the_shape_comparison_finds_a_new_a_gone_and_a_retyped_field() {
    let old: Value =
        serde_json::json!({"a": 1, "b": {"c": "x"}, "d": [], "e": null, "s": {"sysctls": {"k.1": "v"}}});
    let want = shape_of(&old);
    assert!(differences(&want, &want).is_empty());
    assert!(want.contains_key("s.sysctls{}"), "map keys are data: {want:?}");
    // What was unseen (under null, an empty array) may appear; a map may hold other keys.
    let more = serde_json::json!({"a": 2, "b": {"c": "y"}, "d": [{"f": 1}], "e": {"g": true}, "s": {"sysctls": {"k.2": "w"}}});
    assert!(differences(&want, &shape_of(&more)).is_empty(), "{:?}", differences(&want, &shape_of(&more)));
    let renamed = serde_json::json!({"a": 1, "b": {"cc": "x"}, "d": [], "e": null, "s": {"sysctls": {}}});
    assert_eq!(differences(&want, &shape_of(&renamed)), ["+ b.cc string", "- b.c string"]);
    let retyped = serde_json::json!({"a": 1.5, "b": {"c": "x"}, "d": [], "e": null, "s": {"sysctls": {}}});
    assert_eq!(differences(&want, &shape_of(&retyped)), ["~ a float (snapshot: int)"]);
    assert_eq!(read_snapshot(&render(&want)), want, "the snapshot's text reads back");
}
