//! The report builder: samples to categories, shares of busy CPU, costs per unit of work,
//! the top kernel functions, the tool's honest overhead, the network path's service
//! demand, and (on request) the folded stacks a flame graph is drawn from.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::categories::{self, Category, Runner};
use super::sampler::{RawProfile, RawStack};
use super::symbolizer::Names;
use crate::report::ServiceDemand;
use crate::setting::spelled;

/// Below this many busy samples the note says the figures are rough: a category's share
/// is a proportion of n samples, and its standard error, sqrt(p(1-p)/n), is up to 1.6
/// percentage points at n = 1000 (p = 0.5), which is already as large as the smaller
/// categories themselves.
pub const FEW_SAMPLES: u64 = 1000;
/// Kernel functions the report lists.
pub const TOP_FUNCTIONS: usize = 15;
/// The folded stacks of one side are cut to this many bytes (the most frequent stacks
/// first) so the server's report stays within its frame; what was cut is one line.
pub const FOLDED_BUDGET: usize = 2 << 20;

/// A side's kernel cost profile over its window.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ProfileReport {
    /// Why there is no profile (the kernel refused, ...): one line that says what to do.
    /// `None` when the window was sampled.
    #[serde(default)]
    pub unavailable: Option<String>,
    /// The event sampled: "cycles" or "cpu-clock".
    #[serde(default)]
    pub event: String,
    /// Samples per second per CPU asked for.
    #[serde(default)]
    pub hz: u32,
    /// CPUs sampled (all online ones, as /proc/stat counts them).
    #[serde(default)]
    pub cpus: usize,
    #[serde(default)]
    pub samples: u64,
    /// Samples the kernel dropped (a full buffer) or that did not parse.
    #[serde(default)]
    pub lost: u64,
    /// Samples not in the idle loop: the 100 % every share is of.
    #[serde(default)]
    pub busy_samples: u64,
    #[serde(default)]
    pub idle_samples: u64,
    /// Every busy category with samples, most first.
    #[serde(default)]
    pub categories: Vec<CategoryCost>,
    /// The kernel functions most samples were taken in (their own time, not their callees').
    #[serde(default)]
    pub top_functions: Vec<FunctionShare>,
    /// The harness's share of busy CPU, percent: tool user space, its helper threads,
    /// io_uring machinery (io-wq and SQPOLL threads included) and syscall entry/exit
    /// ([`Category::is_tool`]).
    #[serde(default)]
    pub tool_overhead_percent: f64,
    /// Service demand with the tool's own categories taken out: the kernel and NIC path.
    #[serde(default)]
    pub network_service_demand: ServiceDemand,
    /// The same for UDP's per-datagram figure, ns.
    #[serde(default)]
    pub network_ns_per_datagram: Option<f64>,
    /// Why the figures should be read with care (few samples, lost samples, no symbols).
    #[serde(default)]
    pub note: Option<String>,
    /// With -i: every iteration's cost per unit of each busy category (us/Tr for rr,
    /// us/KB otherwise), the last one included, so `ringperf diff` can judge a change
    /// against the runs' spread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iterations: Vec<Vec<(Category, f64)>>,
    /// Folded stacks ("frame;frame;leaf count" lines), with --profile-out only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded: Option<String>,
}

/// One category's share of busy CPU and its cost per unit of work (service demand's units).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CategoryCost {
    pub category: Category,
    pub samples: u64,
    /// Percent of busy samples.
    pub share_percent: f64,
    /// Busy CPU µs per KB this side moved, spent in this category.
    pub us_per_kb: Option<f64>,
    pub us_per_transaction: Option<f64>,
    pub ns_per_segment: Option<f64>,
    pub ns_per_datagram: Option<f64>,
}

/// One kernel function's own samples.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FunctionShare {
    pub function: String,
    /// The function's own category; for a generic one (a lock, a copy, the allocator:
    /// `generic`), the fallback, as its samples were charged to their callers'.
    pub category: Category,
    #[serde(default)]
    pub generic: bool,
    pub samples: u64,
    /// Percent of busy samples.
    pub share_percent: f64,
}

/// The work the window did, as service demand counts it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Work {
    /// Payload bytes sent plus received.
    pub bytes: u64,
    pub transactions: u64,
    /// TCP data segments out plus in.
    pub segments: u64,
    /// UDP datagrams sent plus received.
    pub datagrams: u64,
}

impl ProfileReport {
    /// A report that says only why there is no profile.
    pub fn unavailable(reason: String) -> ProfileReport {
        ProfileReport { unavailable: Some(reason), ..ProfileReport::default() }
    }

    /// A category's entry, if it had samples.
    pub fn category(&self, c: Category) -> Option<&CategoryCost> {
        self.categories.iter().find(|x| x.category == c)
    }

    /// Each busy category's cost per unit of work: us per transaction when `per_transaction`,
    /// else us per KB; categories without that unit are left out.
    pub fn unit_costs(&self, per_transaction: bool) -> Vec<(Category, f64)> {
        self.categories
            .iter()
            .filter_map(|c| {
                Some((c.category, if per_transaction { c.us_per_transaction? } else { c.us_per_kb? }))
            })
            .collect()
    }

    /// Percent of busy CPU in `c` (0 when it had no samples).
    pub fn share(&self, c: Category) -> f64 {
        self.category(c).map_or(0.0, |x| x.share_percent)
    }
}

/// What the builder needs besides the samples.
pub struct Inputs<'a> {
    pub event: &'a str,
    pub hz: u32,
    pub cpus: usize,
    /// Busy CPU µs of the window (/proc/stat, as service demand uses it).
    pub busy_us: f64,
    pub work: Work,
    pub service_demand: ServiceDemand,
    /// The tool's processes: their user-mode samples are its user space (ringperf: its own
    /// process; a peer profiled by ringperf-bench: its client and server).
    pub tool_pids: &'a [u32],
    /// Produce folded stacks.
    pub folded: bool,
}

/// One sample's who and what, resolved.
struct Resolved<'a> {
    runner: Runner,
    comm: &'a str,
    category: Category,
}

fn resolve<'a>(stack: &RawStack, raw: &'a RawProfile, kernel: &Names, tool_pids: &[u32]) -> Resolved<'a> {
    let comm = raw.comms.get(&stack.tid).map_or("", String::as_str);
    let runner = Runner::among(stack.pid, comm, tool_pids);
    let category =
        categories::of_sample(runner, stack.user_mode, stack.kernel.iter().map(|&a| kernel.get(a)));
    Resolved { runner, comm, category }
}

/// Builds the report from what the sampler collected and the names of its addresses.
/// `symbol_error`: why kernel names are missing, for the note.
pub fn build(
    raw: &RawProfile,
    kernel: &Names,
    user: Option<&Names>,
    symbol_error: Option<String>,
    inputs: &Inputs,
) -> ProfileReport {
    let mut per_category: HashMap<Category, u64> = HashMap::new();
    let mut per_function: HashMap<&str, (Category, u64)> = HashMap::new();
    let mut folded: HashMap<String, u64> = HashMap::new();
    for (stack, &n) in &raw.stacks {
        let r = resolve(stack, raw, kernel, inputs.tool_pids);
        *per_category.entry(r.category).or_insert(0) += n;
        if r.category != Category::Idle {
            if let Some(&leaf) = stack.kernel.first().filter(|_| !stack.user_mode) {
                // The function's own category (a helper thread's tcp_sendmsg is still TCP code).
                let name = kernel.get(leaf);
                per_function.entry(name).or_insert((categories::of_kernel_stack([name]), 0)).1 += n;
            }
        }
        if inputs.folded {
            *folded.entry(fold(stack, &r, kernel, user)).or_insert(0) += n;
        }
    }
    let samples: u64 = per_category.values().sum();
    let idle_samples = per_category.remove(&Category::Idle).unwrap_or(0);
    let busy_samples = samples - idle_samples;
    let share = |n: u64| if busy_samples == 0 { 0.0 } else { 100.0 * n as f64 / busy_samples as f64 };
    let w = inputs.work;
    let per = |cost: f64, units: u64, scale: f64| (units > 0).then(|| cost * scale / units as f64);
    let mut categories: Vec<CategoryCost> = per_category
        .into_iter()
        .map(|(category, n)| {
            let cost_us = share(n) / 100.0 * inputs.busy_us;
            CategoryCost {
                category,
                samples: n,
                share_percent: share(n),
                us_per_kb: per(cost_us, w.bytes, 1024.0),
                us_per_transaction: per(cost_us, w.transactions, 1.0),
                ns_per_segment: per(cost_us, w.segments, 1000.0),
                ns_per_datagram: per(cost_us, w.datagrams, 1000.0),
            }
        })
        .collect();
    categories.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.category.cmp(&b.category)));
    let mut top_functions: Vec<FunctionShare> = per_function
        .into_iter()
        .map(|(f, (category, n))| FunctionShare {
            function: f.to_string(),
            category,
            generic: categories::generic(f).is_some(),
            samples: n,
            share_percent: share(n),
        })
        .collect();
    top_functions.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.function.cmp(&b.function)));
    top_functions.truncate(TOP_FUNCTIONS);
    let tool_overhead_percent: f64 =
        categories.iter().filter(|c| c.category.is_tool()).map(|c| c.share_percent).sum();
    let keep = 1.0 - tool_overhead_percent / 100.0;
    let sd = inputs.service_demand;
    let network_service_demand = ServiceDemand {
        us_per_kb: sd.us_per_kb.map(|v| v * keep),
        us_per_transaction: sd.us_per_transaction.map(|v| v * keep),
        ns_per_segment: sd.ns_per_segment.map(|v| v * keep),
    };
    let network_ns_per_datagram =
        (w.datagrams > 0).then(|| inputs.busy_us * keep * 1000.0 / w.datagrams as f64);
    let mut notes = Vec::new();
    notes.extend(few_samples_note(busy_samples));
    if raw.lost > 0 {
        notes.push(lost_note(raw.lost));
    }
    if raw.throttled > 0 {
        notes.push(spelled(&format!(
            "the kernel throttled sampling {} times (kernel.perf_event_max_sample_rate): lower {{profile-hz}}",
            raw.throttled
        )));
    }
    if let Some(e) = symbol_error {
        notes.push(e);
    }
    ProfileReport {
        unavailable: None,
        event: inputs.event.to_string(),
        hz: inputs.hz,
        cpus: inputs.cpus,
        samples,
        lost: raw.lost,
        busy_samples,
        idle_samples,
        categories,
        top_functions,
        tool_overhead_percent,
        network_service_demand,
        network_ns_per_datagram,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        iterations: Vec::new(),
        folded: inputs.folded.then(|| folded_text(folded)),
    }
}

/// The note's part on a small sample count, if it is one; a reader that states the
/// shares' error itself leaves it out of the note.
pub fn few_samples_note(busy_samples: u64) -> Option<String> {
    (busy_samples < FEW_SAMPLES).then(|| spelled(&format!(
        "only {busy_samples} busy samples (under {FEW_SAMPLES}): shares are rough to a couple of points; run longer or raise {{profile-hz}}"
    )))
}

/// The note's part on samples the kernel dropped.
pub fn lost_note(lost: u64) -> String {
    spelled(&format!("{lost} samples lost (the sample buffer was full): lower {{profile-hz}}"))
}

/// One sample as a folded line's frames, root first: who ran, its user frames, then its
/// kernel frames marked `_[k]` (as perf's folding marks them, so flame graphs color them).
/// Other processes are not named: a server must not tell a client what else it runs.
fn fold(stack: &RawStack, r: &Resolved, kernel: &Names, user: Option<&Names>) -> String {
    let mut frames: Vec<String> = Vec::with_capacity(stack.kernel.len() + stack.user.len() + 1);
    frames.push(match r.runner {
        // The thread's own name (`ringperf-worker`, `ringperf-watch`, ...): whose work it
        // was is what a flame graph and the attribution test read from it.
        Runner::Tool | Runner::ToolHelper if !r.comm.is_empty() => r.comm.to_string(),
        Runner::Tool | Runner::ToolHelper => "ringperf".to_string(),
        Runner::IoUringHelper => r.comm.split('-').take(2).collect::<Vec<_>>().join("-"),
        Runner::Other if stack.pid == 0 => IDLE_TASK.to_string(),
        Runner::Other => OTHER_PROCESS.to_string(),
    });
    match (r.runner, user) {
        // Only this process's addresses were symbolized (a listed peer's are not ours).
        (Runner::Tool | Runner::ToolHelper, Some(names)) if stack.pid == std::process::id() => {
            frames.extend(stack.user.iter().rev().map(|&a| names.get(a).to_string()))
        }
        _ if !stack.user.is_empty() => frames.push("[user]".to_string()),
        _ => {}
    }
    frames.extend(stack.kernel.iter().rev().map(|&a| format!("{}_[k]", kernel.get(a))));
    // A folded line is split at ';' and at its last ' ': neither may appear in a frame.
    frames.iter().map(|f| f.replace([';', ' '], "_")).collect::<Vec<_>>().join(";")
}

/// The line that counts the samples whose stacks did not fit.
pub const CUT_LINE: &str = "[stacks cut to fit the report]";
/// The first frame of another process's sample, and of the idle task's.
const OTHER_PROCESS: &str = "[other-process]";
const IDLE_TASK: &str = "swapper";

/// One line of folded stacks read back, as far as its category goes: who ran (the first
/// frame names the thread, see [`fold`]), in which mode (a sample with no `_[k]` frame was
/// taken in user mode), its kernel frames, and how many samples it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldedLine<'a> {
    pub runner: Runner,
    pub user_mode: bool,
    /// Kernel frames, leaf first, without their `_[k]` mark.
    pub kernel: Vec<&'a str>,
    pub samples: u64,
}

impl<'a> FoldedLine<'a> {
    /// One line [`fold`] wrote; `None` for the cut line and anything that is not
    /// "frames count". A line's tool is the process that wrote it: every first frame but
    /// another process's and the idle task's is one of its threads.
    pub fn parse(line: &'a str) -> Option<FoldedLine<'a>> {
        let (stack, n) = line.rsplit_once(' ')?;
        let samples = n.parse().ok()?;
        let mut frames = stack.split(';');
        let runner = match frames.next()? {
            "" | CUT_LINE => return None,
            OTHER_PROCESS | IDLE_TASK => Runner::Other,
            thread => Runner::of_tool_thread(thread),
        };
        let kernel: Vec<&str> = frames.filter_map(|f| f.strip_suffix("_[k]")).rev().collect();
        Some(FoldedLine { runner, user_mode: kernel.is_empty(), kernel, samples })
    }

    /// Its category, by the same rules a live profile's samples go by.
    pub fn category(&self) -> Category {
        categories::of_sample(self.runner, self.user_mode, self.kernel.iter().copied())
    }
}

/// Folded lines, most samples first, cut at [`FOLDED_BUDGET`] bytes.
fn folded_text(lines: HashMap<String, u64>) -> String {
    let mut lines: Vec<(String, u64)> = lines.into_iter().collect();
    lines.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out = String::new();
    let mut cut = 0u64;
    for (stack, n) in lines {
        if out.len() + stack.len() + 24 > FOLDED_BUDGET {
            cut += n;
            continue;
        }
        out.push_str(&format!("{stack} {n}\n"));
    }
    if cut > 0 {
        out.push_str(&format!("{CUT_LINE} {cut}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: u32 = 100;

    fn stack(pid: u32, tid: u32, user_mode: bool, kernel: &[u64]) -> RawStack {
        RawStack { pid, tid, user_mode, kernel: kernel.to_vec(), user: vec![0x40_0000] }
    }

    fn sample_profile() -> (RawProfile, Names) {
        let names = Names::from_pairs([
            (1, "tcp_sendmsg_locked".to_string()),
            (2, "rep_movs_alternative".to_string()),
            (3, "_copy_from_iter".to_string()),
            (4, "io_submit_sqes".to_string()),
            (5, "pv_native_safe_halt".to_string()),
            (6, "do_syscall_64".to_string()),
            (7, "do_sys_poll".to_string()),
        ]);
        let mut raw = RawProfile::default();
        raw.comms.insert(OWN, "ringperf".into());
        raw.comms.insert(OWN + 1, "iou-wrk-100".into());
        raw.comms.insert(7, "bash".into());
        raw.stacks.insert(stack(OWN, OWN, false, &[1, 6]), 30);
        raw.stacks.insert(stack(OWN, OWN, false, &[2, 3, 1]), 20);
        raw.stacks.insert(stack(OWN, OWN, false, &[4, 6]), 15);
        raw.stacks.insert(stack(OWN, OWN, true, &[]), 10);
        raw.stacks.insert(stack(OWN, OWN + 1, false, &[1]), 5);
        raw.stacks.insert(stack(7, 7, true, &[]), 20);
        raw.stacks.insert(stack(0, 0, false, &[5]), 100);
        raw.samples = 200;
        (raw, names)
    }

    fn inputs(folded: bool) -> Inputs<'static> {
        Inputs {
            event: "cpu-clock",
            hz: 999,
            cpus: 2,
            busy_us: 1000.0,
            work: Work { bytes: 10 * 1024, transactions: 4, segments: 8, datagrams: 0 },
            service_demand: ServiceDemand {
                us_per_kb: Some(100.0),
                us_per_transaction: Some(250.0),
                ns_per_segment: Some(125_000.0),
            },
            tool_pids: &[OWN],
            folded,
        }
    }

    #[test]
    fn categories_add_up_to_every_busy_sample_and_costs_to_busy_time() {
        let (raw, names) = sample_profile();
        let r = build(&raw, &names, None, None, &inputs(false));
        assert_eq!(r.samples, 200);
        assert_eq!(r.idle_samples, 100);
        assert_eq!(r.busy_samples, 100);
        assert_eq!(r.categories.iter().map(|c| c.samples).sum::<u64>(), r.busy_samples);
        let shares: f64 = r.categories.iter().map(|c| c.share_percent).sum();
        assert!((shares - 100.0).abs() < 1e-9, "{shares}");
        // Per-unit cost times the work is the busy time, for every unit.
        let w = inputs(false).work;
        let kb: f64 = r.categories.iter().map(|c| c.us_per_kb.unwrap() * w.bytes as f64 / 1024.0).sum();
        let tr: f64 =
            r.categories.iter().map(|c| c.us_per_transaction.unwrap() * w.transactions as f64).sum();
        let seg: f64 =
            r.categories.iter().map(|c| c.ns_per_segment.unwrap() * w.segments as f64 / 1000.0).sum();
        for total in [kb, tr, seg] {
            assert!((total - 1000.0).abs() < 1e-6, "{total}");
        }
        assert!(r.categories.iter().all(|c| c.ns_per_datagram.is_none()));
    }

    #[test]
    fn the_tool_is_its_user_space_io_uring_and_helpers() {
        let (raw, names) = sample_profile();
        let r = build(&raw, &names, None, None, &inputs(false));
        assert_eq!(r.share(Category::Tcp), 30.0);
        // The copy under tcp_sendmsg (generic leaf, payload-copy caller).
        assert_eq!(r.share(Category::Copy), 20.0);
        // io_submit_sqes (15) and the io-wq thread sending (5).
        assert_eq!(r.share(Category::IoUring), 20.0);
        assert_eq!(r.share(Category::ToolUser), 10.0);
        assert_eq!(r.share(Category::OtherUser), 20.0);
        assert!((r.tool_overhead_percent - 30.0).abs() < 1e-9);
        let net = r.network_service_demand;
        assert!((net.us_per_transaction.unwrap() - 175.0).abs() < 1e-9);
        assert!((net.us_per_kb.unwrap() - 70.0).abs() < 1e-9);
        assert_eq!(r.top_functions[0].function, "tcp_sendmsg_locked");
        // Its own samples and the io-wq thread's.
        assert_eq!(r.top_functions[0].samples, 35);
        assert_eq!(r.top_functions[0].category, Category::Tcp);
        assert!(r.top_functions.iter().all(|f| f.function != "pv_native_safe_halt"));
        // 100 busy samples is few.
        assert!(r.note.as_deref().unwrap_or("").contains("busy samples"));
        assert!(r.folded.is_none());
    }

    #[test]
    fn a_peers_listed_processes_are_the_tool_user_space() {
        // ringperf-bench profiling a peer: the client (OWN) and its server (OWN + 50); the
        // shell (7) is still someone else.
        let (mut raw, names) = sample_profile();
        raw.comms.insert(OWN + 50, "netserver".into());
        raw.stacks.insert(stack(OWN + 50, OWN + 50, true, &[]), 40);
        let tool = [OWN, OWN + 50];
        let r = build(&raw, &names, None, None, &Inputs { tool_pids: &tool, ..inputs(false) });
        assert_eq!(r.busy_samples, 140);
        assert_eq!(r.category(Category::ToolUser).map(|c| c.samples), Some(50));
        assert_eq!(r.category(Category::OtherUser).map(|c| c.samples), Some(20));
        // The same samples with only this process listed: the server's are someone else's.
        let alone = build(&raw, &names, None, None, &inputs(false));
        assert_eq!(alone.category(Category::ToolUser).map(|c| c.samples), Some(10));
        assert_eq!(alone.category(Category::OtherUser).map(|c| c.samples), Some(60));
    }

    #[test]
    fn folded_stacks_name_the_tool_and_hide_other_processes() {
        let (raw, names) = sample_profile();
        let r = build(&raw, &names, None, None, &inputs(true));
        let folded = r.folded.unwrap();
        assert!(
            folded.lines().any(|l| l == "ringperf;[user];do_syscall_64_[k];tcp_sendmsg_locked_[k] 30"),
            "{folded}"
        );
        assert!(folded.lines().any(|l| l.starts_with("iou-wrk;")), "{folded}");
        assert!(!folded.contains("bash"));
        let total: u64 = folded.lines().filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok()).sum();
        assert_eq!(total, 200);
    }

    #[test]
    fn syscall_entry_and_helper_threads_are_the_tools_and_folded_lines_read_back_alike() {
        let (mut raw, names) = sample_profile();
        raw.comms.insert(OWN + 2, "ringperf-watch".into());
        raw.comms.insert(8, "cargo".into());
        // The tool entering the kernel, its watcher waiting, another process entering.
        raw.stacks.insert(stack(OWN, OWN, false, &[6]), 10);
        raw.stacks.insert(stack(OWN, OWN + 2, false, &[7, 6]), 4);
        raw.stacks.insert(stack(8, 8, false, &[6]), 6);
        let r = build(&raw, &names, None, None, &inputs(true));
        assert_eq!(r.busy_samples, 120);
        assert_eq!(r.category(Category::Syscall).map(|c| c.samples), Some(10));
        assert_eq!(r.category(Category::ToolThreads).map(|c| c.samples), Some(4));
        // cargo's syscall entry is not the tool's.
        assert_eq!(r.category(Category::OtherKernel).map(|c| c.samples), Some(6));
        // User space 10, io_uring 15 + 5, syscall 10, watcher 4: 44 of 120.
        assert!((r.tool_overhead_percent - 100.0 * 44.0 / 120.0).abs() < 1e-9, "{}", r.tool_overhead_percent);
        // Every folded line, read back, lands where its samples did.
        let folded = r.folded.as_deref().unwrap();
        assert!(
            folded.lines().any(|l| l == "ringperf-watch;[user];do_syscall_64_[k];do_sys_poll_[k] 4"),
            "{folded}"
        );
        let mut back: HashMap<Category, u64> = HashMap::new();
        for line in folded.lines() {
            let l = FoldedLine::parse(line).unwrap_or_else(|| panic!("unreadable: {line}"));
            *back.entry(l.category()).or_insert(0) += l.samples;
        }
        assert_eq!(back.remove(&Category::Idle), Some(r.idle_samples));
        let built: HashMap<Category, u64> = r.categories.iter().map(|c| (c.category, c.samples)).collect();
        assert_eq!(back, built);
        assert_eq!(FoldedLine::parse(&format!("{CUT_LINE} 12")), None);
        assert_eq!(FoldedLine::parse("ringperf;tcp_ack_[k]"), None);
    }

    #[test]
    fn an_empty_window_is_all_zero_not_nan() {
        let r = build(&RawProfile::default(), &Names::from_pairs([]), None, None, &inputs(false));
        assert_eq!(r.busy_samples, 0);
        assert!(r.categories.is_empty());
        assert_eq!(r.tool_overhead_percent, 0.0);
        assert!(r.tool_overhead_percent.is_finite());
    }
}
