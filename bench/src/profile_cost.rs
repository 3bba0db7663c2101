//! `profile`: what the kernel cost profile costs. The same ringperf run with the profile
//! (perf_event_open sampling of every CPU over the window, symbolised after it) and with
//! `--no-profile`, taking turns, every run's CPU measured the same way from /proc/stat.
//! The rule (issue 16's at 2 %, issue 33's at 1 %): a profile costing under 1 % of service
//! demand may be a default. A test takes the light one (`LIGHT_PROFILE_HZ` and
//! `PROFILE_BY_DEFAULT` in core/src/spec.rs): `--hz 49` measures it; without `--hz`,
//! `--profile`'s full rate, which waits for that flag.
//!
//! At the light rate the cost is below what one run-to-run spread of these VMs can show, so
//! `--project-to HZ` measures it where it is large (`--hz` well above HZ) and judges its
//! linear projection down to HZ: the cost in the window is samples × the cost of one sample,
//! and a sample is no cheaper at a high rate than at a low one (if anything dearer, as it
//! competes for the caches more often), so the projection errs on the side of cost.
//!
//! Two workloads: 1-byte rr on one CPU (the most samples per unit of work: every
//! sample's cost lands on the measured CPU) and a 64 KiB stream across two CPUs.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use crate::bench;
use crate::error::Result;
use crate::peers::ringperf::{self, Expect, Ringperf};
use crate::peers::{Config, RunResult, Tool, Workload};
use crate::plan::Plan;
use crate::report;
use crate::stats::{median, ratio, ratio_interval, RATIO_LEVEL};

pub const ON: &str = "profile on";
pub const OFF: &str = "profile off";
/// The bound on the profile's cost in service demand under which it may be on by default.
pub const TARGET_PERCENT: f64 = 1.0;

/// ringperf with the profile taken at `hz` (ringperf's default rate if `None`), checked
/// to be in the report.
pub fn on(bin: PathBuf, hz: Option<u32>) -> Ringperf {
    let mut extra = vec!["--profile".to_string()];
    extra.extend(hz.map(|hz| format!("--profile-hz={hz}")));
    Ringperf {
        label: ON,
        extra,
        expect: Expect { profile: Some(true), ..Expect::default() },
        ..Ringperf::new(bin)
    }
}

/// ringperf with `--no-profile` (and checked to have none).
pub fn off(bin: PathBuf) -> Ringperf {
    Ringperf {
        label: OFF,
        extra: vec!["--no-profile".into()],
        expect: Expect { profile: Some(false), ..Expect::default() },
        ..Ringperf::new(bin)
    }
}

/// The two workloads: rr with both sides on `cpus.0`, and a stream on `cpus`.
pub fn configs(secs: u32, cpus: (usize, usize)) -> [Config; 2] {
    [
        Config::new(Workload::Rr, secs, (cpus.0, cpus.0), 1, Some("cubic".into())),
        Config::new(Workload::Stream, secs, cpus, 64 * 1024, Some("cubic".into())),
    ]
}

/// The rate measured and the lower rate its cost is projected to (`--hz`, `--project-to`).
#[derive(Clone, Copy, Debug)]
pub struct Projection {
    pub measured_hz: u32,
    pub to_hz: u32,
}

pub fn run(plans: &[Plan], hz: Option<u32>, projection: Option<Projection>) -> Result<()> {
    for plan in plans {
        let host = bench::check_host(&plan.cfg)?;
        let bin = ringperf::locate(plan.ringperf.as_deref())?;
        let (a, b) = (on(bin.clone(), hz), off(bin));
        let tools: [&dyn Tool; 2] = [&a, &b];
        print!("{}", report::header(plan, &host, &tools));
        let _ = std::io::stdout().flush();
        let (results, failures) = bench::alternate_retrying(plan, &tools, 1)?;
        print!("{}", report::runs_table(&plan.cfg, &results));
        print!("{}", bench::failures_note(&failures));
        print!("{}", report::summary(&plan.cfg, &host, &results, &tools));
        print!("{}", verdict(&results, projection));
        println!();
    }
    Ok(())
}

/// The profile's cost in service demand, with its interval, against the default rule.
/// The service demand judged is ringperf's own, over its measurement window: the bench's
/// window also holds the symbolisation after it, which costs wall time but does not touch
/// any figure (the summary above shows the bench's figure too).
pub fn verdict(results: &[RunResult], projection: Option<Projection>) -> String {
    let sds = |tool: &str| -> Vec<f64> {
        results.iter().filter(|r| r.tool == tool).filter_map(|r| r.own_service_demand).collect()
    };
    let (a, b) = (sds(ON), sds(OFF));
    let mut out = String::new();
    let Some(q) = ratio(median(&a), median(&b)) else {
        let _ = writeln!(out, "profile cost: not measured (no service demand from one of the settings)");
        return out;
    };
    let interval = ratio_interval(&a, &b, RATIO_LEVEL);
    let _ = writeln!(
        out,
        "{}",
        cost_line(
            "profile cost: service demand in ringperf's window on/off",
            q,
            interval,
            projection.is_none()
        )
    );
    if let Some(p) = projection {
        // The cost scales with the samples taken: (q - 1) × to / measured.
        let k = f64::from(p.to_hz) / f64::from(p.measured_hz);
        let scale = |x: f64| 1.0 + (x - 1.0) * k;
        let _ = writeln!(
            out,
            "{}",
            cost_line(
                &format!("projected from {} Hz to {} Hz (cost × {k:.4})", p.measured_hz, p.to_hz),
                scale(q),
                interval.map(|(lo, hi)| (scale(lo), scale(hi))),
                true,
            )
        );
    }
    out
}

/// One cost with its interval and, if `judge`, the verdict against the bound.
fn cost_line(what: &str, q: f64, interval: Option<(f64, f64)>, judge: bool) -> String {
    let cost = (q - 1.0) * 100.0;
    let judged = match interval {
        // The whole interval under the bound: the cost is surely below it.
        Some((_, hi)) if (hi - 1.0) * 100.0 < TARGET_PERCENT => "under the bound: on by default",
        Some((lo, _)) if (lo - 1.0) * 100.0 >= TARGET_PERCENT => "over the bound: behind --profile",
        Some(_) => "the interval straddles the bound: more runs are needed to decide",
        None => "no interval (fewer than two runs a setting)",
    };
    let interval = interval.map_or_else(String::new, |(lo, hi)| {
        format!(", {:.0} % interval {lo:.4}x-{hi:.4}x", 100.0 * RATIO_LEVEL)
    });
    if judge {
        format!("{what} {q:.4}x ({cost:+.2} %){interval}; bound {TARGET_PERCENT} %: {judged}")
    } else {
        format!("{what} {q:.4}x ({cost:+.2} %){interval}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1-second rr run of `tps` transactions at `busy` of 100 ticks on one of two CPUs.
    fn run(tool: &'static str, tps: f64, busy: u64) -> RunResult {
        let mut r = RunResult::one_second_rr(tool, tps, busy);
        // ringperf's own figure: busy CPU per transaction, here in ticks per 1000.
        r.own_service_demand = Some(busy as f64);
        r
    }

    /// Alternating runs of 1000 transactions, the profile on then off, at these busy ticks.
    fn alternating(busy: &[(u64, u64)]) -> Vec<RunResult> {
        busy.iter().flat_map(|&(on, off)| [run(ON, 1000.0, on), run(OFF, 1000.0, off)]).collect()
    }

    #[test]
    fn flags_and_expectations() {
        let [rr, stream] = configs(3, (0, 1));
        assert_eq!(
            on("rp".into(), None).describe(&rr),
            "rp rr -l 3 -r 1,1 -T 0,0 --cc cubic --profile --json"
        );
        assert_eq!(
            on("rp".into(), Some(99)).describe(&rr),
            "rp rr -l 3 -r 1,1 -T 0,0 --cc cubic --profile --profile-hz=99 --json"
        );
        assert_eq!(off("rp".into()).describe(&rr), "rp rr -l 3 -r 1,1 -T 0,0 --cc cubic --no-profile --json");
        assert!(off("rp".into()).describe(&stream).contains("-m 65536 -M 65536 -T 0,1"));
    }

    #[test]
    fn a_cost_clearly_under_the_bound_turns_the_profile_on() {
        // The same work for the same CPU in every run: a cost of 0 with a tight interval.
        let rs = alternating(&[(50, 50), (50, 50)]);
        let v = verdict(&rs, None);
        assert!(v.contains("1.0000x") && v.contains("on by default"), "{v}");
    }

    #[test]
    fn a_cost_clearly_over_the_bound_keeps_it_behind_the_flag() {
        let rs = alternating(&[(60, 50), (61, 50), (60, 51)]);
        let v = verdict(&rs, None);
        assert!(v.contains("behind --profile"), "{v}");
    }

    #[test]
    fn a_noisy_cost_asks_for_more_runs() {
        let rs = alternating(&[(30, 50), (70, 50)]);
        let v = verdict(&rs, None);
        assert!(v.contains("more runs are needed"), "{v}");
    }

    #[test]
    fn a_cost_measured_at_a_high_rate_is_judged_at_the_rate_it_is_projected_to() {
        // +10 % at 999 Hz (over the bound there), projected to 49 Hz about +0.5 %: under
        // the bound only through the projection.
        let rs = alternating(&[(54, 50), (56, 50), (55, 50)]);
        let v = verdict(&rs, Some(Projection { measured_hz: 999, to_hz: 49 }));
        let lines: Vec<&str> = v.lines().collect();
        assert_eq!(lines.len(), 2, "{v}");
        assert!(lines[0].contains("1.1000x") && !lines[0].contains("bound"), "{v}");
        assert!(lines[1].starts_with("projected from 999 Hz to 49 Hz"), "{v}");
        assert!(lines[1].contains("1.0049x") && lines[1].contains("on by default"), "{v}");
        // The same runs taken at 99 Hz project to ten times the cost: over the bound.
        let v = verdict(&rs, Some(Projection { measured_hz: 99, to_hz: 49 }));
        assert!(v.lines().nth(1).is_some_and(|l| l.contains("behind --profile")), "{v}");
    }
}
