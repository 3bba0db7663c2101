//! netperf, the classic peer of every seed workload: `netserver` on a fresh port, `netperf`
//! pinned with its own -T (client CPU, server CPU), CPU measured on both sides (-c -C), and
//! its omni output selectors (-k) read back as KEY=VALUE lines.
//!
//! TCP_STREAM sends -m bytes per send and receives -M per receive; TCP_RR, TCP_CRR and
//! UDP_RR move -r REQ,RSP with one transaction in flight. Congestion control is the
//! test-specific -K (TCP only).

use std::path::PathBuf;
use std::process::Command;

use crate::error::{BenchError, Result};
use crate::peers::{anchors, key_values, kv_f64, Config, RunResult, Tool, Work, Workload};
use crate::process::{run_measured_profiled, start_listening, Server};

pub const NAME: &str = "netperf";

/// What the bench asks netperf to print: the work, its window and its own service demand.
const MAERTS_KEYS: &str =
    "THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SD,LOCAL_BYTES_RECVD,LOCAL_CONG_CONTROL";
const STREAM_KEYS: &str =
    "THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SD,REMOTE_BYTES_RECVD,LOCAL_CONG_CONTROL";
const UDP_STREAM_KEYS: &str =
    "THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SD,LOCAL_BYTES_SENT,REMOTE_BYTES_RECVD";
const RR_KEYS: &str = "THROUGHPUT,THROUGHPUT_UNITS,TRANSACTION_RATE,ELAPSED_TIME,LOCAL_SD,MEAN_LATENCY";

pub struct Netperf {
    pub netperf: PathBuf,
    pub netserver: PathBuf,
}

impl Netperf {
    pub fn find() -> Result<Netperf> {
        Ok(Netperf { netperf: anchors::locate("netperf")?, netserver: anchors::locate("netserver")? })
    }

    fn server_args(port: u16) -> Vec<String> {
        // -D: stay in the foreground, so the bench owns and reaps it; -f: serve the test in
        // this process, not a forked child, so its CPU reaches the bench's getrusage.
        ["-D", "-f", "-4", "-L", "127.0.0.1", "-p", &port.to_string()].map(String::from).to_vec()
    }

    fn client_args(cfg: &Config, port: u16) -> Vec<String> {
        let test = cfg.netperf_test();
        let mut a: Vec<String> = [
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            test,
            "-l",
            &cfg.secs.to_string(),
            "-T",
            &format!("{},{}", cfg.client_cpu, cfg.server_cpu),
            "-c",
            "-C",
            "-P",
            "0",
        ]
        .map(String::from)
        .to_vec();
        // TCP_SENDFILE sends the file given globally; it is not an omni test, so it prints
        // its classic row instead of -k selectors.
        if let Some(f) = &cfg.stream.sendfile {
            a.extend(["-F".into(), f.display().to_string()]);
        }
        a.push("--".into());
        match cfg.workload {
            Workload::Stream => {
                let size = cfg.size.to_string();
                a.extend(["-m".into(), size.clone(), "-M".into(), size]);
                match (cfg.stream.reverse, cfg.stream.sendfile.is_some()) {
                    (true, _) => a.extend(["-k".into(), MAERTS_KEYS.into()]),
                    (false, false) => a.extend(["-k".into(), STREAM_KEYS.into()]),
                    (false, true) => {}
                }
            }
            Workload::Rr | Workload::Crr | Workload::UdpRr => {
                a.extend(["-r".into(), format!("{},{}", cfg.size, cfg.size), "-k".into(), RR_KEYS.into()]);
            }
            Workload::UdpStream => {
                let size = cfg.size.to_string();
                a.extend(["-m".into(), size.clone(), "-M".into(), size]);
                if let Some(b) = &cfg.udp.socket_buffer {
                    a.extend(["-s".into(), b.clone(), "-S".into(), b.clone()]);
                }
                a.extend(["-k".into(), UDP_STREAM_KEYS.into()]);
            }
        }
        // TCP_SENDFILE is not an omni test and takes no -K.
        if let Some(cc) = cfg.tcp_cc().filter(|_| cfg.stream.sendfile.is_none()) {
            a.extend(["-K".into(), cc.to_owned()]);
        }
        a
    }

    fn start_server(&self) -> Result<(Server, u16)> {
        start_listening("netserver", |port| {
            let mut cmd = Command::new(&self.netserver);
            cmd.args(Self::server_args(port));
            Ok(cmd)
        })
    }
}

impl Tool for Netperf {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self, cfg: &Config) -> String {
        format!(
            "{} {} ; {} {}",
            self.netserver.display(),
            Self::server_args(0).join(" ").replace("-p 0", "-p PORT"),
            self.netperf.display(),
            Self::client_args(cfg, 0).join(" ").replace("-p 0", "-p PORT")
        )
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        if cfg.layout.flows > 1 || cfg.udp.rate.is_some() || cfg.udp.gso {
            return Err(BenchError::Usage(
                "netperf runs one unpaced flow per process: it is no peer for many flows, -b or GSO".into(),
            ));
        }
        if cfg.stream.sendfile.is_some() && cfg.tcp_cc().is_some() {
            return Err(BenchError::Usage(
                "netperf TCP_SENDFILE cannot set a congestion control: compare it under the system default"
                    .into(),
            ));
        }
        let (mut server, port) = self.start_server()?;
        // -f: netserver serves the test itself, so its one process is the whole server side.
        let server_pid = server.pid();
        let mut client = Command::new(&self.netperf);
        client.args(Self::client_args(cfg, port));
        let measured = run_measured_profiled(NAME, &mut client, cfg.run_timeout(), None, cfg.profile);
        let server_exit = server.stop();
        let mut m = measured?;
        let stopped = m.profile.take();
        let failed = |e: BenchError| {
            BenchError::Tool(format!(
                "{e}\nnetperf ({}):\n{}\n{}",
                m.status,
                m.output_excerpt(),
                server_exit.describe()
            ))
        };
        if !m.status.success() {
            return Err(failed(BenchError::Tool("netperf exited with an error".into())));
        }
        let (work, own) = parse_output(&m.stdout, cfg).map_err(failed)?;
        let tool_pids: Vec<u32> = std::iter::once(m.pid).chain(server_pid).collect();
        Ok(RunResult { own_service_demand: Some(own), ..RunResult::new(NAME, m.cpu, work) }
            .with_profile(stopped, &tool_pids))
    }
}

/// The work and netperf's own local service demand, out of its -k output.
pub fn parse_output(stdout: &str, cfg: &Config) -> Result<(Work, f64)> {
    if cfg.workload == Workload::Stream && cfg.stream.sendfile.is_some() && !cfg.stream.reverse {
        return parse_sendfile_row(stdout);
    }
    let kv = key_values(stdout);
    let f = |key: &str| kv_f64(&kv, NAME, key);
    let elapsed = f("ELAPSED_TIME")?;
    if elapsed <= 0.0 {
        return Err(BenchError::Tool(format!("netperf reported an elapsed time of {elapsed} s")));
    }
    let own = f("LOCAL_SD")?;
    let work = match cfg.workload {
        Workload::Stream => {
            let units = kv.get("THROUGHPUT_UNITS").copied().unwrap_or("");
            if units != "10^6bits/s" {
                return Err(BenchError::Tool(format!(
                    "netperf's throughput is in '{units}', not 10^6bits/s"
                )));
            }
            if let (Some(cc), Some(got)) = (&cfg.cc, kv.get("LOCAL_CONG_CONTROL")) {
                if got != cc {
                    return Err(BenchError::Tool(format!(
                        "netperf ran with congestion control {got}, not {cc}"
                    )));
                }
            }
            let received =
                if cfg.stream.reverse { f("LOCAL_BYTES_RECVD")? } else { f("REMOTE_BYTES_RECVD")? };
            Work::Stream { bytes: received as u64, bits_per_sec: f("THROUGHPUT")? * 1e6 }
        }
        Workload::UdpStream => {
            let size = u64::from(cfg.size.max(1));
            let received = f("REMOTE_BYTES_RECVD")? as u64 / size;
            Work::Udp {
                received,
                sent: f("LOCAL_BYTES_SENT")? as u64 / size,
                datagram_bytes: cfg.size,
                received_per_sec: received as f64 / elapsed,
            }
        }
        Workload::Rr | Workload::Crr | Workload::UdpRr => {
            let rate = f("TRANSACTION_RATE")?;
            let mean_rtt_us = f("MEAN_LATENCY")?;
            Work::Rr {
                transactions: (rate * elapsed).round() as u64,
                tps_by_count: rate,
                tps_by_rtt: if mean_rtt_us > 0.0 { 1e6 / mean_rtt_us } else { 0.0 },
                mean_rtt_us,
            }
        }
    };
    Ok((work, own))
}

/// TCP_SENDFILE's classic row with -P 0 (-c -C): receive socket, send socket, message
/// size, elapsed s, 10^6 bits/s, local and remote utilization %, local and remote service
/// demand us/KB. Bytes are the rate over the elapsed time (netperf prints no count).
fn parse_sendfile_row(stdout: &str) -> Result<(Work, f64)> {
    let row = stdout
        .lines()
        .map(|l| l.split_whitespace().filter_map(|w| w.parse::<f64>().ok()).collect::<Vec<f64>>())
        .find(|v| v.len() == 9)
        .ok_or_else(|| BenchError::Tool("netperf TCP_SENDFILE printed no result row of 9 numbers".into()))?;
    let (elapsed, mbps, local_sd) = (row[3], row[4], row[7]);
    if elapsed <= 0.0 {
        return Err(BenchError::Tool(format!("netperf reported an elapsed time of {elapsed} s")));
    }
    let bytes = (mbps * 1e6 * elapsed / 8.0).round() as u64;
    Ok((Work::Stream { bytes, bits_per_sec: mbps * 1e6 }, local_sd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::StreamOptions;

    fn cfg(workload: Workload) -> Config {
        Config::new(workload, 4, (0, 1), 1, Some("cubic".into()))
    }

    #[test]
    fn rr_output_parses_into_transactions_and_latency() {
        let out = "THROUGHPUT=12066.78\nTHROUGHPUT_UNITS=Trans/s\nTRANSACTION_RATE=12066.779\n\
                   ELAPSED_TIME=2.00\nLOCAL_SD=52.711\nMEAN_LATENCY=82.69\n";
        let (work, own) = parse_output(out, &cfg(Workload::Rr)).unwrap();
        assert_eq!(own, 52.711);
        match work {
            Work::Rr { transactions, tps_by_count, mean_rtt_us, .. } => {
                assert_eq!(transactions, 24134);
                assert_eq!(tps_by_count, 12066.779);
                assert_eq!(mean_rtt_us, 82.69);
            }
            other => panic!("rr parsed as {other:?}"),
        }
    }

    #[test]
    fn stream_output_checks_units_and_congestion_control() {
        let out = "THROUGHPUT=69203.49\nTHROUGHPUT_UNITS=10^6bits/s\nELAPSED_TIME=2.00\nLOCAL_SD=0.213\n\
                   REMOTE_BYTES_RECVD=17303994368\nLOCAL_CONG_CONTROL=cubic\n";
        let (work, _) = parse_output(out, &cfg(Workload::Stream)).unwrap();
        assert!(matches!(work, Work::Stream { bytes: 17303994368, .. }));
        let bbr = out.replace("=cubic", "=bbr");
        assert!(parse_output(&bbr, &cfg(Workload::Stream)).unwrap_err().to_string().contains("bbr"));
        let kb = out.replace("10^6bits/s", "KBytes/s");
        assert!(parse_output(&kb, &cfg(Workload::Stream)).is_err());
        assert!(parse_output("", &cfg(Workload::Stream)).is_err());
    }

    #[test]
    fn udp_stream_counts_datagrams_from_bytes() {
        let mut c = cfg(Workload::UdpStream);
        c.size = 64;
        c.cc = None;
        let out = "THROUGHPUT=100.0\nTHROUGHPUT_UNITS=10^6bits/s\nELAPSED_TIME=2.00\nLOCAL_SD=1.0\n\
                   LOCAL_BYTES_SENT=6400\nREMOTE_BYTES_RECVD=3200\n";
        let (work, _) = parse_output(out, &c).unwrap();
        assert!(matches!(work, Work::Udp { received: 50, sent: 100, datagram_bytes: 64, .. }), "{work:?}");
        assert_eq!(
            Netperf::client_args(&c, 5).join(" "),
            format!(
                "-H 127.0.0.1 -p 5 -t UDP_STREAM -l 4 -T 0,1 -c -C -P 0 -- -m 64 -M 64 -k {UDP_STREAM_KEYS}"
            )
        );
    }

    #[test]
    fn maerts_and_sendfile_are_their_own_tests() {
        let mut c = cfg(Workload::Stream);
        c.size = 131072;
        c.stream.reverse = true;
        let a = Netperf::client_args(&c, 5).join(" ");
        assert!(a.contains("-t TCP_MAERTS") && a.contains(MAERTS_KEYS), "{a}");
        let out = "THROUGHPUT=6561.41\nTHROUGHPUT_UNITS=10^6bits/s\nELAPSED_TIME=1.00\nLOCAL_SD=2.497\n\
                   LOCAL_BYTES_RECVD=821195509\nLOCAL_CONG_CONTROL=cubic\n";
        let (work, sd) = parse_output(out, &c).unwrap();
        assert!(matches!(work, Work::Stream { bytes: 821195509, .. }), "{work:?}");
        assert_eq!(sd, 2.497);

        c.stream = StreamOptions { reverse: false, sendfile: Some("/tmp/f".into()) };
        let a = Netperf::client_args(&c, 5).join(" ");
        assert!(a.contains("-t TCP_SENDFILE") && a.contains("-P 0 -F /tmp/f -- -m 131072 -M 131072"), "{a}");
        assert!(!a.contains("-k") && !a.contains("-K"), "TCP_SENDFILE takes no output selectors or -K: {a}");
        let row = "131072  16384 131072    1.00       5728.01   99.50    99.50    2.846   2.846  \n";
        let (work, sd) = parse_output(row, &c).unwrap();
        assert!(matches!(work, Work::Stream { bytes: 716001250, .. }), "{work:?}");
        assert_eq!(sd, 2.846);
        assert!(parse_output("no row\n", &c).is_err());
    }

    #[test]
    fn commands_pin_with_netperf_t_and_measure_both_sides() {
        let a = Netperf::client_args(&cfg(Workload::Rr), 5555).join(" ");
        assert_eq!(
            a,
            format!("-H 127.0.0.1 -p 5555 -t TCP_RR -l 4 -T 0,1 -c -C -P 0 -- -r 1,1 -k {RR_KEYS} -K cubic")
        );
    }
}
