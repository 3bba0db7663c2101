//! The one event loop every workload role runs on.
//!
//! The driver owns what all roles share: the deadline and peer-guard timeouts, the stop
//! watch (ABORT), interval sampling, routing pacing ticks, waiting and reaping in batches,
//! running until the role has drained what it has in flight, and the error for a
//! completion nobody expects. A role ([`Workload`]) says only what is its own: what to
//! submit at the start, what each of its completions means, when it is done, what the
//! deadline and the guard mean to it, and how many completions a wait should ask for.

use std::os::fd::RawFd;

use crate::io::{op, RecvPath, SendPath};
use crate::ring::{token, Completion, Ring};
use crate::verify::Verifier;
use crate::workload::ending::{peer_stuck, unexpected, PEER_GRACE_NS};
use ringperf_core::error::Result;
use ringperf_core::measure::intervals::FlowCounters;
use ringperf_core::measure::intervals::IntervalSampler;
use ringperf_core::report::Ending;
use ringperf_core::report::{CrrReport, RecvReport, RrReport, SendReport, UdpReport, VerifyReport};

/// How long a wait for a whole chain lasts before it settles for the completions that
/// have come (the kernel's min-wait, counted from the start of the wait): long enough for
/// a chain of large sends, short next to the peer guard.
pub const CHAIN_WAIT_BOUND_US: u32 = 10_000;

/// How the driver waits for the next batch of completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The ring's configured batch (`--cq-batch`, min-wait `--cq-wait-us`).
    Batch,
    /// This many completions, bounded by [`CHAIN_WAIT_BOUND_US`]: for a chain whose
    /// completions may not all come (a peer that stopped reading).
    Chain(usize),
    /// This many completions, unbounded: for operations that complete without the peer
    /// (linked UDP sends).
    All(usize),
}

/// The timers the driver arms for a role before its start, besides the guard, which it
/// arms for every role: GUARD comes [`PEER_GRACE_NS`] after the deadline, so whatever the
/// workload a peer that stops answering ends the run within the grace
/// ([`Workload::on_guard`] says what it means).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timers {
    /// DEADLINE at the end of the window; [`Workload::on_deadline`] says what it means.
    pub deadline: bool,
}

/// What the driver shares with the role while it runs.
pub struct Run<'a> {
    /// Per-flow totals, kept up to date by the role so that a failed or stopped run still
    /// reports what moved; the interval sampler reads them at every tick.
    pub counters: &'a mut [FlowCounters],
    pub sampler: &'a mut IntervalSampler,
    /// The end of the window (CLOCK_MONOTONIC ns).
    pub deadline_ns: u64,
    /// Set at the deadline by default: start nothing new, finish what is in flight.
    pub stopping: bool,
}

/// What a role reports besides its counters, for the worker's outcome.
#[derive(Default)]
pub struct RoleReport {
    pub send: Option<SendReport>,
    pub recv: Option<RecvReport>,
    pub verify: Option<VerifyReport>,
    pub crr: Option<CrrReport>,
    pub udp: Option<UdpReport>,
    pub rr: Option<RrReport>,
    /// A role that ends its own window (a UDP receiver's drain) says when.
    pub end_ns: Option<u64>,
}

impl RoleReport {
    /// The reports of a role's send and receive paths and of its verifier; the role adds
    /// its workload's own.
    pub fn paths(send: &impl SendPath, recv: &impl RecvPath, verify: &Verifier) -> RoleReport {
        RoleReport {
            send: Some(send.report()),
            recv: Some(recv.report()),
            verify: verify.report(),
            ..RoleReport::default()
        }
    }
}

/// One workload role's own logic over a worker's flows.
pub trait Workload {
    /// Whether the driver arms the deadline (it arms the guard for every role): by
    /// default it does, for a role that ends its own window; a role that waits for its
    /// peer to finish does not.
    fn timers(&self) -> Timers {
        Timers { deadline: true }
    }
    /// Whether the stop watch applies (the crr server stops through its own eventfd).
    fn watches(&self) -> bool {
        true
    }
    /// Queues what the role starts with.
    fn start(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()>;
    /// Handles one of the role's own completions; `Ok(false)` if `c` is no op of this role.
    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool>;
    /// True once the role has finished, including what it had in flight.
    fn done(&self, run: &Run) -> bool;
    /// How the next wait should go.
    fn wait(&self) -> Wait {
        Wait::Batch
    }
    /// The DEADLINE fired. By default the role stops starting work.
    fn on_deadline(&mut self, _ring: &mut Ring, run: &mut Run) -> Result<()> {
        run.stopping = true;
        Ok(())
    }
    /// The GUARD fired: by default the peer never finished.
    fn on_guard(&mut self) -> Result<Ending> {
        Err(peer_stuck())
    }
    /// Called once the run is over, however it ended, with the completions it reaped but
    /// did not handle: a role that owns descriptors of its own (crr's per-cycle sockets)
    /// takes back what is still in flight and closes them, so a run cut short (the guard, a
    /// stop, an error) leaks none.
    fn reclaim(&mut self, _ring: &mut Ring, _unhandled: &[Completion]) {}
    /// The stop watch fired: `Some` ends the run at once (the default: aborted), `None`
    /// goes on (a role that first takes back what it has in flight).
    fn on_abort(&mut self, _ring: &mut Ring, _run: &mut Run) -> Result<Option<Ending>> {
        Ok(Some(Ending::Aborted))
    }
    /// A pacing tick (only a role that armed a pacer gets one).
    fn on_pace(&mut self, _ring: &mut Ring, _run: &mut Run) -> Result<()> {
        Err(unexpected(op::PACE))
    }
    /// Called once after each batch of completions.
    fn after_batch(&mut self) {}
    /// Called once the role is done: how the run ended.
    fn finish(&mut self, _run: &Run) -> Result<Ending> {
        Ok(Ending::Completed)
    }
    /// What the role reports besides its counters.
    fn report(&self) -> RoleReport;
}

/// Opens `sampler`'s first interval at `window_start` and arms its tick on `ring`: a
/// multishot timeout whose completions (INTERVAL) the driver hands to the sampler.
pub fn start_intervals(ring: &mut Ring, sampler: &mut IntervalSampler, window_start: u64) -> Result<()> {
    sampler.open(window_start);
    if sampler.interval_ns() == 0 {
        return Ok(());
    }
    ring.push_ticks(sampler.interval_ns(), token(op::INTERVAL, 0))
}

/// Runs `role` on `ring` until it is done, fails, or is stopped, then lets it take back
/// what it still has in flight ([`Workload::reclaim`]). `watch`: a descriptor whose
/// readability stops the run (see `WorkerPlan::watch_fd`).
pub fn drive(
    ring: &mut Ring,
    role: &mut dyn Workload,
    run: &mut Run,
    watch: Option<RawFd>,
) -> Result<Ending> {
    // Sized once: reaping never allocates.
    let mut done = Vec::with_capacity(ring.cq_entries());
    let mut handled = 0;
    let ending = run_batches(ring, role, run, watch, &mut done, &mut handled);
    role.reclaim(ring, done.get(handled..).unwrap_or_default());
    ending
}

/// The loop of [`drive`]. `done` holds the batch being handled and `handled` how many of
/// its completions were handled whole, so a run that ends mid-batch leaves the rest to
/// [`Workload::reclaim`].
fn run_batches(
    ring: &mut Ring,
    role: &mut dyn Workload,
    run: &mut Run,
    watch: Option<RawFd>,
    done: &mut Vec<Completion>,
    handled: &mut usize,
) -> Result<Ending> {
    if let Some(fd) = watch.filter(|_| role.watches()) {
        ring.push_watch(fd, token(op::ABORT, 0))?;
    }
    let timers = role.timers();
    if timers.deadline {
        ring.push_deadline(run.deadline_ns, token(op::DEADLINE, 0))?;
    }
    ring.push_deadline(run.deadline_ns + PEER_GRACE_NS, token(op::GUARD, 0))?;
    role.start(ring, run)?;
    while !role.done(run) {
        match role.wait() {
            Wait::Batch => ring.submit_and_wait()?,
            Wait::Chain(n) if n > 1 => ring.submit_and_wait_bounded(n, CHAIN_WAIT_BOUND_US)?,
            Wait::Chain(_) => ring.submit_and_wait()?,
            Wait::All(n) => ring.submit_and_wait_for(n)?,
        }
        *handled = 0;
        ring.reap(done);
        for &c in done.iter() {
            match c.op() {
                op::DEADLINE if timers.deadline => role.on_deadline(ring, run)?,
                op::GUARD => return role.on_guard(),
                op::ABORT => {
                    if let Some(ending) = role.on_abort(ring, run)? {
                        return Ok(ending);
                    }
                }
                op::INTERVAL => run.sampler.tick(run.counters),
                op::PACE => role.on_pace(ring, run)?,
                other => {
                    if !role.complete(ring, &c, run)? {
                        return Err(unexpected(other));
                    }
                }
            }
            *handled += 1;
        }
        role.after_batch();
    }
    role.finish(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::error::Error;
    use ringperf_core::measure::clock::monotonic_ns;
    use ringperf_core::spec::RingTuning;

    /// A role that keeps `width` no-ops of op SEND in flight until it stops, and can be
    /// told to start with one stray completion of another op.
    struct Fake {
        timers: Timers,
        width: usize,
        in_flight: usize,
        stray: Option<u8>,
        pushed_while_stopping: usize,
        saw_deadline: bool,
        finished: bool,
        never_done: bool,
        /// The ops of the completions `reclaim` was given, if it was called.
        reclaimed: Option<Vec<u8>>,
    }

    impl Fake {
        fn new(timers: Timers) -> Fake {
            Fake {
                timers,
                width: 0,
                in_flight: 0,
                stray: None,
                pushed_while_stopping: 0,
                saw_deadline: false,
                finished: false,
                never_done: false,
                reclaimed: None,
            }
        }

        fn nop(ring: &mut Ring, user_data: u64) -> Result<()> {
            let e = io_uring::opcode::Nop::new().build().user_data(user_data);
            // SAFETY: a no-op points at no memory.
            unsafe { ring.push(&e) }
        }

        fn push(&mut self, ring: &mut Ring, run: &Run) -> Result<()> {
            if run.stopping {
                self.pushed_while_stopping += 1;
            }
            self.in_flight += 1;
            Fake::nop(ring, token(op::SEND, 0))
        }
    }

    impl Workload for Fake {
        fn timers(&self) -> Timers {
            self.timers
        }
        fn start(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
            if let Some(op) = self.stray {
                Fake::nop(ring, token(op, 0))?;
            }
            for _ in 0..self.width {
                self.push(ring, run)?;
            }
            Ok(())
        }
        fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
            if c.op() != op::SEND {
                return Ok(false);
            }
            self.in_flight -= 1;
            run.counters[0].transactions += 1;
            if !run.stopping {
                self.push(ring, run)?;
            }
            Ok(true)
        }
        fn done(&self, run: &Run) -> bool {
            !self.never_done && run.stopping && self.in_flight == 0
        }
        fn on_deadline(&mut self, _ring: &mut Ring, run: &mut Run) -> Result<()> {
            self.saw_deadline = true;
            run.stopping = true;
            Ok(())
        }
        fn finish(&mut self, _run: &Run) -> Result<Ending> {
            self.finished = true;
            Ok(Ending::Completed)
        }
        fn reclaim(&mut self, _ring: &mut Ring, unhandled: &[Completion]) {
            self.reclaimed = Some(unhandled.iter().map(Completion::op).collect());
        }
        fn report(&self) -> RoleReport {
            RoleReport::default()
        }
    }

    fn drive_fake(role: &mut Fake, deadline_ns: u64, watch: Option<RawFd>) -> (Result<Ending>, FlowCounters) {
        let mut ring = Ring::new(&RingTuning::default(), 64).expect("a ring");
        let mut sampler = IntervalSampler::new(0, 1, &[], false, None);
        let mut counters = [FlowCounters::default()];
        let mut run = Run { counters: &mut counters, sampler: &mut sampler, deadline_ns, stopping: false };
        let ending = drive(&mut ring, role, &mut run, watch);
        (ending, counters[0])
    }

    const NO_DEADLINE: Timers = Timers { deadline: false };

    /// Drives a role that never finishes and asked for no deadline, to which a completion
    /// of kind `stray` comes.
    fn drive_stray(stray: u8) -> (Result<Ending>, Fake) {
        let mut role = Fake::new(NO_DEADLINE);
        role.stray = Some(stray);
        role.never_done = true;
        let (ending, _) = drive_fake(&mut role, monotonic_ns(), None);
        (ending, role)
    }

    #[test]
    fn a_completion_nobody_expects_is_an_error() {
        let (ending, role) = drive_stray(op::SOCKET);
        match ending {
            Err(Error::Protocol(m)) => assert!(m.contains(&format!("kind {}", op::SOCKET)), "{m}"),
            other => panic!("expected a protocol error, got {other:?}"),
        }
        assert!(!role.finished);
    }

    #[test]
    fn a_deadline_the_role_did_not_ask_for_is_unexpected() {
        let (ending, role) = drive_stray(op::DEADLINE);
        assert!(matches!(ending, Err(Error::Protocol(_))), "{ending:?}");
        assert!(!role.saw_deadline);
    }

    #[test]
    fn the_stop_watch_aborts() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: writes one byte from a live buffer to the pipe just made.
        assert_eq!(unsafe { libc::write(fds[1], [1u8].as_ptr().cast(), 1) }, 1);
        let mut role = Fake::new(Timers { deadline: true });
        role.never_done = true;
        let (ending, _) = drive_fake(&mut role, monotonic_ns() + 60_000_000_000, Some(fds[0]));
        // SAFETY: closes the pipe this test made.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        assert!(matches!(ending, Ok(Ending::Aborted)), "{ending:?}");
        assert!(!role.finished && !role.saw_deadline);
    }

    #[test]
    fn the_deadline_stops_new_work_and_the_driver_drains_what_is_in_flight() {
        let mut role = Fake::new(Timers { deadline: true });
        role.width = 4;
        let (ending, counters) = drive_fake(&mut role, monotonic_ns() + 5_000_000, None);
        assert!(matches!(ending, Ok(Ending::Completed)), "{ending:?}");
        assert!(role.saw_deadline && role.finished);
        assert_eq!(role.in_flight, 0);
        assert_eq!(role.pushed_while_stopping, 0);
        assert!(counters.transactions >= 4);
    }

    /// A run that ends mid-batch hands the completions it did not handle to `reclaim`
    /// (the one that ended it included); a whole run hands none.
    #[test]
    fn reclaim_gets_what_a_run_cut_short_left_unhandled() {
        let mut role = Fake::new(NO_DEADLINE);
        role.never_done = true;
        role.stray = Some(op::ABORT);
        role.width = 2;
        let (ending, _) = drive_fake(&mut role, monotonic_ns() + 60_000_000_000, None);
        assert!(matches!(ending, Ok(Ending::Aborted)), "{ending:?}");
        assert_eq!(role.reclaimed, Some(vec![op::ABORT, op::SEND, op::SEND]));

        let mut whole = Fake::new(Timers { deadline: true });
        whole.width = 2;
        let (ending, _) = drive_fake(&mut whole, monotonic_ns() + 5_000_000, None);
        assert!(matches!(ending, Ok(Ending::Completed)), "{ending:?}");
        assert_eq!(whole.reclaimed, Some(Vec::new()));
    }

    #[test]
    fn the_guard_fails_a_role_whose_peer_never_finishes() {
        let mut role = Fake::new(NO_DEADLINE);
        role.never_done = true;
        let deadline = (monotonic_ns() + 2_000_000).saturating_sub(PEER_GRACE_NS);
        let (ending, _) = drive_fake(&mut role, deadline, None);
        match ending {
            Err(Error::Peer(m)) => assert!(m.contains("did not finish"), "{m}"),
            other => panic!("expected a peer error, got {other:?}"),
        }
    }
}
