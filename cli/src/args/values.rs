//! Value parsers: each turns one flag's text (sizes, pairs, rates, durations, hosts, ports,
//! CPU lists, engine and figure names) into its typed value, or into a message that says
//! what to give instead (clap prints it after the flag).

use ringperf_engine::control::access::Cidr;
use ringperf_engine::harness::Harness;
use ringperf_engine::load::LoadKind;
use ringperf_engine::payload::PayloadFile;
use ringperf_engine::spec::{CloseFirst, RecvEngine, SendEngine, TaskRun};
use ringperf_engine::units::{check_size, parse_pair, parse_size};
use ringperf_engine::Error;

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
    let max_s = ringperf_engine::spec::MAX_DURATION_MS / 1000;
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
    ringperf_engine::units::parse_rate(s).map_err(msg)
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

/// -H: a name or an address; an IPv6 address may come in brackets (`[::1]`), which are
/// dropped for the lookup. The port is -p's: a `host:port` is refused with that hint rather
/// than looked up as a name.
pub(super) fn parse_host(s: &str) -> Result<String, String> {
    let t = s.trim();
    if let Some(inner) = t.strip_prefix('[') {
        return match inner.split_once(']') {
            Some((addr, "")) if addr.parse::<std::net::Ipv6Addr>().is_ok() => Ok(addr.to_string()),
            Some((addr, rest)) if rest.starts_with(':') && addr.parse::<std::net::Ipv6Addr>().is_ok() => {
                Err(format!("give the port with -p: -H {addr} -p {}", &rest[1..]))
            }
            _ => Err(format!("'{s}' is not a bracketed IPv6 address: give it as [::1] or ::1")),
        };
    }
    if t.is_empty() {
        return Err("give a host name or address, like 192.0.2.1, ::1 or server.example".into());
    }
    // One colon is host:port; more are an IPv6 address.
    if let Some((host, port)) = t.split_once(':').filter(|_| t.matches(':').count() == 1) {
        return Err(format!("give the port with -p: -H {host} -p {port}"));
    }
    Ok(t.to_string())
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
    ringperf_engine::payload::check_label(s).map_err(msg)?;
    Ok(s.to_string())
}

pub(super) fn parse_payload_file(s: &str) -> Result<PayloadFile, String> {
    PayloadFile::parse(s).map_err(msg)
}

pub(super) fn parse_chart_figure(s: &str) -> Result<String, String> {
    let names = ringperf_engine::figures::names();
    if names.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!("unknown figure '{s}': use {}", names.join(", ")))
    }
}

/// A figure `ringperf diff` judges, by the names `--fail-on` takes (the figures' registry).
pub(super) fn parse_figure(s: &str) -> Result<String, String> {
    use ringperf_engine::figures;
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
