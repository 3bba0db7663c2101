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

/// Parses a rate in bits per second: `100m`, `2.5g`, `800k`, `1000000`. Suffixes are
/// powers of ten in either case (k, m, g, t), as link speeds are.
pub fn parse_rate(text: &str) -> Result<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    let bad =
        || Error::Usage(format!("invalid rate '{text}': give bits per second, like 500m, 2.5g or 1000000"));
    let n: f64 = digits.parse().map_err(|_| bad())?;
    let bits = n * mult;
    if !bits.is_finite() || bits < 1.0 || bits > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bits.round() as u64)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
