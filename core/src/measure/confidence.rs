//! Confidence intervals with netperf's semantics (-i MAX,MIN iterations, -I LEVEL,WIDTH
//! where WIDTH is the full width in percent of the mean), Student's t for any level,
//! batch means over interval samples, and Welch's t-test for comparing two runs.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided t quantile: the half-width multiplier for `level` (e.g. 0.99) with `df`
/// degrees of freedom.
pub fn t_quantile(level: f64, df: f64) -> f64 {
    let p = (1.0 + level) / 2.0;
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::INFINITY,
    }
}

/// Mean and sample variance (n - 1).
pub fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    if x.is_empty() {
        return (0.0, 0.0);
    }
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() < 2 { 0.0 } else { x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) };
    (mean, var)
}

/// An estimate of one figure: its mean and confidence half-width.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Estimate {
    pub name: String,
    pub samples: usize,
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    pub half_width: f64,
    /// Half-width as a percentage of the mean.
    pub half_width_percent: f64,
}

/// The confidence interval of the mean of `x` at `level`; `None` with fewer than 2 samples.
pub fn estimate(name: &str, x: &[f64], level: f64) -> Option<Estimate> {
    if x.len() < 2 {
        return None;
    }
    let (mean, var) = mean_var(x);
    let n = x.len() as f64;
    let half_width = t_quantile(level, n - 1.0) * (var / n).sqrt();
    Some(Estimate {
        name: name.into(),
        samples: x.len(),
        mean,
        stddev: var.sqrt(),
        half_width,
        half_width_percent: if mean.abs() > 0.0 { 100.0 * half_width / mean.abs() } else { 0.0 },
    })
}

/// Groups consecutive samples into at most `batches` batches of equal size and returns
/// their means: adjacent intervals are correlated, batch means much less so.
pub fn batch_means(x: &[f64], batches: usize) -> Vec<f64> {
    if x.is_empty() || batches == 0 {
        return Vec::new();
    }
    let size = x.len().div_ceil(batches.min(x.len()));
    let usable = x.len() / size * size;
    x[..usable].chunks(size).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect()
}

/// What `-I LEVEL,WIDTH` and `-i MAX,MIN` asked for.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct ConfidenceTarget {
    /// Confidence level, 0..1 (netperf gives it in percent).
    pub level: f64,
    /// Full width of the interval in percent of the mean (±width/2).
    pub width_percent: f64,
    pub max_iterations: u32,
    pub min_iterations: u32,
}

impl ConfidenceTarget {
    /// True when every estimate's half-width is within ±width/2 percent.
    pub fn met(&self, estimates: &[Estimate]) -> bool {
        !estimates.is_empty() && estimates.iter().all(|e| e.half_width_percent <= self.width_percent / 2.0)
    }
}

/// The outcome of iterating toward a confidence target.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ConfidenceReport {
    pub target: ConfidenceTarget,
    pub iterations: u32,
    pub met: bool,
    /// Throughput (or transactions/s), local CPU, remote CPU over the iterations.
    pub estimates: Vec<Estimate>,
}

impl ConfidenceReport {
    /// One line per figure that missed its target, netperf's "!!! WARNING" style.
    pub fn misses(&self) -> Vec<String> {
        let want = self.target.width_percent / 2.0;
        self.estimates
            .iter()
            .filter(|e| e.half_width_percent > want)
            .map(|e| {
                format!(
                    "{} is ±{:.2} % at {:.1} % confidence after {} iterations, wider than the ±{:.2} % asked for by {:.2} points",
                    e.name,
                    e.half_width_percent,
                    100.0 * self.target.level,
                    self.iterations,
                    want,
                    e.half_width_percent - want
                )
            })
            .collect()
    }
}

/// Welch's t-test for a difference of means between two samples.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Welch's standard error of the difference of means and its degrees of freedom, from each
/// side's mean, sample variance and count; None with fewer than two values a side.
fn welch_se2_df(a: (f64, f64, f64), b: (f64, f64, f64)) -> Option<(f64, f64)> {
    let ((_, va, na), (_, vb, nb)) = (a, b);
    if na < 2.0 || nb < 2.0 {
        return None;
    }
    let (sa, sb) = (va / na, vb / nb);
    let se2 = sa + sb;
    if se2 <= 0.0 {
        return Some((0.0, na + nb - 2.0));
    }
    Some((se2, se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))))
}

/// Welch's t-test from each side's mean, sample variance and count.
pub fn welch_from(a: (f64, f64, f64), b: (f64, f64, f64)) -> Option<Welch> {
    let (se2, df) = welch_se2_df(a, b)?;
    let (ma, mb) = (a.0, b.0);
    if se2 <= 0.0 {
        // No spread at all: any difference is certain, none is no difference.
        let p = if ma == mb { 1.0 } else { 0.0 };
        return Some(Welch { t: if ma == mb { 0.0 } else { f64::INFINITY }, df, p_value: p });
    }
    let t = (ma - mb) / se2.sqrt();
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(Welch { t, df, p_value: 2.0 * (1.0 - dist.cdf(t.abs())) })
}

/// The confidence interval at `level` of the difference of means `a - b` (Welch: the two
/// spreads need not be equal); a single point when neither sample spreads.
pub fn welch_interval(a: &[f64], b: &[f64], level: f64) -> Option<(f64, f64)> {
    let ((ma, va), (mb, vb)) = (mean_var(a), mean_var(b));
    let (se2, df) = welch_se2_df((ma, va, a.len() as f64), (mb, vb, b.len() as f64))?;
    let half = if se2 > 0.0 { t_quantile(level, df) * se2.sqrt() } else { 0.0 };
    Some((ma - mb - half, ma - mb + half))
}

/// Welch's t-test on two samples.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    welch_from((ma, va, a.len() as f64), (mb, vb, b.len() as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Standard two-sided critical values.
        for (level, df, want) in [
            (0.95, 1.0, 12.706),
            (0.95, 2.0, 4.303),
            (0.95, 10.0, 2.228),
            (0.99, 2.0, 9.925),
            (0.99, 5.0, 4.032),
            (0.99, 30.0, 2.750),
            (0.90, 4.0, 2.132),
            (0.999, 10.0, 4.587),
        ] {
            let got = t_quantile(level, df);
            assert!(close(got, want, 2e-3), "t({level}, {df}) = {got}, want {want}");
        }
        // Large df approaches the normal quantile.
        assert!(close(t_quantile(0.95, 1e6), 1.95996, 1e-3));
    }

    #[test]
    fn half_width_on_a_fixed_sample() {
        // mean 10, s = sqrt(2.5) = 1.5811, n = 5, t(0.95, 4) = 2.7764
        let e = estimate("x", &[8.0, 9.0, 10.0, 11.0, 12.0], 0.95).unwrap();
        assert!(close(e.mean, 10.0, 1e-12));
        assert!(close(e.stddev, 1.581_139, 1e-6));
        assert!(close(e.half_width, 2.776_445 * 1.581_139 / 5f64.sqrt(), 1e-4));
        assert!(close(e.half_width_percent, 10.0 * e.half_width, 1e-9));
        assert!(estimate("x", &[1.0], 0.95).is_none());
    }

    #[test]
    fn target_and_misses() {
        let t = ConfidenceTarget { level: 0.99, width_percent: 5.0, max_iterations: 10, min_iterations: 3 };
        let tight = estimate("throughput", &[100.0, 100.1, 99.9, 100.0], 0.99).unwrap();
        let loose = estimate("local CPU", &[50.0, 70.0, 30.0], 0.99).unwrap();
        assert!(t.met(std::slice::from_ref(&tight)));
        assert!(!t.met(&[tight.clone(), loose.clone()]));
        let r = ConfidenceReport { target: t, iterations: 4, met: false, estimates: vec![tight, loose] };
        let m = r.misses();
        assert_eq!(m.len(), 1);
        assert!(m[0].starts_with("local CPU"), "{}", m[0]);
    }

    #[test]
    fn batch_means_group_consecutive_samples() {
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(batch_means(&x, 5), vec![1.5, 3.5, 5.5, 7.5, 9.5]);
        assert_eq!(batch_means(&x, 3).len(), 2); // sizes of 4: the tail of 2 is dropped
        assert_eq!(batch_means(&x[..2], 10), vec![1.0, 2.0]);
    }

    #[test]
    fn welch_interval_excludes_zero_exactly_when_the_test_is_significant() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        for b in [
            [80.0, 81.0, 79.0, 80.5, 79.5],
            [100.2, 100.8, 99.1, 100.4, 99.6],
            [98.0, 99.5, 99.0, 98.5, 99.2],
        ] {
            let (lo, hi) = welch_interval(&a, &b, 0.95).unwrap();
            let d = mean_var(&a).0 - mean_var(&b).0;
            assert!(lo < d && d < hi, "{lo}..{hi} holds the difference {d}");
            let significant = welch(&a, &b).unwrap().p_value < 0.05;
            assert_eq!(significant, lo > 0.0 || hi < 0.0, "{b:?}: {lo}..{hi}");
        }
        assert_eq!(welch_interval(&[1.0], &a, 0.95), None);
        assert_eq!(welch_interval(&[2.0, 2.0], &[1.0, 1.0], 0.95), Some((1.0, 1.0)));
    }

    #[test]
    fn welch_separates_signal_from_noise() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let worse = [80.0, 81.0, 79.0, 80.5, 79.5];
        let same = [100.2, 100.8, 99.1, 100.4, 99.6];
        assert!(welch(&a, &worse).unwrap().p_value < 1e-6);
        assert!(welch(&a, &same).unwrap().p_value > 0.5);
        // Known value: equal n, t = (10 - 12) / sqrt(2/5 + 2/5)
        let w = welch(&[8.0, 9.0, 10.0, 11.0, 12.0], &[10.0, 11.0, 12.0, 13.0, 14.0]).unwrap();
        assert!(close(w.t, -2.0 / (2.5f64 / 5.0 * 2.0).sqrt(), 1e-9));
        assert!(close(w.df, 8.0, 1e-9));
    }
}
