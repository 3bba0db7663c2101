//! Statistics users rely on: confidence over iterations, interval series, histograms that
//! merge, TCP_INFO, script-friendly outputs, and `ringperf diff`.

use std::fs;

use ringperf_core::measure::latency::{merge_summaries, LatencyRecorder};
use ringperf_tests::{ringperf, IterationFigures, SideReportExt, TestReport, TestReportExt};

/// A target nobody can meet: three iterations run, the warning names what missed (-v: a
/// netperf-style warning per figure; the default report: its doubt line).
#[test]
fn a_missed_confidence_target_warns_and_says_by_how_much() {
    let out = ringperf!().run(&["stream", "-l", "0.3", "-i", "3,3", "-I", "99,0.01", "-v"]).success();
    let warnings: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("!!! WARNING")).collect();
    assert!(!warnings.is_empty(), "no warning: {out}");
    assert!(warnings.iter().any(|w| w.contains("throughput") && w.contains("±0.01 %")), "{warnings:?}");
    assert!(out.stdout.contains("NOT met"), "{out}");
    let out = ringperf!().run(&["stream", "-l", "0.3", "-i", "3,3", "-I", "99,0.01"]).success();
    let doubt = out.stdout.lines().find(|l| l.starts_with("doubtful: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(
        doubt.contains("confidence target was not met (throughput ±") && doubt.contains("±0.01 %"),
        "{doubt}"
    );
    assert!(out.stdout.contains("NOT met"), "{out}");

    let r = ringperf!().run_report(&["stream", "-l", "0.3", "-i", "3,3", "-I", "99,0.01"]);
    // (check_stream_report does not apply: the summary is a mean over iterations.)
    assert_eq!(r.local.bytes_sent, r.remote().bytes_received);
    assert_eq!(r.confidence().iterations, 3);
    assert!(!r.confidence().met);
    assert_eq!(r.iterations.len(), 3);
    let names: Vec<&str> = r.confidence().estimates.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["throughput", "local CPU", "remote CPU"]);
    // The summary is the mean of the iterations.
    let mean = r.iterations.iter().map(|i| i.throughput_bits_per_sec).sum::<f64>() / 3.0;
    assert!((r.summary.throughput_bits_per_sec - mean).abs() <= 1e-6 * mean);
}

/// A loose target is met early: at least MIN iterations, at most MAX, no warning.
#[test]
fn a_loose_target_stops_between_min_and_max() {
    let out = ringperf!().run(&["rr", "-l", "0.3", "-i", "6,2", "-I", "90,90", "--json"]).success();
    let r = out.report();
    assert_eq!(r.local.transactions, r.remote().transactions);
    let n = r.confidence().iterations;
    assert!((2..=6).contains(&n), "{n} iterations");
    // Latency is merged over every iteration, exactly.
    let total: u64 = r.iterations.iter().map(|i| i.transactions).sum();
    assert_eq!(r.local.latency().count, total);
}

/// The histogram in the JSON decodes, and re-merging it reproduces the percentiles.
#[test]
fn json_histograms_decode_and_remerge_to_the_same_percentiles() {
    let r = ringperf!().run_report(&["rr", "-l", "0.5"]);
    let s = r.local.latency();
    let rec = LatencyRecorder::from_summary(s).expect("histogram decodes");
    assert_eq!(rec.len(), r.local.transactions);
    let again = merge_summaries(&[s]).unwrap();
    assert_eq!(
        (again.p50_ns, again.p99_ns, again.p9999_ns, again.max_ns),
        (s.p50_ns, s.p99_ns, s.p9999_ns, s.max_ns)
    );
    let doubled = merge_summaries(&[s, s]).unwrap();
    assert_eq!(doubled.count, 2 * s.count);
    assert_eq!(doubled.p50_ns, s.p50_ns);
}

/// Interval series add up to the totals; rr intervals carry percentiles; -D prints lines.
#[test]
fn intervals_add_up_and_print_live() {
    let r = ringperf!().run_report(&["stream", "-l", "1", "-D", "0.25"]);
    let iv = &r.local.intervals;
    assert!(iv.len() >= 4, "{} intervals", iv.len());
    let sent: u64 = iv.iter().map(|s| s.bytes_sent).sum();
    assert_eq!(sent, r.local.bytes_sent, "the series does not add up to the total");
    let received: u64 = r.remote().intervals.iter().map(|s| s.bytes_received).sum();
    assert_eq!(received, r.remote().bytes_received);
    assert!(r.summary.within_run.is_some(), "no within-run estimate");

    let r = ringperf!().run_report(&["rr", "-l", "1", "-D", "0.25"]);
    for s in &r.local.intervals {
        if s.transactions > 100 {
            let p =
                |v: Option<u64>| v.unwrap_or_else(|| panic!("an interval of rr without percentiles: {s:?}"));
            assert!(p(s.latency_p50_ns) <= p(s.latency_p99_ns));
        }
    }
    let out = ringperf!().run(&["rr", "-l", "1", "-D", "0.25"]).success();
    assert!(out.stdout.lines().filter(|l| l.starts_with("interval")).count() >= 3, "{out}");
    let out = ringperf!().run(&["stream", "-l", "1", "-D", "0.25", "--keyval"]).success();
    assert!(out.stdout.contains("NETPERF_INTERIM_RESULT[0]="), "{out}");
    assert!(out.stdout.contains("NETPERF_UNITS[0]=10^6bits/s"), "{out}");
    // A window that ends on a tick leaves an empty remainder: no line covers 0 s, and the
    // lines are numbered without gaps.
    let intervals: Vec<(String, f64)> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("NETPERF_INTERVAL["))
        .filter_map(|l| l.split_once("]="))
        .map(|(n, v)| (n.to_string(), v.parse().unwrap_or(0.0)))
        .collect();
    assert!(intervals.len() >= 3, "{out}");
    for (i, (n, secs)) in intervals.iter().enumerate() {
        assert_eq!(n, &i.to_string(), "{out}");
        assert!(*secs >= 0.001, "interval {n} covers {secs} s: {out}");
    }
    // Piped output and no -D: no interval lines.
    let out = ringperf!().run(&["stream", "-l", "0.5"]).success();
    assert!(!out.stdout.contains("interval "), "{out}");
}

/// TCP_INFO per flow and the per-segment service demand.
#[test]
fn tcp_info_and_per_segment_cost_are_reported() {
    let r = ringperf!().run_report(&["stream", "-l", "0.5"]);
    assert_eq!(r.local.tcp().flows.len(), 1);
    let segs = r.local.tcp().data_segs_out;
    assert!(segs > 0);
    // The receiver saw every segment the sender sent, less those lost and retransmitted.
    // A retransmission may follow the sender's last reading of its counters (a spurious
    // timeout on a loaded host), so the receiver may count up to that many more.
    let seen = r.remote().tcp().data_segs_in;
    let retrans = r.local.tcp().total_retrans;
    assert!(
        seen <= segs + retrans && seen + retrans >= segs,
        "sent {segs} (retransmitted {retrans}), received {seen}"
    );
    let ns = r.local.service_demand.ns_per_segment.expect("local.service_demand.ns_per_segment");
    let expect = r.local.cpu.system.busy_us * 1000.0 / segs as f64;
    assert!((ns - expect).abs() <= 1e-6 * expect, "{ns} vs {expect}");
}

fn keyval(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("not NAME=value: {l}"));
            assert!(
                k.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
                "bad name {k}"
            );
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn keyval_and_csv_parse_with_netperf_names() {
    let out = ringperf!().run(&["rr", "-l", "0.3", "--keyval"]).success();
    let kv = keyval(&out.stdout);
    let get =
        |k: &str| kv.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("no {k}"));
    assert_eq!(get("TEST"), "TCP_RR");
    assert_eq!(get("THROUGHPUT_UNITS"), "Trans/s");
    let tps: f64 = get("THROUGHPUT").parse().unwrap();
    assert!(tps > 0.0);
    for k in [
        "LOCAL_CPU_UTIL",
        "REMOTE_CPU_UTIL",
        "LOCAL_SD",
        "REMOTE_SD",
        "P50_LATENCY",
        "P90_LATENCY",
        "P99_LATENCY",
    ] {
        let v: f64 = get(k).parse().unwrap_or_else(|_| panic!("{k}={} is not a number", get(k)));
        assert!(v > 0.0, "{k}={v}");
    }
    let p50: f64 = get("P50_LATENCY").parse().unwrap();
    let p99: f64 = get("P99_LATENCY").parse().unwrap();
    assert!(p50 <= p99);
    assert_eq!(get("LOCAL_TRANSPORT_RETRANS").parse::<u64>().unwrap(), 0);
    assert_eq!(get("CONFIDENCE_ITERATION"), "1");

    let out = ringperf!().run(&["stream", "-l", "0.3", "-i", "2,2", "--csv"]).success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header and one row per iteration: {out}");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert!(header.contains(&"THROUGHPUT") && header.contains(&"LOCAL_SD"));
    for (i, row) in lines[1..].iter().enumerate() {
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!(cols.len(), header.len(), "row {i} has {} fields", cols.len());
        let it = header.iter().position(|h| *h == "CONFIDENCE_ITERATION").unwrap();
        assert_eq!(cols[it], (i + 1).to_string());
        let tp = header.iter().position(|h| *h == "THROUGHPUT").unwrap();
        assert!(cols[tp].parse::<f64>().unwrap() > 0.0);
    }
    let out = ringperf!().run(&["stream", "-l", "0.3", "--csv", "-P", "0"]).success();
    assert_eq!(out.stdout.lines().count(), 1, "-P 0 keeps the header out: {out}");
    let out = ringperf!().run(&["stream", "-l", "0.3", "-P", "0"]).success();
    assert_eq!(out.stdout.lines().count(), 1, "-P 0 prints the data line only: {out}");
}

/// keyval and CSV carry every column of one table, --rcvlowat among them: the value the
/// receiving side's sockets really had, in both formats.
#[test]
fn keyval_and_csv_report_the_receivers_rcvlowat() {
    let rp = ringperf!();
    let out = rp.run(&["stream", "-l", "0.3", "--rcvlowat", "8K", "--keyval"]).success();
    let kv = keyval(&out.stdout);
    let get = |k: &str| kv.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("RCVLOWAT"), Some("8192"), "{out}");
    let out = rp.run(&["stream", "-l", "0.3", "--rcvlowat", "4K", "--reverse", "--csv"]).success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one row: {out}");
    let col = lines[0].split(',').position(|h| h == "RCVLOWAT").expect("RCVLOWAT in the CSV header");
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(row.get(col).copied(), Some("4096"), "the client receives with --reverse: {out}");
    // A UDP test has no stream receiver: the value is left empty, not made up.
    let out = rp.run(&["udp-stream", "-l", "0.3", "-m", "1K", "--keyval"]).success();
    assert_eq!(keyval(&out.stdout).iter().find(|(n, _)| n == "RCVLOWAT").map(|(_, v)| v.as_str()), Some(""));
}

/// diff on synthetic iteration samples: a large regression is significant (and fails
/// --fail-on), a within-noise change is not.
#[test]
fn diff_calls_a_regression_significant_and_noise_not() {
    let base = ringperf!().run_report(&["stream", "-l", "0.3"]);
    let with = |tput: &[f64]| {
        let mut r = base.clone();
        let first = base.iterations[0];
        r.iterations =
            tput.iter().map(|&t| IterationFigures { throughput_bits_per_sec: t * 1e9, ..first }).collect();
        r
    };
    let dir = std::env::temp_dir().join(format!("ringperf-diff-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, v: &TestReport| {
        let p = dir.join(name);
        fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
        p.to_string_lossy().into_owned()
    };
    let a = write("a.json", &with(&[10.0, 10.1, 9.9, 10.05, 9.95]));
    let worse = write("worse.json", &with(&[8.0, 8.1, 7.9, 8.05, 7.95]));
    let noise = write("noise.json", &with(&[10.02, 10.08, 9.91, 10.04, 9.96]));

    let out = ringperf!().run(&["diff", &a, &worse, "--fail-on", "throughput"]);
    assert_eq!(out.code(), 1, "{out}");
    assert!(out.stdout.lines().any(|l| l.starts_with("throughput") && l.contains("WORSE")), "{out}");
    let out = ringperf!().run(&["diff", &a, &noise, "--fail-on", "throughput"]);
    assert_eq!(out.code(), 0, "{out}");
    assert!(out.stdout.lines().any(|l| l.starts_with("throughput") && l.contains("within noise")), "{out}");
    // Not asked to fail on it: reported, exit 0.
    let out = ringperf!().run(&["diff", &a, &worse]);
    assert_eq!(out.code(), 0, "{out}");
    // Different environments are flagged.
    let mut other = with(&[10.0, 10.1, 9.9]);
    other.environment.remote.kernel_release = "5.15.0-test".into();
    let o = write("other.json", &other);
    let out = ringperf!().run(&["diff", &a, &o]).success();
    assert!(out.stdout.contains("environments differ") && out.stdout.contains("5.15.0-test"), "{out}");
    // So is a different GSO limit on the sender's device (BIG TCP), which the host's own
    // environment does not show.
    let mut big = with(&[10.0, 10.1, 9.9]);
    big.local.network.as_mut().expect("the run's network environment").sizes.gso_ipv4_max_size = Some(524280);
    let o = write("big.json", &big);
    let out = ringperf!().run(&["diff", &a, &o]).success();
    assert!(
        out.stdout.contains("local.network.sizes.gso_ipv4_max_size") && out.stdout.contains("524280"),
        "{out}"
    );
    ringperf!().run(&["diff", &a, "/nonexistent.json"]).failure(2, &["cannot read"]);
    ringperf!().run(&["diff", &a, &a, "--fail-on", "speed"]).failure(2, &["unknown figure"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn histogram_flag_prints_buckets_that_cover_every_transaction() {
    let out = ringperf!().run(&["rr", "-l", "0.5", "--histogram"]).success();
    let start = out.stdout.find("round-trip histogram (").expect("histogram header");
    let header = &out.stdout[start..];
    let n: u64 = header["round-trip histogram (".len()..].split(' ').next().unwrap().parse().unwrap();
    let counted: u64 = header
        .lines()
        .skip(1)
        .take_while(|l| l.contains('|'))
        .map(|l| l.split('|').nth(2).unwrap().split_whitespace().next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, n, "{out}");
}

#[test]
fn bad_statistics_flags_are_usage_errors() {
    let rp = ringperf!();
    rp.run(&["stream", "-i", "0"]).failure(2, &["-i"]);
    rp.run(&["stream", "-I", "150,5"]).failure(2, &["confidence level"]);
    rp.run(&["stream", "-I", "99,0"]).failure(2, &["width"]);
    rp.run(&["stream", "-D", "0"]).failure(2, &["interval"]);
    rp.run(&["stream", "--json", "--csv"]).failure(2, &["cannot be used"]);
}

/// --cc is echoed in keyval and CSV as each side's sockets really had it (reno is built
/// into every kernel; the CSV keeps the new columns after every older one).
#[test]
fn keyval_and_csv_report_each_sides_congestion_control() {
    let rp = ringperf!();
    let out = rp.run(&["stream", "-l", "0.3", "--cc", "reno", "--keyval"]);
    if out.status.code() != Some(0) && out.stderr.contains("reno") {
        ringperf_tests::skip(
            "keyval_and_csv_report_each_sides_congestion_control",
            "this host refuses --cc reno",
        );
        return;
    }
    let kv = keyval(&out.success().stdout);
    let get = |k: &str| kv.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("LOCAL_CONG_CONTROL").as_deref(), Some("reno"));
    assert_eq!(get("REMOTE_CONG_CONTROL").as_deref(), Some("reno"));
    let out = rp.run(&["stream", "-l", "0.3", "--cc", "reno", "--csv"]).success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header.iter().position(|h| *h == "LOCAL_CONG_CONTROL").expect("in the CSV header");
    assert!(col > header.iter().position(|h| *h == "RCVLOWAT").expect("RCVLOWAT"));
    assert_eq!(lines[1].split(',').nth(col), Some("reno"), "{out}");
}
