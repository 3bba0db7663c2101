//! Hosts for multi-host tests: `tools/lab` namespaces on one data network (198.18.0.0/24
//! behind the lab's switch), each also joined to the root namespace by a control veth of
//! its own (a /30 in 198.19.N.0/24), so a controller in the root namespace reaches every
//! agent while the agents' data never crosses a root-namespace interface. Each host runs
//! an agent (`ringperf serve` on every address, port 12866, with a shared key). Dropping
//! the fabric stops the agents and takes the lab down, which deletes the namespaces and,
//! with them, both ends of every control veth.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::{lab_name, run_with_timeout, Lab, Ringperf, Server};

/// The agents' control port.
pub const AGENT_PORT: u16 = 12866;

/// One host of the fabric.
pub struct FabricHost {
    /// a, b, c, ...
    pub name: String,
    /// Where other agents reach it (the data network).
    pub data_ip: String,
    /// Where the root namespace reaches it.
    pub control_ip: String,
    /// The root namespace's end of its control veth.
    pub root_if: String,
    pub agent: Server,
}

/// A plan file in the temporary folder, removed when dropped.
pub struct PlanFile(PathBuf);

impl PlanFile {
    /// Writes `text` to a plan file named after `tag` and this process.
    pub fn new(tag: &str, text: &str) -> PlanFile {
        let p = std::env::temp_dir().join(format!("ringperf-plan-{tag}-{}.toml", std::process::id()));
        std::fs::write(&p, text).expect("writing the plan");
        PlanFile(p)
    }

    pub fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for PlanFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A key file that is removed when dropped.
pub struct KeyFile {
    path: PathBuf,
}

impl KeyFile {
    /// A fresh random key in a mode-600 file named after `tag`.
    pub fn new(tag: &str) -> KeyFile {
        let path = std::env::temp_dir().join(format!("ringperf-key-{tag}-{}", std::process::id()));
        let mut bytes = [0u8; 32];
        let mut urandom = std::fs::File::open("/dev/urandom").expect("/dev/urandom");
        std::io::Read::read_exact(&mut urandom, &mut bytes).expect("random bytes");
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .expect("the key file");
        writeln!(f, "{hex}").expect("writing the key");
        KeyFile { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn arg(&self) -> &str {
        self.path.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Hosts with agents; see the module doc. Fields drop in order: agents, then the lab.
pub struct Fabric {
    pub hosts: Vec<FabricHost>,
    pub key: KeyFile,
    pub lab: Lab,
}

impl Fabric {
    /// `hosts` hosts (at most 26), control subnet 198.19.`subnet`.0/24 (distinct per
    /// test that may run at once); each agent gets `agent_flags` after its key.
    pub fn up(tag: &str, subnet: u8, hosts: usize, rp: &Ringperf, agent_flags: &[&str]) -> Fabric {
        let lab = Lab::up(&lab_name(tag), &["--hosts", &hosts.to_string()]);
        let key = KeyFile::new(tag);
        let mut made = Vec::new();
        for i in 0..hosts {
            let letter = (b'a' + i as u8) as char;
            let ns = lab.namespace(&letter.to_string());
            let root_if = format!("rpc{subnet}{letter}");
            let root_ip = format!("198.19.{subnet}.{}", 4 * i + 1);
            let control_ip = format!("198.19.{subnet}.{}", 4 * i + 2);
            let steps: Vec<Vec<String>> = vec![
                vec!["link", "add", &root_if, "type", "veth", "peer", "name", "ctl0", "netns", &ns],
                vec!["addr", "add", &format!("{root_ip}/30"), "dev", &root_if],
                vec!["link", "set", &root_if, "up"],
                vec!["-n", &ns, "addr", "add", &format!("{control_ip}/30"), "dev", "ctl0"],
                vec!["-n", &ns, "link", "set", "ctl0", "up"],
            ]
            .into_iter()
            .map(|v| v.into_iter().map(String::from).collect())
            .collect();
            for args in steps {
                let mut c = Command::new("ip");
                c.args(&args);
                let o = run_with_timeout(c, Duration::from_secs(10));
                assert!(o.status.success(), "ip {}: {o}", args.join(" "));
            }
            let mut serve = vec!["serve", "--port", "12866", "--psk-file", key.arg()];
            serve.extend_from_slice(agent_flags);
            let agent = Server::start(lab.exec(&letter.to_string(), rp.path(), &serve));
            made.push(FabricHost {
                name: letter.to_string(),
                data_ip: format!("198.18.0.{}", i + 1),
                control_ip,
                root_if,
                agent,
            });
        }
        Fabric { hosts: made, key, lab }
    }

    /// Bytes received plus sent on the root namespace's ends of every control veth.
    pub fn root_bytes(&self) -> u64 {
        let read = |f: &str| -> u64 {
            std::fs::read_to_string(f).ok().and_then(|s| s.trim().parse().ok()).expect("an interface counter")
        };
        self.hosts
            .iter()
            .map(|h| {
                let dir = format!("/sys/class/net/{}/statistics", h.root_if);
                read(&format!("{dir}/rx_bytes")) + read(&format!("{dir}/tx_bytes"))
            })
            .sum()
    }

    /// A plan over these hosts: an [[agent]] per host (control and data addresses, the key), then
    /// `tests` as written.
    pub fn plan(&self, tests: &str) -> String {
        let mut p = String::new();
        for h in &self.hosts {
            p.push_str(&format!(
                "[[agent]]\nname = \"{}\"\naddress = \"{}\"\ndata_address = \"{}\"\nport = {AGENT_PORT}\nkey_file = \"{}\"\n\n",
                h.name,
                h.control_ip,
                h.data_ip,
                self.key.arg()
            ));
        }
        p.push_str(tests);
        p
    }
}
