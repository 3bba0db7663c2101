//! `--keyval` and `--csv`: one set of NAME=value fields, side by side over one report: the
//! keyval fields of the figures' registry (`ringperf_core::figures`, netperf's omni
//! names where netperf has one), with the settings a run echoes (sizes, engines, ...)
//! placed among them where their flags' declarations say ([`args::keyval_settings`]).
//! The manual (docs/confidence.md) lists the result, and a test keeps that list equal to it.

use ringperf_core::figures::{self, Figure, Run};
use ringperf_core::TestReport;

use crate::args::{self, KeyvalSetting};
use ringperf_core::units::Units;

/// Where a field's value comes from.
#[derive(Clone, Copy)]
enum Field {
    /// A figure of the registry.
    Figure(&'static Figure),
    /// A setting, as its flag's declaration reads it back from the report.
    Setting(fn(&TestReport) -> String),
}

/// Where a setting whose mark names no field goes: after the run's figures and the
/// settings among them, before the kernel counters (which came later).
const SETTINGS_END_BEFORE: &str = "LOCAL_SOFTIRQ_PERCENT";

/// Every field in output order: the registry's, each setting right after the field its
/// declaration names (or, naming none, before [`SETTINGS_END_BEFORE`]). A setting added
/// since the later columns existed names the last one, so every older CSV column keeps
/// its place.
fn fields() -> Vec<(&'static str, Field)> {
    let mut out: Vec<(&'static str, Field)> =
        figures::keyval_fields().filter_map(|f| Some((f.keyval?, Field::Figure(f)))).collect();
    let mut pending = args::keyval_settings();
    // A setting may follow one declared after it: place what can be, until nothing moves.
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|s| !place(&mut out, s));
        if pending.len() == before {
            break;
        }
    }
    // After a field that does not exist (a test keeps there being none): at the end.
    out.extend(pending.into_iter().map(|s| (s.name, Field::Setting(s.value))));
    out
}

/// Puts setting `s` where its declaration says, if that field is placed yet.
fn place(out: &mut Vec<(&'static str, Field)>, s: &KeyvalSetting) -> bool {
    let at = |name: &str| out.iter().position(|(n, _)| *n == name);
    let Some(i) = (match s.after {
        Some(prev) => at(prev).map(|i| i + 1),
        None => at(SETTINGS_END_BEFORE),
    }) else {
        return false;
    };
    out.insert(i, (s.name, Field::Setting(s.value)));
    true
}

/// The field names, in output order.
pub fn names() -> impl Iterator<Item = &'static str> {
    fields().into_iter().map(|(name, _)| name)
}

fn text(field: Field, run: &Run) -> String {
    match field {
        Field::Figure(f) => f.text(run).unwrap_or_default(),
        Field::Setting(read) => read(run.report),
    }
}

/// The values of one run (the whole report, or one iteration for a CSV row).
fn values(run: &Run) -> Vec<String> {
    fields().into_iter().map(|(_, field)| text(field, run)).collect()
}

/// The value of field `name` over the whole report (as `--keyval` prints it); `None` for a
/// name that is no field.
pub fn value(r: &TestReport, name: &str, units: Units) -> Option<String> {
    let (_, field) = fields().into_iter().find(|(n, _)| *n == name)?;
    Some(text(field, &Run::whole(r, units)))
}

pub fn render(r: &TestReport, units: Units) -> String {
    let vals = values(&Run::whole(r, units));
    names().zip(vals).map(|(n, v)| format!("{n}={v}\n")).collect()
}

/// A header line (unless `header` is false, `-P 0`) and one row per iteration.
pub fn render_csv(r: &TestReport, units: Units, header: bool) -> String {
    let mut o = String::new();
    if header {
        o.push_str(&names().collect::<Vec<_>>().join(","));
        o.push('\n');
    }
    for run in (0..r.iterations.len()).filter_map(|i| Run::iteration(r, i, units)) {
        o.push_str(&values(&run).iter().map(|v| csv_field(v)).collect::<Vec<_>>().join(","));
        o.push('\n');
    }
    o
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_lists_every_keyval_name_in_order() {
        let manual = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/confidence.md"));
        let start =
            manual.find("`--keyval` prints these names").expect("docs/confidence.md has the keyval list");
        let list = manual[start..].split('`').nth(3).expect("the names in backquotes");
        let listed: Vec<&str> = list.split_whitespace().collect();
        let ours: Vec<&str> = names().collect();
        assert_eq!(
            listed, ours,
            "docs/confidence.md's keyval list differs from the fields keyval.rs renders"
        );
    }

    /// A setting whose `after` names no field would silently land at the end.
    #[test]
    fn every_keyval_setting_follows_a_field_that_exists() {
        let all: Vec<&str> = names().collect();
        for s in args::keyval_settings() {
            if let Some(prev) = s.after {
                assert!(all.contains(&prev), "{} comes after {prev}, which is no keyval field", s.name);
            }
        }
    }

    /// A name is a figure's or a setting's, never both: the two would print one column
    /// twice, and netperf's selectors would find only one of them. Settings without a
    /// place of their own go where the kernel counters begin, so that field must exist.
    #[test]
    fn settings_and_figures_share_no_name() {
        let figures: Vec<&str> = figures::keyval_fields().filter_map(|f| f.keyval).collect();
        assert!(figures.contains(&SETTINGS_END_BEFORE));
        for s in args::keyval_settings() {
            assert!(!figures.contains(&s.name), "{} is a setting and a figure", s.name);
        }
        let all: Vec<&str> = names().collect();
        assert_eq!(all.len(), figures.len() + args::keyval_settings().len());
    }

    /// The settings' CSV columns stay where scripts that read them by position expect them.
    #[test]
    fn settings_keep_their_csv_columns() {
        let all: Vec<&str> = names().collect();
        let column = |n: &str| all.iter().position(|f| *f == n);
        assert_eq!(column("LOCAL_SEND_SIZE"), Some(6));
        assert_eq!(column("RESPONSE_SIZE"), Some(9));
        assert_eq!(column("SEND_ENGINE"), Some(38));
        assert_eq!(column("RCVLOWAT"), Some(58));
        assert_eq!(column("REMOTE_CONG_CONTROL"), Some(60));
        assert_eq!(column("REMOTE_NETWORK_SD_PER_SEGMENT"), Some(98));
        // ENGINE_REASON came after the one-way figures, then the limits of the flows, then MPTCP's.
        let limits = all.iter().skip_while(|n| **n != "ENGINE_REASON").skip(1).count();
        assert_eq!(limits, 10 + 4);
        let later = 1 + limits;
        let one_way = all.iter().filter(|n| n.starts_with("ONE_WAY_")).count();
        assert_eq!(one_way, 5);
        assert_eq!(column("BURST_SIZE"), Some(all.len() - 6 - one_way - later));
        assert_eq!(column("OPEN_LOOP_DROPPED"), Some(all.len() - 1 - one_way - later));
        assert_eq!(column("ONE_WAY_CLOCK_UNCERTAINTY"), Some(all.len() - 1 - later));
        assert_eq!(column("ENGINE_REASON"), Some(all.len() - 1 - limits));
        assert_eq!(
            all.last(),
            Some(&"REMOTE_MPTCP_FALLBACKS"),
            "a column added later goes after every older column"
        );
    }
}
