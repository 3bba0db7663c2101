//! Iterating toward a confidence target (netperf -i MAX,MIN and -I LEVEL,WIDTH): each
//! iteration is a whole test; after each, the mean and half-width of throughput (or
//! transactions/s) and of both CPU figures decide whether to stop.

use crate::client::{run_test_with, Target};
use crate::run::RunOptions;
use ringperf_core::error::Result;
use ringperf_core::measure::confidence::{estimate, ConfidenceReport, ConfidenceTarget, Estimate};
use ringperf_core::measure::latency::merge_summaries;
use ringperf_core::report::{IterationFigures, OneWayReport, TestReport};
use ringperf_core::spec::TestSpec;

/// The estimates iteration stops on, from the iterations so far.
pub fn estimates(figures: &[IterationFigures], level: f64) -> Vec<Estimate> {
    let rr = figures.first().is_some_and(|f| f.transactions_per_sec.is_some());
    let rate: Vec<f64> = figures
        .iter()
        .map(|f| if rr { f.transactions_per_sec.unwrap_or(0.0) } else { f.throughput_bits_per_sec })
        .collect();
    let local: Vec<f64> = figures.iter().map(|f| f.local_cpu_percent).collect();
    let remote: Vec<f64> = figures.iter().filter_map(|f| f.remote_cpu_percent).collect();
    [(if rr { "transactions/s" } else { "throughput" }, rate), ("local CPU", local), ("remote CPU", remote)]
        .iter()
        .filter_map(|(name, x)| estimate(name, x, level))
        .collect()
}

/// Runs `spec` once, or iterates toward `target`. `each` sees every iteration's report as
/// it completes. The returned report is the last iteration's, with every iteration's
/// figures, the confidence outcome, means in the summary, and latency merged over all
/// iterations. A partial run (Ctrl-C, a failure after the window opened) ends the
/// iterations and is returned as it is.
pub fn run_iterations(
    spec: &TestSpec,
    target: &Target,
    opts: &RunOptions<'_>,
    confidence: Option<ConfidenceTarget>,
    each: &mut dyn FnMut(u32, &TestReport),
) -> Result<TestReport> {
    let Some(goal) = confidence else {
        let r = run_test_with(spec, target, opts)?;
        each(1, &r);
        return Ok(r);
    };
    let opts = RunOptions { level: Some(goal.level), ..opts.clone() };
    let mut figures = Vec::new();
    let mut latencies = Vec::new();
    let mut profile_costs = Vec::new();
    // Per iteration, the one-way delays the client's and the server's side received.
    let mut one_ways: Vec<[Option<OneWayReport>; 2]> = Vec::new();
    let mut last;
    loop {
        let mut r = run_test_with(spec, target, &opts)?;
        each(figures.len() as u32 + 1, &r);
        if r.partial {
            // A run cut short ends the iterations: it is reported as measured, its figures
            // after those of the whole runs before it, with no confidence claimed.
            figures.append(&mut r.iterations);
            r.iterations = figures;
            return Ok(r);
        }
        figures.extend(r.iterations.iter().copied());
        latencies.extend(r.local.latency.clone());
        one_ways.push([Some(&r.local), r.remote.as_ref()].map(|s| s?.udp.as_ref()?.one_way.clone()));
        profile_costs.push(ringperf_core::measure::profile::iteration_costs(&r));
        last = r;
        let n = figures.len() as u32;
        let met = goal.met(&estimates(&figures, goal.level));
        if n >= goal.max_iterations || (n >= goal.min_iterations && met) {
            break;
        }
    }
    let ests = estimates(&figures, goal.level);
    let n = figures.len() as u32;
    let mean =
        |f: &dyn Fn(&IterationFigures) -> f64| figures.iter().map(f).sum::<f64>() / figures.len() as f64;
    last.summary.throughput_bits_per_sec = mean(&|f| f.throughput_bits_per_sec);
    if last.summary.transactions_per_sec.is_some() {
        last.summary.transactions_per_sec = Some(mean(&|f| f.transactions_per_sec.unwrap_or(0.0)));
    }
    if latencies.len() > 1 {
        let all: Vec<_> = latencies.iter().collect();
        if let Some(merged) = merge_summaries(&all) {
            last.summary.mean_latency_ns = Some(merged.mean_ns);
            last.local.latency = Some(merged);
        }
    }
    if one_ways.len() > 1 {
        // Merged like the round trips: every iteration's histogram, labelled with the
        // largest uncertainty any iteration's clock estimate had.
        for (k, side) in [Some(&mut last.local), last.remote.as_mut()].into_iter().enumerate() {
            let merged =
                one_ways.iter().fold(None, |acc, w| ringperf_core::merge::one_way(acc, w[k].as_ref()));
            if let (Some(u), Some(mut m)) = (side.and_then(|s| s.udp.as_mut()), merged) {
                m.label(m.uncertainty_ns.unwrap_or(0));
                u.one_way = Some(m);
            }
        }
    }
    last.confidence =
        Some(ConfidenceReport { target: goal, iterations: n, met: goal.met(&ests), estimates: ests });
    last.iterations = figures;
    ringperf_core::measure::profile::keep_iterations(&mut last, profile_costs);
    Ok(last)
}
