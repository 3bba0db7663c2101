//! Parsing of sizes and durations the way netperf users type them.

use crate::error::{Error, Result};

/// The largest message, request or buffer size ringperf accepts: anything above is a typo.
pub const MAX_SIZE: u64 = 1 << 30;

/// Parses `64K`, `1M`, `1500`, `2g`. Upper-case suffixes are powers of two (K = 1024),
/// lower-case ones powers of ten (k = 1000), as in netperf.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        Some('k') => (&t[..t.len() - 1], 1_000),
        Some('m') => (&t[..t.len() - 1], 1_000_000),
        Some('g') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t, 1),
    };
    let n: u64 = digits.parse().map_err(|_| {
        Error::Usage(format!(
            "invalid size '{text}': use a whole number with an optional suffix, like 1500, 64K or 1M"
        ))
    })?;
    n.checked_mul(mult).ok_or_else(|| Error::Usage(format!("size '{text}' is too large")))
}

/// Parses a rate in bits per second: `100M`, `10G`, `1.5g`, `64000`. Suffixes k/m/g/t
/// (either case) are powers of ten, as rates are on the wire.
pub fn parse_rate(text: &str) -> Result<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        Error::Usage(format!(
            "invalid rate '{text}': use bits per second with an optional k/m/g suffix, like 100M"
        ))
    })?;
    let bps = v * mult;
    if !bps.is_finite() || !(1.0..=1e15).contains(&bps) {
        return Err(Error::Usage(format!("rate '{text}' is out of range: use 1 bit/s to 1000 Tbit/s")));
    }
    Ok(bps.round() as u64)
}

/// A byte count for people, in powers of two: "512 B", "975 MiB", "2.9 GiB", "6 GiB".
/// Below 10 of a unit one decimal is kept unless the count is whole.
pub fn format_bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, unit) in UNITS {
        if n >= unit {
            let v = n as f64 / unit as f64;
            return if v < 10.0 && !n.is_multiple_of(unit) {
                format!("{v:.1} {name}")
            } else {
                format!("{v:.0} {name}")
            };
        }
    }
    format!("{n} B")
}

/// Checks a size that must be in 1..=MAX_SIZE and names the flag in the error.
pub fn check_size(what: &str, n: u64) -> Result<u32> {
    if n == 0 {
        return Err(Error::Usage(format!("{what} must be at least 1 byte")));
    }
    if n > MAX_SIZE {
        return Err(Error::Usage(format!("{what} of {n} bytes is over the 1 GiB limit: use a smaller size")));
    }
    Ok(n as u32)
}

/// Parses netperf's `A,B` pairs, where either side may be empty (`,64K` or `64K,`)
/// and a single value applies to both.
pub fn parse_pair<T>(text: &str, parse: impl Fn(&str) -> Result<T>) -> Result<(Option<T>, Option<T>)> {
    let one = |s: &str| -> Result<Option<T>> {
        if s.trim().is_empty() {
            Ok(None)
        } else {
            parse(s).map(Some)
        }
    };
    match text.split_once(',') {
        Some((a, b)) => Ok((one(a)?, one(b)?)),
        None => {
            let v = one(text)?;
            Ok((v, one(text)?))
        }
    }
}

/// Throughput units of `-f`, netperf's convention.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Units {
    /// Bits per second, divided by this power of ten.
    Bits(f64, &'static str),
    /// Bytes per second, divided by this power of two.
    Bytes(f64, &'static str),
}

impl Units {
    pub fn parse(s: &str) -> Units {
        match s {
            "k" => Units::Bits(1e3, "10^3bits/s"),
            "g" => Units::Bits(1e9, "10^9bits/s"),
            "K" => Units::Bytes(1024.0, "KBytes/s"),
            "M" => Units::Bytes(1024.0 * 1024.0, "MBytes/s"),
            "G" => Units::Bytes(1024.0 * 1024.0 * 1024.0, "GBytes/s"),
            _ => Units::Bits(1e6, "10^6bits/s"),
        }
    }

    /// Converts bits per second to this unit.
    pub fn convert(self, bits_per_sec: f64) -> f64 {
        match self {
            Units::Bits(d, _) => bits_per_sec / d,
            Units::Bytes(d, _) => bits_per_sec / 8.0 / d,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Units::Bits(_, l) | Units::Bytes(_, l) => l,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_as_people_write_them() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(975 << 20), "975 MiB");
        assert_eq!(format_bytes(6 << 30), "6 GiB");
        assert_eq!(format_bytes((29 << 30) / 10), "2.9 GiB");
        assert_eq!(format_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn sizes_follow_netperf_suffixes() {
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("64k").unwrap(), 64000);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-5").is_err());
    }

    #[test]
    fn rates_are_decimal_bits() {
        assert_eq!(parse_rate("100M").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1.5g").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("64000").unwrap(), 64_000);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn size_limits_reject_zero_and_absurd() {
        assert!(check_size("-m", 0).is_err());
        assert!(check_size("-m", MAX_SIZE + 1).is_err());
        assert_eq!(check_size("-m", MAX_SIZE).unwrap(), 1 << 30);
    }

    #[test]
    fn rates_are_bits_per_second_with_decimal_suffixes() {
        assert_eq!(parse_rate("100m").unwrap(), 100_000_000);
        assert_eq!(parse_rate("2.5G").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate("800k").unwrap(), 800_000);
        assert_eq!(parse_rate("1000").unwrap(), 1000);
        for bad in ["", "-1m", "0", "fast", "1e400", "NaN"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pairs_allow_one_side_empty() {
        let p = |s: &str| parse_pair(s, parse_size);
        assert_eq!(p("1,2").unwrap(), (Some(1), Some(2)));
        assert_eq!(p(",2K").unwrap(), (None, Some(2048)));
        assert_eq!(p("3,").unwrap(), (Some(3), None));
        assert_eq!(p("5").unwrap(), (Some(5), Some(5)));
    }

    #[test]
    fn netperf_units() {
        assert_eq!(Units::parse("m").convert(8e6), 8.0);
        assert_eq!(Units::parse("g").convert(8e9), 8.0);
        assert_eq!(Units::parse("K").convert(8.0 * 1024.0), 1.0);
        assert_eq!(Units::parse("M").label(), "MBytes/s");
    }
}
