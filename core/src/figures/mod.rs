//! The one registry of figures: everything a report's outputs show by name. Each figure
//! says what it is (label, unit), how it is taken from a report (from each iteration, from
//! each interval sample, as the text script output prints), the names each reader knows
//! it by (`diff` and `sweep`/`plot --figure`, `--keyval`/`--csv`, netperf's `-k`/`-o`/`-O`)
//! and, for `diff`, which way is better. The readers keep their layouts (which columns, in
//! which order) but take every figure's name and value from here.
//!
//! Settings (a request size, the engines, the burst) are not figures: what the user asked
//! is echoed under the keyval name declared on its flag, in the CLI's flag registry, which
//! also places it among these fields.

mod figure;
mod run;
mod table;
mod text;

use std::sync::LazyLock;

pub use figure::{Better, Figure, Unit, Value};
pub use run::Run;

use crate::measure::profile::categories::TABLE as CATEGORIES;
use crate::measure::profile::Category;
use crate::TestReport;

/// Every figure: the table's, then each busy profile category's cost per side (`diff`'s
/// names, in the categories table's order).
static ALL: LazyLock<Vec<Figure>> = LazyLock::new(|| {
    let mut all = table::FIGURES.to_vec();
    for local in [true, false] {
        // Idle is not busy CPU: it has no cost per unit of work.
        for row in CATEGORIES.iter().filter(|r| r.category != Category::Idle) {
            all.push(Figure::cost(local, row.category));
        }
    }
    all
});

/// Every figure, in the registry's order (the keyval fields' among them).
pub fn all() -> &'static [Figure] {
    &ALL
}

/// The figure `diff`, `sweep` and `plot` know as `name`.
pub fn by_name(name: &str) -> Option<&'static Figure> {
    ALL.iter().find(|f| f.name == Some(name))
}

/// The names `sweep`/`plot --figure` take, in order.
pub fn names() -> Vec<&'static str> {
    ALL.iter().filter_map(|f| f.name).collect()
}

/// The figures `diff` judges from iterations and interval samples, in order (each busy
/// profile category's cost is judged too, from the profile: [`cost`]).
pub fn judged() -> impl Iterator<Item = &'static Figure> {
    ALL.iter().filter(|f| f.better.is_some() && f.take.iteration.is_some())
}

/// The names `diff --fail-on` takes: the judged figures and the profile categories' costs.
pub fn judged_names() -> impl Iterator<Item = &'static str> {
    ALL.iter().filter(|f| f.better.is_some()).filter_map(|f| f.name)
}

/// The cost figure of `category` on one side (local?); `None` for idle, which costs nothing.
pub fn cost(local: bool, category: Category) -> Option<&'static Figure> {
    ALL.iter().find(|f| f.take.cost == Some((local, category)))
}

/// The figures with a keyval name, in keyval order.
pub fn keyval_fields() -> impl Iterator<Item = &'static Figure> {
    ALL.iter().filter(|f| f.keyval.is_some())
}

/// The figure netperf's selectors take as `name`.
pub fn by_netperf(name: &str) -> Option<&'static Figure> {
    ALL.iter().find(|f| f.netperf == Some(name))
}

/// The figure a chart shows by default: the workload's rate.
pub fn default_for(r: &TestReport) -> &'static Figure {
    let name = if r.summary.transactions_per_sec.is_some() { "transactions" } else { "throughput" };
    by_name(name).unwrap_or(&ALL[0])
}

#[cfg(test)]
mod tests;
