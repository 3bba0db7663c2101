//! What one figure of the registry is: its names, label, unit, which way is better, and
//! how it is taken from a report; the table and the registry's lookups build on it.

use std::borrow::Cow;

use super::run::Run;
use crate::measure::confidence::estimate;
use crate::measure::profile::categories::TABLE as CATEGORIES;
use crate::measure::profile::{diff_name, Category};
use crate::report::{IntervalSample, IterationFigures};
use crate::TestReport;

/// Which way a figure improves, for `diff`'s verdict of "worse".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// The unit a figure is stored in, which says how it is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bits per second: shown in the rate unit of `-f`, charted in 10^6 bits/s.
    BitsPerSec,
    /// Transactions per second.
    TransPerSec,
    /// Percent of all CPUs' time.
    CpuPercent,
    /// Percent of busy CPU time.
    BusyPercent,
    /// Busy CPU µs per KB moved, or per transaction in request/response.
    ServiceDemand,
    /// A round trip in ns, shown in µs.
    LatencyNs,
    /// Busy CPU ns per TCP segment.
    NsPerSegment,
    /// A count per count (received packets per NET_RX softirq).
    Ratio,
    /// Percent of the flows' time over the window (tcp_info's chronographs).
    WindowPercent,
    /// A count of events (segments echoed as CE-marked).
    Count,
    /// Only script output shows it, as the text it prints: a count, a size, a name.
    Text,
}

impl Unit {
    /// The multiplier from the stored unit to the one charts and the sweep table show.
    pub fn scale(self) -> f64 {
        match self {
            Unit::BitsPerSec => 1e-6,
            Unit::LatencyNs => 1e-3,
            _ => 1.0,
        }
    }

    /// The unit a chart's axis names after the label; `None` where the label says it.
    pub fn axis(self) -> Option<&'static str> {
        match self {
            Unit::BitsPerSec => Some("10^6 bits/s"),
            Unit::CpuPercent => Some("% of all CPUs"),
            Unit::BusyPercent => Some("% of busy CPU"),
            Unit::ServiceDemand => Some("us/KB or us/Tr"),
            Unit::LatencyNs => Some("us"),
            Unit::NsPerSegment => Some("ns"),
            Unit::WindowPercent => Some("% of flow time"),
            Unit::TransPerSec | Unit::Ratio | Unit::Count | Unit::Text => None,
        }
    }
}

/// A figure of the registry.
#[derive(Clone, Copy)]
pub struct Figure {
    /// The name `diff` (`--fail-on`), `sweep` and `plot` (`--figure`) take; `None` for a
    /// field only script output prints.
    pub name: Option<&'static str>,
    /// What a chart's axis calls it, before the unit ([`Figure::label`]).
    label: &'static str,
    pub unit: Unit,
    /// Which way is better: `diff` judges the figures that say.
    pub better: Option<Better>,
    /// Its `--keyval`/`--csv` field name.
    pub keyval: Option<&'static str>,
    /// Its name among netperf's `-k`/`-o`/`-O` selectors.
    pub netperf: Option<&'static str>,
    pub(super) take: Take,
}

/// How a figure is taken from a report.
#[derive(Clone, Copy)]
pub(super) struct Take {
    /// From one iteration's headline figures (`diff`, `sweep`, `plot`).
    pub(super) iteration: Option<fn(&IterationFigures) -> Option<f64>>,
    /// From one interval sample (`diff`'s spread of a run that did not iterate).
    pub(super) interval: Option<fn(&IntervalSample) -> Option<f64>>,
    /// A kernel cost profile category's cost per unit of work on one side (local?).
    pub(super) cost: Option<(bool, Category)>,
    /// It exists only in a run that took the kernel cost profile.
    pub(super) profile: bool,
    /// The text `--keyval` and `--csv` print.
    pub(super) text: Option<fn(&Run) -> String>,
    /// The text netperf's selectors print, where it differs from the keyval text (`None`
    /// from the function: netperf prints nothing for it).
    pub(super) netperf_text: Option<fn(&Run) -> Option<String>>,
}

const TAKE_NOTHING: Take =
    Take { iteration: None, interval: None, cost: None, profile: false, text: None, netperf_text: None };

/// What a field of script output only is before its names: text, in no chart, not judged.
const TEXT: Figure = Figure {
    name: None,
    label: "",
    unit: Unit::Text,
    better: None,
    keyval: None,
    netperf: None,
    take: TAKE_NOTHING,
};

impl Figure {
    /// A figure `diff`, `sweep` and `plot` know as `name`, taken from each iteration.
    pub(super) const fn headline(
        name: &'static str,
        label: &'static str,
        unit: Unit,
        of: fn(&IterationFigures) -> Option<f64>,
    ) -> Figure {
        Figure {
            name: Some(name),
            label,
            unit,
            better: None,
            keyval: None,
            netperf: None,
            take: Take { iteration: Some(of), ..TAKE_NOTHING },
        }
    }

    /// A field only script output prints: its keyval name and text.
    pub(super) const fn field(keyval: &'static str, text: fn(&Run) -> String) -> Figure {
        TEXT.keyval(keyval, text)
    }

    /// A field only netperf's selectors print.
    pub(super) const fn netperf_only(name: &'static str, text: fn(&Run) -> Option<String>) -> Figure {
        TEXT.netperf_own(name, text)
    }

    /// Its keyval name and the text printed under it.
    pub(super) const fn keyval(self, name: &'static str, text: fn(&Run) -> String) -> Figure {
        Figure { keyval: Some(name), take: Take { text: Some(text), ..self.take }, ..self }
    }

    /// netperf's selectors take it as `name` and print the keyval text.
    pub(super) const fn netperf(self, name: &'static str) -> Figure {
        Figure { netperf: Some(name), ..self }
    }

    /// netperf's selectors take it as `name` and print `text`.
    pub(super) const fn netperf_own(self, name: &'static str, text: fn(&Run) -> Option<String>) -> Figure {
        Figure { netperf: Some(name), take: Take { netperf_text: Some(text), ..self.take }, ..self }
    }

    /// `diff` judges it, `better` telling which way.
    pub(super) const fn judged(self, better: Better) -> Figure {
        Figure { better: Some(better), ..self }
    }

    /// Interval samples have it too.
    pub(super) const fn per_interval(self, of: fn(&IntervalSample) -> Option<f64>) -> Figure {
        Figure { take: Take { interval: Some(of), ..self.take }, ..self }
    }

    /// It comes from the kernel cost profile (--profile).
    pub(super) const fn profiled(self) -> Figure {
        Figure { take: Take { profile: true, ..self.take }, ..self }
    }

    /// A profile category's cost per unit of work on one side, under the name `diff` gives it.
    pub(super) fn cost(local: bool, category: Category) -> Figure {
        Figure {
            name: Some(diff_name(local, category)),
            label: "",
            unit: Unit::ServiceDemand,
            better: Some(Better::Lower),
            keyval: None,
            netperf: None,
            take: Take { cost: Some((local, category)), profile: true, ..TAKE_NOTHING },
        }
    }

    /// What a chart's axis calls it, before the unit.
    pub fn label(&self) -> Cow<'static, str> {
        match self.take.cost {
            Some((local, category)) => {
                let side = if local { "local" } else { "remote" };
                let what = CATEGORIES.iter().find(|r| r.category == category).map_or("?", |r| r.label);
                Cow::Owned(format!("{side} cost in {what}"))
            }
            None => Cow::Borrowed(self.label),
        }
    }

    /// The label with its unit, as a chart's axis shows it.
    pub fn axis_label(&self) -> String {
        match self.unit.axis() {
            Some(unit) => format!("{} ({unit})", self.label()),
            None => self.label().into_owned(),
        }
    }

    /// True when the figure exists only in a run that took the kernel cost profile.
    pub fn needs_profile(&self) -> bool {
        self.take.profile
    }

    /// Its value in one iteration (stored unit), for the headline figures.
    pub fn of_iteration(&self, f: &IterationFigures) -> Option<f64> {
        self.take.iteration.and_then(|of| of(f))
    }

    /// How an interval sample gives it, when one does.
    pub fn of_interval(&self) -> Option<fn(&IntervalSample) -> Option<f64>> {
        self.take.interval
    }

    /// The profile category and side (local?) whose cost per unit it is.
    pub fn cost_of(&self) -> Option<(bool, Category)> {
        self.take.cost
    }

    /// Its samples in a report (stored unit): one per iteration, or the run's one value.
    pub fn samples(&self, r: &TestReport) -> Vec<f64> {
        match (self.take.iteration, self.take.cost) {
            (Some(of), _) => r.iterations.iter().filter_map(of).collect(),
            (None, Some((local, category))) => cost_samples(r, local, category),
            (None, None) => Vec::new(),
        }
    }

    /// The mean over the report's iterations and, when it iterated, the half-width at its
    /// confidence level, both in the unit charts show. `None` if the report lacks it.
    pub fn of(&self, r: &TestReport) -> Option<Value> {
        let samples = self.samples(r);
        if samples.is_empty() {
            return None;
        }
        let scale = self.unit.scale();
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        let name = self.name.or(self.keyval).unwrap_or("");
        let half_width = r
            .confidence
            .as_ref()
            .and_then(|c| estimate(name, &samples, c.target.level))
            .map(|e| e.half_width * scale);
        Some(Value { mean: mean * scale, half_width })
    }

    /// The text `--keyval`/`--csv` print for `run`; `None` for a figure without a keyval name.
    pub fn text(&self, run: &Run) -> Option<String> {
        self.take.text.map(|t| t(run))
    }

    /// The text netperf's selectors print for `run`; `None`: nothing (a figure netperf has
    /// no name for, or one this run cannot fill).
    pub fn netperf_text(&self, run: &Run) -> Option<String> {
        self.netperf?;
        match self.take.netperf_text {
            Some(t) => t(run),
            None => self.text(run),
        }
    }
}

/// A figure's value over one report, in the unit charts show.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    pub mean: f64,
    /// Confidence half-width; `None` from a single iteration.
    pub half_width: Option<f64>,
}

/// A category's cost per unit on one side: each iteration's (-i), else the run's; an
/// iteration without samples in the category spent nothing there. None without a profile.
fn cost_samples(r: &TestReport, local: bool, category: Category) -> Vec<f64> {
    let side = if local { Some(&r.local) } else { r.remote.as_ref() };
    let Some(p) = side.and_then(|s| s.profile.as_ref()).filter(|p| p.unavailable.is_none()) else {
        return Vec::new();
    };
    let of = |costs: &[(Category, f64)]| costs.iter().find(|c| c.0 == category).map_or(0.0, |c| c.1);
    if p.iterations.is_empty() {
        vec![of(&p.unit_costs(r.spec.workload.is_transactional()))]
    } else {
        p.iterations.iter().map(|i| of(i)).collect()
    }
}
