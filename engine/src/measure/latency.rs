//! Round-trip latency in an HDR histogram (ns): one per worker, merged exactly.

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::report::LatencySummary;

/// 1 ns to 60 s at 3 significant digits. Values outside are clamped and counted.
pub struct LatencyRecorder {
    hist: Histogram<u64>,
    clamped: u64,
}

const HIGHEST_NS: u64 = 60_000_000_000;

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> Self {
        // Bounds are constants that hdrhistogram accepts; this cannot fail.
        let hist = Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("constant histogram bounds");
        LatencyRecorder { hist, clamped: 0 }
    }

    /// Records one round trip. No allocation: the histogram is sized up front.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if ns > HIGHEST_NS {
            self.clamped += 1;
        }
        self.hist.saturating_record(ns.max(1));
    }

    pub fn merge(&mut self, other: &LatencyRecorder) {
        // Same bounds on both sides, so add() cannot run out of range.
        self.hist.add(&other.hist).expect("histograms with equal bounds");
        self.clamped += other.clamped;
    }

    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// Percentiles and the serialized histogram; `None` when nothing was recorded.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.hist.is_empty() {
            return None;
        }
        let h = &self.hist;
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut bytes).ok()?;
        Some(LatencySummary {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            p9999_ns: h.value_at_quantile(0.9999),
            max_ns: h.max(),
            histogram: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn merged_percentiles_are_ordered_and_roundtrip() {
        let mut a = LatencyRecorder::new();
        let mut b = LatencyRecorder::new();
        for i in 1..=10_000u64 {
            a.record(i * 100);
            b.record(i * 1000);
        }
        a.merge(&b);
        let s = a.summary().unwrap();
        assert_eq!(s.count, 20_000);
        assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p90_ns && s.p90_ns <= s.p99_ns);
        assert!(s.p99_ns <= s.p999_ns && s.p999_ns <= s.p9999_ns && s.p9999_ns <= s.max_ns);
        let raw = base64::engine::general_purpose::STANDARD.decode(&s.histogram).unwrap();
        let back: Histogram<u64> = Deserializer::new().deserialize(&mut &raw[..]).unwrap();
        assert_eq!(back.len(), 20_000);
        assert_eq!(back.value_at_quantile(0.99), s.p99_ns);
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(LatencyRecorder::new().summary().is_none());
    }
}
