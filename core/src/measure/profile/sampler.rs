//! The sampler: one perf event per CPU, system-wide, with kernel and user callchains,
//! drained by a thread of its own while the window is open.
//!
//! Each CPU's ring buffer is [`RING_BYTES`]; at 999 Hz a sample with a 30-frame chain is
//! ~300 bytes, ~300 KB/s per CPU, and the drain thread empties every buffer at least every
//! [`DRAIN_EVERY_MS`] (sooner when one is half full), so a buffer holds ~0.8 s of samples
//! before the kernel would drop any. What it drops anyway is counted (PERF_RECORD_LOST).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::setting::{spelled, Setting};
use perf_event::data::Record;
use perf_event::events::{Hardware, Software};
use perf_event::{Builder, SampleFlag, Sampler};

/// Bytes of each CPU's sample ring (a power of two; plus one metadata page).
const RING_BYTES: usize = 256 * 1024;
/// The drain thread's longest sleep.
const DRAIN_EVERY_MS: i32 = 100;
/// Deepest callchain kept (the kernel's default limit is 127).
const MAX_STACK: u16 = 64;

/// The event the profile sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// PERF_COUNT_HW_CPU_CYCLES: only where the PMU offers it.
    Cycles,
    /// PERF_COUNT_SW_CPU_CLOCK: a timer, everywhere (VMs without a virtual PMU).
    CpuClock,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Cycles => "cycles",
            EventKind::CpuClock => "cpu-clock",
        }
    }
}

/// One distinct sample: who ran, in which mode, and its stacks (leaf first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawStack {
    pub pid: u32,
    pub tid: u32,
    pub user_mode: bool,
    pub kernel: Vec<u64>,
    pub user: Vec<u64>,
}

/// What the sampler collected over the window.
#[derive(Debug, Default)]
pub struct RawProfile {
    /// Every distinct stack and how many samples it had.
    pub stacks: HashMap<RawStack, u64>,
    pub samples: u64,
    /// Samples the kernel dropped (its buffer was full) or that did not parse.
    pub lost: u64,
    /// Times the kernel throttled the event for taking too long (perf_event_max_sample_rate).
    pub throttled: u64,
    /// Thread names, read when a thread is first seen (io_uring helpers are told by theirs).
    pub comms: HashMap<u32, String>,
}

/// Sampling in progress: a drain thread owning every CPU's event.
pub struct Sampling {
    pub event: EventKind,
    pub hz: u32,
    wake: Arc<OwnedFd>,
    /// `None` once [`Sampling::stop`] took it.
    drain: Option<JoinHandle<RawProfile>>,
}

/// Why the kernel would not sample: one line that says what to do.
pub fn refusal(e: &std::io::Error) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unreadable".into());
    let reason = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused system-wide sampling ({e}; kernel.perf_event_paranoid is {paranoid}): run as root or with CAP_PERFMON, or set kernel.perf_event_paranoid to -1"
        ),
        Some(libc::ENOSYS) => {
            "this kernel has no perf events (perf_event_open: ENOSYS): build it with CONFIG_PERF_EVENTS".into()
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            format!("no file descriptors left for the profile's events ({e}): raise the limit (`ulimit -n`)")
        }
        Some(libc::ENOMEM) | Some(libc::EINVAL) => format!(
            "perf_event_open could not map its sample buffers ({e}): raise kernel.perf_event_mlock_kb or RLIMIT_MEMLOCK, or lower {{profile-hz}}"
        ),
        _ => format!("perf_event_open failed ({e}): the run goes on without a profile; {} skips the attempt", Setting::NoProfile.token()),
    };
    spelled(&reason)
}

/// Errors that mean "this event does not exist here", not "you may not".
fn event_missing(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV))
}

fn open_one(event: EventKind, cpu: usize, hz: u32) -> std::io::Result<Sampler> {
    let mut b = match event {
        EventKind::Cycles => Builder::new(Hardware::CPU_CYCLES),
        EventKind::CpuClock => Builder::new(Software::CPU_CLOCK),
    };
    b.one_cpu(cpu)
        .any_pid()
        .include_kernel()
        .exclude_hv(true)
        .sample_frequency(u64::from(hz))
        .sample(SampleFlag::IP | SampleFlag::TID | SampleFlag::CALLCHAIN | SampleFlag::CPU)
        .sample_max_stack(MAX_STACK)
        .wakeup_watermark(RING_BYTES / 2)
        .enabled(false);
    b.build()?.sampled(RING_BYTES)
}

/// The CPUs online now (/sys/devices/system/cpu/online, e.g. "0-3,5").
pub fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let parsed = parse_cpu_list(&text);
    if parsed.is_empty() {
        (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
    } else {
        parsed
    }
}

/// A kernel CPU list ("0-3,5"); anything malformed gives what parsed before it.
pub fn parse_cpu_list(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let range = match part.split_once('-') {
            Some((a, b)) => a.parse::<usize>().ok().zip(b.parse::<usize>().ok()),
            None => part.parse::<usize>().ok().map(|a| (a, a)),
        };
        match range {
            // Bounded: a garbage "0-99999999" must not allocate without end.
            Some((a, b)) if a <= b && b < 1 << 16 => out.extend(a..=b),
            _ => break,
        }
    }
    out
}

impl Sampling {
    /// Opens and enables one event per CPU in `cpus`: hardware cycles if the PMU has them,
    /// else cpu-clock. `Err` is the one-line reason the profile is unavailable.
    pub fn start(cpus: &[usize], hz: u32) -> Result<Sampling, String> {
        let first = *cpus.first().ok_or("no online CPU to profile")?;
        let (event, first_sampler) = match open_one(EventKind::Cycles, first, hz) {
            Ok(s) => (EventKind::Cycles, s),
            Err(e) if event_missing(&e) => {
                (EventKind::CpuClock, open_one(EventKind::CpuClock, first, hz).map_err(|e| refusal(&e))?)
            }
            Err(e) => return Err(refusal(&e)),
        };
        let mut samplers = vec![first_sampler];
        for &cpu in &cpus[1..] {
            samplers.push(open_one(event, cpu, hz).map_err(|e| refusal(&e))?);
        }
        // SAFETY: eventfd has no memory effects; the result is checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(format!(
                "cannot create the profile's wake-up eventfd ({}): raise the descriptor limit",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        for s in &mut samplers {
            s.enable().map_err(|e| refusal(&e))?;
        }
        let thread_wake = Arc::clone(&wake);
        let drain = std::thread::Builder::new()
            .name("ringperf-prof".into())
            .spawn(move || drain(samplers, &thread_wake))
            .map_err(|e| format!("cannot start the profile's drain thread ({e}): lower the thread count"))?;
        Ok(Sampling { event, hz, wake, drain: Some(drain) })
    }

    /// Closes the window: the drain thread disables every event, empties the buffers and
    /// hands back what it collected.
    pub fn stop(mut self) -> Result<RawProfile, String> {
        self.wake_drain();
        let drain = self.drain.take().ok_or("the profile was stopped twice: report this as a bug")?;
        drain.join().map_err(|_| "the profile's drain thread panicked: report this as a bug".to_string())
    }

    fn wake_drain(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our own eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

impl Drop for Sampling {
    /// A side that fails before its window closes still ends its drain thread (which
    /// disables and closes the events); nobody waits for what it collected.
    fn drop(&mut self) {
        if self.drain.is_some() {
            self.wake_drain();
        }
    }
}

/// The drain thread: empties every buffer when one is half full or every
/// [`DRAIN_EVERY_MS`], until `wake` is written; then disables the events and empties
/// them a last time.
fn drain(mut samplers: Vec<Sampler>, wake: &OwnedFd) -> RawProfile {
    let mut raw = RawProfile::default();
    let mut pollfds: Vec<libc::pollfd> = samplers
        .iter()
        .map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 })
        .collect();
    pollfds.push(libc::pollfd { fd: wake.as_raw_fd(), events: libc::POLLIN, revents: 0 });
    loop {
        // SAFETY: `pollfds` is a valid array of pollfd of the given length.
        unsafe { libc::poll(pollfds.as_mut_ptr(), pollfds.len() as libc::nfds_t, DRAIN_EVERY_MS) };
        let stopping = pollfds.last().is_some_and(|p| p.revents & libc::POLLIN != 0);
        if stopping {
            for s in &mut samplers {
                let _ = s.disable();
            }
        }
        for s in &mut samplers {
            empty(s, &mut raw);
        }
        if stopping {
            return raw;
        }
    }
}

const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
const PERF_RECORD_MISC_USER: u16 = 2;
/// Callchain entries at or above this are context markers (PERF_CONTEXT_MAX = -4095).
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;

fn empty(s: &mut Sampler, raw: &mut RawProfile) {
    while let Some(record) = s.next_record() {
        let user_mode = record.misc() & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_USER;
        match record.parse_record() {
            Ok(Record::Sample(sample)) => {
                let (pid, tid) = (sample.pid().unwrap_or(0), sample.tid().unwrap_or(0));
                let (kernel, user) =
                    split_callchain(sample.callchain().unwrap_or(&[]), sample.ip(), user_mode);
                raw.samples += 1;
                raw.comms.entry(tid).or_insert_with(|| thread_comm(pid, tid));
                *raw.stacks.entry(RawStack { pid, tid, user_mode, kernel, user }).or_insert(0) += 1;
            }
            Ok(Record::Lost(l)) => raw.lost += l.lost,
            Ok(Record::LostSamples(l)) => raw.lost += l.lost,
            Ok(Record::Throttle(_)) => raw.throttled += 1,
            Ok(_) => {}
            Err(_) => raw.lost += 1,
        }
    }
}

/// A callchain's kernel and user frames, leaf first; `ip` stands in for a chain the kernel
/// left empty.
pub fn split_callchain(chain: &[u64], ip: Option<u64>, user_mode: bool) -> (Vec<u64>, Vec<u64>) {
    let (mut kernel, mut user) = (Vec::new(), Vec::new());
    let mut in_user = user_mode;
    for &addr in chain {
        if addr >= PERF_CONTEXT_MAX {
            in_user = match addr {
                PERF_CONTEXT_KERNEL => false,
                PERF_CONTEXT_USER => true,
                _ => in_user,
            };
            continue;
        }
        if in_user {
            user.push(addr);
        } else {
            kernel.push(addr);
        }
    }
    if kernel.is_empty() && user.is_empty() {
        if let Some(ip) = ip {
            if user_mode {
                user.push(ip);
            } else {
                kernel.push(ip);
            }
        }
    }
    (kernel, user)
}

/// A thread's comm, or "" when it is gone (read in the drain thread, never the hot path).
fn thread_comm(pid: u32, tid: u32) -> String {
    let path = if pid == 0 { format!("/proc/{tid}/comm") } else { format!("/proc/{pid}/task/{tid}/comm") };
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callchains_split_at_their_context_markers() {
        let chain =
            [PERF_CONTEXT_KERNEL, 0xffff_0001, 0xffff_0002, PERF_CONTEXT_USER, 0x0040_0001, 0x0040_0002];
        let (k, u) = split_callchain(&chain, Some(0xffff_0001), false);
        assert_eq!(k, vec![0xffff_0001, 0xffff_0002]);
        assert_eq!(u, vec![0x0040_0001, 0x0040_0002]);
        let (k, u) = split_callchain(&[PERF_CONTEXT_USER, 0x0040_0001], Some(0x0040_0001), true);
        assert!(k.is_empty());
        assert_eq!(u, vec![0x0040_0001]);
        let (k, u) = split_callchain(&[], Some(0xffff_0009), false);
        assert_eq!((k, u), (vec![0xffff_0009], vec![]));
    }

    #[test]
    fn cpu_lists_parse_and_garbage_stops_them() {
        assert_eq!(parse_cpu_list("0-3,5\n"), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("1,x,3"), vec![1]);
        assert_eq!(parse_cpu_list("3-1"), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("0-99999999"), Vec::<usize>::new());
        assert!(!online_cpus().is_empty());
    }

    fn drain_threads() -> usize {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
        tasks
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "ringperf-prof")
            })
            .count()
    }

    #[test]
    fn sampling_collects_and_a_dropped_one_ends_its_thread() {
        let cpus = online_cpus();
        let Ok(s) = Sampling::start(&cpus, 499) else { return };
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(100) {
            std::hint::black_box(0u64);
        }
        let raw = s.stop().unwrap();
        assert!(raw.samples > 0 && raw.samples == raw.stacks.values().sum::<u64>());
        let until = |want: usize| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while drain_threads() != want && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            drain_threads()
        };
        let dropped = Sampling::start(&cpus, 499).unwrap();
        // The thread names itself once it runs.
        assert_eq!(until(1), 1);
        drop(dropped);
        // Its thread disables the events and exits on its own; nobody joins it.
        assert_eq!(until(0), 0, "a dropped profile's drain thread is still running");
    }

    #[test]
    fn refusals_say_what_to_do() {
        let r = refusal(&std::io::Error::from_raw_os_error(libc::EACCES));
        assert!(r.contains("perf_event_paranoid") && r.contains("CAP_PERFMON"), "{r}");
        let r = refusal(&std::io::Error::from_raw_os_error(libc::ENOSYS));
        assert!(r.contains("ENOSYS"), "{r}");
    }
}
