//! `--profile`'s table: every tool's cost per unit of work, category by category, from the
//! kernel cost profile of its windows (ringperf's own for ringperf, the bench's of the
//! peer's client and server processes for a peer: one method for all of them).
//!
//! A category's cost is its median share of busy samples times the tool's median service
//! demand as this bench measured it, so a column adds up to the service demand the
//! summary shows; the shares are rescaled to 100 % after taking their medians (medians of
//! parts need not add up to the median of the whole).

use std::fmt::Write as _;

use ringperf_core::measure::profile::categories::{Category, TABLE};
use ringperf_core::measure::profile::ProfileReport;

use crate::peers::{Config, RunResult, Workload};
use crate::report::{sd, Table};
use crate::stats::median;

/// One tool's column.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub tool: &'static str,
    /// Median service demand over its runs (the bench's /proc/stat window).
    pub total: Option<f64>,
    /// Cost per unit of each busy category, [`TABLE`] order; `None` without a profile.
    pub costs: Option<Vec<(Category, f64)>>,
    /// Why the tool has no profile (the first run's reason), if it has none.
    pub missing: Option<String>,
}

/// The unit of the table: service demand's, per transaction or per KB.
pub fn unit(cfg: &Config) -> &'static str {
    match cfg.workload {
        Workload::Rr | Workload::Crr | Workload::UdpRr => "us/Tr",
        Workload::Stream => "us/KB",
        Workload::UdpStream => "us/datagram",
    }
}

/// A profile that was taken and saw busy CPU.
fn usable(p: &ProfileReport) -> bool {
    p.unavailable.is_none() && p.busy_samples > 0
}

/// The busy categories, in the table's order (idle is not busy CPU).
fn busy_categories() -> impl Iterator<Item = Category> {
    TABLE.iter().map(|r| r.category).filter(|&c| c != Category::Idle)
}

/// `tool`'s column out of its runs.
pub fn column(tool: &'static str, results: &[RunResult]) -> Column {
    let runs: Vec<&RunResult> = results.iter().filter(|r| r.tool == tool).collect();
    let sds: Vec<f64> = runs.iter().filter_map(|r| r.service_demand()).collect();
    let total = median(&sds);
    let profiles: Vec<&ProfileReport> =
        runs.iter().filter_map(|r| r.profile.as_ref()).filter(|p| usable(p)).collect();
    let missing = profiles.is_empty().then(|| {
        let reason = runs.iter().filter_map(|r| r.profile.as_ref()).find_map(|p| match &p.unavailable {
            Some(why) => Some(why.clone()),
            None if p.busy_samples == 0 => Some("no busy samples in its window".to_string()),
            None => None,
        });
        reason.unwrap_or_else(|| "its runs carried no profile".to_string())
    });
    let costs = match (total, profiles.is_empty()) {
        (Some(total), false) => {
            let shares: Vec<(Category, f64)> = busy_categories()
                .map(|c| {
                    let each: Vec<f64> = profiles.iter().map(|p| p.share(c)).collect();
                    (c, median(&each).unwrap_or(0.0))
                })
                .collect();
            let sum: f64 = shares.iter().map(|(_, s)| s).sum();
            (sum > 0.0).then(|| shares.into_iter().map(|(c, s)| (c, s / sum * total)).collect())
        }
        _ => None,
    };
    Column { tool, total, costs, missing }
}

/// The table, with a line on what it means and one per tool without a profile; empty
/// when no tool has a profile.
pub fn render(cfg: &Config, columns: &[Column]) -> String {
    if columns.iter().all(|c| c.costs.is_none()) {
        let mut out = String::from("No kernel cost profile to show:\n");
        for c in columns {
            let _ = writeln!(out, "- {}: {}", c.tool, c.missing.as_deref().unwrap_or("none"));
        }
        out.push('\n');
        return out;
    }
    let unit = unit(cfg);
    let mut head = vec!["category"];
    head.extend(columns.iter().map(|c| c.tool));
    let mut t = Table::new(&head);
    let cost = |col: &Column, cat: Category| {
        col.costs.as_ref().map(|v| v.iter().find(|(c, _)| *c == cat).map_or(0.0, |(_, x)| *x))
    };
    for cat in busy_categories() {
        if columns.iter().all(|col| cost(col, cat).unwrap_or(0.0) == 0.0) {
            continue;
        }
        let mut row = vec![cat.label().to_string()];
        row.extend(columns.iter().map(|col| cell(cost(col, cat))));
        t.row(row);
    }
    let mut total = vec![format!("total = service demand")];
    total.extend(columns.iter().map(|col| sd(col.total)));
    t.row(total);
    let mut network = vec!["network path = total less the tool's own".to_string()];
    network.extend(columns.iter().map(|col| sd(network_path(col))));
    t.row(network);
    let per = if cfg.workload.is_transactional() { "transaction" } else { "KB" };
    let mut out = format!("\n## Cost per {per} by category ({unit}, median over runs)\n\n");
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "  (each category is its median share of busy samples, the shares rescaled to add up to 100 %, times the tool's median \
         service demand as this bench measured it, so a column adds up to its total; every CPU was sampled over each run's \
         window; ringperf's figures are its own profile of its local side (the embedded server's is the same samples), a peer's \
         are the bench's with the client and server processes it started counted as the tool: their user-mode samples are \
         tool user space and their syscall entry/exit is theirs as ringperf's is its own, and the bench's own threads are \
         other processes; every run carries one sampler: ringperf's own (its embedded server takes none), or the bench's for \
         a peer, and its drain thread is a tool helper thread either way; '-': no profile)"
    );
    for c in columns.iter().filter(|c| c.costs.is_none()) {
        let _ = writeln!(out, "  {}: no profile: {}", c.tool, c.missing.as_deref().unwrap_or("none"));
    }
    out.push('\n');
    out
}

/// A column's network path: its total less the categories that are the tool's own (its
/// user space, helper threads, io_uring and syscall entry/exit: `Category::is_tool`), as
/// the engine's profile defines the network path, for ringperf and a peer alike.
pub fn network_path(col: &Column) -> Option<f64> {
    let tool: f64 = col.costs.as_ref()?.iter().filter(|(c, _)| c.is_tool()).map(|(_, x)| x).sum();
    Some(col.total? - tool)
}

/// A category's cost: "0" for none at all, so it reads apart from a small one.
fn cell(v: Option<f64>) -> String {
    match v {
        Some(0.0) => "0".to_string(),
        other => sd(other),
    }
}

/// The table for `tools` out of the comparison's runs.
pub fn table(cfg: &Config, results: &[RunResult], tools: &[&'static str]) -> String {
    let columns: Vec<Column> = tools.iter().map(|&t| column(t, results)).collect();
    render(cfg, &columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::measure::profile::CategoryCost;

    /// A 1-second rr run of 1000 transactions at `busy` of 100 ticks (10 ms each) on one
    /// of two CPUs: `busy` × 10 us/Tr; its profile's shares as given.
    fn run(tool: &'static str, busy: u64, shares: Option<&[(Category, f64)]>) -> RunResult {
        let mut r = RunResult::one_second_rr(tool, 1000.0, busy);
        r.profile = shares.map(|s| ProfileReport {
            busy_samples: 1000,
            categories: s
                .iter()
                .map(|&(category, share_percent)| CategoryCost {
                    category,
                    samples: (share_percent * 10.0) as u64,
                    share_percent,
                    us_per_kb: None,
                    us_per_transaction: None,
                    ns_per_segment: None,
                    ns_per_datagram: None,
                })
                .collect(),
            ..ProfileReport::default()
        });
        r
    }

    fn cfg() -> Config {
        Config::new(Workload::Rr, 1, (0, 0), 1, None)
    }

    /// The cells of the row whose first cell is `label`.
    fn row<'a>(table: &'a str, label: &str) -> Option<Vec<&'a str>> {
        table
            .lines()
            .find(|l| l.starts_with(&format!("| {label} ")))
            .map(|l| l.trim_matches('|').split('|').map(str::trim).skip(1).collect())
    }

    #[test]
    fn a_column_adds_up_to_the_service_demand() {
        let tcp = [(Category::Tcp, 50.0), (Category::ToolUser, 30.0), (Category::Syscall, 20.0)];
        let other = [(Category::Tcp, 40.0), (Category::ToolUser, 40.0), (Category::Scheduler, 20.0)];
        let rs = vec![
            run("ringperf", 20, Some(&tcp)),
            run("netperf", 10, Some(&tcp)),
            run("ringperf", 30, Some(&other)),
            run("netperf", 10, Some(&other)),
            run("ringperf", 25, Some(&tcp)),
            run("netperf", 12, Some(&tcp)),
        ];
        for tool in ["ringperf", "netperf"] {
            let c = column(tool, &rs);
            let total = c.total.unwrap();
            let sum: f64 = c.costs.as_ref().unwrap().iter().map(|(_, x)| x).sum();
            assert!((sum - total).abs() < 1e-9, "{tool}: {sum} vs {total}");
        }
        // ringperf's median SD: 250 us/Tr (20, 25 and 30 % of 10 ms over 1000 Tr);
        // median shares tcp 50, tool 30, syscall 20, scheduler 0: 100 %.
        let ours = column("ringperf", &rs);
        assert!((ours.total.unwrap() - 250.0).abs() < 1e-9);
        let tcp_cost = ours.costs.unwrap().iter().find(|(c, _)| *c == Category::Tcp).unwrap().1;
        assert!((tcp_cost - 125.0).abs() < 1e-9, "{tcp_cost}");
        let t = table(&cfg(), &rs, &["ringperf", "netperf"]);
        assert!(t.contains("us/Tr, median over runs"), "{t}");
        assert_eq!(row(&t, "total = service demand"), Some(vec!["250.0", "100.0"]), "{t}");
        // Less the tool's own 30 % of user space and 20 % of syscall entry/exit (median
        // shares), netperf's as ringperf's: 125 and 50 us/Tr.
        assert_eq!(row(&t, "network path = total less the tool's own"), Some(vec!["125.0", "50.00"]), "{t}");
    }

    #[test]
    fn medians_of_shares_are_rescaled_to_add_up() {
        // Median shares 50 + 40 + 20 = 110 %: rescaled, the column still adds up.
        let a = [(Category::Tcp, 50.0), (Category::Copy, 50.0)];
        let b = [(Category::Tcp, 40.0), (Category::Copy, 40.0), (Category::Locks, 20.0)];
        let c = [(Category::Tcp, 60.0), (Category::Locks, 20.0), (Category::Copy, 20.0)];
        let rs = vec![run("x", 10, Some(&a)), run("x", 10, Some(&b)), run("x", 10, Some(&c))];
        let col = column("x", &rs);
        let sum: f64 = col.costs.as_ref().unwrap().iter().map(|(_, x)| x).sum();
        assert!((sum - col.total.unwrap()).abs() < 1e-9);
    }

    #[test]
    fn a_category_zero_for_every_tool_is_left_out_and_rows_keep_the_table_order() {
        let s = [(Category::Scheduler, 10.0), (Category::Tcp, 60.0), (Category::ToolUser, 30.0)];
        let rs = vec![run("ringperf", 20, Some(&s)), run("netperf", 10, Some(&s))];
        let t = table(&cfg(), &rs, &["ringperf", "netperf"]);
        assert!(row(&t, Category::Udp.label()).is_none(), "{t}");
        assert!(row(&t, Category::Copy.label()).is_none(), "{t}");
        assert!(row(&t, Category::Idle.label()).is_none(), "{t}");
        // The rows between the head and the total, in the engine's table order.
        let labels: Vec<&str> = t
            .lines()
            .filter(|l| l.starts_with("| "))
            .skip(1)
            .filter_map(|l| l.trim_matches('|').split('|').next())
            .map(str::trim)
            .collect();
        let present = [Category::Scheduler, Category::Tcp, Category::ToolUser];
        let mut want: Vec<&str> =
            TABLE.iter().filter(|r| present.contains(&r.category)).map(|r| r.label).collect();
        want.extend(["total = service demand", "network path = total less the tool's own"]);
        assert_eq!(labels, want, "{t}");
        // 60 % of 200 us/Tr and of 100 us/Tr.
        assert_eq!(row(&t, Category::Tcp.label()), Some(vec!["120.0", "60.00"]), "{t}");
    }

    #[test]
    fn a_tool_without_a_profile_shows_a_dash_and_why() {
        let s = [(Category::Tcp, 100.0)];
        let mut refused = run("neper", 10, None);
        refused.profile =
            Some(ProfileReport::unavailable("perf_event_open refused: lower perf_event_paranoid".into()));
        let rs = vec![run("ringperf", 20, Some(&s)), run("netperf", 10, None), refused];
        let t = table(&cfg(), &rs, &["ringperf", "netperf", "neper"]);
        assert_eq!(row(&t, Category::Tcp.label()), Some(vec!["200.0", "-", "-"]), "{t}");
        // Its service demand is still the bench's.
        assert_eq!(row(&t, "total = service demand"), Some(vec!["200.0", "100.0", "100.0"]), "{t}");
        assert!(t.contains("netperf: no profile: its runs carried no profile"), "{t}");
        assert!(t.contains("neper: no profile: perf_event_open refused"), "{t}");
    }

    #[test]
    fn no_profile_anywhere_says_so_instead_of_an_empty_table() {
        let rs = vec![run("ringperf", 20, None), run("netperf", 10, None)];
        let t = table(&cfg(), &rs, &["ringperf", "netperf"]);
        assert!(t.starts_with("No kernel cost profile"), "{t}");
        assert!(!t.contains('|'), "{t}");
    }

    #[test]
    fn a_stream_is_per_kb() {
        let mut c = cfg();
        c.workload = Workload::Stream;
        assert_eq!(unit(&c), "us/KB");
        assert_eq!(unit(&cfg()), "us/Tr");
    }
}
