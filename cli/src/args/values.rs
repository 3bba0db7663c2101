//! Value parsers: each turns one flag's text (sizes, pairs, rates, durations, hosts, ports,
//! CPU lists, engine and figure names) into its typed value, or into a message that says
//! what to give instead (clap prints it after the flag).

use ringperf_control::access::Cidr;
use ringperf_core::harness::Harness;
use ringperf_core::load::LoadKind;
use ringperf_core::payload::PayloadFile;
use ringperf_core::spec::{CloseFirst, RecvEngine, SendEngine, TaskRun};
use ringperf_core::units::{check_size, parse_pair, parse_size};
use ringperf_core::Error;
use std::net::Ipv6Addr;

/// A library's error as the message clap prints after the flag.
fn msg(e: Error) -> String {
    e.to_string()
}

pub(super) fn parse_seconds(s: &str) -> Result<u64, String> {
    let secs: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("test length must be a positive number of seconds, not '{s}'"));
    }
    let ms = (secs * 1000.0).round();
    if ms < 1.0 {
        return Err("test length must be at least 0.001 s".into());
    }
    let max_s = ringperf_core::spec::MAX_DURATION_MS / 1000;
    if secs > max_s as f64 {
        return Err(format!("test length '{s}' is over {max_s} s: use at most {max_s}"));
    }
    Ok(ms as u64)
}

pub(super) fn parse_idle(s: &str) -> Result<u64, String> {
    let secs: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!(
            "--idle {s} leaves no idle phase to compare the loaded one with: give at least one interval, like --idle 2"
        ));
    }
    parse_seconds(s)
}

pub(super) fn parse_interval(s: &str) -> Result<u64, String> {
    let secs: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.01..=3600.0).contains(&secs) {
        return Err(format!("interval '{s}': use 0.01 to 3600 seconds"));
    }
    Ok((secs * 1000.0).round() as u64)
}

pub(super) fn parse_iterations(s: &str) -> Result<(u32, u32), String> {
    two_at_most(s)?;
    let (max, min) = parse_pair(s, |p| {
        p.trim().parse::<u32>().map_err(|_| Error::Usage(format!("'{p}' is not a number of iterations")))
    })
    .map_err(msg)?;
    let max = max.ok_or("give at least MAX, as in -i 10,3")?;
    if !(1..=100).contains(&max) {
        return Err(format!("MAX {max}: use 1 to 100 iterations"));
    }
    let min = min.unwrap_or(max);
    if min == 0 {
        return Err(format!(
            "MIN 0 in '{s}': at least one run is made; give MIN from 1 to MAX, as in -i {max},1"
        ));
    }
    if min > max {
        return Err(format!(
            "MIN {min} is above MAX {max}: the order is MAX,MIN (netperf's), as in -i {min},{max}"
        ));
    }
    Ok((max, min))
}

pub(super) fn parse_confidence(s: &str) -> Result<(f64, f64), String> {
    two_at_most(s)?;
    let num = |p: &str| p.trim().parse::<f64>().map_err(|_| Error::Usage(format!("'{p}' is not a number")));
    let (level, width) = parse_pair(s, num).map_err(msg)?;
    let level = level.unwrap_or(99.0);
    let width = width.unwrap_or(5.0);
    if !(50.0..100.0).contains(&level) {
        return Err(format!("confidence level {level} %: use 50 to 99.99"));
    }
    if !(width > 0.0 && width <= 100.0) {
        return Err(format!("interval width {width} %: use more than 0 and at most 100"));
    }
    Ok((level, width))
}

pub(super) fn parse_one_size(s: &str) -> Result<u32, String> {
    check_size("size", parse_size(s).map_err(msg)?).map_err(msg)
}

pub(super) fn parse_limit_size(s: &str) -> Result<u64, String> {
    let n = parse_size(s).map_err(msg)?;
    if n == 0 {
        return Err("a limit of 0 bytes would refuse every test: give a size like 64M".into());
    }
    Ok(n)
}

/// A pair flag takes one or two values: a third is a typo, not something to ignore.
fn two_at_most(s: &str) -> Result<(), String> {
    if s.matches(',').count() > 1 {
        return Err(format!("'{s}' has more than two values: give two, separated by one ','"));
    }
    Ok(())
}

/// SIZE,SIZE (one number sets both, either may be left out); a pair with neither side is
/// refused rather than silently meaning "the defaults".
pub(super) fn parse_sizes(s: &str) -> Result<(Option<u32>, Option<u32>), String> {
    two_at_most(s)?;
    let pair = parse_pair(s, |p| check_size("size", parse_size(p)?)).map_err(msg)?;
    if pair == (None, None) {
        return Err(format!(
            "'{s}' has no size on either side of the ',': give A,B, A, or ,B (e.g. 64K,64K)"
        ));
    }
    Ok(pair)
}

pub(super) fn parse_rate_arg(s: &str) -> Result<u64, String> {
    ringperf_core::units::parse_rate(s).map_err(msg)
}

/// Requests per second: a whole number with an optional k or m suffix (powers of 10).
pub(super) fn parse_tx_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let rate = num.parse::<f64>().map(|v| v * mult).unwrap_or(f64::NAN);
    if !(1.0..=1e9).contains(&rate) {
        return Err(format!("invalid rate '{s}': use requests per second from 1 to 1000m, like 2000 or 50k"));
    }
    Ok(rate.round() as u64)
}

pub(super) fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => t.parse::<u8>(),
    };
    v.map_err(|_| format!("'{s}' is not a TOS byte: use 0 to 255 or 0x00 to 0xff"))
}

/// A host as `-H`, `--from` and a plan's agents take it: a name or an address, and the
/// port when it names one (`HOST:PORT`, `[IPv6]:PORT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    /// The name or address to look up, IPv6 without its brackets.
    pub host: String,
    /// The port it named, if any.
    pub port: Option<u16>,
}

impl HostPort {
    /// Reads `name`, `name:port`, `192.0.2.1`, `192.0.2.1:port`, a bare IPv6 address (`::1`,
    /// which can name no port), `[::1]` or `[::1]:port`.
    pub fn parse(s: &str) -> Result<HostPort, String> {
        let t = s.trim();
        let is_v6 = |a: &str| a.split_once('%').map_or(a, |(addr, _scope)| addr).parse::<Ipv6Addr>().is_ok();
        let (host, port) = if let Some(inner) = t.strip_prefix('[') {
            match inner.split_once(']') {
                Some((addr, rest)) if is_v6(addr) => match rest {
                    "" => (addr, None),
                    _ => match rest.strip_prefix(':') {
                        Some(port) => (addr, Some(port)),
                        None => {
                            return Err(format!(
                                "'{s}': after ']' comes ':PORT' or nothing, as in [::1]:12866"
                            ))
                        }
                    },
                },
                _ => {
                    return Err(format!(
                        "'{s}' is not a bracketed IPv6 address: give it as [::1] or [::1]:12866"
                    ))
                }
            }
        } else {
            match t.matches(':').count() {
                0 => (t, None),
                1 => t.split_once(':').map(|(h, p)| (h, Some(p))).unwrap_or((t, None)),
                _ if is_v6(t) => (t, None),
                _ => {
                    return Err(format!(
                        "'{s}' is neither HOST:PORT nor an IPv6 address: an IPv6 address with a port goes in brackets, as in [::1]:12866"
                    ))
                }
            }
        };
        if host.is_empty() {
            return Err(format!(
                "'{s}' names no host: give a name or an address, like 192.0.2.1, ::1 or server.example"
            ));
        }
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(format!("'{p}' in '{s}' is not a port: give 1 to 65535 after the ':'")),
            },
        };
        Ok(HostPort { host: host.to_string(), port })
    }

    /// The port: the one it named, else the port flag's value if that was given, else
    /// `default`. `host_flag` and `port_flag` name the two flags (`-H`, `-p`) for the message
    /// that refuses two different ports.
    pub fn port_or(
        &self,
        host_flag: &str,
        port_flag: &str,
        given: Option<u16>,
        default: u16,
    ) -> Result<u16, String> {
        match (self.port, given) {
            (Some(named), Some(other)) if named != other => Err(format!(
                "{host_flag} {self} names port {named} and {port_flag} {other} another: give the port once, in {host_flag} or with {port_flag}"
            )),
            (Some(p), _) | (None, Some(p)) => Ok(p),
            (None, None) => Ok(default),
        }
    }
}

impl std::fmt::Display for HostPort {
    /// As it could be given again: an IPv6 address in brackets when a port follows.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(p) if self.host.contains(':') => write!(f, "[{}]:{p}", self.host),
            Some(p) => write!(f, "{}:{p}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

pub(super) fn parse_host(s: &str) -> Result<HostPort, String> {
    HostPort::parse(s)
}

/// An address of this host, as `HOST[:PORT]` reads it, for the messages of -L and --bind.
fn own_address(s: &str, hp: &HostPort) -> Result<std::net::IpAddr, String> {
    hp.host
        .parse()
        .map_err(|_| format!("'{s}' is not an IP address: give one of this host's, like 192.0.2.1 or ::1"))
}

/// serve --bind: an address of this host, with the control port or without
/// (`192.0.2.1:12866`, `[::1]:12866`).
pub(super) fn parse_bind(s: &str) -> Result<HostPort, String> {
    let hp = HostPort::parse(s)?;
    own_address(s, &hp)?;
    Ok(hp)
}

/// -L: an address of this host; a port is refused, since the kernel picks the local ones.
pub(super) fn parse_local(s: &str) -> Result<std::net::IpAddr, String> {
    let hp = HostPort::parse(s)?;
    let ip = own_address(s, &hp)?;
    match hp.port {
        Some(p) => Err(format!(
            "'{s}' names port {p}, but the local ports are the kernel's choice: give the address alone ({})",
            hp.host
        )),
        None => Ok(ip),
    }
}

pub(super) fn parse_cidr(s: &str) -> Result<Cidr, String> {
    s.parse().map_err(msg)
}

pub(super) fn parse_port_range(s: &str) -> Result<(u16, u16), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("'{s}' is not a port range: give LO-HI, like 40000-49999"))?;
    let port =
        |p: &str| p.trim().parse::<u16>().map_err(|_| format!("'{p}' is not a port number (1 to 65535)"));
    let (lo, hi) = (port(a)?, port(b)?);
    if lo == 0 || lo > hi {
        return Err(format!("'{s}' is not a range from low to high: use 1 <= LO <= HI"));
    }
    Ok((lo, hi))
}

/// A parsed `--cpus` list (a newtype, so clap takes it as one value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// `0,1,4-7`: CPU numbers and inclusive ranges.
pub(super) fn parse_cpu_list(s: &str) -> Result<CpuList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |p: &str| p.trim().parse::<usize>().map_err(|_| format!("'{p}' is not a CPU number"));
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 1024 {
                    return Err(format!("CPU range '{part}' is not a range from low to high"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err("give at least one CPU, like 0,1 or 0-3".into());
    }
    Ok(CpuList(out))
}

pub(super) fn parse_cpus(s: &str) -> Result<(Option<usize>, Option<usize>), String> {
    two_at_most(s)?;
    let pair = parse_pair(s, |p| {
        p.trim().parse::<usize>().map_err(|_| Error::Usage(format!("'{p}' is not a CPU number")))
    })
    .map_err(msg)?;
    if pair == (None, None) {
        return Err(format!("'{s}' names no CPU: give LCPU,RCPU, one CPU for both, or ,RCPU"));
    }
    Ok(pair)
}

/// The value of `all` whose name is `s`, or what is unknown (`unknown`) and the names to use.
fn by_name<T: Copy>(s: &str, all: &[T], name: fn(T) -> &'static str, unknown: &str) -> Result<T, String> {
    all.iter().copied().find(|&v| name(v) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
        format!("{unknown}: use one of {}", names.join(", "))
    })
}

pub(super) fn parse_send_engine(s: &str) -> Result<SendEngine, String> {
    by_name(s, &SendEngine::ALL, SendEngine::name, &format!("unknown send engine '{s}'"))
}

pub(super) fn parse_recv_engine(s: &str) -> Result<RecvEngine, String> {
    by_name(s, &RecvEngine::ALL, RecvEngine::name, &format!("unknown receive engine '{s}'"))
}

pub(super) fn parse_harness(s: &str) -> Result<Harness, String> {
    by_name(s, &Harness::ALL, Harness::name, &format!("unknown harness '{s}'"))
}

pub(super) fn parse_task_run(s: &str) -> Result<TaskRun, String> {
    by_name(s, &TaskRun::ALL, TaskRun::name, &format!("unknown task-run mode '{s}'"))
}

pub(super) fn parse_close_first(s: &str) -> Result<CloseFirst, String> {
    by_name(s, &CloseFirst::ALL, CloseFirst::name, &format!("unknown side '{s}' for --close-first"))
}

pub(super) fn parse_load_kind(s: &str) -> Result<LoadKind, String> {
    by_name(s, &LoadKind::ALL, LoadKind::name, &format!("unknown load '{s}'"))
}

pub(super) fn parse_label(s: &str) -> Result<String, String> {
    ringperf_core::payload::check_label(s).map_err(msg)?;
    Ok(s.to_string())
}

pub(super) fn parse_payload_file(s: &str) -> Result<PayloadFile, String> {
    PayloadFile::parse(s).map_err(msg)
}

pub(super) fn parse_chart_figure(s: &str) -> Result<String, String> {
    let names = ringperf_core::figures::names();
    if names.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!("unknown figure '{s}': use {}", names.join(", ")))
    }
}

/// A figure `ringperf diff` judges, by the names `--fail-on` takes (the figures' registry).
pub(super) fn parse_figure(s: &str) -> Result<String, String> {
    use ringperf_core::figures;
    if figures::judged_names().any(|n| n == s) {
        Ok(s.to_string())
    } else {
        let headline: Vec<&str> = figures::judged().filter_map(|f| f.name).collect();
        Err(format!(
            "unknown figure '{s}': use {}, or a profile category's cost (local_cost_tcp, remote_cost_copy, ...)",
            headline.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each form a host comes in: a name or an IPv4 address with a port or without, a bare
    /// IPv6 address (which cannot carry one), and a bracketed one with or without a port.
    #[test]
    fn a_host_is_read_with_its_port_in_every_form() {
        let hp = |host: &str, port: Option<u16>| Ok(HostPort { host: host.into(), port });
        assert_eq!(HostPort::parse("server.example"), hp("server.example", None));
        assert_eq!(HostPort::parse("server.example:4000"), hp("server.example", Some(4000)));
        assert_eq!(HostPort::parse("127.0.0.1"), hp("127.0.0.1", None));
        assert_eq!(HostPort::parse("127.0.0.1:41801"), hp("127.0.0.1", Some(41801)));
        assert_eq!(HostPort::parse("::1"), hp("::1", None));
        assert_eq!(
            HostPort::parse("2001:db8::1:5000"),
            hp("2001:db8::1:5000", None),
            "all of it is the address"
        );
        assert_eq!(HostPort::parse("fe80::1%eth0"), hp("fe80::1%eth0", None));
        assert_eq!(HostPort::parse("[::1]"), hp("::1", None));
        assert_eq!(HostPort::parse("[::1]:12866"), hp("::1", Some(12866)));
        assert_eq!(HostPort::parse(" [2001:db8::2]:1 "), hp("2001:db8::2", Some(1)));
        // Given back as it could be typed again.
        for s in ["server.example:4000", "::1", "[::1]:12866", "127.0.0.1"] {
            assert_eq!(HostPort::parse(s).map(|h| h.to_string()).as_deref(), Ok(s));
        }
    }

    /// What is not a host with a port is refused saying what to type instead.
    #[test]
    fn a_malformed_host_or_port_is_refused_with_the_form_to_use() {
        let refused = |s: &str| HostPort::parse(s).expect_err(s);
        assert!(refused("h:0").contains("'0' in 'h:0' is not a port: give 1 to 65535"), "{}", refused("h:0"));
        assert!(refused("h:65536").contains("is not a port"));
        assert!(refused("h:").contains("'' in 'h:' is not a port"));
        assert!(refused("h:http").contains("'http' in 'h:http' is not a port"));
        assert!(refused(":80").contains("names no host"));
        assert!(refused("").contains("names no host"));
        assert!(refused("[]:80").contains("not a bracketed IPv6 address: give it as [::1] or [::1]:12866"));
        assert!(refused("[server]:80").contains("not a bracketed IPv6 address"));
        assert!(refused("[::1]80").contains("after ']' comes ':PORT'"));
        assert!(refused("[::1]:").contains("is not a port"));
        assert!(refused("h:1:2").contains("neither HOST:PORT nor an IPv6 address"), "{}", refused("h:1:2"));
    }

    /// The port comes from the host or from its flag; two different ports are refused with
    /// both values and both flags named, the same one twice is taken.
    #[test]
    fn a_port_named_twice_is_refused_with_both_values() {
        let host = HostPort::parse("h:1").expect("a host");
        assert_eq!(
            host.port_or("-H", "-p", Some(2), 12866),
            Err("-H h:1 names port 1 and -p 2 another: give the port once, in -H or with -p".into())
        );
        let agent = HostPort::parse("[::1]:41801").expect("a host");
        let e = agent.port_or("--from", "--from-port", Some(2), 12866).expect_err("two ports");
        assert!(e.starts_with("--from [::1]:41801 names port 41801 and --from-port 2 another"), "{e}");
        assert_eq!(host.port_or("-H", "-p", Some(1), 12866), Ok(1));
        assert_eq!(host.port_or("-H", "-p", None, 12866), Ok(1));
        let bare = HostPort::parse("h").expect("a host");
        assert_eq!(bare.port_or("-H", "-p", Some(2), 12866), Ok(2));
        assert_eq!(bare.port_or("-H", "-p", None, 12866), Ok(12866));
    }

    /// --bind and -L take an address of this host as -H does; -L refuses a port, saying
    /// why, and neither takes a name.
    #[test]
    fn bind_and_local_addresses_take_the_host_forms() {
        let bind = |s: &str| parse_bind(s).map(|h| (h.host, h.port));
        assert_eq!(bind("127.0.0.1:5000"), Ok(("127.0.0.1".into(), Some(5000))));
        assert_eq!(bind("[::1]:5000"), Ok(("::1".into(), Some(5000))));
        assert_eq!(bind("::"), Ok(("::".into(), None)));
        assert!(bind("server.example:5").expect_err("a name").contains("is not an IP address"));
        assert_eq!(parse_local("[::1]"), Ok("::1".parse().expect("an address")));
        assert_eq!(parse_local("192.0.2.1"), Ok("192.0.2.1".parse().expect("an address")));
        let e = parse_local("192.0.2.1:5").expect_err("a port");
        assert!(e.contains("names port 5") && e.contains("give the address alone (192.0.2.1)"), "{e}");
    }

    /// Every name a kind has is taken as that value, and an unknown one is refused with
    /// the flag's own wording and every name to use instead.
    #[test]
    fn a_name_parser_takes_every_name_and_lists_them_when_refusing() {
        for e in SendEngine::ALL {
            assert_eq!(parse_send_engine(e.name()), Ok(e));
        }
        for e in RecvEngine::ALL {
            assert_eq!(parse_recv_engine(e.name()), Ok(e));
        }
        for k in LoadKind::ALL {
            assert_eq!(parse_load_kind(k.name()), Ok(k));
        }
        let refused = parse_close_first("both").expect_err("not a side");
        assert_eq!(refused, "unknown side 'both' for --close-first: use one of server, client");
        let refused = parse_harness("epoll").expect_err("not a harness");
        let names: Vec<&str> = Harness::ALL.iter().map(|h| h.name()).collect();
        assert_eq!(refused, format!("unknown harness 'epoll': use one of {}", names.join(", ")));
    }
}
