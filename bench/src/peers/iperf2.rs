//! iperf 2, the peer of many request/response flows: its TCP bounceback
//! (`--bounceback --bounceback-period 0 -l SIZE -P FLOWS`) opens FLOWS connections, each a
//! thread that writes a request and reads its echo, one in flight per connection, like
//! ringperf's flows. iperf 2 always sets TCP_NODELAY (and TCP_QUICKACK on its server), so
//! ringperf runs with --nodelay against it. `--no-connect-sync`: iperf 2.1.8 with -P 100
//! and its connect barrier hangs after the test on this host.
//!
//! Transactions/s are the sum of its per-flow rps; transactions the sum of its per-flow
//! bounceback counts.

use std::path::PathBuf;

use crate::error::{BenchError, Result};
use crate::peers::{Config, RunResult, Tool, Work, Workload};
use crate::process::{require, run_measured, start_listening, within_cpu_set, Server};

pub const NAME: &str = "iperf2 bounceback";
pub const INSTALL_HINT: &str = "install iperf 2 (apt-get install -y iperf)";

pub struct Iperf2 {
    pub bin: PathBuf,
}

impl Iperf2 {
    pub fn find() -> Result<Iperf2> {
        Ok(Iperf2 { bin: require("iperf", INSTALL_HINT)? })
    }

    fn server_args(port: u16) -> Vec<String> {
        ["-s", "-B", "127.0.0.1", "-p", &port.to_string(), "-e"].map(String::from).to_vec()
    }

    fn client_args(cfg: &Config, port: u16) -> Vec<String> {
        [
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--bounceback",
            "--bounceback-period",
            "0",
            "-l",
            &cfg.size.to_string(),
            "-P",
            &cfg.layout.flows.to_string(),
            "-t",
            &cfg.secs.to_string(),
            "-e",
            "--no-connect-sync",
        ]
        .map(String::from)
        .to_vec()
    }

    fn start_server(&self, cfg: &Config) -> Result<(Server, u16)> {
        start_listening("iperf", |port| {
            let mut cmd = within_cpu_set(cfg, &self.bin);
            cmd.args(Self::server_args(port));
            Ok(cmd)
        })
    }
}

impl Tool for Iperf2 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self, cfg: &Config) -> String {
        let show = |args: Vec<String>| {
            let c = within_cpu_set(cfg, &self.bin);
            let mut all = vec![c.get_program().to_string_lossy().into_owned()];
            all.extend(c.get_args().map(|a| a.to_string_lossy().into_owned()));
            all.extend(args);
            all.join(" ").replace("-p 0", "-p PORT")
        };
        format!("{} ; {}", show(Self::server_args(0)), show(Self::client_args(cfg, 0)))
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        if cfg.workload != Workload::Rr {
            return Err(BenchError::Usage("iperf 2's bounceback is an rr peer only".into()));
        }
        let (mut server, port) = self.start_server(cfg)?;
        let mut client = within_cpu_set(cfg, &self.bin);
        client.args(Self::client_args(cfg, port));
        let m = run_measured("iperf", &mut client, cfg.run_timeout(), None);
        // iperf 2's server serves until stopped (SIGINT).
        let exit = server.stop();
        let m = m?;
        let bb = parse_bounceback(&m.stdout)
            .map_err(|e| BenchError::Tool(format!("{e}\n{}\n{}", m.output_excerpt(), exit.describe())))?;
        if bb.flows != cfg.layout.flows as usize {
            return Err(BenchError::Tool(format!(
                "iperf reported {} bounceback flows, not {}:\n{}",
                bb.flows,
                cfg.layout.flows,
                m.output_excerpt()
            )));
        }
        let work = Work::Rr {
            transactions: bb.count as u64,
            tps_by_count: bb.rps,
            tps_by_rtt: if bb.mean_rtt_us > 0.0 { 1e6 / bb.mean_rtt_us * bb.flows as f64 } else { 0.0 },
            mean_rtt_us: bb.mean_rtt_us,
        };
        Ok(RunResult::new(NAME, m.cpu, work))
    }
}

/// The sum over iperf 2's per-flow bounceback lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounceback {
    pub rps: f64,
    pub count: f64,
    /// Count-weighted mean round trip, µs.
    pub mean_rtt_us: f64,
    pub flows: usize,
}

/// iperf 2's bounceback lines, one per flow:
/// `[  2] 0.0000-2.0156 sec  2.93 MBytes  12.2 Mbits/sec  24034=0.082/0.017/9.456/0.258 ms  0  576K/1942 us  12184 rps`
pub fn parse_bounceback(text: &str) -> Result<Bounceback> {
    let (mut rps, mut count, mut rtt_weighted, mut flows) = (0.0, 0.0, 0.0, 0usize);
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('[') || line.starts_with("[SUM") || !line.ends_with(" rps") {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let r: f64 = words[words.len() - 2].parse().map_err(|_| bad_line(line))?;
        let bb = words.iter().find(|w| w.contains('=') && w.contains('/')).ok_or_else(|| bad_line(line))?;
        let (n, stats) = bb.split_once('=').ok_or_else(|| bad_line(line))?;
        let n: f64 = n.parse().map_err(|_| bad_line(line))?;
        let avg_ms: f64 =
            stats.split('/').next().and_then(|a| a.parse().ok()).ok_or_else(|| bad_line(line))?;
        rps += r;
        count += n;
        rtt_weighted += n * avg_ms * 1000.0;
        flows += 1;
    }
    if flows == 0 {
        return Err(BenchError::Tool(
            "iperf printed no bounceback line (`... N rps`): its test did not run".into(),
        ));
    }
    let mean_rtt_us = if count > 0.0 { rtt_weighted / count } else { f64::NAN };
    Ok(Bounceback { rps, count, mean_rtt_us, flows })
}

fn bad_line(line: &str) -> BenchError {
    BenchError::Tool(format!("cannot read iperf's bounceback line: {line}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::Layout;

    #[test]
    fn bounceback_lines_parse() {
        let text = "[ ID] Interval            Transfer    Bandwidth         BB cnt=avg/min/max/stdev         Rtry  Cwnd/RTT    RPS\n\
[  2] 0.0000-2.0156 sec  2.93 MBytes  12.2 Mbits/sec    24000=0.080/0.017/9.456/0.258 ms    0  576K/1942 us    12184 rps\n\
[  2] 0.0000-2.0156 sec BB8(f)-PDF: bin(w=100us):cnt(24034)=1:21167,2:2399 (5.00/95.00/99.7%=1/2/29,Outliers=245,obl/obu=0/0)\n\
[  4] 0.0000-2.0177 sec  2.95 MBytes  12.3 Mbits/sec    8000=0.120/0.017/15.805/0.337 ms    0  576K/2155 us    4000 rps\n\
[SUM] 0.0000-2.0002 sec  0.000 Bytes  0.000 bits/sec  0/0         0\n";
        let bb = parse_bounceback(text).unwrap();
        assert_eq!((bb.rps, bb.count, bb.flows), (16184.0, 32000.0, 2));
        assert!((bb.mean_rtt_us - 90.0).abs() < 1e-9, "{}", bb.mean_rtt_us);
        assert!(parse_bounceback("nothing\n").is_err());
    }

    #[test]
    fn command_runs_every_flow_in_one_cpu_set() {
        let mut c = Config::new(Workload::Rr, 3, (0, 1), 64, None);
        c.layout = Layout { flows: 100, threads: 2, cpu_set: Some("0,1".into()) };
        let i = Iperf2 { bin: "iperf".into() };
        let d = i.describe(&c);
        assert!(
            d.starts_with("taskset -c 0,1 iperf -s -B 127.0.0.1 -p PORT -e ; taskset -c 0,1 iperf -c"),
            "{d}"
        );
        assert!(d.contains("--bounceback --bounceback-period 0 -l 64 -P 100 -t 3"), "{d}");
    }
}
