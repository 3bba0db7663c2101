//! The one line that names what makes a report's figures doubtful: a partial run, a noisy
//! one, retransmits, zero copy the kernel copied, steal, a profile that lost samples, an open
//! loop that fell behind, ... Nothing when nothing does.

use ringperf_core::measure::profile::{report, ProfileReport};
use ringperf_core::report::SideReport;
use ringperf_core::TestReport;

use super::sides::sides;

/// A within-run interval wider than this (± percent of the mean) says the rate moved during
/// the run: twice netperf's -I 99,5 target (±2.5 %).
pub const NOISY_PERCENT: f64 = 5.0;
/// Steal at or above this (percent of the window's CPU time) took enough from the
/// measured CPUs to move utilization and service demand.
pub const STEAL_PERCENT: f64 = 1.0;

/// "doubtful: ..." naming every doubt, or `None` when there is none.
pub fn line(r: &TestReport) -> Option<String> {
    let d = doubts(r);
    (!d.is_empty()).then(|| format!("doubtful: {}", d.join("; ")))
}

/// Every reason to doubt the report's figures, each one short phrase.
pub fn doubts(r: &TestReport) -> Vec<String> {
    let mut d = Vec::new();
    if r.partial {
        let why = r.partial_reason.as_deref().unwrap_or("it did not finish");
        let missing = if r.remote.is_none() { "; the server's side never reported" } else { "" };
        d.push(format!("a partial run ({why}{missing})"));
    }
    if let Some(c) = r.confidence.as_ref().filter(|c| !c.met) {
        let want = c.target.width_percent / 2.0;
        let wide: Vec<String> = c
            .estimates
            .iter()
            .filter(|e| e.half_width_percent > want)
            .map(|e| format!("{} ±{:.2} %", e.name, e.half_width_percent))
            .collect();
        d.push(format!(
            "the confidence target was not met ({} at {:.1} % after {} iterations, over the ±{want:.2} % asked for)",
            wide.join(", "),
            100.0 * c.target.level,
            c.iterations
        ));
    }
    if let Some(w) = r.summary.within_run.as_ref().filter(|w| w.half_width_percent > NOISY_PERCENT) {
        d.push(format!(
            "a noisy run (within run ±{:.1} %, over ±{NOISY_PERCENT:.0} %)",
            w.half_width_percent
        ));
    }
    let sides = sides(r);
    let retrans: Vec<(&str, u64)> =
        sides.iter().filter_map(|(n, s)| Some((n.trim(), s.socket.retransmits?))).collect();
    let total: u64 = retrans.iter().map(|(_, n)| n).sum();
    if total > 0 {
        let each: Vec<String> = retrans.iter().map(|(n, c)| format!("{n} {c}")).collect();
        d.push(format!("{total} retransmitted segments ({})", each.join(", ")));
    }
    let per_side: Vec<(&str, Vec<String>)> = sides.iter().map(|(n, s)| (n.trim(), side_doubts(s))).collect();
    d.extend(merged(&per_side));
    d
}

/// One side's doubts, without its name.
fn side_doubts(s: &SideReport) -> Vec<String> {
    let mut d = Vec::new();
    let engine = s.send_engine.name();
    if let Some(w) = s.send.as_ref().and_then(|x| x.splice.as_ref()?.small_file_warning()) {
        d.push(w);
    }
    if let Some(z) = s.send.as_ref().and_then(|x| x.zero_copy.as_ref()) {
        if z.copied > 0 {
            d.push(format!(
                "copied zero copy: the kernel copied {} of {} {engine} sends",
                z.copied, z.notifications
            ));
        }
        if z.buffer_waits > 0 {
            d.push(format!("ringperf's own buffers held {engine} sends back {} times", z.buffer_waits));
        }
    }
    if let Some(rv) = &s.recv {
        if let Some(z) = rv.zero_copy.as_ref().filter(|z| z.mapped_fraction() < 0.5) {
            d.push(format!(
                "copied zero-copy receive: {} mapped {:.1} % of bytes",
                rv.engine.name(),
                100.0 * z.mapped_fraction()
            ));
        }
    }
    let steal = s.cpu.system.steal_percent;
    if steal >= STEAL_PERCENT {
        d.push(format!("steal {steal:.1} % of CPU time: the hypervisor ran others on these CPUs"));
    }
    if let Some(p) = s.profile.as_ref().filter(|p| p.unavailable.is_none()) {
        if p.lost > 0 {
            d.push(format!("the profile lost {} samples", p.lost));
        }
        d.extend(profile_note(p));
    }
    if let Some(ol) = s.rr.and_then(|rr| rr.open_loop).filter(|o| o.slipped > 0 || o.dropped > 0) {
        d.push(format!(
            "the open loop fell behind: {} of {} requests sent late, {} dropped",
            ol.slipped, ol.sent, ol.dropped
        ));
    }
    if let Some(u) = s.udp.as_ref().filter(|u| u.timeouts > 0) {
        d.push(format!("{} udp-rr timeouts: requests or responses lost and sent again", u.timeouts));
    }
    d.extend(super::mptcp::fallback_doubt(s));
    if let Some(n) = s.verify.as_ref().map(|v| v.mismatches).filter(|&n| n > 0) {
        d.push(format!("PAYLOAD CORRUPTED in {n} chunk(s)"));
    }
    d
}

/// What a profile's note says beyond its sample count, whose error the tool overhead
/// line's interval already states, and its lost samples, said on their own: the throttling,
/// the missing symbols.
fn profile_note(p: &ProfileReport) -> Option<String> {
    let mut note = p.note.clone()?;
    let said = [report::few_samples_note(p.busy_samples), (p.lost > 0).then(|| report::lost_note(p.lost))];
    for part in said.into_iter().flatten() {
        note = note.replace(&format!("{part}; "), "").replace(&format!("; {part}"), "").replace(&part, "");
    }
    (!note.is_empty()).then(|| format!("profile: {note}"))
}

/// Each side's doubts named by side, a doubt both sides share said once.
fn merged(per_side: &[(&str, Vec<String>)]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, list) in per_side {
        for text in list {
            let others: Vec<&str> =
                per_side.iter().filter(|(_, l)| l.contains(text)).map(|(n, _)| *n).collect();
            if others.first() != Some(name) {
                continue; // said already, with the first side that had it
            }
            let who = if others.len() == per_side.len() && per_side.len() > 1 {
                "both sides".to_string()
            } else {
                others.join(", ")
            };
            out.push(format!("{text} ({who})"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doubt_both_sides_share_is_said_once() {
        let per_side = [
            ("local", vec!["the profile lost 12 samples".to_string(), "steal 3.0 %".to_string()]),
            ("remote", vec!["the profile lost 12 samples".to_string()]),
        ];
        assert_eq!(merged(&per_side), ["the profile lost 12 samples (both sides)", "steal 3.0 % (local)"]);
        assert!(merged(&[("local", vec![]), ("remote", vec![])]).is_empty());
        assert_eq!(merged(&[("local", vec!["x".to_string()])]), ["x (local)"]);
    }

    #[test]
    fn a_profiles_sample_count_is_no_doubt_and_its_lost_samples_are_said_once() {
        let notes = [
            report::few_samples_note(97).expect("97 is few"),
            report::lost_note(12),
            "the kernel throttled sampling 3 times (kernel.perf_event_max_sample_rate): lower --profile-hz"
                .into(),
        ];
        let mut p =
            ProfileReport { busy_samples: 97, lost: 12, note: Some(notes.join("; ")), ..Default::default() };
        assert_eq!(
            profile_note(&p).as_deref(),
            Some("profile: the kernel throttled sampling 3 times (kernel.perf_event_max_sample_rate): lower --profile-hz")
        );
        // Few samples alone: the tool overhead line's interval says how rough.
        (p.lost, p.note) = (0, report::few_samples_note(97));
        assert_eq!(profile_note(&p), None);
        p.note = None;
        assert_eq!(profile_note(&p), None);
    }
}
