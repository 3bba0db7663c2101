//! ringperf itself: `ringperf stream|rr ... --json` against its embedded loopback server.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use ringperf_core::harness::Harness;
use ringperf_core::measure::profile::ProfileReport;
use ringperf_core::spec::{Explicit, TestSpec};
use serde_json::Value;

use crate::error::{BenchError, Result};
pub use crate::peers::run_result::Figures;
use crate::peers::{json_f64, json_u64, Config, RunResult, Tool, Work, Workload};
use crate::process::{excerpt, is_executable, run_measured};

pub const NAME: &str = "ringperf";

pub struct Ringperf {
    pub bin: PathBuf,
    /// Its name in the report: "ringperf", or what sets this run apart ("zc/recv").
    pub label: &'static str,
    /// `ringperf sendfile` instead of `ringperf stream` (stream workload only).
    pub sendfile: bool,
    /// Flags after the shared ones (engines, statistics switches).
    pub extra: Vec<String>,
    /// What the report must say it ran with, beyond the shared settings.
    pub expect: Expect,
}

/// Settings a ringperf report must show, so that a flag that silently did nothing cannot
/// pass for a measurement of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expect {
    /// The sender's send engine (the client's, for a client-to-server stream).
    pub send_engine: Option<&'static str>,
    /// The receiver's receive engine (the server's).
    pub recv_engine: Option<&'static str>,
    /// spec.interval_ms: 0 when interval sampling is off.
    pub interval_ms: Option<u64>,
    /// spec.record_latency.
    pub record_latency: Option<bool>,
    /// Whether the client side's report carries a kernel cost profile that was taken.
    pub profile: Option<bool>,
    /// The sender's egress device's IPv4 GSO limit, as its environment read it back
    /// (local.network.sizes.gso_ipv4_max_size).
    pub gso_ipv4_max_size: Option<u32>,
}

impl Ringperf {
    /// Plain `ringperf stream|rr` with the shared settings.
    pub fn new(bin: PathBuf) -> Ringperf {
        Ringperf { bin, label: NAME, sendfile: false, extra: Vec::new(), expect: Expect::default() }
    }

    pub(crate) fn args(&self, cfg: &Config) -> Vec<String> {
        let secs = cfg.secs.to_string();
        let size = cfg.size.to_string();
        let mut a: Vec<String> = vec![cfg.workload.ringperf_command().into(), "-l".into(), secs];
        match cfg.workload {
            Workload::Stream => a.extend(["-m".into(), size.clone(), "-M".into(), size]),
            Workload::Rr | Workload::Crr | Workload::UdpRr => {
                a.extend(["-r".into(), format!("{},{}", cfg.size, cfg.size)])
            }
            Workload::UdpStream => {
                a.extend([if cfg.udp.gso { "--gso" } else { "-m" }.into(), size]);
                if let Some(b) = &cfg.udp.socket_buffer {
                    a.extend(["-s".into(), b.clone(), "-S".into(), b.clone()]);
                }
            }
        }
        let l = &cfg.layout;
        if l.flows > 1 || l.threads > 1 {
            a.extend(["--flows".into(), l.flows.to_string(), "--threads".into(), l.threads.to_string()]);
        }
        match &l.cpu_set {
            Some(set) => a.extend(["--cpus".into(), set.clone()]),
            None => a.extend(["-T".into(), format!("{},{}", cfg.client_cpu, cfg.server_cpu)]),
        }
        if let Some(cc) = cfg.tcp_cc() {
            a.extend(["--cc".into(), cc.to_owned()]);
        }
        if cfg.nodelay {
            a.push("--nodelay".into());
        }
        if let Some(r) = cfg.udp.rate.as_ref().filter(|_| cfg.workload == Workload::UdpStream) {
            a.extend(["-b".into(), r.clone()]);
        }
        if cfg.workload == Workload::Stream {
            if self.sendfile || cfg.stream.sendfile.is_some() {
                a[0] = "sendfile".into();
            }
            if let Some(f) = &cfg.stream.sendfile {
                a.splice(1..1, ["-F".to_string(), f.display().to_string()]);
            }
            if cfg.stream.reverse {
                a.push("--reverse".into());
            }
        }
        // The bench's --profile, unless this member sets the profile itself (`profile`'s
        // on/off); without it --no-profile, since a test takes a light profile by default and
        // the bench's comparisons are of ringperf without one.
        if !self.extra.iter().any(|x| x.starts_with("--profile") || x == "--no-profile") {
            a.push(if cfg.profile { "--profile" } else { "--no-profile" }.into());
        }
        a.extend(self.extra.iter().cloned());
        a.push("--json".into());
        a
    }
}

impl Tool for Ringperf {
    fn name(&self) -> &'static str {
        self.label
    }

    fn describe(&self, cfg: &Config) -> String {
        format!("{} {}", self.bin.display(), self.args(cfg).join(" "))
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        let args = self.args(cfg);
        let m = run_measured(NAME, Command::new(&self.bin).args(&args), cfg.run_timeout(), None)?;
        if !m.status.success() {
            return Err(BenchError::Tool(format!(
                "ringperf {} failed ({}):\n{}",
                args.join(" "),
                m.status,
                m.output_excerpt()
            )));
        }
        let report: Value = serde_json::from_str(&m.stdout).map_err(|e| {
            BenchError::Tool(format!("ringperf's --json output is not JSON ({e}):\n{}", excerpt(&m.stdout)))
        })?;
        let (work, own) = parse(&report, cfg)?;
        check_expect(&report, &self.expect)?;
        let figures = figures(&report, cfg)?;
        Ok(RunResult {
            tool: self.label,
            cpu: m.cpu,
            work,
            own_service_demand: own,
            process_cpu_us: None,
            ringperf: Some(figures),
            profile: cfg.profile.then(|| profile(&report)).flatten(),
        })
    }
}

/// The harness ringperf's default rule picks for `cfg` (the engine's own rule, over the
/// spec the bench's flags make), or `None` for sendfile, whose sender always splices.
pub fn default_harness(cfg: &Config) -> Option<Harness> {
    if cfg.stream.sendfile.is_some() {
        return None;
    }
    let workload = match cfg.workload {
        Workload::Stream => ringperf_core::spec::Workload::Stream,
        Workload::Rr => ringperf_core::spec::Workload::Rr,
        Workload::Crr => ringperf_core::spec::Workload::Crr,
        Workload::UdpRr => ringperf_core::spec::Workload::UdpRr,
        Workload::UdpStream => ringperf_core::spec::Workload::UdpStream,
    };
    let mut spec = TestSpec::for_workload(workload);
    (spec.flows, spec.threads) = (cfg.layout.flows, cfg.layout.threads);
    if cfg.workload.is_transactional() {
        (spec.request_size, spec.response_size) = (cfg.size, cfg.size);
    }
    spec.resolve(&Explicit::default());
    Some(Harness::of_send(spec.local.send_engine))
}

/// A harness's name in the bench's tables.
pub fn harness_label(h: Harness) -> &'static str {
    match h {
        Harness::IoUring => "io_uring",
        Harness::Classic => "classic",
    }
}

/// The profile ringperf took of its run: the local side's. Both sides sample every CPU over
/// their own window, so against the embedded server (one process, the same CPUs, nearly the
/// same window) the remote side's profile is the same samples again, with the same process
/// as the tool: adding it would count every sample twice.
pub fn profile(r: &Value) -> Option<ProfileReport> {
    let p = r.pointer("/local/profile").filter(|v| !v.is_null())?;
    serde_json::from_value(p.clone()).ok()
}

/// Tool overheads, the server's service demand, the zero-copy fraction and the statistics
/// ringperf collected, out of its JSON report.
pub fn figures(r: &Value, cfg: &Config) -> Result<Figures> {
    let sd_field = if cfg.workload.is_stream() { "us_per_kb" } else { "us_per_transaction" };
    let zc = r.pointer("/local/send/zero_copy").filter(|v| !v.is_null());
    let zero_copy_fraction = match zc {
        Some(z) => {
            let zero = json_u64(z, NAME, "/bytes_zero_copy")?;
            let copied = json_u64(z, NAME, "/bytes_copied")?;
            let all = zero + copied;
            Some(if all == 0 { 0.0 } else { zero as f64 / all as f64 })
        }
        None => None,
    };
    Ok(Figures {
        local_overhead_percent: json_f64(r, NAME, "/local/cpu/tool_overhead_percent")?,
        remote_overhead_percent: json_f64(r, NAME, "/remote/cpu/tool_overhead_percent")?,
        remote_service_demand: r
            .pointer(&format!("/remote/service_demand/{sd_field}"))
            .and_then(Value::as_f64),
        zero_copy_fraction,
        local_intervals: r.pointer("/local/intervals").and_then(Value::as_array).map_or(0, Vec::len),
        latency_count: r.pointer("/local/latency/count").and_then(Value::as_u64),
    })
}

/// A report that ran other engines or statistics settings than asked would measure the
/// wrong thing.
fn check_expect(r: &Value, want: &Expect) -> Result<()> {
    let wrong = |what: &str, got: String, want: String| {
        Err(BenchError::Tool(format!("ringperf ran with {what} {got}, not the {want} the bench asked for")))
    };
    let s = |p: &str| r.pointer(p).and_then(Value::as_str).map(str::to_owned);
    if let Some(e) = want.send_engine {
        let got = s("/local/send_engine");
        if got.as_deref() != Some(e) {
            return wrong("send engine", format!("{got:?}"), e.into());
        }
    }
    if let Some(e) = want.recv_engine {
        let got = s("/remote/recv_engine");
        if got.as_deref() != Some(e) {
            return wrong("receive engine", format!("{got:?}"), e.into());
        }
    }
    if let Some(ms) = want.interval_ms {
        // Off is 0 (or, in other versions, absent).
        let got = r.pointer("/spec/interval_ms").and_then(Value::as_u64).unwrap_or(0);
        if got != ms {
            return wrong("an interval of", format!("{got} ms"), format!("{ms} ms"));
        }
    }
    if let Some(on) = want.profile {
        let p = r.pointer("/local/profile").filter(|v| !v.is_null());
        let taken = p.is_some_and(|p| p.get("unavailable").is_none_or(Value::is_null));
        if taken != on {
            let why = p
                .and_then(|p| p.pointer("/unavailable"))
                .and_then(Value::as_str)
                .map_or_else(String::new, |w| format!(" ({w})"));
            return wrong(
                "a kernel cost profile",
                format!("{}{why}", if taken { "taken" } else { "not taken" }),
                (if on { "taken" } else { "not taken" }).into(),
            );
        }
    }
    if let Some(n) = want.gso_ipv4_max_size {
        let got = r.pointer("/local/network/sizes/gso_ipv4_max_size").and_then(Value::as_u64);
        if got != Some(u64::from(n)) {
            return wrong("its device's gso_ipv4_max_size at", format!("{got:?}"), n.to_string());
        }
    }
    if let Some(on) = want.record_latency {
        let got = r.pointer("/spec/record_latency").and_then(Value::as_bool);
        if got != Some(on) {
            return wrong("latency recording", format!("{got:?}"), on.to_string());
        }
    }
    Ok(())
}

/// The work and ringperf's own service demand (client side) out of its JSON report, after
/// checking that it ran what was asked.
pub fn parse(r: &Value, cfg: &Config) -> Result<(Work, Option<f64>)> {
    // Schema 2: a run cut short is marked partial and its server side may be null. Its
    // figures are real but cover part of a run: not a sample to compare tools with.
    let partial = r.pointer("/partial").and_then(Value::as_bool).unwrap_or(false);
    if partial || r.get("remote").is_some_and(Value::is_null) {
        let why =
            r.pointer("/partial_reason").and_then(Value::as_str).unwrap_or("the server side is missing");
        return Err(BenchError::Tool(format!(
            "ringperf's run was cut short ({why}): a partial report is not a comparable sample"
        )));
    }
    check_spec(r, cfg)?;
    match cfg.workload {
        Workload::Stream => {
            // --reverse: the server sends and the client receives.
            let (tx, rx) = if cfg.stream.reverse { ("remote", "local") } else { ("local", "remote") };
            let sent = json_u64(r, NAME, &format!("/{tx}/bytes_sent"))?;
            let received = json_u64(r, NAME, &format!("/{rx}/bytes_received"))?;
            if sent != received {
                return Err(BenchError::Tool(format!(
                    "ringperf's sender sent {sent} bytes but its receiver got {received}: TCP lost nothing, so this is a ringperf bug"
                )));
            }
            let bits_per_sec = json_f64(r, NAME, "/summary/throughput_bits_per_sec")?;
            let own = r.pointer("/local/service_demand/us_per_kb").and_then(Value::as_f64);
            Ok((Work::Stream { bytes: received, bits_per_sec }, own))
        }
        Workload::Rr | Workload::Crr | Workload::UdpRr => {
            let transactions = json_u64(r, NAME, "/local/transactions")?;
            let tps_by_count = json_f64(r, NAME, "/summary/transactions_per_sec")?;
            // Without latency recording (--no-latency) there is no mean round trip.
            let latency_off = r.pointer("/spec/record_latency").and_then(Value::as_bool) == Some(false);
            let mean_ns = match r.pointer("/summary/mean_latency_ns") {
                Some(Value::Null) | None if latency_off => f64::NAN,
                _ => json_f64(r, NAME, "/summary/mean_latency_ns")?,
            };
            let own = r.pointer("/local/service_demand/us_per_transaction").and_then(Value::as_f64);
            // Every flow has one transaction in flight.
            let tps_by_rtt = if mean_ns > 0.0 {
                1e9 / mean_ns * f64::from(cfg.layout.flows)
            } else if mean_ns.is_nan() {
                f64::NAN
            } else {
                0.0
            };
            Ok((Work::Rr { transactions, tps_by_count, tps_by_rtt, mean_rtt_us: mean_ns / 1000.0 }, own))
        }
        Workload::UdpStream => Ok((parse_udp(r, cfg)?, None)),
    }
}

/// Datagrams received over the receiver's window, from the sender's and the receiver's
/// `udp` reports, after checking that the sender used GSO exactly when asked.
pub fn parse_udp(r: &Value, cfg: &Config) -> Result<Work> {
    let sent = json_u64(r, NAME, "/local/udp/datagrams_sent")?;
    let received = json_u64(r, NAME, "/remote/udp/datagrams_received")?;
    let datagram_bytes = json_u64(r, NAME, "/remote/udp/datagram_size")? as u32;
    if datagram_bytes != cfg.size {
        return Err(BenchError::Tool(format!(
            "ringperf sent {datagram_bytes}-byte datagrams, not {}",
            cfg.size
        )));
    }
    let gso = r.pointer("/local/udp/gso_segment").and_then(Value::as_u64).map(|g| g as u32);
    let want = cfg.udp.gso.then_some(cfg.size);
    if gso != want {
        return Err(BenchError::Tool(format!("ringperf's sender used GSO {gso:?}, not {want:?}")));
    }
    let elapsed_ns = json_u64(r, NAME, "/remote/elapsed_ns")?;
    let received_per_sec = received as f64 / (elapsed_ns.max(1) as f64 / 1e9);
    Ok(Work::Udp { received, sent, datagram_bytes, received_per_sec })
}

/// A report for a different test than the one asked for would make the comparison a lie.
fn check_spec(r: &Value, cfg: &Config) -> Result<()> {
    let wrong = |what: &str, got: String| {
        Err(BenchError::Tool(format!("ringperf ran with {what} {got}, not what the bench asked for")))
    };
    let cc = r.pointer("/spec/congestion_control").and_then(Value::as_str).map(str::to_owned);
    if cc != cfg.cc.clone().filter(|_| cfg.workload.is_tcp()) {
        return wrong("congestion control", format!("{cc:?}"));
    }
    // With a CPU set the workers are dealt over it; without, each side is pinned.
    if cfg.layout.cpu_set.is_none() {
        let lcpu = r.pointer("/local/pinned_cpu").and_then(Value::as_u64);
        let rcpu = r.pointer("/remote/pinned_cpu").and_then(Value::as_u64);
        if lcpu != Some(cfg.client_cpu as u64) || rcpu != Some(cfg.server_cpu as u64) {
            return wrong("CPUs", format!("{lcpu:?},{rcpu:?}"));
        }
    }
    let flows = r.pointer("/spec/flows").and_then(Value::as_u64);
    let threads = r.pointer("/spec/threads").and_then(Value::as_u64);
    let l = &cfg.layout;
    if flows != Some(u64::from(l.flows)) || threads != Some(u64::from(l.threads)) {
        return wrong("a layout of", format!("{flows:?} flows over {threads:?} threads"));
    }
    let (a, b) = match cfg.workload {
        Workload::Stream => ("/spec/send_size", "/spec/recv_size"),
        Workload::Rr | Workload::Crr | Workload::UdpRr => ("/spec/request_size", "/spec/response_size"),
        // The datagram size is checked against the receiver's report.
        Workload::UdpStream => return Ok(()),
    };
    for p in [a, b] {
        let got = r.pointer(p).and_then(Value::as_u64);
        if got != Some(u64::from(cfg.size)) {
            return wrong(&p["/spec/".len()..], format!("{got:?}"));
        }
    }
    Ok(())
}

/// Where to find the ringperf binary, building it when it is not there.
///
/// Order: `--ringperf PATH`, `$RINGPERF`, next to this bench's own executable (same cargo
/// profile), then `target/release/ringperf` of this workspace.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit.map(Path::to_path_buf).or_else(|| env::var_os("RINGPERF").map(PathBuf::from)) {
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(BenchError::Usage(format!("{} is not an executable ringperf binary", p.display())))
        };
    }
    let candidates = candidates();
    if let Some(p) = candidates.iter().find(|p| is_executable(p)) {
        warn_if_stale(p);
        return Ok(p.clone());
    }
    let root = workspace_root();
    eprintln!("ringperf-bench: no ringperf binary yet; building it: cargo build --release -p ringperf");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "--release", "-p", "ringperf"])
        .current_dir(&root)
        .stdin(Stdio::null())
        .status();
    let hint = format!(
        "build it first: cd {} && cargo build --release -p ringperf (or pass --ringperf PATH)",
        root.display()
    );
    match built {
        Ok(s) if s.success() => candidates.into_iter().find(|p| is_executable(p)).ok_or_else(|| {
            BenchError::Tool(format!(
                "cargo built ringperf but it is not in {}: {hint}",
                release_dir().display()
            ))
        }),
        Ok(s) => Err(BenchError::Tool(format!("building ringperf failed ({s}): {hint}"))),
        Err(e) => Err(BenchError::Tool(format!("cannot run cargo to build ringperf ({e}): {hint}"))),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| ".".into())
}

fn release_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
        .join("release")
}

fn candidates() -> Vec<PathBuf> {
    let mut c = Vec::new();
    if let Some(dir) = env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        c.push(dir.join(NAME));
    }
    c.push(release_dir().join(NAME));
    c
}

/// Warns when engine/ or cli/ changed after the binary was built: its numbers would be
/// those of older code.
fn warn_if_stale(bin: &Path) {
    let Ok(built) = fs::metadata(bin).and_then(|m| m.modified()) else { return };
    let root = workspace_root();
    let newest = ["engine", "cli"]
        .iter()
        .filter_map(|d| newest_source(&root.join(d)))
        .chain(fs::metadata(root.join("Cargo.toml")).and_then(|m| m.modified()).ok())
        .max();
    if newest.is_some_and(|n| n > built) {
        eprintln!(
            "ringperf-bench: warning: {} is older than the sources in engine/ or cli/; \
             run `cargo build --release -p ringperf` to measure the current code",
            bin.display()
        );
    }
}

fn newest_source(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs" || x == "toml") {
                newest = newest.max(meta.modified().ok());
            }
        }
    }
    newest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(workload: Workload) -> Config {
        let (size, cc) = match workload {
            Workload::Stream => (131072, Some("cubic".to_string())),
            Workload::Rr => (64, None),
            Workload::Crr => (1, Some("cubic".to_string())),
            Workload::UdpRr => (8, Some("cubic".to_string())),
            Workload::UdpStream => (64, None),
        };
        Config::new(workload, 5, (0, 1), size, cc)
    }

    /// The bench asks the engine's own rule which harness a case's default runs.
    #[test]
    fn the_default_harness_is_the_engines_rule_over_the_case() {
        assert_eq!(default_harness(&cfg(Workload::Rr)), Some(Harness::Classic));
        assert_eq!(default_harness(&cfg(Workload::Crr)), Some(Harness::Classic));
        assert_eq!(
            default_harness(&cfg(Workload::UdpRr)),
            Some(Harness::IoUring),
            "udp-rr stays on the ring"
        );
        assert_eq!(default_harness(&cfg(Workload::Stream)), Some(Harness::IoUring));
        assert_eq!(default_harness(&cfg(Workload::UdpStream)), Some(Harness::IoUring));
        let mut many = cfg(Workload::Rr);
        many.layout = crate::peers::Layout { flows: 100, threads: 2, cpu_set: None };
        assert_eq!(default_harness(&many), Some(Harness::IoUring), "several flows per worker");
        let mut sendfile = cfg(Workload::Stream);
        sendfile.stream.sendfile = Some("/tmp/f".into());
        assert_eq!(default_harness(&sendfile), None);
    }

    #[test]
    fn the_bench_profile_asks_ringperf_for_its_own_unless_the_member_decides() {
        let mut c = cfg(Workload::Rr);
        assert!(!Ringperf::new("rp".into()).args(&c).contains(&"--profile".to_string()));
        c.profile = true;
        let a = Ringperf::new("rp".into()).args(&c);
        assert_eq!(a.iter().filter(|x| *x == "--profile").count(), 1, "{a:?}");
        // `ringperf-bench profile`'s members set it themselves, on or off.
        let off = Ringperf { extra: vec!["--no-profile".into()], ..Ringperf::new("rp".into()) };
        assert!(!off.args(&c).contains(&"--profile".to_string()));
        let on = Ringperf {
            extra: vec!["--profile".into(), "--profile-hz=99".into()],
            ..Ringperf::new("rp".into())
        };
        assert_eq!(on.args(&c).iter().filter(|x| *x == "--profile").count(), 1);
    }

    #[test]
    fn the_profile_taken_is_the_local_sides_only() {
        let r = json!({
            "local": {"profile": {"busy_samples": 900, "categories": [
                {"category": "tcp", "samples": 900, "share_percent": 100.0,
                 "us_per_kb": null, "us_per_transaction": 2.0, "ns_per_segment": null, "ns_per_datagram": null}]}},
            "remote": {"profile": {"busy_samples": 900}},
        });
        let p = profile(&r).expect("local.profile parses");
        assert_eq!(p.busy_samples, 900);
        assert_eq!(p.share(ringperf_core::measure::profile::Category::Tcp), 100.0);
        assert!(profile(&json!({"local": {"profile": null}})).is_none());
        assert!(profile(&json!({"local": {}})).is_none());
    }

    #[test]
    fn udp_uses_the_receivers_count_and_checks_gso() {
        let r = json!({
            "local": {"udp": {"datagrams_sent": 300, "gso_segment": 1400}},
            "remote": {"elapsed_ns": 2_000_000_000u64, "udp": {"datagrams_received": 200, "datagram_size": 1400}}
        });
        let mut c = cfg(Workload::UdpStream);
        c.size = 1400;
        c.udp.gso = true;
        let Work::Udp { received, sent, received_per_sec, datagram_bytes } = parse_udp(&r, &c).unwrap()
        else {
            panic!()
        };
        assert_eq!((received, sent, received_per_sec, datagram_bytes), (200, 300, 100.0, 1400));
        c.udp.gso = false;
        assert!(parse_udp(&r, &c).is_err(), "a GSO run is not a plain one");
        c.size = 64;
        c.udp.gso = true;
        assert!(parse_udp(&r, &c).is_err(), "a 1400-byte run is not a 64-byte one");
    }

    fn stream_report() -> Value {
        json!({
            "spec": {"congestion_control": "cubic", "send_size": 131072, "recv_size": 131072, "flows": 1, "threads": 1},
            "summary": {"throughput_bits_per_sec": 3.5e10, "transactions_per_sec": null, "mean_latency_ns": null},
            "local": {"pinned_cpu": 0, "bytes_sent": 1000, "bytes_received": 0, "transactions": 0,
                      "service_demand": {"us_per_kb": 0.39, "us_per_transaction": null}},
            "remote": {"pinned_cpu": 1, "bytes_sent": 0, "bytes_received": 1000, "transactions": 0,
                       "service_demand": {"us_per_kb": 0.39, "us_per_transaction": null}}
        })
    }

    #[test]
    fn stream_report_parses() {
        let (work, own) = parse(&stream_report(), &cfg(Workload::Stream)).unwrap();
        let Work::Stream { bytes, bits_per_sec } = work else { panic!("not a stream") };
        assert_eq!(bytes, 1000);
        assert_eq!(bits_per_sec, 3.5e10);
        assert_eq!(own, Some(0.39));
    }

    #[test]
    fn rr_report_parses() {
        let r = json!({
            "spec": {"congestion_control": null, "request_size": 64, "response_size": 64, "flows": 1, "threads": 1},
            "summary": {"throughput_bits_per_sec": 1.0, "transactions_per_sec": 10000.0, "mean_latency_ns": 90000.0},
            "local": {"pinned_cpu": 0, "transactions": 50000,
                      "service_demand": {"us_per_kb": 1.0, "us_per_transaction": 57.0}},
            "remote": {"pinned_cpu": 1}
        });
        let (work, own) = parse(&r, &cfg(Workload::Rr)).unwrap();
        let Work::Rr { transactions, tps_by_count, tps_by_rtt, mean_rtt_us } = work else { panic!("not rr") };
        assert_eq!(transactions, 50000);
        assert_eq!(tps_by_count, 10000.0);
        assert!((tps_by_rtt - 11111.111).abs() < 0.01);
        assert_eq!(mean_rtt_us, 90.0);
        assert_eq!(own, Some(57.0));
    }

    #[test]
    fn a_report_for_another_test_is_refused() {
        let mut r = stream_report();
        r["spec"]["congestion_control"] = json!("bbr");
        assert!(parse(&r, &cfg(Workload::Stream)).unwrap_err().to_string().contains("congestion control"));
        let mut r = stream_report();
        r["remote"]["pinned_cpu"] = json!(0);
        assert!(parse(&r, &cfg(Workload::Stream)).unwrap_err().to_string().contains("CPUs"));
        let mut r = stream_report();
        r["remote"]["bytes_received"] = json!(999);
        assert!(parse(&r, &cfg(Workload::Stream)).is_err());
        let mut r = stream_report();
        r["partial"] = json!(true);
        r["partial_reason"] = json!("interrupted by the user (Ctrl-C)");
        assert!(parse(&r, &cfg(Workload::Stream)).unwrap_err().to_string().contains("Ctrl-C"));
        let mut r = stream_report();
        r["remote"] = Value::Null;
        assert!(parse(&r, &cfg(Workload::Stream)).unwrap_err().to_string().contains("partial"));
        let mut r = stream_report();
        r["summary"] = json!({});
        assert!(parse(&r, &cfg(Workload::Stream)).unwrap_err().to_string().contains("throughput"));
    }

    #[test]
    fn arguments_match_the_brief() {
        let r = Ringperf::new("ringperf".into());
        assert_eq!(
            r.args(&cfg(Workload::Stream)).join(" "),
            "stream -l 5 -m 131072 -M 131072 -T 0,1 --cc cubic --no-profile --json"
        );
        assert_eq!(r.args(&cfg(Workload::Rr)).join(" "), "rr -l 5 -r 64,64 -T 0,1 --no-profile --json");
        assert_eq!(
            r.args(&cfg(Workload::Crr)).join(" "),
            "crr -l 5 -r 1,1 -T 0,1 --cc cubic --no-profile --json"
        );
        // UDP has no congestion control: asked for one, the run gets none.
        assert_eq!(r.args(&cfg(Workload::UdpRr)).join(" "), "udp-rr -l 5 -r 8,8 -T 0,1 --no-profile --json");
        assert_eq!(
            r.args(&cfg(Workload::UdpStream)).join(" "),
            "udp-stream -l 5 -m 64 -T 0,1 --no-profile --json"
        );
        let mut maerts = cfg(Workload::Stream);
        maerts.stream.reverse = true;
        assert_eq!(
            r.args(&maerts).join(" "),
            "stream -l 5 -m 131072 -M 131072 -T 0,1 --cc cubic --reverse --no-profile --json"
        );
        let mut sendfile = cfg(Workload::Stream);
        sendfile.stream.sendfile = Some("/tmp/f".into());
        assert_eq!(
            r.args(&sendfile).join(" "),
            "sendfile -F /tmp/f -l 5 -m 131072 -M 131072 -T 0,1 --cc cubic --no-profile --json"
        );
    }
}
