//! Files: a key holder tries to make an agent open a path of its choosing (the probe's
//! `sendfile -F /etc/shadow --from A`, and the same path as a raw third_party request),
//! and a FIFO or /dev/zero is given wherever the tool reads a file. The agent opens
//! nothing a controller names and says nothing of its file system; it sends only files its
//! operator listed, by label, and logs which; and every input is refused at once.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ringperf_tests::fabric::KeyFile;
use ringperf_tests::{
    ringperf, run_with_timeout, Control, Outcome, Payload, Ringperf, Server, SideReportExt, TestReportExt,
};
use serde_json::{json, Value};

use crate::{baseline, still_serves};

/// How long a refused input may take: it is refused before anything is read or connected,
/// so this only bounds a regression (which would hang or read for ever) on a loaded host.
const REFUSED_WITHIN: Duration = Duration::from_secs(10);

/// A directory of this test's files (a FIFO, a payload, a plan), removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("ringperf-file-read-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A FIFO nobody writes to: a blocking open() of it for reading waits for ever.
    fn fifo(&self) -> PathBuf {
        let p = self.path("fifo");
        let c = CString::new(p.as_os_str().as_bytes()).expect("path");
        // SAFETY: mkfifo reads a NUL-terminated path that lives across the call.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
        p
    }

    fn text(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// True if some process has `fifo` open for reading, or waits in open() to: a non-blocking
/// open for writing fails with ENXIO only when there is no reader at all.
fn fifo_has_reader(fifo: &Path) -> bool {
    let c = CString::new(fifo.as_os_str().as_bytes()).expect("path");
    // SAFETY: open reads a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        assert_eq!(e.raw_os_error(), Some(libc::ENXIO), "opening the FIFO to write: {e}");
        return false;
    }
    // SAFETY: `fd` was just opened here and nothing else holds it.
    unsafe { libc::close(fd) };
    true
}

/// The key's secret as a raw client proves it (the file less its newline).
fn secret(key: &KeyFile) -> String {
    std::fs::read_to_string(key.path()).expect("key").trim_end().to_string()
}

/// Agent A (third party, with `a_extra`) and peer B, both holding `key`.
fn agents(rp: &Ringperf, key: &KeyFile, a_extra: &[&str]) -> (Server, Server) {
    let mut a = vec!["--psk-file", key.arg(), "--allow-third-party"];
    a.extend_from_slice(a_extra);
    (rp.serve_with(&a), rp.serve_with(&["--psk-file", key.arg()]))
}

/// `sendfile` from agent `a` against peer `b`, with `extra`.
fn sendfile_from(rp: &Ringperf, a: &Server, b: &Server, key: &KeyFile, extra: &[&str]) -> Outcome {
    let (ap, bp) = (a.port_arg(), b.port_arg());
    let mut args = vec!["sendfile", "-l", "1", "-H", "127.0.0.1", "-p", &bp, "--from", "127.0.0.1"];
    args.extend(["--from-port", &ap, "--psk-file", key.arg()]);
    args.extend_from_slice(extra);
    run_with_timeout(rp.command(&args), Duration::from_secs(60))
}

/// A sendfile spec as the wire carries it, with `side`'s payload field replaced by `field`.
fn raw_sendfile_spec(field: &str, value: Value) -> Value {
    let mut spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec");
    spec["duration_ms"] = json!(1000);
    for side in ["local", "remote"] {
        spec[side]["send_engine"] = json!("splice");
    }
    spec["local"][field] = value;
    spec
}

/// A key holder names a path for the agent to send: the CLI refuses it (directly and in a
/// plan, however the option is spelt), and a raw request that carries it is refused by the
/// agent as a field or variant the wire spec does not have. The agent never opens the path
/// (a FIFO there would have wedged its session), says nothing of it, and keeps serving.
#[test]
fn a_controller_cannot_make_an_agent_open_a_path() {
    let rp = ringperf!();
    let key = KeyFile::new("fr-path");
    let dir = Scratch::new("path");
    let fifo = dir.fifo();
    let fifo_s = fifo.to_str().expect("UTF-8");
    let (mut a, b) = agents(&rp, &key, &[]);
    let base = baseline(&a);

    // The CLI: -F with --from, before anything connects.
    let o = sendfile_from(&rp, &a, &b, &key, &["-F", fifo_s]);
    let msg = o.failure(2, &["-F names a file of this host", "--payload-file LABEL=PATH", "--payload LABEL"]);
    assert!(!msg.contains("session"), "{msg}");
    assert!(a.log().iter().all(|l| !l.contains("session started")), "the CLI connected: {:?}", a.log());

    // A plan: -F in a test's options, spaced or not, is refused before anything starts.
    for options in [format!("-l 1 -F {fifo_s}"), format!("-l 1 -F{fifo_s}")] {
        let plan = dir.path("plan.toml");
        let text = format!(
            "[[agent]]\nname = \"a\"\naddress = \"127.0.0.1\"\nport = {}\nkey_file = \"{}\"\n\n[[agent]]\nname = \"b\"\naddress = \"127.0.0.1\"\nport = {}\nkey_file = \"{}\"\n\n[[test]]\nworkload = \"sendfile\"\noptions = \"{options}\"\npairs = [[\"a\", \"b\"]]\n",
            a.port(),
            key.arg(),
            b.port(),
            key.arg()
        );
        std::fs::write(&plan, text).expect("plan");
        let o = run_with_timeout(rp.command(&["plan", plan.to_str().expect("UTF-8")]), REFUSED_WITHIN);
        o.failure(2, &["-F in options", "--payload-file LABEL=PATH"]);
    }
    assert!(a.log().iter().all(|l| !l.contains("session started")), "a plan connected: {:?}", a.log());

    // Raw third_party requests from a key holder: the old field, and a path-shaped payload.
    let requests = [
        ("splice_file", json!(fifo_s), "unknown field `splice_file`"),
        ("payload", json!({ "file": fifo_s }), "unknown variant `file`"),
        ("payload", json!({ "path": "/etc/shadow" }), "unknown variant `path`"),
    ];
    for (field, value, says) in requests {
        let mut c = Control::connect(a.port());
        c.handshake(Some(&secret(&key)));
        c.send_json(&json!({
            "type": "third_party",
            "spec": raw_sendfile_spec(field, value),
            "peer_host": "127.0.0.1",
            "peer_port": b.port(),
            "synchronized": false,
        }));
        let (kind, msg) = c.expect_error();
        assert_eq!(kind, "protocol", "{field}: {msg}");
        assert!(msg.contains(says), "{field}: {msg}");
        assert!(!msg.contains(dir.text()) && !msg.contains("/etc"), "the refusal names a path: {msg}");
        c.expect_closed();
    }
    assert!(!fifo_has_reader(&fifo), "something opened the FIFO, or waits to");
    assert!(
        a.log().iter().all(|l| !l.contains(dir.text()) && !l.contains("/etc/shadow")),
        "the agent's log names the path: {:?}",
        a.log()
    );
    still_serves(&rp, &mut a, base, Some(key.path()));
    // And it still takes third-party work: the pattern, from a memfd.
    let r = sendfile_from(&rp, &a, &b, &key, &["--json"]).success().report();
    assert!(r.local.bytes_sent > 0);
    assert_eq!(r.spec.local.payload, Payload::Pattern);
}

/// An operator lists a file by label; a controller names the label and the agent sends
/// exactly that file (its size in the report, bytes conserved) and logs label, path and
/// for whom. A label it does not list is refused naming its labels and no path.
#[test]
fn an_agent_sends_a_file_its_operator_listed_by_label() {
    let rp = ringperf!();
    let key = KeyFile::new("fr-label");
    let dir = Scratch::new("label");
    let file = dir.path("blob.bin");
    let len: usize = 96 * 1024 + 7;
    std::fs::write(&file, (0..len).map(|i| (i * 31 % 251) as u8).collect::<Vec<u8>>()).expect("payload");
    let listed = format!("blob={}", file.display());
    let (mut a, b) = agents(&rp, &key, &["--payload-file", &listed]);
    assert!(
        a.wait_for_log("payload file 'blob'", Duration::from_secs(5)).is_some_and(|l| l.contains(dir.text())),
        "the agent does not say at start which files it may send: {:?}",
        a.log()
    );
    let base = baseline(&a);

    let o = sendfile_from(&rp, &a, &b, &key, &["--payload", "blob", "--json"]).success();
    let r = o.report();
    let sent = r.local.bytes_sent;
    assert!(sent > 0, "nothing was sent");
    assert_eq!(sent, r.remote().bytes_received, "bytes sent and received differ");
    assert_eq!(r.local.splice().file_bytes, Some(len as u64), "not the listed file: {:?}", r.local.send());
    // The controller's report states what it asked: the label, not the agent's path.
    assert_eq!(r.spec.local.payload, Payload::Label("blob".into()));
    assert!(!o.stdout.contains(dir.text()), "the agent's path reached the controller");
    let line = a
        .wait_for_log("sending payload file", Duration::from_secs(5))
        .unwrap_or_else(|| panic!("the agent did not log the file it sent: {:?}", a.log()));
    assert!(line.contains("'blob'") && line.contains(&file.display().to_string()), "{line}");
    assert!(line.contains("127.0.0.1:"), "the log does not say for whom: {line}");

    let o = sendfile_from(&rp, &a, &b, &key, &["--payload", "shadow"]);
    let msg = o
        .failure(2, &["this agent has no payload file labelled 'shadow'", "it lists blob", "--payload-file"]);
    assert!(!msg.contains(dir.text()), "the refusal names a path: {msg}");
    still_serves(&rp, &mut a, base, Some(key.path()));
}

/// A FIFO given as any input file is refused at once: the payload of a local sendfile,
/// a plan, a report for diff or plot, a key file for a client or a server, a payload file
/// an operator lists. Nothing waits for a writer that never comes.
#[test]
fn a_fifo_as_any_input_is_refused_at_once() {
    let rp = ringperf!();
    let dir = Scratch::new("fifo");
    let fifo = dir.fifo();
    let f = fifo.to_str().expect("UTF-8");
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let svg = dir.path("out.svg");
    let listed = format!("x={f}");
    let cases: Vec<Vec<&str>> = vec![
        vec!["sendfile", "-l", "1", "-F", f],
        vec!["sendfile", "-l", "1", "-F", f, "-H", "127.0.0.1", "-p", &port],
        vec!["plan", f],
        vec!["diff", f, f],
        vec!["plot", f, "-o", svg.to_str().expect("UTF-8")],
        vec!["stream", "-l", "1", "-H", "127.0.0.1", "-p", &port, "--psk-file", f],
        vec!["serve", "--bind", "127.0.0.1", "--port", "0", "--psk-file", f],
        vec!["serve", "--bind", "127.0.0.1", "--port", "0", "--payload-file", &listed],
    ];
    for args in cases {
        let o = run_with_timeout(rp.command(&args), REFUSED_WITHIN);
        o.failure(2, &["is a FIFO, not a regular file"]);
    }
    assert!(!fifo_has_reader(&fifo), "something opened the FIFO, or waits to");
    assert!(!svg.exists(), "plot wrote a chart of nothing");
    still_serves(&rp, &mut server, base, None);
}

/// /dev/zero never ends: as a plan, a report to diff or to plot, it is refused before a
/// byte is read, instead of growing the tool by gigabytes.
#[test]
fn dev_zero_as_an_input_is_refused_at_once() {
    let rp = ringperf!();
    let dir = Scratch::new("zero");
    let svg = dir.path("out.svg");
    let cases: [&[&str]; 4] = [
        &["plan", "/dev/zero"],
        &["diff", "/dev/zero", "/dev/zero"],
        &["plot", "/dev/zero", "-o", svg.to_str().expect("UTF-8")],
        &["sendfile", "-l", "1", "-F", "/dev/zero"],
    ];
    for args in cases {
        let o = run_with_timeout(rp.command(args), REFUSED_WITHIN);
        o.failure(2, &["'/dev/zero' is a character device, not a regular file"]);
    }
}
