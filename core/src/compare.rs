//! `ringperf diff`: two reports compared figure by figure, each difference judged against
//! the runs' own spread (Welch's t-test on iteration samples, or on within-run batch means
//! when a report has a single iteration), and their specs and environments checked for
//! differences that would make the comparison meaningless.

use serde::Serialize;
use serde_json::Value;

use crate::figures::{self, Better};
use crate::measure::confidence::{batch_means, mean_var, welch, welch_from};
use crate::measure::profile::{Category, ProfileReport};
use crate::report::{IntervalSample, TestReport};

/// How a figure's difference was judged.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Welch's t-test on the iterations of both runs (-i).
    Iterations,
    /// Welch's t-test on batch means of the interval samples.
    Intervals,
    /// No spread measured on at least one side: cannot judge.
    NoSamples,
}

#[derive(Serialize, Clone, Debug)]
pub struct FigureComparison {
    /// The name `--fail-on` takes.
    pub name: &'static str,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (b - a) / a in percent.
    pub change_percent: Option<f64>,
    pub method: Method,
    pub p_value: Option<f64>,
    /// The difference is larger than the runs' spread allows at the chosen level.
    pub significant: bool,
    /// Significant, and in the bad direction for this figure.
    pub worse: bool,
}

#[derive(Serialize, Clone, Debug)]
pub struct Comparison {
    pub level: f64,
    pub figures: Vec<FigureComparison>,
    /// Spec fields that differ (a comparison across different tests is suspect).
    pub spec_differences: Vec<String>,
    /// Environment fields that differ (kernel, CPU, offloads, sysctls, io_uring support).
    pub environment_differences: Vec<String>,
}

/// Interval values after warm-up (the first tenth, at least one interval), in batch means.
fn interval_batches(r: &TestReport, get: fn(&IntervalSample) -> Option<f64>) -> Vec<f64> {
    let s = &r.local.intervals;
    let total: u64 = s.iter().map(|x| x.duration_ns).sum();
    let warm = (total / 10).max(s.first().map_or(0, |x| x.duration_ns));
    let full = s.first().map_or(0, |x| x.duration_ns);
    let v: Vec<f64> =
        s.iter().filter(|x| x.start_ns >= warm && x.duration_ns * 2 >= full).filter_map(get).collect();
    batch_means(&v, 10)
}

pub fn compare(a: &TestReport, b: &TestReport, level: f64) -> Comparison {
    let alpha = 1.0 - level;
    let mut figures: Vec<FigureComparison> = figures::judged()
        .filter_map(|fig| {
            let (name, better) = (fig.name?, fig.better?);
            let intervals = fig.of_interval().map(|get| (interval_batches(a, get), interval_batches(b, get)));
            judge(name, better, &fig.samples(a), &fig.samples(b), intervals, alpha)
        })
        .collect();
    figures.extend(profile_figures(a, b, alpha));
    Comparison {
        level,
        figures,
        spec_differences: differences(&json(&a.spec), &json(&b.spec), "spec"),
        environment_differences: differences(&json(&a.environment), &json(&b.environment), "environment")
            .into_iter()
            .filter(|d| !d.contains(".hostname") && !d.contains(".kernel_version"))
            .chain(path_differences(a, b))
            .collect(),
    }
}

/// The egress devices' offloads and size limits (BIG TCP's knobs) where the two runs differ:
/// two runs of one host whose device was set differently measure different paths.
fn path_differences(a: &TestReport, b: &TestReport) -> Vec<String> {
    fn sides(r: &TestReport) -> [Option<&crate::report::SideReport>; 2] {
        [Some(&r.local), r.remote.as_ref()]
    }
    let mut out = Vec::new();
    for (name, (x, y)) in ["local", "remote"].into_iter().zip(sides(a).into_iter().zip(sides(b))) {
        let (Some(x), Some(y)) = (x.and_then(|s| s.network.as_ref()), y.and_then(|s| s.network.as_ref()))
        else {
            continue;
        };
        out.extend(differences(&json(&x.offloads), &json(&y.offloads), &format!("{name}.network.offloads")));
        out.extend(differences(&json(&x.sizes), &json(&y.sizes), &format!("{name}.network.sizes")));
    }
    out
}

/// One figure judged: Welch's test on the iterations when both runs have two or more, else
/// on the interval batch means when the figure has them, else no verdict.
fn judge(
    name: &'static str,
    better: Better,
    ia: &[f64],
    ib: &[f64],
    intervals: Option<(Vec<f64>, Vec<f64>)>,
    alpha: f64,
) -> Option<FigureComparison> {
    if ia.is_empty() && ib.is_empty() {
        return None;
    }
    let (ma, mb) = (mean(ia), mean(ib));
    let (method, test) = if ia.len() >= 2 && ib.len() >= 2 {
        (Method::Iterations, welch(ia, ib))
    } else if let Some((ba, bb)) = intervals.filter(|(ba, bb)| ba.len() >= 2 && bb.len() >= 2) {
        // Batch means estimate the spread of the run's rate; the test is on the
        // difference of the run means, whose spread is that of a batch mean / sqrt(n).
        let (xa, va) = mean_var(&ba);
        let (xb, vb) = mean_var(&bb);
        (Method::Intervals, welch_from((xa, va, ba.len() as f64), (xb, vb, bb.len() as f64)))
    } else {
        (Method::NoSamples, None)
    };
    let p = test.map(|w| w.p_value);
    let significant = p.is_some_and(|p| p < alpha);
    let worse = significant
        && match (ma, mb) {
            (Some(x), Some(y)) => match better {
                Better::Higher => y < x,
                Better::Lower => y > x,
            },
            _ => false,
        };
    Some(FigureComparison {
        name,
        a: ma,
        b: mb,
        change_percent: match (ma, mb) {
            (Some(x), Some(y)) if x != 0.0 => Some(100.0 * (y - x) / x),
            _ => None,
        },
        method,
        p_value: p,
        significant,
        worse,
    })
}

/// Each profiled category's cost per unit of work on each side (`local_cost_tcp`, ...),
/// lower is better: judged on the iterations when both runs have them (-i), else shown
/// without a verdict.
fn profile_figures(a: &TestReport, b: &TestReport, alpha: f64) -> Vec<FigureComparison> {
    let rr = a.spec.workload.is_transactional();
    let side = |r: &TestReport, local: bool| {
        let s = if local { Some(&r.local) } else { r.remote.as_ref() };
        s.and_then(|s| s.profile.clone()).filter(|p| p.unavailable.is_none())
    };
    let mut out = Vec::new();
    for local in [true, false] {
        let (Some(pa), Some(pb)) = (side(a, local), side(b, local)) else { continue };
        let (ca, cb) = (pa.unit_costs(rr), pb.unit_costs(rr));
        let mut cats: Vec<Category> = ca.iter().chain(&cb).map(|&(c, _)| c).collect();
        cats.sort();
        cats.dedup();
        // An iteration without samples in a category spent nothing there.
        let samples = |p: &ProfileReport, now: &[(Category, f64)], c: Category| -> Vec<f64> {
            let of = |costs: &[(Category, f64)]| costs.iter().find(|x| x.0 == c).map_or(0.0, |x| x.1);
            if p.iterations.len() >= 2 {
                p.iterations.iter().map(|i| of(i)).collect()
            } else {
                vec![of(now)]
            }
        };
        for c in cats {
            let Some(fig) = figures::cost(local, c) else { continue };
            let (Some(name), Some(better)) = (fig.name, fig.better) else { continue };
            let (ia, ib) = (samples(&pa, &ca, c), samples(&pb, &cb, c));
            out.extend(judge(name, better, &ia, &ib, None, alpha));
        }
    }
    out
}

fn mean(x: &[f64]) -> Option<f64> {
    (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
}

fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Leaf paths whose values differ, as "path: a -> b".
fn differences(a: &Value, b: &Value, path: &str) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    differences(
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        &format!("{path}.{k}"),
                    )
                })
                .collect()
        }
        _ if a == b => Vec::new(),
        _ => {
            let short = |v: &Value| {
                let s = v.to_string();
                if s.len() > 60 {
                    format!("{}…", &s[..s.char_indices().nth(57).map_or(s.len(), |(i, _)| i)])
                } else {
                    s
                }
            };
            vec![format!("{path}: {} -> {}", short(a), short(b))]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_leaf_paths() {
        let a = json!({"x": {"k": 1, "same": true}, "y": [1, 2]});
        let b = json!({"x": {"k": 2, "same": true}, "y": [1, 3], "z": "new"});
        let d = differences(&a, &b, "env");
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d.iter().any(|s| s.starts_with("env.x.k: 1 -> 2")));
        assert!(d.iter().any(|s| s.starts_with("env.z: null")));
    }
}
