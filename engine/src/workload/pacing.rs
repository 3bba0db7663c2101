//! Application-level pacing: a token bucket refilled by a multishot ring Timeout.
//!
//! The sender of a stream with a rate (`-b`) takes tokens before each send; a flow that
//! finds the bucket empty waits for the next tick. A server with `--max-rate` also polices
//! what it receives: a flow that is over its budget is not re-armed until a tick refills
//! the bucket, so TCP's window throttles a sender that ignores the agreed rate. The clock
//! is read once per tick, never per operation, and nothing allocates after setup.

use crate::error::Result;
use crate::io::op;
use crate::measure::clock::monotonic_ns;
use crate::ring::{token, Ring};

/// Shortest and longest tick: short enough to keep bursts small at high rates, long
/// enough that ticks cost nothing at low ones.
const MIN_TICK_NS: u64 = 1_000_000;
const MAX_TICK_NS: u64 = 50_000_000;

/// A token bucket in bytes.
pub struct Pacer {
    bytes_per_sec: f64,
    /// Tokens; negative after a receive that overdrew the bucket.
    tokens: i64,
    /// Most tokens the bucket holds: what may go out back to back after an idle spell.
    burst: i64,
    last_ns: u64,
    interval_ns: u64,
}

impl Pacer {
    /// A bucket for `rate_bps` bits/s whose operations move up to `unit` bytes each.
    pub fn new(rate_bps: u64, unit: u32) -> Pacer {
        let bytes_per_sec = rate_bps as f64 / 8.0;
        // One unit per tick at this rate, within [MIN_TICK_NS, MAX_TICK_NS].
        let per_unit_ns = (f64::from(unit) / bytes_per_sec * 1e9) as u64;
        let interval_ns = per_unit_ns.clamp(MIN_TICK_NS, MAX_TICK_NS);
        let per_tick = (bytes_per_sec * interval_ns as f64 / 1e9) as i64;
        let burst = (2 * per_tick).max(i64::from(unit));
        Pacer { bytes_per_sec, tokens: i64::from(unit), burst, last_ns: 0, interval_ns }
    }

    /// Starts the clock and the ticks (PACE completions, one per interval, until the ring
    /// is dropped).
    pub fn start(&mut self, ring: &mut Ring) -> Result<()> {
        self.last_ns = monotonic_ns();
        ring.push_ticks(self.interval_ns, token(op::PACE, 0))
    }

    /// A tick: adds the tokens earned since the last one (one clock read).
    pub fn tick(&mut self) {
        let now = monotonic_ns();
        let earned = (self.bytes_per_sec * now.saturating_sub(self.last_ns) as f64 / 1e9) as i64;
        self.tokens = self.tokens.saturating_add(earned).min(self.burst);
        self.last_ns = now;
    }

    /// Takes tokens for up to `want` operations of `unit` bytes; returns how many fit.
    #[inline]
    pub fn grant(&mut self, unit: u32, want: usize) -> usize {
        let unit = i64::from(unit).max(1);
        let n = (self.tokens.max(0) / unit).min(want as i64);
        self.tokens -= n * unit;
        n as usize
    }

    /// Charges bytes that already moved (a receive); false once the bucket is overdrawn.
    #[inline]
    pub fn charge(&mut self, bytes: u32) -> bool {
        self.tokens -= i64::from(bytes);
        self.tokens >= 0
    }

    /// True if the bucket has tokens again.
    #[inline]
    pub fn has_tokens(&self) -> bool {
        self.tokens >= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_never_exceed_the_tokens() {
        let mut p = Pacer::new(8_000_000, 1000); // 1 MB/s, 1 ms per unit
        assert_eq!(p.interval_ns, MIN_TICK_NS);
        assert_eq!(p.grant(1000, 4), 1, "the bucket starts with one unit");
        assert_eq!(p.grant(1000, 4), 0);
        p.tokens = p.burst;
        assert_eq!(p.grant(1000, 100) as i64, p.burst / 1000);
    }

    #[test]
    fn slow_rates_tick_slowly_and_charges_overdraw() {
        let mut p = Pacer::new(8_000, 128 * 1024);
        assert_eq!(p.interval_ns, MAX_TICK_NS);
        assert!(!p.charge(200_000));
        assert!(!p.has_tokens());
        p.tokens = 0;
        assert!(p.has_tokens());
    }
}
