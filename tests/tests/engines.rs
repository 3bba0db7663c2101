//! Every send engine with every receive engine, stream and rr, with --verify: the stream
//! arrives whole and intact, and each engine's own accounting adds up.

use ringperf_tests::{
    check_rr_report, check_stream_report, is_root, ringperf, Environment, Payload, SendEngine, SideReport,
    SideReportExt, TestReport, TestReportExt,
};

/// What every verified report must show on the receiving side(s) and the sending side(s).
fn check_engine_accounting(r: &TestReport, sides: &[(&str, bool, bool)], send: &str, recv: &str) {
    for &(side, sends, receives) in sides {
        let x: &SideReport = if side == "local" { &r.local } else { r.remote() };
        if receives {
            assert_eq!(x.recv_engine.name(), recv);
            let v = x.verify();
            assert_eq!(v.mismatches, 0, "{side}: payload corrupted with {send}/{recv}: {v:?}");
            let received = x.bytes_received;
            if recv == "trunc" {
                assert_eq!(v.bytes_checked, 0);
                assert!(v.not_checked.as_deref().is_some_and(|s| s.contains("trunc")), "{v:?}");
            } else {
                assert_eq!(v.bytes_checked, received, "{side}: not every received byte was checked");
            }
            let rv = x.recv();
            assert_eq!(rv.engine.name(), recv);
            assert!(rv.data_cqes > 0, "{side}: no data CQEs counted: {rv:?}");
        }
        if sends {
            assert_eq!(x.send_engine.name(), send);
            let s = x.send();
            assert!(s.sends > 0, "{side}: no sends counted");
            if send == "zc" || send == "zc-msg" {
                let zc = x.zero_copy();
                let sent = x.bytes_sent;
                assert_eq!(zc.notifications, zc.sends, "{side}: a notification is missing: {zc:?}");
                assert!(zc.copied <= zc.notifications, "{zc:?}");
                assert_eq!(
                    zc.bytes_copied + zc.bytes_zero_copy,
                    sent,
                    "{side}: copied + zero-copied bytes differ from bytes sent: {zc:?}"
                );
                // Loopback always copies (every SendZc notification carries ZC_COPIED): the report must say so.
                assert_eq!(zc.copied, zc.notifications, "loopback did not copy? {zc:?}");
            } else {
                assert!(
                    s.zero_copy.is_none(),
                    "{side}: {send} reported zero-copy figures: {:?}",
                    s.zero_copy
                );
            }
            if send == "splice" {
                assert!(x.splice().pipe_size > 0);
            }
        }
    }
}

fn stream(send: &str, recv: &str) {
    let args = ["stream", "-l", "1", "--verify", "--send-engine", send, "--recv-engine", recv];
    let r = ringperf!().run_report(&args);
    check_stream_report(&r, false);
    check_engine_accounting(&r, &[("local", true, false), ("remote", false, true)], send, recv);
}

fn rr(send: &str, recv: &str) {
    let args = ["rr", "-l", "1", "-r", "100,3000", "--verify", "--send-engine", send, "--recv-engine", recv];
    let r = ringperf!().run_report(&args);
    check_rr_report(&r);
    check_engine_accounting(&r, &[("local", true, true), ("remote", true, true)], send, recv);
}

macro_rules! matrix {
    ($($name:ident: $send:literal / $recv:literal;)*) => {
        mod stream_matrix {
            $(#[test] fn $name() { super::stream($send, $recv) })*
        }
        mod rr_matrix {
            $(#[test] fn $name() { super::rr($send, $recv) })*
        }
    };
}

matrix! {
    copy_recv: "copy" / "recv";
    copy_multishot: "copy" / "multishot";
    copy_bundle: "copy" / "bundle";
    copy_trunc: "copy" / "trunc";
    zc_recv: "zc" / "recv";
    zc_multishot: "zc" / "multishot";
    zc_bundle: "zc" / "bundle";
    zc_trunc: "zc" / "trunc";
    zc_msg_recv: "zc-msg" / "recv";
    zc_msg_multishot: "zc-msg" / "multishot";
    zc_msg_bundle: "zc-msg" / "bundle";
    zc_msg_trunc: "zc-msg" / "trunc";
    splice_recv: "splice" / "recv";
    splice_multishot: "splice" / "multishot";
    splice_bundle: "splice" / "bundle";
    splice_trunc: "splice" / "trunc";
    syscall_syscall: "syscall" / "syscall";
}

/// Loopback always copies, so --require-zc must fail the run with exit 1, say why, and
/// still print the report it measured.
#[test]
fn require_zc_fails_on_loopback_and_keeps_the_report() {
    let out = ringperf!().run(&["stream", "-l", "0.5", "--send-engine", "zc", "--require-zc", "--json"]);
    assert_eq!(out.code(), 1, "{out}");
    assert!(out.stderr.contains("--require-zc") && out.stderr.contains("copied"), "{out}");
    let r = out.report();
    assert!(r.local.zero_copy().copied > 0);
}

/// A send larger than the default 64 KiB pipe: the pipe is sized to it (or leftovers are
/// spliced out), and the stream still arrives intact.
#[test]
fn splice_with_a_chunk_larger_than_the_default_pipe_is_intact() {
    for m in ["1M", "4M"] {
        let r = ringperf!().run_report(&["sendfile", "-l", "1", "-m", m, "--verify"]);
        check_stream_report(&r, false);
        check_engine_accounting(
            &r,
            &[("local", true, false), ("remote", false, true)],
            "splice",
            "multishot",
        );
        assert!(r.remote().verify().bytes_checked > 4 << 20);
        assert_eq!(r.local.splice().chain_depth, 32, "sendfile links 32 sends by default");
        if m == "4M" {
            // A pipe holds at most 1 MiB here: every send comes up short, breaks its chain,
            // and the rest is queued again behind what the pipe still holds.
            assert!(r.local.splice().short_in > 0, "a 4 MiB send never came up short");
            assert!(r.local.splice().leftover_splices > 0);
        }
    }
}

/// Two 4 KiB buffers cannot keep up: the multishot receive runs dry (ENOBUFS), is re-armed,
/// and still delivers every byte intact. Whether a given second runs dry depends on how the
/// two sides are scheduled (a slow debug sender on a busy host can leave the receiver ahead
/// all along), so each engine gets up to five runs to show it; every run must be intact.
#[test]
fn multishot_with_a_tiny_buffer_ring_runs_dry_and_loses_nothing() {
    const RUNS: usize = 5;
    for engine in ["multishot", "bundle"] {
        let args = [
            "stream",
            "-l",
            "1",
            "--recv-engine",
            engine,
            "--buf-count",
            "2",
            "--buf-size",
            "4K",
            "--verify",
        ];
        let mut ran_dry = false;
        for _ in 0..RUNS {
            let r = ringperf!().run_report(&args);
            check_stream_report(&r, false);
            check_engine_accounting(&r, &[("local", true, false), ("remote", false, true)], "copy", engine);
            if r.remote().recv().enobufs > 0 {
                assert!(r.remote().recv().rearms > 0, "{engine}: ran dry and was never re-armed");
                ran_dry = true;
                break;
            }
        }
        assert!(ran_dry, "{engine}: the tiny ring never ran dry in {RUNS} runs");
    }
}

/// Unchecked provided buffers share one landing area of one buffer, and a stream receiver
/// on them is woken per whole buffer (SO_RCVLOWAT) while its sender keeps the kernel's
/// default; every byte still arrives. Checked buffers each have memory of their own, and
/// --rcvlowat sets the mark for any engine, stream receivers only.
#[test]
fn provided_buffers_share_a_landing_area_and_wake_per_buffer() {
    let rp = ringperf!();
    let stream = |extra: &[&str]| {
        let mut args = vec!["stream", "-l", "0.5", "-m", "64K", "-M", "64K"];
        args.extend_from_slice(extra);
        let r = rp.run_report(&args);
        check_stream_report(&r, args.contains(&"--reverse"));
        r
    };
    for engine in ["multishot", "bundle"] {
        let r = stream(&["--recv-engine", engine]);
        assert_eq!(r.remote().recv().landing_bytes, 65536, "{engine}");
        assert_eq!(r.remote().socket.rcvlowat, 65536, "{engine}: the receiver wakes per buffer");
        assert_eq!(r.local.socket.rcvlowat, 1, "{engine}: the sender keeps the default");
        assert!(r.spec.ring.buf_count >= 256, "{engine}: an unchecked ring has entries to spare");
    }
    let r = stream(&["--recv-engine", "multishot", "--verify"]);
    let count = u64::from(r.spec.ring.buf_count);
    assert_eq!(r.remote().recv().landing_bytes, count * 65536, "checked buffers share nothing");
    assert_eq!(r.remote().verify().mismatches, 0);
    let r = stream(&["--recv-engine", "multishot", "--reverse"]);
    assert_eq!(r.local.socket.rcvlowat, 65536, "--reverse: the client receives");
    assert_eq!(r.remote().socket.rcvlowat, 1);
    let r = stream(&["--recv-engine", "multishot", "--rcvlowat", "1"]);
    assert_eq!(r.remote().socket.rcvlowat, 1, "--rcvlowat 1 is the kernel's default");
    let r = stream(&["--recv-engine", "recv"]);
    assert_eq!(r.remote().socket.rcvlowat, 1, "recv keeps the kernel's default");
    assert_eq!(r.remote().recv().landing_bytes, 65536, "unchecked receives share one buffer");
    let r = stream(&["--rcvlowat", "32K", "--verify"]);
    assert_eq!(r.remote().socket.rcvlowat, 32768);
    assert_eq!(r.remote().verify().mismatches, 0);
    rp.run(&["rr", "-l", "0.5", "--rcvlowat", "32K"]).failure(2, &["--rcvlowat", "stream"]);
    rp.run(&["stream", "-l", "0.5", "--rcvlowat", "0"]).failure(2, &["at least 1 byte"]);
}

/// A file given to sendfile is what goes on the wire (byte counts), and a missing file is
/// a usage error.
#[test]
fn sendfile_sends_a_named_file_and_refuses_a_missing_one() {
    let r = ringperf!().run_report(&["sendfile", "-l", "0.5", "-F", "/proc/self/exe"]);
    check_stream_report(&r, false);
    assert_eq!(r.spec.local.payload, Payload::File("/proc/self/exe".into()));
    let out = ringperf!().run(&["sendfile", "-l", "0.5", "-F", "/nonexistent/ringperf-test"]);
    out.failure(2, &["cannot read the payload file", "/nonexistent/ringperf-test"]);
    let out = ringperf!().run(&["sendfile", "-l", "0.5", "-F", "/etc/hostname", "--verify"]);
    out.failure(2, &["--verify"]);
}

/// Small zero-copy sends are not held back by ringperf: a flow keeps megabytes of sends
/// awaiting their notifications, not one more than its chain, and sends under a page go
/// from plain memory, where the kernel merges adjacent ones into one fragment. With one
/// buffer more than the chain, `-m 1K` zc ran at 2 Mbit/s against copy's thousands (every
/// buffer waited tens of ms for its notification). What the test checks is that cause, not
/// a speed (the bench's): as root no send waits for one of ringperf's buffers.
#[test]
fn small_zero_copy_sends_are_not_throttled_by_ringperfs_buffers() {
    for engine in ["zc", "zc-msg"] {
        let r = ringperf!().run_report(&["stream", "-m", "1K", "--send-engine", engine, "-l", "2"]);
        check_stream_report(&r, false);
        let zc = r.local.zero_copy();
        // 4 MiB of 1 KiB sends on the one flow, not the 5 a chain of 4 had; as non-root
        // fewer, since each pins two pages against a quarter of `ulimit -l` (8 MiB by
        // default), but still dozens.
        let buffers = zc.buffers_per_flow;
        if is_root() {
            assert_eq!(buffers, 4096, "{engine}: {zc:?}");
        } else {
            assert!(buffers >= 64, "{engine}: {buffers} buffers of 1 KiB: {zc:?}");
        }
        assert!(!zc.fixed_buffers, "{engine}: 1 KiB sends came from the registered arena: {zc:?}");
        // Not held back by ringperf: as root the 4 MiB of buffers outlast the kernel's
        // notifications but for a rare wait when the machine runs the notifications late
        // (8 in 1.2 million sends seen on a loaded host), where every send waited before.
        // (Non-root, `ulimit -l` may leave too few, and the report says so.)
        if is_root() {
            let (waits, sends) = (zc.buffer_waits, zc.sends);
            assert!(
                sends > 0 && waits * 1000 <= sends,
                "{engine}: {waits} of {sends} sends waited for ringperf's buffers: {zc:?}"
            );
        }
    }
    // A send of a page or more still comes from the registered arena.
    let r = ringperf!().run_report(&["stream", "-m", "16K", "--send-engine", "zc", "-l", "0.5"]);
    check_stream_report(&r, false);
    assert!(r.local.zero_copy().fixed_buffers, "{:?}", r.local.zero_copy());
}

/// A file smaller than a send is looped over as netperf does, and the report says that
/// each send then moves only the file's bytes: a warning in the human output, the sizes in
/// JSON. A file of at least -m bytes gets no warning.
#[test]
fn sendfile_with_a_file_smaller_than_a_send_warns_and_says_what_to_do() {
    let dir = std::env::temp_dir().join(format!("ringperf-tiny-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tiny = dir.join("tiny");
    std::fs::write(&tiny, b"abc").expect("tiny file");
    let tiny = tiny.to_str().expect("utf-8 temp path");
    let big = dir.join("big");
    std::fs::write(&big, vec![7u8; 8192]).expect("big file");
    let big = big.to_str().expect("utf-8 temp path");

    let r = ringperf!().run_report(&["sendfile", "-l", "0.5", "-F", tiny]);
    check_stream_report(&r, false);
    assert_eq!(r.local.splice().file_bytes, Some(3));
    assert_eq!(r.local.splice().file_smaller_than_send, Some(u64::from(r.spec.send_size)));
    let sends = r.local.send().sends;
    assert!(r.local.bytes_sent <= 3 * sends, "a send moved more than the 3-byte file");

    let o = ringperf!().run(&["sendfile", "-l", "0.5", "-F", tiny, "-m", "4K"]).success();
    // The default report says it in its doubt line (-v: a warning line of its own).
    let warning = o
        .stdout
        .lines()
        .find(|l| l.starts_with("doubtful: ") && l.contains("smaller than the"))
        .unwrap_or_else(|| panic!("no warning:\n{o}"));
    for needle in ["3 bytes", "4096-byte send size (-m)", "use a file of at least 4096 bytes"] {
        assert!(warning.contains(needle), "the warning lacks '{needle}': {warning}");
    }

    let r = ringperf!().run_report(&["sendfile", "-l", "0.5", "-F", big, "-m", "8K"]);
    check_stream_report(&r, false);
    assert_eq!(r.local.splice().file_bytes, Some(8192));
    assert!(r.local.splice().file_smaller_than_send.is_none(), "a file of -m bytes is not small");
    let o = ringperf!().run(&["sendfile", "-l", "0.5", "-F", big, "-m", "8K"]).success();
    assert!(!o.stdout.contains("smaller than the"), "a warning for a file of -m bytes:\n{o}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A linked chain of sends reaches the kernel whole even when the submit batch is one
/// entry or an SQPOLL thread reads the queue as it fills: a split chain runs its halves
/// side by side and reorders the stream, which --verify catches.
#[test]
fn chains_are_never_split_by_small_batches_or_sqpoll() {
    for extra in [&["--sq-batch", "1"][..], &["--sqpoll"][..]] {
        let mut args = vec!["stream", "-l", "0.5", "--send-depth", "8", "--verify"];
        args.extend_from_slice(extra);
        let r = ringperf!().run_report(&args);
        check_stream_report(&r, false);
        assert_eq!(r.spec.ring.send_depth, 8, "{extra:?}");
        assert!(r.remote().verify().bytes_checked > 0, "{extra:?}");
    }
}

/// A chain of linked receives delivers the stream intact (each lands in its own buffer,
/// checked in order), and every receive but the last of the run's chains is whole: with
/// one plain receive at a time, loopback's 65483-byte segments come up short.
#[test]
fn linked_receives_are_whole_and_keep_the_stream_intact() {
    for depth in [1u64, 4] {
        let d = depth.to_string();
        let r = ringperf!().run_report(&[
            "stream",
            "-l",
            "0.5",
            "-m",
            "64K",
            "-M",
            "64K",
            "--recv-engine",
            "recv",
            "--recv-depth",
            &d,
            "--verify",
        ]);
        check_stream_report(&r, false);
        assert_eq!(u64::from(r.spec.ring.recv_depth), depth);
        assert_eq!(u64::from(r.remote().recv().linked_receives), depth);
        assert!(r.remote().verify().bytes_checked > 0);
        let (bytes, cqes) = (r.remote().bytes_received, r.remote().recv().data_cqes);
        if depth > 1 {
            assert!(
                cqes <= bytes.div_ceil(65536) + depth,
                "{cqes} data CQEs for {bytes} bytes are not whole receives"
            );
        }
    }
    let r = ringperf!().run_report(&["rr", "-l", "0.5"]);
    assert_eq!(r.spec.ring.recv_depth, 1, "rr receives one message at a time");
}

/// Ring tuning knobs run and are echoed in what the ring reports it did.
#[test]
fn ring_tuning_is_applied_and_reported() {
    let r = ringperf!().run_report(&["stream", "-l", "0.5", "--sqpoll", "--verify"]);
    check_stream_report(&r, false);
    assert!(r.local.ring_setup.sqpoll);
    assert!(!r.local.ring_setup.defer_taskrun);
    let r = ringperf!().run_report(&[
        "stream",
        "-l",
        "0.5",
        "--cq-batch",
        "8",
        "--cq-wait-us",
        "50",
        "--send-depth",
        "4",
        "--verify",
    ]);
    check_stream_report(&r, false);
    assert_eq!(r.local.ring_setup.cq_batch, 8);
    assert_eq!(r.remote().verify().mismatches, 0);
    let r = ringperf!().run_report(&["rr", "-l", "0.5", "--no-fixed-files", "--no-registered-ring"]);
    check_rr_report(&r);
    assert!(!r.local.ring_setup.fixed_files);
    assert!(!r.local.ring_setup.registered_ring_fd);
    // Ring settings alone put rr on the ring (they are what is measured), and so does
    // --harness with the ring's defaults.
    assert_eq!(r.local.send_engine, SendEngine::Copy);
    let r = ringperf!().run_report(&["rr", "-l", "0.5", "--harness", "io-uring"]);
    assert!(r.local.ring_setup.fixed_files);
    assert!(r.local.ring_setup.registered_ring_fd);
    // Waits leave iowait alone wherever the kernel can (IORING_FEAT_NO_IOWAIT), on both sides
    // (the probe reports whether the kernel has it: a bool, as the report parsed).
    let can = r.environment.local.io_uring.features.no_iowait;
    assert_eq!(r.local.ring_setup.no_iowait, can);
    assert_eq!(r.remote().ring_setup.no_iowait, can);
}

#[test]
fn bad_engine_and_ring_flags_are_usage_errors() {
    let rp = ringperf!();
    rp.run(&["stream", "--send-engine", "sendfile"]).failure(2, &["unknown send engine", "zc"]);
    rp.run(&["stream", "--recv-engine", "mmap"]).failure(2, &["unknown receive engine"]);
    rp.run(&["stream", "-l", "0.5", "--cq-batch", "8"]).failure(2, &["--cq-wait-us"]);
    rp.run(&["stream", "-l", "0.5", "--buf-count", "3"]).failure(2, &["power of two"]);
    rp.run(&["stream", "-l", "0.5", "--sq-entries", "5"]).failure(2, &["power of two"]);
    rp.run(&["stream", "-l", "0.5", "--send-depth", "0"]).failure(2, &["--send-depth"]);
    rp.run(&["stream", "-l", "0.5", "--recv-depth", "65"]).failure(2, &["--recv-depth", "1 to 64"]);
    rp.run(&["stream", "-l", "0.5", "--require-zc"]).failure(2, &["zero-copy send engine"]);
}

/// `ringperf engines` runs one stream per combination and returns one report each.
#[test]
fn engines_runs_every_default_combination() {
    let reports: Vec<TestReport> = ringperf!().run_parsed(&["engines", "-l", "0.3"]);
    let combos: Vec<(String, String)> = reports
        .iter()
        .map(|x| (x.local.send_engine.name().to_string(), x.remote().recv_engine.name().to_string()))
        .collect();
    let want = [
        ("copy", "multishot"),
        ("syscall", "syscall"),
        ("zc", "multishot"),
        ("msg-zerocopy", "multishot"),
        ("zc-msg", "multishot"),
        ("splice", "multishot"),
        ("copy", "recv"),
        ("copy", "bundle"),
        ("copy", "trunc"),
        ("copy", "zerocopy-receive"),
    ];
    assert_eq!(combos.len(), want.len(), "{combos:?}");
    for (got, want) in combos.iter().zip(want) {
        assert_eq!((got.0.as_str(), got.1.as_str()), want);
    }
    for x in &reports {
        check_stream_report(x, false);
        // Each engine runs with its own default chain, as it would on its own.
        let (send, recv) = (x.local.send_engine.name(), x.remote().recv_engine.name());
        let want = if send == "splice" { 32 } else { 4 };
        assert_eq!(
            x.remote().ring.syscalls.is_none(),
            !["syscall", "zerocopy-receive"].contains(&recv),
            "a classic receiver counts system calls"
        );
        assert_eq!(
            x.local.ring.syscalls.is_none(),
            !["syscall", "msg-zerocopy"].contains(&send),
            "a classic side counts system calls, a ring side enters"
        );
        assert_eq!(x.spec.ring.send_depth, want, "{send}");
    }
    let out = ringperf!().run(&["engines", "-l", "0.3"]).success();
    assert!(out.stdout.contains("zero-copy") && out.stdout.contains("enters/MB"), "{out}");
}

/// The probe says what the kernel supports, and the same facts ride in every report.
#[test]
fn probe_reports_the_kernel_and_every_report_carries_it() {
    let p: Environment = ringperf!().run_parsed(&["probe"]);
    let ops = &p.io_uring.opcodes;
    for op in ["SEND", "RECV", "SEND_ZC", "SENDMSG_ZC", "SPLICE", "TIMEOUT"] {
        assert!(ops.iter().any(|o| o == op), "{op} missing from {ops:?}");
    }
    assert_eq!(p.io_uring.send_zc_reports_usage, Some(true));
    assert!(p.io_uring.setup.defer_taskrun);
    let r = ringperf!().run_report(&["rr", "-l", "0.3"]);
    assert_eq!(r.environment.local.io_uring, p.io_uring);
    assert!(r.environment.remote.io_uring.available);
    let human = ringperf!().run(&["probe"]).success();
    assert!(human.stdout.contains("SendZc REPORT_USAGE: yes"), "{human}");
}
