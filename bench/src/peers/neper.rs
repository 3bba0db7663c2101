//! neper, the peer for flows and threads at scale: tcp_stream, tcp_rr, tcp_crr and udp_rr, the server and
//! client pinned with taskset, flows over threads with -F/-T, output read from its
//! KEY=VALUE lines.
//!
//! What the client prints (neper ea5890f): `num_transactions`, `throughput` (transactions/s)
//! and `latency_mean` (seconds) for the request/response tests; `remote_throughput` (the receiver's bits/s) and
//! `total_run_time` for tcp_stream, whose client sends.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::error::{BenchError, Result};
use crate::peers::{anchors, key_values, kv_f64, Config, RunResult, StreamOptions, Tool, Work, Workload};
use crate::process::{free_port, require, run_measured_profiled, start_listening, Server};

pub const NAME: &str = "neper";

pub struct Neper {
    pub tcp_stream: PathBuf,
    pub tcp_rr: PathBuf,
    pub tcp_crr: PathBuf,
    pub udp_rr: PathBuf,
    pub taskset: PathBuf,
}

impl Neper {
    pub fn find() -> Result<Neper> {
        Ok(Neper {
            tcp_stream: anchors::locate("tcp_stream")?,
            tcp_rr: anchors::locate("tcp_rr")?,
            tcp_crr: anchors::locate("tcp_crr")?,
            udp_rr: anchors::locate("udp_rr")?,
            taskset: require("taskset", "install util-linux (apt-get install -y util-linux)")?,
        })
    }

    fn program(&self, cfg: &Config) -> Result<&PathBuf> {
        if cfg.stream != StreamOptions::default() {
            return Err(BenchError::Usage(
                "neper has no reverse or sendfile stream: compare those with netperf and iperf3".into(),
            ));
        }
        match cfg.workload {
            Workload::Stream => Ok(&self.tcp_stream),
            Workload::Rr => Ok(&self.tcp_rr),
            Workload::Crr => Ok(&self.tcp_crr),
            Workload::UdpRr => Ok(&self.udp_rr),
            Workload::UdpStream => Err(BenchError::Usage(
                "neper's udp_stream is not a peer here: compare UDP streams with iperf3 and netperf".into(),
            )),
        }
    }

    /// The flags both ends take (neper's server and client read the same options).
    fn shared_args(&self, cfg: &Config, ports: (u16, u16)) -> Vec<String> {
        let mut a: Vec<String> = [
            "-4",
            "-C",
            &ports.0.to_string(),
            "-P",
            &ports.1.to_string(),
            "-l",
            &cfg.secs.to_string(),
            "--nolog",
        ]
        .map(String::from)
        .to_vec();
        match cfg.workload {
            Workload::Stream => a.extend(["-B".into(), cfg.size.to_string()]),
            Workload::Rr | Workload::Crr | Workload::UdpRr => {
                a.extend(["-Q".into(), cfg.size.to_string(), "-R".into(), cfg.size.to_string()])
            }
            Workload::UdpStream => {}
        }
        let l = &cfg.layout;
        if l.flows > 1 || l.threads > 1 {
            a.extend(["-F".into(), l.flows.to_string(), "-T".into(), l.threads.to_string()]);
        }
        if cfg.nodelay {
            a.push("--no-delay".into());
        }
        if let Some(cc) = cfg.cc.as_ref().filter(|_| cfg.workload.is_tcp()) {
            a.extend(["--congestion-control".into(), cc.clone()]);
        }
        a
    }

    /// taskset's arguments: the layout's CPU set, or the side's own CPU.
    fn pinned(&self, cfg: &Config, cpu: usize) -> Result<Vec<String>> {
        let cpus = cfg.layout.cpu_set.clone().unwrap_or_else(|| cpu.to_string());
        Ok(vec!["-c".into(), cpus, self.program(cfg)?.display().to_string()])
    }

    fn server_args(&self, cfg: &Config, ports: (u16, u16)) -> Result<Vec<String>> {
        let mut a = self.pinned(cfg, cfg.server_cpu)?;
        a.extend(self.shared_args(cfg, ports));
        Ok(a)
    }

    fn client_args(&self, cfg: &Config, ports: (u16, u16)) -> Result<Vec<String>> {
        let mut a = self.pinned(cfg, cfg.client_cpu)?;
        a.extend(["-c".into(), "-H".into(), "127.0.0.1".into()]);
        a.extend(self.shared_args(cfg, ports));
        Ok(a)
    }

    /// A listening server: control port and data port, both fresh.
    fn start_server(&self, cfg: &Config) -> Result<(Server, (u16, u16))> {
        let data = std::cell::Cell::new(0);
        let (server, control) = start_listening(NAME, |control| {
            data.set(free_port()?);
            let mut cmd = Command::new(&self.taskset);
            cmd.args(self.server_args(cfg, (control, data.get()))?);
            Ok(cmd)
        })?;
        Ok((server, (control, data.get())))
    }
}

impl Tool for Neper {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self, cfg: &Config) -> String {
        let p = (1, 2);
        let hide = |s: String| s.replace("-C 1 -P 2", "-C PORT -P PORT");
        format!(
            "{t} {} ; {t} {}",
            hide(self.server_args(cfg, p).map(|a| a.join(" ")).unwrap_or_else(|e| e.to_string())),
            hide(self.client_args(cfg, p).map(|a| a.join(" ")).unwrap_or_else(|e| e.to_string())),
            t = self.taskset.display()
        )
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        self.program(cfg)?;
        let (mut server, ports) = self.start_server(cfg)?;
        // taskset execs neper in place: these are neper's own processes.
        let server_pid = server.pid();
        let mut client = Command::new(&self.taskset);
        client.args(self.client_args(cfg, ports)?);
        let measured = run_measured_profiled(NAME, &mut client, cfg.run_timeout(), None, cfg.profile);
        // neper's server ends by itself once its client is done.
        let server_exit = server.wait(Duration::from_secs(5));
        let mut m = measured?;
        let stopped = m.profile.take();
        let failed = |e: BenchError| {
            BenchError::Tool(format!(
                "{e}\nneper ({}):\n{}\n{}",
                m.status,
                m.output_excerpt(),
                server_exit.describe()
            ))
        };
        if !m.status.success() {
            return Err(failed(BenchError::Tool("neper exited with an error".into())));
        }
        let work = parse_output(&m.stdout, cfg).map_err(failed)?;
        let tool_pids: Vec<u32> = std::iter::once(m.pid).chain(server_pid).collect();
        Ok(RunResult::new(NAME, m.cpu, work).with_profile(stopped, &tool_pids))
    }
}

/// The work out of a neper client's output.
pub fn parse_output(stdout: &str, cfg: &Config) -> Result<Work> {
    let kv = key_values(stdout);
    let f = |key: &str| kv_f64(&kv, NAME, key);
    Ok(match cfg.workload {
        Workload::Stream => {
            let bits_per_sec = f("remote_throughput")?;
            let secs = f("total_run_time")?;
            Work::Stream { bytes: (bits_per_sec * secs / 8.0).round() as u64, bits_per_sec }
        }
        Workload::UdpStream => {
            return Err(BenchError::Usage("neper's udp_stream is not a peer here".into()));
        }
        Workload::Rr | Workload::Crr | Workload::UdpRr => {
            let mean_rtt_us = f("latency_mean")? * 1e6;
            Work::Rr {
                transactions: f("num_transactions")? as u64,
                tps_by_count: f("throughput")?,
                tps_by_rtt: if mean_rtt_us > 0.0 { 1e6 / mean_rtt_us } else { 0.0 },
                mean_rtt_us,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(workload: Workload) -> Config {
        Config::new(workload, 2, (0, 1), 1, None)
    }

    #[test]
    fn rr_output_parses() {
        let out = "VERSION=1.1.0\nnum_transactions=24104\nlatency_mean=0.000082849\nthroughput=12051.15\n";
        match parse_output(out, &cfg(Workload::Rr)).unwrap() {
            Work::Rr { transactions, tps_by_count, mean_rtt_us, .. } => {
                assert_eq!(transactions, 24104);
                assert_eq!(tps_by_count, 12051.15);
                assert!((mean_rtt_us - 82.849).abs() < 1e-9);
            }
            other => panic!("rr parsed as {other:?}"),
        }
        assert!(parse_output("VERSION=1.1.0\n", &cfg(Workload::Rr)).is_err());
    }

    #[test]
    fn many_flows_over_threads_in_one_cpu_set() {
        let n = Neper {
            tcp_stream: "tcp_stream".into(),
            tcp_rr: "tcp_rr".into(),
            tcp_crr: "tcp_crr".into(),
            udp_rr: "udp_rr".into(),
            taskset: "taskset".into(),
        };
        let mut c = cfg(Workload::Rr);
        c.layout = crate::peers::Layout { flows: 100, threads: 2, cpu_set: Some("0,1".into()) };
        c.nodelay = true;
        let a = n.client_args(&c, (7, 8)).unwrap().join(" ");
        assert_eq!(
            a,
            "-c 0,1 tcp_rr -c -H 127.0.0.1 -4 -C 7 -P 8 -l 2 --nolog -Q 1 -R 1 -F 100 -T 2 --no-delay"
        );
        assert!(n.client_args(&cfg(Workload::UdpStream), (7, 8)).is_err());
    }

    #[test]
    fn stream_output_takes_the_receivers_rate() {
        let out = "total_run_time=2\nlocal_throughput=0\nremote_throughput=33747274848\n";
        match parse_output(out, &cfg(Workload::Stream)).unwrap() {
            Work::Stream { bytes, bits_per_sec } => {
                assert_eq!(bits_per_sec, 33747274848.0);
                assert_eq!(bytes, 8436818712);
            }
            other => panic!("stream parsed as {other:?}"),
        }
    }
}
