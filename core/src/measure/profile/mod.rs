//! The kernel cost profile of a side's window: sampled from the moment the window opens
//! to the moment it closes, on every online CPU (what /proc/stat counts too), then
//! symbolized and sorted into categories.
//!
//! One idea per file: [`sampler`] (perf events and their drain thread), [`symbolizer`]
//! (addresses to names), [`categories`] (the one table), [`report`] (the builder);
//! `recorded` checks the table on recorded profiles (`testdata/`).

pub mod categories;
#[cfg(test)]
mod recorded;
pub mod report;
pub mod sampler;
pub mod symbolizer;

pub use categories::Category;
pub use report::{CategoryCost, FunctionShare, ProfileReport, Work};

use crate::report::ServiceDemand;
use crate::spec::ProfileSpec;
use sampler::Sampling;

/// The most a side's profile adds to its report: the tables (18 categories and 15
/// functions, well under 16 KiB), and the folded stacks when asked for, whose JSON
/// escaping at most doubles them.
pub fn report_bytes(spec: &ProfileSpec) -> usize {
    match (spec.enabled, spec.folded) {
        (false, _) => 0,
        (true, false) => 64 * 1024,
        (true, true) => 64 * 1024 + 2 * report::FOLDED_BUDGET,
    }
}

/// A side's profile from window open to window close.
pub struct Profiler {
    spec: ProfileSpec,
    cpus: usize,
    /// `Err`: why the kernel would not sample (the run goes on, the report says so).
    sampling: Result<Sampling, String>,
}

/// What the window's sampling collected, before symbolization.
pub struct Stopped {
    spec: ProfileSpec,
    cpus: usize,
    sampled: Result<(sampler::EventKind, sampler::RawProfile), String>,
}

impl Profiler {
    /// Arms sampling on every online CPU; `None` when the spec does not ask for a profile.
    pub fn start(spec: &ProfileSpec) -> Option<Profiler> {
        if !spec.enabled {
            return None;
        }
        let cpus = sampler::online_cpus();
        Some(Profiler { spec: *spec, cpus: cpus.len(), sampling: Sampling::start(&cpus, spec.hz) })
    }

    /// Closes the window: sampling stops now; the report is built later, off the clock.
    pub fn stop(self) -> Stopped {
        let sampled = self.sampling.and_then(|s| {
            let event = s.event;
            s.stop().map(|raw| (event, raw))
        });
        Stopped { spec: self.spec, cpus: self.cpus, sampled }
    }
}

impl Stopped {
    /// The report, given the window's busy CPU time, its work and its service demand.
    pub fn report(&self, busy_us: f64, work: Work, service_demand: ServiceDemand) -> ProfileReport {
        self.report_for(&[std::process::id()], busy_us, work, service_demand)
    }

    /// The report with `tool_pids` as the tool instead of this process: ringperf-bench
    /// profiles a peer's client and server this way. Only this process's user frames can be
    /// named in folded stacks; other processes' show as `[user]`.
    pub fn report_for(
        &self,
        tool_pids: &[u32],
        busy_us: f64,
        work: Work,
        service_demand: ServiceDemand,
    ) -> ProfileReport {
        let (event, raw) = match &self.sampled {
            Ok(s) => s,
            Err(reason) => return ProfileReport::unavailable(reason.clone()),
        };
        let kernel_addrs: Vec<u64> = raw.stacks.keys().flat_map(|s| s.kernel.iter().copied()).collect();
        let (kernel, symbol_error) = match symbolizer::kernel(kernel_addrs) {
            Ok(n) => (n, None),
            Err(e) => (symbolizer::Names::from_pairs([]), Some(e)),
        };
        let own_pid = std::process::id();
        // User frames matter only to flame graphs, and only this process's are named.
        let user = self.spec.folded.then(|| {
            let addrs =
                raw.stacks.keys().filter(|s| s.pid == own_pid).flat_map(|s| s.user.iter().copied()).collect();
            symbolizer::own_process(addrs).unwrap_or_else(|_| symbolizer::Names::from_pairs([]))
        });
        let inputs = report::Inputs {
            event: event.name(),
            hz: self.spec.hz,
            cpus: self.cpus,
            busy_us,
            work,
            service_demand,
            tool_pids,
            folded: self.spec.folded,
        };
        report::build(raw, &kernel, user.as_ref(), symbol_error, &inputs)
    }
}

/// Per-iteration costs of both sides of one run (-i): what [`keep_iterations`] collects.
pub type IterationCosts = (Option<Vec<(Category, f64)>>, Option<Vec<(Category, f64)>>);

fn unit_costs_of(
    side: Option<&crate::report::SideReport>,
    per_transaction: bool,
) -> Option<Vec<(Category, f64)>> {
    let p = side?.profile.as_ref().filter(|p| p.unavailable.is_none())?;
    Some(p.unit_costs(per_transaction))
}

/// One iteration's category costs, local and remote, in service demand's unit of the test.
pub fn iteration_costs(r: &crate::report::TestReport) -> IterationCosts {
    let rr = r.spec.workload.is_transactional();
    (unit_costs_of(Some(&r.local), rr), unit_costs_of(r.remote.as_ref(), rr))
}

/// Puts every iteration's costs into the last report's profiles (each side that has one).
pub fn keep_iterations(last: &mut crate::report::TestReport, all: Vec<IterationCosts>) {
    let (local, remote): (Vec<_>, Vec<_>) = all.into_iter().unzip();
    if let Some(p) = last.local.profile.as_mut() {
        p.iterations = local.into_iter().flatten().collect();
    }
    if let Some(p) = last.remote.as_mut().and_then(|r| r.profile.as_mut()) {
        p.iterations = remote.into_iter().flatten().collect();
    }
}

/// The name `ringperf diff` gives a category's per-unit cost on a side (`local_cost_tcp`).
pub fn diff_name(local: bool, c: Category) -> &'static str {
    macro_rules! names {
        ($($cat:ident $id:literal),* $(,)?) => {
            match (local, c) {
                $( (true, Category::$cat) => concat!("local_cost_", $id),
                   (false, Category::$cat) => concat!("remote_cost_", $id), )*
            }
        };
    }
    names!(
        ToolUser "tool_user", ToolThreads "tool_threads", IoUring "io_uring", Syscall "syscall", Socket "socket", Tcp "tcp", Udp "udp",
        Ip "ip", SkbAlloc "alloc", Copy "copy", Checksum "checksum", Device "device", Qdisc "qdisc",
        Scheduler "scheduler", Interrupts "interrupts", Locks "locks", Idle "idle",
        OtherUser "other_user", OtherKernel "other_kernel",
    )
}
