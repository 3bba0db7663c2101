//! tools/lab: it comes up and goes down cleanly, again and again, and it never touches a
//! namespace it did not make. These need root (network namespaces); without it they say
//! so and skip. Each test uses its own lab name, so they can run in parallel.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ringperf_tests::{
    is_root, lab, lab_name, netns_list, run_with_timeout, skip, skip_unless, Lab, Netns, LAB_PROGRAMS,
};

const STATE_DIR: &str = "/run/ringperf-lab";

/// Skips `test` unless it runs as root with every program tools/lab needs.
fn skip_unless_lab(test: &str) -> bool {
    skip_unless(test, true, LAB_PROGRAMS)
}

/// Namespaces of lab `name` that exist now.
fn namespaces_of(name: &str) -> Vec<String> {
    let prefix = format!("rplab-{name}-");
    netns_list().into_iter().filter(|n| n.starts_with(&prefix)).collect()
}

/// Links in the host's own namespace that mention the lab: the lab makes none there.
fn host_links_of(name: &str) -> Vec<String> {
    let mut c = Command::new("ip");
    c.args(["-o", "link", "show"]);
    let o = run_with_timeout(c, Duration::from_secs(10)).success();
    o.stdout.lines().filter(|l| l.contains(&format!("rplab-{name}-"))).map(str::to_string).collect()
}

#[test]
fn up_and_down_twice_leave_nothing_behind() {
    if skip_unless_lab("up_and_down_twice_leave_nothing_behind") {
        return;
    }
    let name = lab_name("updown");
    for round in 1..=2 {
        let up = lab(&name, &["up"]);
        assert!(up.status.success(), "round {round}: up failed: {up}");
        let mut made = namespaces_of(&name);
        made.sort();
        assert_eq!(made, vec![format!("rplab-{name}-a"), format!("rplab-{name}-b")], "round {round}");
        assert!(Path::new(&format!("{STATE_DIR}/{name}.state")).exists(), "no record of the lab");

        let down = lab(&name, &["down"]);
        assert!(down.status.success(), "round {round}: down failed: {down}");
        assert!(namespaces_of(&name).is_empty(), "round {round}: left {:?}", namespaces_of(&name));
        assert!(host_links_of(&name).is_empty(), "round {round}: left links {:?}", host_links_of(&name));
        assert!(!Path::new(&format!("{STATE_DIR}/{name}.state")).exists(), "the record outlived the lab");
    }
    // Down again with nothing up is fine, and says so.
    let again = lab(&name, &["down"]).success();
    assert!(again.stdout.contains("not up"), "{again}");
}

#[test]
fn up_is_idempotent_and_converges_on_new_flags() {
    if skip_unless_lab("up_is_idempotent_and_converges_on_new_flags") {
        return;
    }
    let name = lab_name("idem");
    let l = Lab::up(&name, &["--tso", "a=off"]);
    let again = lab(&name, &["up", "--tso", "a=off"]);
    assert!(again.status.success(), "a second identical up failed: {again}");
    assert_eq!(namespaces_of(&name).len(), 2, "a second up made more namespaces");

    let status = lab(&name, &["status"]).success();
    let line_a =
        status.stdout.lines().find(|l| l.trim_start().starts_with("a:")).unwrap_or_default().to_string();
    assert!(line_a.contains("198.18.0.1") && line_a.contains("tso off"), "status: {status}");

    // A different host count for a running lab is refused; the lab stays as it was.
    let more = lab(&name, &["up", "--hosts", "3"]);
    assert_eq!(more.status.code(), Some(2), "{more}");
    assert!(more.stderr.contains("down"), "the refusal does not say what to do: {more}");
    assert_eq!(namespaces_of(&name).len(), 2);

    // Up again with other flags changes the running lab.
    lab(&name, &["up", "--tso", "a=on", "--mtu", "9000"]).success();
    let status = lab(&name, &["status"]).success();
    assert!(status.stdout.contains("tso on") && !status.stdout.contains("tso off"), "{status}");
    assert!(status.stdout.contains("mtu 9000"), "{status}");
    drop(l);
    assert!(namespaces_of(&name).is_empty());
}

#[test]
fn refuses_namespaces_it_did_not_make() {
    if skip_unless_lab("refuses_namespaces_it_did_not_make") {
        return;
    }
    let name = lab_name("alien");
    // Someone else's namespace that happens to have the lab's name.
    let alien = Netns::create(&format!("rplab-{name}-a")).expect("ip netns add");

    let up = lab(&name, &["up"]);
    assert_eq!(up.status.code(), Some(2), "up adopted a namespace it did not make: {up}");
    assert!(up.stderr.contains("does not record it"), "{up}");
    assert!(!Path::new(&format!("{STATE_DIR}/{name}.state")).exists(), "a refused up left a record");

    let down = lab(&name, &["down"]).success();
    assert!(down.stderr.contains(&format!("left rplab-{name}-a alone")), "{down}");
    assert!(netns_list().contains(&alien.name().to_string()), "down deleted a namespace it did not make");
    drop(alien);
}

#[test]
fn a_record_naming_a_foreign_namespace_is_refused() {
    if skip_unless_lab("a_record_naming_a_foreign_namespace_is_refused") {
        return;
    }
    let name = lab_name("forged");
    // A hand-edited record that lists a namespace without the lab's prefix.
    let victim = Netns::create(&format!("rpt-victim-{}", std::process::id())).expect("ip netns add");
    fs::create_dir_all(STATE_DIR).expect("state dir");
    let record = format!("{STATE_DIR}/{name}.state");
    fs::write(&record, format!("lab={name}\nhosts=2\nns={}\n", victim.name())).expect("write record");
    let down = lab(&name, &["down"]);
    let _ = fs::remove_file(&record);
    assert_eq!(down.status.code(), Some(2), "{down}");
    assert!(down.stderr.contains("never makes"), "{down}");
    assert!(netns_list().contains(&victim.name().to_string()), "down deleted a foreign namespace");
}

#[test]
fn bad_flags_and_hosts_say_what_to_do() {
    let name = lab_name("flags");
    if !is_root() {
        // The first thing lab checks, before anything else can fail.
        let o = lab(&name, &["status"]);
        assert_eq!(o.status.code(), Some(2), "{o}");
        assert!(o.stderr.contains("needs root"), "{o}");
        skip(
            "bad_flags_and_hosts_say_what_to_do",
            "checked only the non-root refusal: the flag checks need root",
        );
        return;
    }
    // Lab checks for its programs before it reads a flag.
    if skip_unless("bad_flags_and_hosts_say_what_to_do", true, LAB_PROGRAMS) {
        return;
    }
    for (args, needle) in [
        (&["up", "--tso", "maybe"][..], "on or off"),
        (&["up", "--tso", "z=off"][..], "no host z"),
        (&["up", "--hosts", "1"][..], "2..26"),
        (&["up", "--rate", "fast"][..], "tc rate"),
        (&["up", "--bogus"][..], "unknown option"),
        (&["exec", "a", "true"][..], "tools/lab --lab"),
        (&["frobnicate"][..], "use up, down, exec, status or lo"),
        (&["up", "--gso-max-size", "64k"][..], "size in bytes"),
        (&["up", "--big-tcp", "z=65536"][..], "no host z"),
        (&["lo", "--big-tcp", "65536"][..], "after --"),
        (&["lo", "--", "true"][..], "at least one of --big-tcp"),
    ] {
        let o = lab(&name, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o}");
        assert!(o.stderr.contains(needle), "{args:?}: the error lacks '{needle}': {o}");
    }
    assert!(namespaces_of(&name).is_empty(), "a refused command made namespaces");

    // Not root: refused before anything is touched, with the fix in the message.
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(ringperf_tests::lab_script())
        .arg("status");
    match ringperf_tests::try_run_with_timeout(c, Duration::from_secs(10)) {
        // 126/127: nobody may not read this checkout; nothing to learn then.
        Ok(o) if matches!(o.status.code(), Some(126 | 127)) => ringperf_tests::skip(
            "bad_flags_and_hosts_say_what_to_do (non-root part)",
            &format!("user nobody cannot run the script in this checkout: {o}"),
        ),
        Ok(o) => {
            assert_eq!(o.status.code(), Some(2), "{o}");
            assert!(o.stderr.contains("needs root"), "{o}");
        }
        Err(e) => ringperf_tests::skip(
            "bad_flags_and_hosts_say_what_to_do (non-root part)",
            &format!("setpriv cannot run ({e}): apt-get install -y util-linux"),
        ),
    }
}
