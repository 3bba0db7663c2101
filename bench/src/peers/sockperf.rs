//! sockperf, the rr peer: TCP ping-pong, server and client pinned with taskset.
//!
//! What sockperf 3.7 prints in ping-pong mode (read from its output and its client.cpp):
//! - `[Total Run] RunTime=T sec; ...; SentMessages=S; ReceivedMessages=R`: every message
//!   of the timed run, from "Starting test..." to the timer.
//! - `[Valid Duration] ...` and the statistics after it leave out the first 400 ms (warm
//!   up) and the last 50 ms of that run.
//! - `avg-latency=X` is the mean round trip divided by 2 (one way); with `--full-rtt`,
//!   which the bench passes, it prints `avg-rtt=X`, the mean round trip itself, in µs.
//! - Messages are at least 14 bytes (its header); the server echoes each one back whole,
//!   so request size = response size = `-m`.
//! - Between connecting and "Starting test..." it sleeps about 2 s (warm-up messages and a
//!   fixed pause), so the bench opens its CPU window at that line, not at process start.
//! - It exits 0 even when it cannot connect; failure shows as a missing `[Total Run]` line.

use std::path::PathBuf;
use std::process::Command;

use crate::error::{BenchError, Result};
use crate::peers::run_result::SOCKPERF;
use crate::peers::{Config, RunResult, Tool, Work, Workload};
use crate::process::{require, run_measured_profiled, start_listening, strip_ansi, Server};

pub const NAME: &str = SOCKPERF;
pub const INSTALL_HINT: &str = "install sockperf (apt-get install -y sockperf)";
/// sockperf's message header: smaller messages are refused.
pub const MIN_MESSAGE: u32 = 14;
/// sockperf's largest payload.
pub const MAX_MESSAGE: u32 = 65_507;
/// The line after which sockperf's timed run starts.
const TEST_STARTS: &str = "Starting test";

pub struct Sockperf {
    pub bin: PathBuf,
    pub taskset: PathBuf,
}

/// The figures of one ping-pong run.
#[derive(Clone, Debug, PartialEq)]
pub struct PingPong {
    pub total_runtime_s: f64,
    pub total_received: u64,
    pub observations: u64,
    pub mean_rtt_us: f64,
}

impl Sockperf {
    pub fn find() -> Result<Sockperf> {
        Ok(Sockperf {
            bin: require(NAME, INSTALL_HINT)?,
            taskset: require("taskset", "install util-linux (apt-get install -y util-linux)")?,
        })
    }

    fn server_args(&self, cfg: &Config, port: u16) -> Vec<String> {
        let mut a = vec!["-c".into(), cfg.server_cpu.to_string(), self.bin.display().to_string()];
        a.extend(["server", "--tcp", "-i", "127.0.0.1", "-p"].map(String::from));
        a.push(port.to_string());
        a
    }

    fn client_args(&self, cfg: &Config, port: u16) -> Vec<String> {
        let mut a = vec!["-c".into(), cfg.client_cpu.to_string(), self.bin.display().to_string()];
        a.extend(["ping-pong", "--tcp", "-i", "127.0.0.1", "-p"].map(String::from));
        a.extend([port.to_string(), "-t".into(), cfg.secs.to_string(), "-m".into(), cfg.size.to_string()]);
        a.push("--full-rtt".into());
        a
    }

    fn start_server(&self, cfg: &Config) -> Result<(Server, u16)> {
        start_listening(NAME, |port| {
            let mut cmd = Command::new(&self.taskset);
            cmd.args(self.server_args(cfg, port));
            Ok(cmd)
        })
    }
}

impl Tool for Sockperf {
    fn name(&self) -> &'static str {
        NAME
    }

    fn describe(&self, cfg: &Config) -> String {
        format!(
            "{t} {} ; {t} {}",
            self.server_args(cfg, 0).join(" ").replace("-p 0", "-p PORT"),
            self.client_args(cfg, 0).join(" ").replace("-p 0", "-p PORT"),
            t = self.taskset.display()
        )
    }

    fn run(&self, cfg: &Config) -> Result<RunResult> {
        if cfg.workload != Workload::Rr {
            return Err(BenchError::Usage("sockperf is the rr peer only".into()));
        }
        let (mut server, port) = self.start_server(cfg)?;
        let server_pid = server.pid();
        let mut client = Command::new(&self.taskset);
        client.args(self.client_args(cfg, port));
        let measured =
            run_measured_profiled(NAME, &mut client, cfg.run_timeout(), Some(TEST_STARTS), cfg.profile);
        let server_exit = server.stop();
        let mut m = measured?;
        let stopped = m.profile.take();
        let pp = parse_output(&m.stdout).map_err(|e| {
            BenchError::Tool(format!(
                "{e}\nclient ({}):\n{}\n{}",
                m.status,
                m.output_excerpt(),
                server_exit.describe()
            ))
        })?;
        let tps_by_count =
            if pp.total_runtime_s > 0.0 { pp.total_received as f64 / pp.total_runtime_s } else { 0.0 };
        let work = Work::Rr {
            transactions: pp.total_received,
            tps_by_count,
            tps_by_rtt: 1e6 / pp.mean_rtt_us,
            mean_rtt_us: pp.mean_rtt_us,
        };
        let tool_pids: Vec<u32> = std::iter::once(m.pid).chain(server_pid).collect();
        Ok(RunResult::new(NAME, m.cpu, work).with_profile(stopped, &tool_pids))
    }
}

/// `key=value` out of a sockperf line; the value ends at a space, a ';' or a '('.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(key)? + key.len();
    let rest = &line[start..];
    let end = rest.find([' ', ';', '(', '\t']).unwrap_or(rest.len());
    Some(&rest[..end])
}

fn number<T: std::str::FromStr>(line: Option<&str>, key: &str) -> Result<T> {
    line.and_then(|l| value_of(l, key)).and_then(|v| v.parse().ok()).ok_or_else(|| {
        BenchError::Tool(format!("sockperf's output has no readable '{key}': is this a supported version?"))
    })
}

/// Reads sockperf ping-pong's stdout (colour codes and all).
pub fn parse_output(stdout: &str) -> Result<PingPong> {
    let text = strip_ansi(stdout);
    let line_with = |s: &str| text.lines().find(|l| l.contains(s));
    let Some(total) = line_with("[Total Run]") else {
        let errors: Vec<&str> = text.lines().filter(|l| l.contains("ERROR")).collect();
        return Err(BenchError::Tool(if errors.is_empty() {
            "sockperf printed no '[Total Run]' line: its test did not run".into()
        } else {
            format!("sockperf failed: {}", errors.join("; "))
        }));
    };
    let total_runtime_s = number(Some(total), "RunTime=")?;
    let total_received = number(Some(total), "ReceivedMessages=")?;
    let mean_rtt_us = match line_with("avg-rtt=") {
        Some(l) => number::<f64>(Some(l), "avg-rtt=")?,
        // Without --full-rtt sockperf prints half the round trip.
        None => 2.0 * number::<f64>(line_with("avg-latency="), "avg-latency=")?,
    };
    if !(mean_rtt_us.is_finite() && mean_rtt_us > 0.0) {
        return Err(BenchError::Tool(format!("sockperf reported a mean round trip of {mean_rtt_us} µs")));
    }
    let observations = line_with(" observations")
        .and_then(|l| l.split_whitespace().skip_while(|w| *w != "Total").nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Ok(PingPong { total_runtime_s, total_received, observations, mean_rtt_us })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "sockperf: \u{1b}[2;35m== version #3.7-no.git == \u{1b}[0m\n\
sockperf[CLIENT] send on:sockperf: using recvfrom() to block on socket(s)\n\
\n\
[ 0] IP = 127.0.0.1       PORT = 15124 # TCP\n\
sockperf: Warmup stage (sending a few dummy messages)...\n\
sockperf: Starting test...\n\
sockperf: Test end (interrupted by timer)\n\
sockperf: Test ended\n\
sockperf: [Total Run] RunTime=1.001 sec; Warm up time=400 msec; SentMessages=12616; ReceivedMessages=12615\n\
sockperf: ========= Printing statistics for Server No: 0\n\
sockperf: [Valid Duration] RunTime=0.550 sec; SentMessages=6846; ReceivedMessages=6846\n\
sockperf: \u{1b}[2;35m====> avg-rtt=80.345 (std-dev=49.903)\u{1b}[0m\n\
sockperf: # dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0\n\
sockperf: Summary: Round trip is 80.345 usec\n\
sockperf: \u{1b}[2;35mTotal 6846 observations\u{1b}[0m; each percentile contains 68.46 observations\n\
sockperf: ---> <MAX> observation = 2851.075\n";

    #[test]
    fn full_rtt_output_parses() {
        let pp = parse_output(OUTPUT).unwrap();
        assert_eq!(
            pp,
            PingPong {
                total_runtime_s: 1.001,
                total_received: 12615,
                observations: 6846,
                mean_rtt_us: 80.345
            }
        );
    }

    #[test]
    fn one_way_latency_is_doubled() {
        let out = OUTPUT.replace("avg-rtt=80.345", "avg-latency=40.000");
        assert_eq!(parse_output(&out).unwrap().mean_rtt_us, 80.0);
    }

    #[test]
    fn a_failed_connect_is_an_error_even_with_exit_0() {
        let out = "sockperf: == version #3.7-no.git == \n\
                   sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)\n";
        let e = parse_output(out).unwrap_err().to_string();
        assert!(e.contains("Connection refused"), "{e}");
        assert!(parse_output("").is_err());
    }

    #[test]
    fn commands_pin_with_taskset_and_use_full_rtt() {
        let s = Sockperf { bin: "/usr/bin/sockperf".into(), taskset: "taskset".into() };
        let cfg = Config::new(Workload::Rr, 5, (0, 1), 64, None);
        assert_eq!(
            s.server_args(&cfg, 11111).join(" "),
            "-c 1 /usr/bin/sockperf server --tcp -i 127.0.0.1 -p 11111"
        );
        assert_eq!(
            s.client_args(&cfg, 11111).join(" "),
            "-c 0 /usr/bin/sockperf ping-pong --tcp -i 127.0.0.1 -p 11111 -t 5 -m 64 --full-rtt"
        );
    }
}
