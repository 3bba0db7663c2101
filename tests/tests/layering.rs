//! The workspace's layering, checked where a change would break it: the crates Cargo keeps
//! in order (core under engine under control, the bench on core alone, no io_uring under
//! core), and inside each crate a file -> file import graph with no circles and few
//! imports back up a level (`tools/import-graph`, docs/layout.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Imports back up a level allowed in the whole workspace, as issue 32 asks: what a parent
/// module shares with its children lives in a sibling file both import.
const MAX_UP: usize = 3;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// `tools/import-graph ARGS` on `root`, or None (with a SKIPPED line) without python3.
fn import_graph(test: &str, root: &Path, args: &[&str]) -> Option<std::process::Output> {
    let tool = workspace().join("tools/import-graph");
    match Command::new("python3").arg(&tool).args(args).arg(root).output() {
        Ok(o) => Some(o),
        Err(e) => {
            ringperf_tests::skip(test, &format!("python3 cannot run tools/import-graph ({e})"));
            None
        }
    }
}

#[test]
fn the_import_graph_has_no_circles_and_few_imports_back_up_a_level() {
    let test = "the_import_graph_has_no_circles_and_few_imports_back_up_a_level";
    let max = MAX_UP.to_string();
    let Some(o) = import_graph(test, &workspace(), &["--check", "--verbose", "--max-up", &max]) else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "tools/import-graph --check failed:\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let total = out.lines().last().unwrap_or_default();
    assert!(total.starts_with("total: 0 circles"), "{out}");
}

/// The check itself fails on a circle: a crate of two files that import each other.
#[test]
fn the_import_graph_check_fails_on_a_circle() {
    let test = "the_import_graph_check_fails_on_a_circle";
    let dir = std::env::temp_dir().join(format!("ringperf-layering-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).expect("a temporary crate");
    let write = |p: &str, s: &str| std::fs::write(dir.join(p), s).expect("a temporary crate file");
    write("Cargo.toml", "[package]\nname = \"circle\"\nversion = \"0.1.0\"\n");
    write("src/lib.rs", "pub mod a;\npub mod b;\n");
    write("src/a.rs", "use crate::b::B;\npub struct A(pub B);\n");
    write("src/b.rs", "pub struct B;\npub fn make() -> crate::a::A { crate::a::A(B) }\n");
    let o = import_graph(test, &dir, &["--check"]);
    std::fs::remove_dir_all(&dir).expect("removing the temporary crate");
    let Some(o) = o else { return };
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "a circle passed the check:\n{out}");
    assert!(out.contains("total: 1 circles"), "{out}");
}

/// Each package of Cargo.lock and the packages it depends on.
fn lock_graph() -> BTreeMap<String, Vec<String>> {
    let lock = std::fs::read_to_string(workspace().join("Cargo.lock")).expect("Cargo.lock");
    let mut graph = BTreeMap::new();
    for package in lock.split("[[package]]").skip(1) {
        let name = package
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .expect("a package name")
            .trim_matches('"')
            .to_string();
        let deps = package
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split(']').next().unwrap_or_default())
            .unwrap_or_default()
            .split(',')
            // "name" or "name version" (when two versions are locked)
            .filter_map(|d| d.trim().trim_matches('"').split(' ').next().map(str::to_string))
            .filter(|d| !d.is_empty())
            .collect();
        graph.insert(name, deps);
    }
    graph
}

/// Every package `root` depends on, directly or not.
fn under(graph: &BTreeMap<String, Vec<String>>, root: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(p) = todo.pop() {
        for d in graph.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn the_crates_depend_only_downwards() {
    let graph = lock_graph();
    let core = under(&graph, "ringperf-core");
    assert!(!core.contains("io-uring"), "io_uring is under ringperf-core: {core:?}");
    assert!(!core.iter().any(|p| p.starts_with("ringperf")), "core depends on a ringperf crate: {core:?}");
    let bench = under(&graph, "ringperf-bench");
    assert!(!bench.contains("io-uring"), "the bench builds io_uring: {bench:?}");
    assert!(bench.contains("ringperf-core"), "{bench:?}");
    assert!(!bench.contains("ringperf-engine") && !bench.contains("ringperf-control"), "{bench:?}");
    let engine = under(&graph, "ringperf-engine");
    assert!(engine.contains("ringperf-core") && !engine.contains("ringperf-control"), "{engine:?}");
    let control = under(&graph, "ringperf-control");
    assert!(!control.contains("clap"), "the control plane depends on clap: {control:?}");
    assert!(control.contains("ringperf-engine") && control.contains("ringperf-core"), "{control:?}");
}
