//! The payload pattern and its check. Byte `o` of every flow's stream, in each direction,
//! is `o % 251`: a prime period, so a shifted, repeated or dropped chunk never lines up.

use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::report::VerifyReport;

/// The pattern's period.
pub const PERIOD: usize = 251;

/// netperf's fill file (-F): bytes this process's sends carry instead of the pattern, so a
/// path that compresses (or dedups) payload sees data it cannot shrink. Process-wide, like
/// netperf's, and for the local sends only: the peer fills its own.
static FILL_SOURCE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

/// Makes every payload this process builds from now on a repetition of `bytes` (set once;
/// false if it was set already or `bytes` is empty). A run that checks the pattern
/// (--verify) cannot use it: its receiver would see other bytes than it expects.
pub fn set_fill_source(bytes: Vec<u8>) -> bool {
    !bytes.is_empty() && FILL_SOURCE.set(bytes).is_ok()
}

/// Whether a fill source replaces the pattern in this process.
pub fn fill_source_set() -> bool {
    FILL_SOURCE.get().is_some()
}

/// Fills payload that is sent, not checked against: the fill source's bytes, repeated,
/// when one is set, otherwise the pattern ([`fill`]).
pub fn fill_payload(buf: &mut [u8]) {
    match FILL_SOURCE.get() {
        Some(src) => {
            for chunk in buf.chunks_mut(src.len()) {
                chunk.copy_from_slice(&src[..chunk.len()]);
            }
        }
        None => fill(buf),
    }
}

/// Fills `buf` so that `buf[i]` is the pattern byte of stream offset `i`.
pub fn fill(buf: &mut [u8]) {
    let first = buf.len().min(PERIOD);
    for (i, b) in buf[..first].iter_mut().enumerate() {
        *b = i as u8;
    }
    // Doubling copies: the pattern repeats every PERIOD bytes, so any filled prefix whose
    // length is a multiple of PERIOD can be copied forward whole.
    let mut filled = first;
    while filled < buf.len() {
        let n = (filled / PERIOD * PERIOD).min(buf.len() - filled);
        buf.copy_within(..n, filled);
        filled += n;
    }
}

/// Where in a pattern-filled buffer the bytes of stream offset `offset` start.
#[inline]
pub fn phase(offset: u64) -> usize {
    (offset % PERIOD as u64) as usize
}

/// Checks received bytes against the pattern, per flow, and counts what it cost.
pub struct Verifier {
    enabled: bool,
    next: Vec<u64>,
    /// Per flow: bytes still to pass over unchecked before the pattern (see [`Verifier::restart`]).
    skip: Vec<u64>,
    reference: Vec<u8>,
    report: VerifyReport,
}

/// The reference slice compared against in one go.
const SPAN: usize = 64 * 1024;

impl Verifier {
    pub fn new(enabled: bool, flows: usize) -> Verifier {
        let mut reference = vec![0u8; if enabled { SPAN + PERIOD } else { 0 }];
        fill(&mut reference);
        Verifier {
            enabled,
            next: vec![0; if enabled { flows } else { 0 }],
            skip: vec![0; if enabled { flows } else { 0 }],
            reference,
            report: VerifyReport { enabled, ..VerifyReport::default() },
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Starts `flow`'s stream over at offset 0, after `skip` bytes that are not pattern: a
    /// crr connection carries a fresh message each time, its request after the header.
    #[inline]
    pub fn restart(&mut self, flow: usize, skip: u64) {
        if self.enabled {
            self.next[flow] = 0;
            self.skip[flow] = skip;
        }
    }

    /// Checks the next `data.len()` bytes of `flow`'s stream.
    #[inline]
    pub fn check(&mut self, flow: usize, data: &[u8]) {
        if !self.enabled {
            return;
        }
        let passed = self.skip[flow].min(data.len() as u64);
        self.skip[flow] -= passed;
        let data = &data[passed as usize..];
        let t0 = monotonic_ns();
        let mut off = self.next[flow];
        for chunk in data.chunks(SPAN) {
            let p = phase(off);
            if chunk != &self.reference[p..p + chunk.len()] {
                self.report.mismatches += 1;
                if self.report.first_mismatch.is_none() {
                    let at = chunk.iter().zip(&self.reference[p..]).position(|(a, b)| a != b).unwrap_or(0);
                    self.report.first_mismatch =
                        Some(ringperf_core::report::Mismatch { flow, offset: off + at as u64 });
                }
            }
            off += chunk.len() as u64;
        }
        self.next[flow] = off;
        self.report.bytes_checked += data.len() as u64;
        self.report.cost_ns += monotonic_ns() - t0;
    }

    /// Marks the check impossible for this receive path (the payload never reaches us).
    pub fn cannot_check(&mut self, why: &str) {
        if self.enabled {
            self.report.not_checked = Some(why.to_string());
        }
    }

    pub fn report(&self) -> Option<VerifyReport> {
        self.enabled.then(|| self.report.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_matches_the_definition() {
        for len in [0, 1, 250, 251, 252, 1000, 70_000] {
            let mut b = vec![9u8; len];
            fill(&mut b);
            assert!(b.iter().enumerate().all(|(i, &v)| v == (i % PERIOD) as u8), "len {len}");
        }
    }

    #[test]
    fn intact_stream_passes_in_any_chunking() {
        let mut stream = vec![0u8; 300_000];
        fill(&mut stream);
        let mut v = Verifier::new(true, 2);
        for c in stream.chunks(7_919) {
            v.check(1, c);
        }
        let r = v.report().unwrap();
        assert_eq!(r.bytes_checked, 300_000);
        assert_eq!(r.mismatches, 0);
    }

    #[test]
    fn a_dropped_byte_is_found_where_it_happened() {
        let mut stream = vec![0u8; 10_000];
        fill(&mut stream);
        stream.remove(5_000);
        let mut v = Verifier::new(true, 1);
        v.check(0, &stream[..4_000]);
        v.check(0, &stream[4_000..]);
        let r = v.report().unwrap();
        assert_eq!(r.mismatches, 1);
        assert_eq!(r.first_mismatch.unwrap().offset, 5_000);
    }

    #[test]
    fn disabled_checks_nothing() {
        let mut v = Verifier::new(false, 1);
        v.check(0, b"garbage");
        assert!(v.report().is_none());
    }
}
