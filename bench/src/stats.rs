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

/// The smallest jump between two clusters of runs that counts (10 %): closer than that,
/// two clusters are one noisy value.
pub const MODE_GAP_MIN: f64 = 0.10;
/// How many times wider than the spread within either cluster the jump between them must be.
pub const MODE_GAP_FACTOR: f64 = 3.0;

/// Two clusters of runs: how many runs each holds and their median, low cluster first.
#[derive(Clone, Debug, PartialEq)]
pub struct Modes {
    pub low: (usize, f64),
    pub high: (usize, f64),
}

/// The two clusters of a bimodal sample set, or None. Bimodal: sorted, the runs split in
/// two clusters of at least two runs each, with a jump between them of at least
/// [`MODE_GAP_MIN`] and more than [`MODE_GAP_FACTOR`] times the spread within either
/// (ratios: on the logarithms). Then a median and a ratio stand for neither cluster: the
/// scheduler placed the threads two ways (issue 31: 380 k or 650 k transactions/s from
/// one unpinned 100-flow rr to the next). At most one split can qualify: any other jump
/// lies inside a cluster, so is smaller than a third of this one. None with fewer than
/// four runs or a value that is not positive.
pub fn bimodal(values: &[f64]) -> Option<Modes> {
    if values.len() < 4 || values.iter().any(|&v| v.is_nan() || v <= 0.0) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let logs: Vec<f64> = sorted.iter().map(|v| v.ln()).collect();
    let n = logs.len();
    let split = (2..=n - 2).find(|&i| {
        let gap = logs[i] - logs[i - 1];
        let spread = (logs[i - 1] - logs[0]).max(logs[n - 1] - logs[i]);
        gap >= MODE_GAP_MIN.ln_1p() && gap > MODE_GAP_FACTOR * spread
    })?;
    Some(Modes { low: (split, median(&sorted[..split])?), high: (n - split, median(&sorted[split..])?) })
}

/// "ringperf's runs bimodal: 3 near 380.0k, 5 near 650.0k", or None when they are not.
pub fn bimodal_text(tool: &str, values: &[f64]) -> Option<String> {
    let m = bimodal(values)?;
    Some(format!(
        "{tool}'s runs bimodal: {} near {}, {} near {}",
        m.low.0,
        short(m.low.1),
        m.high.0,
        short(m.high.1)
    ))
}

/// A value in four significant figures or so, with k/M/G for large ones.
fn short(v: f64) -> String {
    match v.abs() {
        a if a >= 1e9 => format!("{:.2}G", v / 1e9),
        a if a >= 1e6 => format!("{:.2}M", v / 1e6),
        a if a >= 1e3 => format!("{:.1}k", v / 1e3),
        _ => format!("{v:.3}"),
    }
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
    fn two_clusters_far_apart_are_bimodal_and_one_noisy_cluster_is_not() {
        // The unpinned 100-flow rr: about 380 k or about 650 k from run to run.
        let placed_two_ways = [381e3, 652e3, 377e3, 648e3, 655e3, 384e3, 641e3, 650e3];
        let m = bimodal(&placed_two_ways).expect("bimodal");
        assert_eq!(m, Modes { low: (3, 381e3), high: (5, 650e3) });
        assert_eq!(
            bimodal_text("ringperf", &placed_two_ways).as_deref(),
            Some("ringperf's runs bimodal: 3 near 381.0k, 5 near 650.0k")
        );
        // One cluster with a spread of ±10 %: no jump stands out.
        assert_eq!(bimodal(&[90.0, 95.0, 100.0, 104.0, 108.0, 110.0, 99.0, 93.0]), None);
        // A jump that is large, but no larger than the spread within a cluster.
        assert_eq!(bimodal(&[100.0, 130.0, 200.0, 260.0]), None);
        // A jump three times the spread but under 10 %: one tight value, not two.
        assert_eq!(bimodal(&[100.0, 100.1, 105.0, 105.1]), None);
        // One outlier is not a cluster: each needs two runs.
        assert_eq!(bimodal(&[100.0, 101.0, 100.5, 200.0]), None);
        assert_eq!(bimodal(&[100.0, 101.0, 200.0]), None);
        assert_eq!(bimodal(&[100.0, 101.0, 200.0, 0.0]), None);
        // A 10.6 % jump: under three times a 4 % spread, over three times a 2 % one.
        assert_eq!(bimodal(&[100.0, 104.0, 115.0, 119.0]), None);
        assert_eq!(bimodal(&[100.0, 102.0, 115.0, 117.0]), Some(Modes { low: (2, 101.0), high: (2, 116.0) }));
        assert!(bimodal(&[1.0, 1.0, 1.2, 1.2]).is_some(), "repeated values 20 % apart");
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
