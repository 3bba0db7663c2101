//! `ringperf sweep`, `--plot` and the lab studies: a sweep's table and JSON have a row and
//! an entry per point with its parameters echoed, a failed point keeps the others, plots
//! are SVG with the series and labels they should have, and `tools/tso-study --quick`
//! runs end to end (root only).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ringperf_tests::{
    check_stream_report, lab_name, netns_list, parse, ringperf, run_with_timeout, skip, skip_unless,
    Category, Outcome, SideReportExt, SweepEntry, TestReport, TestReportExt, LAB_PROGRAMS, PYTHON3,
};

/// The report of a sweep's point that must have one.
fn point_report(e: &SweepEntry) -> &TestReport {
    e.report.as_ref().unwrap_or_else(|| panic!("point {} has no report: {:?}", e.point, e.error))
}

/// A point's parameter, which it must have.
fn param<'a>(e: &'a SweepEntry, name: &str) -> &'a str {
    e.point.get(name).unwrap_or_else(|| panic!("point {} has no {name}", e.point))
}

/// A scratch directory for this test, emptied first.
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ringperf-sweep-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A 0.5 s stream sweep over the send sizes `sizes` with the options `extra`, which must
/// succeed: what it printed, and the entries of the JSON it wrote to `json`.
fn stream_sweep(sizes: &str, extra: &[&str], json: &Path) -> (Outcome, Vec<SweepEntry>) {
    let mut args = vec!["sweep", "stream", "-l", "0.5", "-m", sizes];
    args.extend_from_slice(extra);
    args.extend(["--output", json.to_str().unwrap()]);
    let out = ringperf!().run(&args).success();
    let entries = parse("the sweep's JSON", &fs::read_to_string(json).unwrap());
    (out, entries)
}

/// Checks that `svg` is one well-formed SVG document: balanced tags, one root.
fn check_svg(svg: &str) {
    assert!(
        svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "not an SVG: {svg:.200}"
    );
    let mut depth = 0i64;
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        let tag_end = rest[i..].find('>').expect("unclosed tag") + i;
        let tag = &rest[i..=tag_end];
        if tag.starts_with("</") {
            depth -= 1;
        } else if !tag.ends_with("/>") && !tag.starts_with("<?") && !tag.starts_with("<!") {
            depth += 1;
        }
        assert!(depth >= 0, "a closing tag without its opening one: {tag}");
        rest = &rest[tag_end + 1..];
    }
    assert_eq!(depth, 0, "unbalanced tags");
}

/// The text of every <text> element.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim().to_string()))
        .collect()
}

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

/// Data lines of palette colour `stroke` (axes and grid are 1 px black or grey; series are
/// drawn 2 px wide in the palette), each series counted with its legend swatch.
fn lines_of(svg: &str, stroke: &str) -> usize {
    count(svg, &format!("<polyline fill=\"none\" opacity=\"1\" stroke=\"{stroke}\" stroke-width=\"2\""))
}

const BLUE: &str = "#1F77B4";
const ORANGE: &str = "#FF7F0E";

#[test]
fn two_point_sweep_gives_two_rows_two_reports_and_a_chart() {
    let dir = scratch("two");
    let (json, svg) = (dir.join("s.json"), dir.join("s.svg"));
    // reno: the one congestion control a non-root process may always set.
    let (out, entries) = stream_sweep("16K,64K", &["--cc", "reno", "--plot", svg.to_str().unwrap()], &json);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two rows: {out}");
    assert!(lines[0].starts_with("send_size") && lines[0].contains("us/KB loc"), "{out}");
    assert!(lines[1].starts_with("16K ") && lines[2].starts_with("64K "), "{out}");
    assert!(out.stderr.contains("point 2 of 2"), "{out}");

    assert_eq!(entries.len(), 2);
    for (e, size) in entries.iter().zip(["16K", "64K"]) {
        assert_eq!(param(e, "send_size"), size);
        assert_eq!(param(e, "cc"), "reno");
        let r = point_report(e);
        check_stream_report(r, false);
        assert_eq!(r.spec.send_size, if size == "16K" { 16384 } else { 65536 });
        assert_eq!(r.local.socket.congestion_control, "reno");
    }

    let svg = fs::read_to_string(&svg).unwrap();
    check_svg(&svg);
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "send_size"), "x axis label: {t:?}");
    assert!(t.iter().any(|s| s.contains("throughput (10^6 bits/s)")), "y axis label: {t:?}");
    assert!(t.iter().any(|s| s == "16K") && t.iter().any(|s| s == "64K"), "categories: {t:?}");
    // One line (only send_size varies) and its legend swatch; nothing in a second colour.
    assert_eq!(lines_of(&svg, BLUE), 2);
    assert_eq!(lines_of(&svg, ORANGE), 0);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn rr_sweep_json_echoes_pairs_and_a_failed_point_keeps_the_rest() {
    let out = ringperf!().run(&["sweep", "rr", "-l", "0.3", "-r", "1,1:64,64", "--json"]).success();
    let e: Vec<SweepEntry> = out.parsed();
    assert_eq!(e.len(), 2);
    assert_eq!(param(&e[1], "req_rsp"), "64,64");
    assert_eq!(point_report(&e[1]).spec.request_size, 64);

    let out = ringperf!().run(&["sweep", "stream", "-l", "0.3", "--cc", "reno,nosuchcc", "--json"]);
    assert_ne!(out.code(), 0, "a failed point must fail the sweep: {out}");
    let e: Vec<SweepEntry> = parse("the sweep's JSON despite the failure", &out.stdout);
    assert_eq!(e.len(), 2, "{out}");
    assert!(e[0].report.is_some() && e[0].error.is_none(), "the good point is kept");
    let error = e[1].error.as_deref().unwrap_or_default();
    assert!(e[1].report.is_none() && error.contains("nosuchcc"), "{out}");
    assert!(out.stderr.contains("point 2 of 2 (cc=nosuchcc) failed"), "{out}");
}

#[test]
fn sweep_usage_errors_exit_2_before_running() {
    let out = ringperf!().run(&["sweep", "stream", "-m", "1K,,2K"]);
    assert_eq!(out.code(), 2, "{out}");
    assert!(out.stderr.contains("empty value"), "{out}");
    let out = ringperf!().run(&["sweep", "stream", "--send-engine", "copy,warp"]);
    assert_eq!(out.code(), 2, "{out}");
    assert!(out.stderr.contains("unknown send engine 'warp'"), "{out}");
}

#[test]
fn a_profile_category_is_a_sweep_figure_with_a_value_per_point() {
    let test = "a_profile_category_is_a_sweep_figure_with_a_value_per_point";
    let dir = scratch("costcopy");
    let json = dir.join("s.json");
    let (out, entries) = stream_sweep("1K,64K", &["--profile", "--figure", "local_cost_copy"], &json);
    assert_eq!(entries.len(), 2, "{out}");
    if let Some(why) = &point_report(&entries[0]).local.profile().unavailable {
        skip(test, &format!("the kernel refused the profile here: {why}"));
        return;
    }
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two rows: {out}");
    assert!(lines[0].contains(" local_cost_copy  confidence"), "the figure has its column: {out}");
    for (line, e) in lines[1..].iter().zip(&entries) {
        // The column before "confidence" (which is "-" without -i) is the figure.
        let cells: Vec<&str> = line.split_whitespace().collect();
        let shown: f64 = cells[cells.len() - 2].parse().unwrap_or_else(|_| panic!("a number: {line}"));
        // A stream on loopback copies every byte it sends and receives.
        let categories = &point_report(e).local.profile().categories;
        let copy = categories
            .iter()
            .find(|c| c.category == Category::Copy)
            .unwrap_or_else(|| panic!("a copy category: {categories:?}"));
        let per_kb = copy.us_per_kb.expect("us_per_kb");
        assert!(per_kb > 0.0, "{copy:?}");
        assert_eq!(format!("{shown:.4}"), format!("{per_kb:.4}"), "the row shows the report's cost: {line}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_profile_figure_without_profile_is_a_usage_error() {
    let out =
        ringperf!().run(&["sweep", "stream", "-l", "0.3", "-m", "1K,64K", "--figure", "remote_cost_tcp"]);
    assert_eq!(out.code(), 2, "{out}");
    assert!(out.stderr.contains("add --profile"), "{out}");
    assert!(!out.stderr.contains("point 1 of 2"), "refused before running: {out}");
    let out = ringperf!().run(&["sweep", "stream", "-m", "1K,64K", "--figure", "local_cost_warp"]);
    assert_eq!(out.code(), 2, "{out}");
    assert!(out.stderr.contains("local_cost_copy"), "the names are listed: {out}");
}

#[test]
fn rr_plot_has_the_rate_over_time_and_the_latency_cdf() {
    let dir = scratch("rrplot");
    let svg_path = dir.join("rr.svg");
    let report = ringperf!().run_report(&["rr", "-l", "0.5", "--plot", svg_path.to_str().unwrap()]);
    let svg = fs::read_to_string(&svg_path).unwrap();
    check_svg(&svg);
    let t = texts(&svg);
    for want in [
        "Transactions over time",
        "time since start (s)",
        "transactions/s",
        "system CPU busy (% of all CPUs)",
        "round trip (us, log scale)",
        "transactions at or below (%)",
    ] {
        assert!(t.iter().any(|s| s == want), "no '{want}' in {t:?}");
    }
    assert!(t.iter().any(|s| s.starts_with("Round-trip CDF (")), "{t:?}");
    assert!(t.iter().any(|s| s.starts_with("p99 ")), "percentile marks: {t:?}");
    // Rate and CDF lines in blue, CPU in orange, each with its legend swatch.
    assert_eq!(lines_of(&svg, BLUE), 4, "{t:?}");
    assert_eq!(lines_of(&svg, ORANGE), 2, "{t:?}");
    // Interval markers: one circle per interval sample (plus the percentile marks).
    let samples = report.local.intervals.len();
    assert!(samples > 0 && count(&svg, "<circle") >= samples + 3);

    // The same picture from the saved report.
    let saved = dir.join("rr.json");
    fs::write(&saved, serde_json::to_string(&report).unwrap()).unwrap();
    let again = dir.join("again.svg");
    ringperf!().run(&["plot", saved.to_str().unwrap(), "-o", again.to_str().unwrap()]).success();
    assert_eq!(lines_of(&fs::read_to_string(&again).unwrap(), BLUE), 4);
    let _ = fs::remove_dir_all(&dir);
}

/// The study's BIG TCP sweep: a row per GSO limit, each run's environment showing the limits
/// the study set, and super-packets that obey the limit and grow with it.
fn check_big_tcp_sweep(dir: &std::path::Path, table: &str) {
    let sizes = [65536u32, 131072, 262144, 524280];
    let section = table.split("## BIG TCP").nth(1).unwrap_or_else(|| panic!("no BIG TCP section: {table}"));
    let rows: Vec<Vec<String>> = section
        .lines()
        .filter(|l| l.starts_with("| gso_max_size "))
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    assert_eq!(rows.len(), sizes.len(), "{section}");
    // Columns: "", limit, captured, Mbit/s, CPU %, sender us/KB, receiver us/KB, segs per
    // super-packet (a tx), bytes per packet, segs per packet (b rx), MSS, iterations.
    let num = |r: &[String], c: usize| -> f64 {
        r[c].parse().unwrap_or_else(|_| panic!("column {c} of {r:?} is not a number\n{section}"))
    };
    let mut segs = Vec::new();
    for (row, n) in rows.iter().zip(sizes) {
        assert_eq!(row[1], format!("gso_max_size {n}"), "{section}");
        assert_eq!(row[2], format!("a gso {n}/{n}, b gro {n}/{n}"), "the captured limits: {section}");
        assert!(num(row, 3) > 0.0 && num(row, 5) > 0.0 && num(row, 6) > 0.0, "{section}");
        let (per_packet, mss) = (num(row, 7), num(row, 10));
        assert!(per_packet >= 1.0, "fewer than one segment per packet: {section}");
        // No super-packet outgrows the limit: its payload segments fit in it.
        assert!(
            per_packet <= f64::from(n) / mss + 1.0,
            "more segments per packet than {n} bytes hold: {section}"
        );
        segs.push(per_packet);

        // The run's own JSON: the sender's device had the GSO limits, the receiver's the GRO ones.
        let file = format!("bigtcp-{n}.json");
        let r: TestReport = parse(&file, &fs::read_to_string(dir.join(&file)).expect("a report"));
        let (a, b) = (r.local.network().sizes, r.remote().network().sizes);
        assert_eq!((a.gso_max_size, a.gso_ipv4_max_size), (Some(n), Some(n)), "run at {n}: {a:?}");
        assert_eq!((b.gro_max_size, b.gro_ipv4_max_size), (Some(n), Some(n)), "run at {n}: {b:?}");
    }
    // A 64 KiB limit holds at most 45 segments of 1448 bytes; 512 KiB with 1 MiB writes, more.
    assert!(segs[3] > segs[0], "super-packets did not grow with the limit: {segs:?}\n{section}");
    for svg in ["bigtcp-sender-sd.svg", "bigtcp-receiver-sd.svg", "bigtcp-throughput.svg"] {
        let s = fs::read_to_string(dir.join(svg)).expect(svg);
        check_svg(&s);
        assert!(texts(&s).iter().any(|t| t == "524280"), "{svg}: {:?}", texts(&s));
    }
}

#[test]
fn tso_study_quick_runs_end_to_end() {
    if skip_unless("tso_study_quick_runs_end_to_end", true, &[LAB_PROGRAMS, &[PYTHON3]].concat()) {
        return;
    }
    let dir = scratch("tso");
    let name = lab_name("tsos");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tools/tso-study");
    let mut c = Command::new(script);
    c.args(["--quick", "--out", dir.to_str().unwrap(), "--lab", &name]).env("RINGPERF", ringperf!().path());
    let out = run_with_timeout(c, Duration::from_secs(180)).success();
    let table = fs::read_to_string(dir.join("RESULTS.md")).expect("RESULTS.md");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| TSO")).collect();
    assert_eq!(rows.len(), 3, "{table}\n{out}");
    // The captured environment agrees with what the study set on the sender.
    assert!(rows[0].contains("tso on gso on"), "{table}");
    assert!(rows[1].contains("tso off gso on"), "{table}");
    assert!(rows[2].contains("tso off gso off"), "{table}");
    // The sender's cost by category: the rows add up to the whole service demand per segment
    // (each cell rounded to 1 ns), for every configuration.
    let by_category =
        table.split("## The sender's cost by category").nth(1).expect("the by-category section");
    if !by_category.contains("No kernel cost profile") {
        let cells = |l: &str| -> Vec<String> { l.split('|').map(|c| c.trim().to_string()).collect() };
        let body: Vec<Vec<String>> = by_category
            .lines()
            .skip_while(|l| !l.starts_with("| category"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(cells)
            .collect();
        let (total, cats) = body.split_last().expect("a table");
        assert_eq!(total[1], "all busy CPU", "{by_category}");
        assert!(cats.iter().any(|r| r[1] == "tcp") && cats.iter().any(|r| r[1] == "copy"), "{by_category}");
        // Columns: category, then ns/seg and us/KB per configuration.
        for col in [2, 4, 6] {
            let sum: f64 = cats.iter().map(|r| r[col].parse::<f64>().expect("a number")).sum();
            let whole: f64 = total[col].parse().expect("a number");
            assert!(
                (sum - whole).abs() <= cats.len() as f64 * 0.5 + whole * 0.01,
                "column {col}: categories add to {sum}, the whole is {whole}\n{by_category}"
            );
        }
    }
    for svg in ["stream.svg", "rr.svg"] {
        let s = fs::read_to_string(dir.join(svg)).expect(svg);
        check_svg(&s);
        assert!(texts(&s).iter().any(|t| t == "TSO off"), "{svg}: {:?}", texts(&s));
    }
    check_big_tcp_sweep(&dir, &table);
    let left: Vec<String> = netns_list().into_iter().filter(|n| n.contains(&name)).collect();
    assert!(left.is_empty(), "the study left namespaces behind: {left:?}");
    // Nor a server: the study's own (in host b) must be gone with its lab. It is the only
    // `serve --bind 198.18.0.2` without `--port` (the tests' servers all pass --port 0).
    let bin = ringperf!().path().to_string_lossy().into_owned();
    let servers: Vec<String> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.starts_with(&bin) && c.contains("serve --bind 198.18.0.2") && !c.contains("--port"))
        .collect();
    assert!(servers.is_empty(), "the study left its server running: {servers:?}");
    let _ = fs::remove_dir_all(&dir);
}
