//! Summary statistics over a handful of runs.

use ringperf_core::measure::confidence::welch_interval;

/// The median; the mean of the middle two for an even count. None for no values or a NaN.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 })
}

/// Smallest and largest value.
pub fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let mut it = values.iter().copied().filter(|v| !v.is_nan());
    let first = it.next()?;
    Some(it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
}

/// The confidence interval at `level` of the ratio of the typical values of `a` and `b`
/// (geometric means): Welch's t on the logarithms of the runs, so one tool's spread does
/// not have to match the other's. An interval that holds 1 is a tie on this machine.
/// None with fewer than two runs a side or a value that is not positive.
pub fn ratio_interval(a: &[f64], b: &[f64], level: f64) -> Option<(f64, f64)> {
    if a.iter().chain(b).any(|&v| v.is_nan() || v <= 0.0) {
        return None;
    }
    let logs = |x: &[f64]| x.iter().map(|v| v.ln()).collect::<Vec<_>>();
    let (lo, hi) = welch_interval(&logs(a), &logs(b), level)?;
    Some((lo.exp(), hi.exp()))
}

/// Confidence level of every ratio interval the bench prints.
pub const RATIO_LEVEL: f64 = 0.95;

/// "95 % interval 0.91x-1.05x: within the noise" for the runs of two tools (the phrase
/// only when the interval holds 1: a tie on this machine, whichever side of 1 the median
/// falls), or None with fewer than two runs a side.
pub fn interval_text(a: &[f64], b: &[f64]) -> Option<String> {
    let (lo, hi) = ratio_interval(a, b, RATIO_LEVEL)?;
    Some(format!(
        "{:.0} % interval {lo:.2}x-{hi:.2}x{}",
        100.0 * RATIO_LEVEL,
        if lo <= 1.0 && hi >= 1.0 { ": within the noise" } else { "" }
    ))
}

/// a / b, or None when either side is missing or b is zero.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn min_max_and_ratio() {
        assert_eq!(min_max(&[2.0, -1.0, 5.0]), Some((-1.0, 5.0)));
        assert_eq!(min_max(&[]), None);
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(2.0)), None);
    }

    #[test]
    fn ratio_intervals_hold_the_ratio_and_widen_with_spread() {
        let b = [10.0, 11.0, 9.0, 10.5];
        let a: Vec<f64> = b.iter().map(|v| v * 2.0).collect();
        let (lo, hi) = ratio_interval(&a, &b, 0.95).unwrap();
        assert!(lo < 2.0 && 2.0 < hi, "{lo}..{hi}");
        assert!(lo > 1.0, "a clear doubling is no tie: {lo}");
        // The same runs on both sides: a tie, centred on 1.
        let (lo, hi) = ratio_interval(&b, &b, 0.95).unwrap();
        assert!(lo < 1.0 && hi > 1.0 && (lo * hi - 1.0).abs() < 1e-9, "{lo}..{hi}");
        let noisy = [5.0, 15.0, 8.0, 14.0];
        let (nlo, nhi) = ratio_interval(&noisy, &b, 0.95).unwrap();
        assert!(nhi / nlo > hi / lo, "more spread, a wider interval");
        assert_eq!(ratio_interval(&[1.0], &b, 0.95), None);
        assert_eq!(ratio_interval(&[1.0, 0.0], &b, 0.95), None);
    }
}
