//! iperf3, the bulk peer: a one-shot server and a client, pinned (-A, or both under one
//! CPU set with taskset), the same write size and congestion control as ringperf; TCP
//! streams (-P for many) and UDP (-u, one thread for every stream in iperf3 3.12).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::error::{BenchError, Result};
use crate::peers::{json_f64, json_u64, Config, RunResult, Tool, Work, Workload};
use crate::process::{require, run_measured_profiled, start_listening, within_cpu_set, Server};

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
        let mut a: Vec<String> =
            ["-s", "-1", "-B", "127.0.0.1", "-p", &port.to_string()].map(String::from).to_vec();
        if cfg.layout.cpu_set.is_none() {
            a.extend(["-A".into(), cfg.server_cpu.to_string()]);
        }
        a
    }

    fn client_args(&self, cfg: &Config, port: u16) -> Vec<String> {
        let mut a: Vec<String> = ["-c", "127.0.0.1", "-p", &port.to_string(), "-t", &cfg.secs.to_string()]
            .map(String::from)
            .to_vec();
        if cfg.layout.flows > 1 {
            a.extend(["-P".into(), cfg.layout.flows.to_string()]);
        }
        if cfg.workload == Workload::UdpStream {
            let rate = cfg.udp.rate.clone().unwrap_or_else(|| "0".into());
            a.extend(["-u".into(), "-b".into(), rate]);
        }
        a.extend(["-l".into(), cfg.size.to_string()]);
        if let Some(w) = cfg.udp.socket_buffer.as_ref().filter(|_| cfg.workload == Workload::UdpStream) {
            a.extend(["-w".into(), w.clone()]);
        }
        if cfg.layout.cpu_set.is_none() {
            a.extend(["-A".into(), cfg.client_cpu.to_string()]);
        }
        if let Some(cc) = cfg.tcp_cc() {
            a.extend(["-C".into(), cc.to_owned()]);
        }
        if cfg.workload == Workload::Stream && cfg.stream.reverse {
            a.push("-R".into());
        }
        // iperf3's sendfile mode sends a temp file of its own.
        if self.zerocopy || (cfg.workload == Workload::Stream && cfg.stream.sendfile.is_some()) {
            a.push("-Z".into());
        }
        a.push("-J".into());
        a
    }

    /// A listening one-shot server, on a fresh port when the first one is taken.
    /// A listening one-shot server, on a fresh port when the first one is taken.
    fn start_server(&self, cfg: &Config) -> Result<(Server, u16)> {
        start_listening(NAME, |port| {
            let mut cmd = within_cpu_set(cfg, &self.bin);
            cmd.args(self.server_args(cfg, port));
            Ok(cmd)
        })
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
        let show = |c: Command, args: Vec<String>| {
            let mut all = vec![c.get_program().to_string_lossy().into_owned()];
            all.extend(c.get_args().map(|a| a.to_string_lossy().into_owned()));
            all.extend(args);
            all.join(" ").replace("-p 0", "-p PORT")
        };
        format!(
            "{} ; {}",
            show(within_cpu_set(cfg, &self.bin), self.server_args(cfg, 0)),
            show(within_cpu_set(cfg, &self.bin), self.client_args(cfg, 0))
        )
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        if !matches!(cfg.workload, Workload::Stream | Workload::UdpStream) {
            return Err(BenchError::Usage("iperf3 is a stream and UDP stream peer only".into()));
        }
        let (mut server, port) = self.start_server(cfg)?;
        let server_pid = server.pid();
        let mut client = within_cpu_set(cfg, &self.bin);
        client.args(self.client_args(cfg, port));
        let measured = run_measured_profiled(NAME, &mut client, cfg.run_timeout(), None, cfg.profile);
        // The one-shot server exits after its client; stop it if it does not.
        let server_exit = server.wait(Duration::from_secs(5));
        let mut m = measured?;
        let stopped = m.profile.take();
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
        let work = match cfg.workload {
            Workload::UdpStream => parse_udp(&report, cfg)?,
            _ => parse(&report, cfg)?,
        };
        let tool_pids: Vec<u32> = std::iter::once(m.pid).chain(server_pid).collect();
        Ok(RunResult::new(self.name(), m.cpu, work).with_profile(stopped, &tool_pids))
    }
}

/// Received bytes and bits per second out of iperf3's JSON, after checking that it ran
/// with the requested streams, write size and congestion control.
pub fn parse(r: &Value, cfg: &Config) -> Result<Work> {
    check_blocks(r, cfg)?;
    if let Some(want) = cfg.tcp_cc() {
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

/// The streams and block size iperf3 says it ran are the ones asked for.
fn check_blocks(r: &Value, cfg: &Config) -> Result<()> {
    let blksize = json_u64(r, NAME, "/start/test_start/blksize")?;
    if blksize != u64::from(cfg.size) {
        return Err(BenchError::Tool(format!("iperf3 wrote {blksize}-byte blocks, not {}", cfg.size)));
    }
    // Older releases leave num_streams out; a different count is an error.
    if let Some(n) = r.pointer("/start/test_start/num_streams").and_then(Value::as_u64) {
        if n != u64::from(cfg.layout.flows) {
            return Err(BenchError::Tool(format!("iperf3 ran {n} streams, not {}", cfg.layout.flows)));
        }
    }
    Ok(())
}

/// UDP: iperf3's receiver counts `packets` (the highest sequence number seen) and
/// `lost_packets`; received = packets - lost, checked against its bytes.
pub fn parse_udp(r: &Value, cfg: &Config) -> Result<Work> {
    check_blocks(r, cfg)?;
    let blk = u64::from(cfg.size);
    let packets = json_u64(r, NAME, "/end/sum_received/packets")?;
    let lost = json_u64(r, NAME, "/end/sum_received/lost_packets")?;
    let bytes = json_u64(r, NAME, "/end/sum_received/bytes")?;
    let secs = json_f64(r, NAME, "/end/sum_received/seconds")?;
    let sent = json_u64(r, NAME, "/end/sum_sent/packets")?;
    let received = packets.saturating_sub(lost);
    if received * blk != bytes {
        return Err(BenchError::Tool(format!(
            "iperf3's receiver counted {packets} packets, {lost} lost, but {bytes} bytes: not {blk} bytes each"
        )));
    }
    let received_per_sec = if secs > 0.0 { received as f64 / secs } else { 0.0 };
    Ok(Work::Udp { received, sent, datagram_bytes: cfg.size, received_per_sec })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::Layout;
    use serde_json::json;

    fn cfg() -> Config {
        Config::new(Workload::Stream, 5, (0, 1), 131072, Some("cubic".into()))
    }

    fn udp_cfg() -> Config {
        let mut c = Config::new(Workload::UdpStream, 3, (0, 1), 64, None);
        c.udp.socket_buffer = Some("8M".into());
        c
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

    #[test]
    fn many_streams_share_a_cpu_set_under_taskset() {
        let i = Iperf3 { bin: "iperf3".into(), zerocopy: false };
        let mut c = cfg();
        c.layout = Layout { flows: 8, threads: 2, cpu_set: Some("0,1".into()) };
        assert_eq!(i.client_args(&c, 5).join(" "), "-c 127.0.0.1 -p 5 -t 5 -P 8 -l 131072 -C cubic -J");
        assert_eq!(i.server_args(&c, 5).join(" "), "-s -1 -B 127.0.0.1 -p 5");
        assert!(i.describe(&c).starts_with("taskset -c 0,1 iperf3 -s"), "{}", i.describe(&c));
        let mut r = report();
        assert!(parse(&r, &c).unwrap_err().to_string().contains("1 streams, not 8"));
        r["start"]["test_start"]["num_streams"] = json!(8);
        assert!(parse(&r, &c).is_ok());
    }

    #[test]
    fn udp_command_and_received_is_packets_minus_lost() {
        let i = Iperf3 { bin: "iperf3".into(), zerocopy: false };
        assert_eq!(
            i.client_args(&udp_cfg(), 5).join(" "),
            "-c 127.0.0.1 -p 5 -t 3 -u -b 0 -l 64 -w 8M -A 0 -J"
        );
        let r = json!({
            "start": {"test_start": {"blksize": 64}},
            "end": {
                "sum_sent": {"packets": 282930, "bytes": 18107520u64},
                "sum_received": {"seconds": 2.0, "packets": 282930, "lost_packets": 104966, "bytes": 11389696u64}
            }
        });
        let Work::Udp { received, sent, received_per_sec, .. } = parse_udp(&r, &udp_cfg()).unwrap() else {
            panic!()
        };
        assert_eq!((received, sent), (177964, 282930));
        assert_eq!(received_per_sec, 88982.0);
        let mut bad = r.clone();
        bad["end"]["sum_received"]["bytes"] = json!(1);
        assert!(parse_udp(&bad, &udp_cfg()).is_err());
    }
}
