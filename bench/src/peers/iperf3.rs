//! iperf3, the stream peer: a one-shot server pinned to the server CPU, a client pinned to
//! the client CPU, the same write size and congestion control as ringperf.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::error::{BenchError, Result};
use crate::peers::{
    json_f64, json_u64, Config, RunResult, Tool, Work, Workload, LISTEN_TIMEOUT, PORT_ATTEMPTS,
};
use crate::process::{free_port, require, run_measured, Server};

pub const NAME: &str = "iperf3";
/// iperf3 in its sendfile mode (-Z), the peer of ringperf's splice engine.
pub const NAME_ZEROCOPY: &str = "iperf3 -Z";
pub const INSTALL_HINT: &str = "install iperf3 (apt-get install -y iperf3)";

pub struct Iperf3 {
    pub bin: PathBuf,
    /// -Z: the client sends with sendfile(2) instead of write(2).
    pub zerocopy: bool,
}

impl Iperf3 {
    pub fn find() -> Result<Iperf3> {
        Ok(Iperf3 { bin: require(NAME, INSTALL_HINT)?, zerocopy: false })
    }

    fn server_args(&self, cfg: &Config, port: u16) -> Vec<String> {
        let port = port.to_string();
        let cpu = cfg.server_cpu.to_string();
        ["-s", "-1", "-B", "127.0.0.1", "-p", &port, "-A", &cpu].map(String::from).to_vec()
    }

    fn client_args(&self, cfg: &Config, port: u16) -> Vec<String> {
        let mut a: Vec<String> = [
            "-c".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "-t".into(),
            cfg.secs.to_string(),
            "-l".into(),
            cfg.size.to_string(),
            "-A".into(),
            cfg.client_cpu.to_string(),
        ]
        .to_vec();
        if let Some(cc) = &cfg.cc {
            a.extend(["-C".into(), cc.clone()]);
        }
        if self.zerocopy {
            a.push("-Z".into());
        }
        a.push("-J".into());
        a
    }

    /// A listening one-shot server, on a fresh port when the first one is taken.
    fn start_server(&self, cfg: &Config) -> Result<(Server, u16)> {
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port()?;
            let mut server = Server::spawn(NAME, Command::new(&self.bin).args(self.server_args(cfg, port)))?;
            match server.wait_listening(port, LISTEN_TIMEOUT) {
                Ok(()) => return Ok((server, port)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| BenchError::Tool("the iperf3 server did not start".into())))
    }
}

impl Tool for Iperf3 {
    fn name(&self) -> &'static str {
        if self.zerocopy {
            NAME_ZEROCOPY
        } else {
            NAME
        }
    }

    fn describe(&self, cfg: &Config) -> String {
        format!(
            "{b} {} ; {b} {}",
            self.server_args(cfg, 0).join(" ").replace("-p 0", "-p PORT"),
            self.client_args(cfg, 0).join(" ").replace("-p 0", "-p PORT"),
            b = self.bin.display()
        )
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        if cfg.workload != Workload::Stream {
            return Err(BenchError::Usage("iperf3 is the stream peer only".into()));
        }
        let (mut server, port) = self.start_server(cfg)?;
        let mut client = Command::new(&self.bin);
        client.args(self.client_args(cfg, port));
        let measured = run_measured(NAME, &mut client, cfg.run_timeout(), None);
        // The one-shot server exits after its client; stop it if it does not.
        let server_exit = server.wait(Duration::from_secs(5));
        let m = measured?;
        let report: Value = serde_json::from_str(&m.stdout).map_err(|e| {
            BenchError::Tool(format!(
                "iperf3 -J printed no JSON ({e}), exit {}:\n{}\n{}",
                m.status,
                m.output_excerpt(),
                server_exit.describe()
            ))
        })?;
        if let Some(err) = report.get("error").and_then(Value::as_str) {
            return Err(BenchError::Tool(format!("iperf3 failed: {err}\n{}", server_exit.describe())));
        }
        if !m.status.success() {
            return Err(BenchError::Tool(format!("iperf3 failed ({}):\n{}", m.status, m.output_excerpt())));
        }
        let work = parse(&report, cfg)?;
        Ok(RunResult {
            tool: self.name(),
            cpu: m.cpu,
            work,
            own_service_demand: None,
            process_cpu_us: None,
            ringperf: None,
        })
    }
}

/// Received bytes and bits per second out of iperf3's JSON, after checking that it ran
/// with the requested write size and congestion control.
pub fn parse(r: &Value, cfg: &Config) -> Result<Work> {
    let blksize = json_u64(r, NAME, "/start/test_start/blksize")?;
    if blksize != u64::from(cfg.size) {
        return Err(BenchError::Tool(format!("iperf3 wrote {blksize}-byte blocks, not {}", cfg.size)));
    }
    if let Some(want) = &cfg.cc {
        for side in ["sender", "receiver"] {
            let got = r.pointer(&format!("/end/{side}_tcp_congestion")).and_then(Value::as_str);
            // Older iperf3 releases do not report it; a different one is an error.
            if got.is_some_and(|g| g != want) {
                return Err(BenchError::Tool(format!(
                    "iperf3's {side} used congestion control {}, not {want}",
                    got.unwrap_or_default()
                )));
            }
        }
    }
    let bytes = json_u64(r, NAME, "/end/sum_received/bytes")?;
    let bits_per_sec = json_f64(r, NAME, "/end/sum_received/bits_per_second")?;
    Ok(Work::Stream { bytes, bits_per_sec })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg() -> Config {
        Config {
            workload: Workload::Stream,
            secs: 5,
            client_cpu: 0,
            server_cpu: 1,
            size: 131072,
            cc: Some("cubic".into()),
        }
    }

    fn report() -> Value {
        // The fields the bench reads, as iperf 3.12 prints them.
        json!({
            "start": {"test_start": {"protocol": "TCP", "num_streams": 1, "blksize": 131072, "duration": 5}},
            "end": {
                "sum_sent": {"bytes": 7274496000u64, "bits_per_second": 29097285665.1},
                "sum_received": {"seconds": 2.000103, "bytes": 7274364928u64, "bits_per_second": 29095961269.9},
                "sender_tcp_congestion": "cubic",
                "receiver_tcp_congestion": "cubic"
            }
        })
    }

    #[test]
    fn received_figures_are_used() {
        let Work::Stream { bytes, bits_per_sec } = parse(&report(), &cfg()).unwrap() else { panic!() };
        assert_eq!(bytes, 7274364928);
        assert_eq!(bits_per_sec, 29095961269.9);
    }

    #[test]
    fn a_different_cc_or_size_is_refused() {
        let mut r = report();
        r["end"]["receiver_tcp_congestion"] = json!("bbr");
        assert!(parse(&r, &cfg()).unwrap_err().to_string().contains("bbr"));
        let mut r = report();
        r["start"]["test_start"]["blksize"] = json!(65536);
        assert!(parse(&r, &cfg()).is_err());
        let mut r = report();
        r["end"] = json!({});
        assert!(parse(&r, &cfg()).is_err());
    }

    #[test]
    fn commands_pin_and_fix_cc() {
        let mut i = Iperf3 { bin: "iperf3".into(), zerocopy: false };
        assert_eq!(i.server_args(&cfg(), 5201).join(" "), "-s -1 -B 127.0.0.1 -p 5201 -A 1");
        assert_eq!(
            i.client_args(&cfg(), 5201).join(" "),
            "-c 127.0.0.1 -p 5201 -t 5 -l 131072 -A 0 -C cubic -J"
        );
        i.zerocopy = true;
        assert_eq!(
            i.client_args(&cfg(), 5201).join(" "),
            "-c 127.0.0.1 -p 5201 -t 5 -l 131072 -A 0 -C cubic -Z -J"
        );
        assert_eq!(i.name(), "iperf3 -Z");
    }
}
