//! Round-trip latency in an HDR histogram (ns): one per worker, merged exactly.

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use serde::{Deserialize, Serialize};

/// A side's round trips split at one interval tick (`TestSpec::latency_split_ms`). The two
/// phases' counts add up to the side's transactions timed; each histogram is exact.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct LatencyPhases {
    /// The split's tick, as an offset from the window start (the latest of the workers').
    pub split_ns: u64,
    /// Round trips completed before the split's tick.
    pub first: Option<LatencySummary>,
    /// Round trips completed after it.
    pub second: Option<LatencySummary>,
}

/// Latency percentiles plus the full histogram, so runs and hosts can be merged later.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub p9999_ns: u64,
    pub max_ns: u64,
    /// HdrHistogram V2 + deflate, base64.
    pub histogram: String,
}

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

    /// Empties the histogram, keeping its allocation.
    pub fn reset(&mut self) {
        self.hist.reset();
        self.clamped = 0;
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

impl LatencyRecorder {
    /// Rebuilds a recorder from a serialized summary (the `histogram` field).
    pub fn from_summary(s: &LatencySummary) -> Option<LatencyRecorder> {
        use hdrhistogram::serialization::Deserializer;
        let raw = base64::engine::general_purpose::STANDARD.decode(&s.histogram).ok()?;
        let h: Histogram<u64> = Deserializer::new().deserialize(&mut &raw[..]).ok()?;
        let mut r = LatencyRecorder::new();
        r.hist.add(&h).ok()?;
        Some(r)
    }
}

/// Power-of-two buckets (low ns, high ns, count) spanning the recorded range, empty
/// buckets inside the range included so the shape reads true.
pub fn log_buckets(s: &LatencySummary) -> Vec<(u64, u64, u64)> {
    let Some(r) = LatencyRecorder::from_summary(s) else { return Vec::new() };
    let h = &r.hist;
    if h.is_empty() {
        return Vec::new();
    }
    let mut lo = h.min().max(1).next_power_of_two() / 2;
    let mut out = Vec::new();
    while lo <= h.max() {
        let hi = lo.max(1) * 2;
        let n = h.count_between(lo, hi - 1);
        out.push((lo, hi, n));
        lo = hi;
    }
    out
}

/// The cumulative distribution of a serialized histogram as (latency ns, fraction at or
/// below it) points, dense where the tail is: fractions 1 - 10^(-k/20) for k = 0..=100
/// (0 to 0.99999), then the maximum. Empty when the histogram cannot be decoded.
pub fn cdf_points(s: &LatencySummary) -> Vec<(u64, f64)> {
    let Some(r) = LatencyRecorder::from_summary(s) else { return Vec::new() };
    let h = &r.hist;
    if h.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(u64, f64)> = vec![(h.min(), 0.0)];
    for k in 1..=100 {
        let q = 1.0 - 10f64.powf(-f64::from(k) / 20.0);
        let v = h.value_at_quantile(q);
        // The histogram's resolution repeats values; keep the highest fraction of each.
        match out.last_mut() {
            Some(last) if last.0 == v => last.1 = q,
            _ => out.push((v, q)),
        }
    }
    if out.last().is_some_and(|l| l.0 < h.max()) {
        out.push((h.max(), 1.0));
    } else if let Some(last) = out.last_mut() {
        last.1 = 1.0;
    }
    out
}

/// Merges serialized histograms exactly (several iterations, several hosts).
pub fn merge_summaries(all: &[&LatencySummary]) -> Option<LatencySummary> {
    let mut total = LatencyRecorder::new();
    for s in all {
        total.merge(&LatencyRecorder::from_summary(s)?);
    }
    total.summary()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn cdf_points_rise_and_end_at_the_maximum() {
        let mut r = LatencyRecorder::new();
        for v in 1..=10_000u64 {
            r.record(v * 1000);
        }
        let s = r.summary().expect("recorded");
        let pts = cdf_points(&s);
        assert!(pts.len() > 20, "{pts:?}");
        assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "{pts:?}");
        assert_eq!(pts.last().map(|p| p.1), Some(1.0));
        assert_eq!(pts.last().map(|p| p.0), Some(s.max_ns));
        assert_eq!(pts[0].0, s.min_ns);
    }

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
    fn summaries_merge_back_to_the_same_percentiles() {
        let mut a = LatencyRecorder::new();
        let mut b = LatencyRecorder::new();
        let mut both = LatencyRecorder::new();
        for i in 1..=5_000u64 {
            a.record(i * 37);
            b.record(i * 91 + 5);
            both.record(i * 37);
            both.record(i * 91 + 5);
        }
        let merged = merge_summaries(&[&a.summary().unwrap(), &b.summary().unwrap()]).unwrap();
        let direct = both.summary().unwrap();
        assert_eq!(merged.count, 10_000);
        assert_eq!(
            (merged.p50_ns, merged.p90_ns, merged.p99_ns, merged.p999_ns, merged.max_ns),
            (direct.p50_ns, direct.p90_ns, direct.p99_ns, direct.p999_ns, direct.max_ns)
        );
    }

    #[test]
    fn log_buckets_count_everything_once() {
        let mut a = LatencyRecorder::new();
        for i in 1..=1000u64 {
            a.record(i * 1000);
        }
        let b = log_buckets(&a.summary().unwrap());
        assert_eq!(b.iter().map(|x| x.2).sum::<u64>(), 1000);
        assert!(b.windows(2).all(|w| w[0].1 == w[1].0), "{b:?}");
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(LatencyRecorder::new().summary().is_none());
    }
}
