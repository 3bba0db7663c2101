//! Network namespaces a test makes for itself (plain pairs, and `tools/lab` labs), each
//! removed when its guard is dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::process::{describe, run_with_timeout, try_run_with_timeout, ChildGuard, Outcome};

/// A network namespace made for one test and deleted when dropped.
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates the namespace, or says why not (no `ip` command, no permission).
    pub fn create(name: &str) -> Result<Netns, String> {
        let o = try_run_with_timeout(ip(&["netns", "add", name]), Duration::from_secs(10))
            .map_err(|e| format!("cannot run `ip` (install iproute2): {e}"))?;
        if o.status.success() {
            Ok(Netns { name: name.to_string() })
        } else {
            Err(format!("`ip netns add {name}` failed: {}", o.stderr.trim()))
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip netns exec NAME program args...`
    pub fn exec(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program).args(args);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let mut c = ip(&["netns", "del", &self.name]);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut g = ChildGuard::spawn(c);
        if g.wait_timeout(Duration::from_secs(10)).is_none() {
            eprintln!("warning: `ip netns del {}` did not finish in 10 s", self.name);
        }
    }
}

/// Two namespaces joined by a veth pair, `a` at 198.18.N.1 and `b` at 198.18.N.2 (/24),
/// removed (with the veth) when dropped. N comes from the caller so concurrent tests in
/// different files do not collide.
pub struct NetnsPair {
    pub a: Netns,
    pub b: Netns,
    pub a_addr: String,
    pub b_addr: String,
}

impl NetnsPair {
    pub fn create(tag: &str, n: u8) -> Result<NetnsPair, String> {
        let a = Netns::create(&format!("rp-{tag}-a"))?;
        let b = Netns::create(&format!("rp-{tag}-b"))?;
        let (va, vb) = (format!("rp{n}a"), format!("rp{n}b"));
        let (a_addr, b_addr) = (format!("198.18.{n}.1"), format!("198.18.{n}.2"));
        let pair = NetnsPair { a, b, a_addr, b_addr };
        let (an, bn) = (pair.a.name().to_string(), pair.b.name().to_string());
        let steps: Vec<Vec<String>> = vec![
            vec!["link", "add", &va, "netns", &an, "type", "veth", "peer", "name", &vb, "netns", &bn]
                .into_iter()
                .map(String::from)
                .collect(),
            ["-n", &an, "addr", "add", &format!("{}/24", pair.a_addr), "dev", &va].map(String::from).to_vec(),
            ["-n", &bn, "addr", "add", &format!("{}/24", pair.b_addr), "dev", &vb].map(String::from).to_vec(),
            ["-n", &an, "link", "set", &va, "up"].map(String::from).to_vec(),
            ["-n", &bn, "link", "set", &vb, "up"].map(String::from).to_vec(),
            ["-n", &an, "link", "set", "lo", "up"].map(String::from).to_vec(),
            ["-n", &bn, "link", "set", "lo", "up"].map(String::from).to_vec(),
        ];
        for args in steps {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            pair.run_checked(ip(&args))?;
        }
        Ok(pair)
    }

    /// Runs a set-up command; an error names it.
    pub fn run_checked(&self, cmd: Command) -> Result<(), String> {
        let what = describe(&cmd);
        let o = try_run_with_timeout(cmd, Duration::from_secs(10)).map_err(|e| format!("{what}: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{what} failed: {}", o.stderr.trim()))
        }
    }

    /// Makes the path lossy and slow: every TCP segment leaving either namespace is dropped
    /// with `loss_percent` % probability (nftables), and `b`'s egress is shaped to
    /// `rate` with a queue of `latency` (tbf: this kernel has no netem).
    pub fn degrade(&self, loss_percent: u32, rate: &str, latency: &str) -> Result<(), String> {
        for ns in [&self.a, &self.b] {
            let nft = |args: &[&str]| {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns.name(), "nft"]).args(args);
                c
            };
            self.run_checked(nft(&["add", "table", "inet", "rploss"]))?;
            self.run_checked(nft(&[
                "add",
                "chain",
                "inet",
                "rploss",
                "out",
                "{ type filter hook output priority 0; }",
            ]))?;
            let lt = loss_percent.to_string();
            self.run_checked(nft(&[
                "add", "rule", "inet", "rploss", "out", "meta", "l4proto", "tcp", "numgen", "random", "mod",
                "100", "<", &lt, "drop",
            ]))?;
        }
        let dev = format!("rp{}b", self.b_addr.split('.').nth(2).unwrap_or("0"));
        let mut tc = Command::new("ip");
        tc.args([
            "netns",
            "exec",
            self.b.name(),
            "tc",
            "qdisc",
            "add",
            "dev",
            &dev,
            "root",
            "tbf",
            "rate",
            rate,
        ])
        .args(["burst", "32kb", "latency", latency]);
        self.run_checked(tc)
    }
}

/// `tools/lab` of this repository.
pub fn lab_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/lab")
}

/// A lab name unique to this test process and `tag` (tests in one binary run in parallel,
/// each with its own lab): lowercase letters and digits, at most 12.
pub fn lab_name(tag: &str) -> String {
    let name = format!("{tag}{}", std::process::id() % 1_000_000);
    assert!(name.len() <= 12 && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    name
}

/// Runs `tools/lab --lab NAME args...` to completion.
pub fn lab(name: &str, args: &[&str]) -> Outcome {
    let mut c = Command::new(lab_script());
    c.args(["--lab", name]).args(args);
    run_with_timeout(c, Duration::from_secs(60))
}

/// A lab brought up for one test and taken down (`tools/lab down`) when dropped, so a
/// failing test leaves no namespace behind.
pub struct Lab {
    name: String,
}

impl Lab {
    /// `tools/lab --lab NAME up args...`; panics with the script's message if it fails.
    pub fn up(name: &str, args: &[&str]) -> Lab {
        let lab = Lab { name: name.to_string() };
        let mut all = vec!["up"];
        all.extend_from_slice(args);
        let o = self::lab(name, &all);
        assert!(o.status.success(), "tools/lab up failed: {o}");
        lab
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace of host `host` (a, b, ...).
    pub fn namespace(&self, host: &str) -> String {
        format!("rplab-{}-{host}", self.name)
    }

    /// `tools/lab --lab NAME exec HOST program args...`
    pub fn exec(&self, host: &str, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(lab_script());
        c.args(["--lab", &self.name, "exec", host]).arg(program).args(args);
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let mut c = Command::new(lab_script());
        c.args(["--lab", &self.name, "down"]).stdin(Stdio::null()).stdout(Stdio::null());
        let mut g = ChildGuard::spawn(c);
        if g.wait_timeout(Duration::from_secs(60)).is_none() {
            eprintln!("warning: `tools/lab --lab {} down` did not finish in 60 s", self.name);
        }
    }
}

/// The names `ip netns list` shows.
pub fn netns_list() -> Vec<String> {
    let o = run_with_timeout(ip(&["netns", "list"]), Duration::from_secs(10)).success();
    o.stdout.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

fn ip(args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(args);
    c
}
