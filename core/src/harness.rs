//! Which engines a test runs when it does not name them: the default rule, and why each
//! engine of a spec is the one it is. One function ([`TestSpec::default_harness`]) decides,
//! from the spec alone, so the same command picks the same engines on every host.
//!
//! The rule follows what the bench measured (issue 31; docs/figures.md, "The default engines"
//! and "Which engine adds least"):
//! where one TCP transaction waits alone on a worker, a blocked recv(2) costs the kernel
//! less than io_uring's poll arming, task work and wake-up through the ring (1-byte rr on
//! one CPU: the ring cost 1.14x the classic loop's CPU per transaction in the issue's
//! table, 1.10x in the bench of 2026-12-07), so the classic loop is the default there;
//! wherever the ring batches (several flows per worker, bursts, open loop, bulk streams,
//! splice) it stays the default, and so it does for UDP, whose standing receive on the ring
//! cost less than recvfrom(2) per 8-byte transaction in both benches that compared them
//! (2026-12-03: the ring 1.18x the classic loop's rate; 2026-12-07: the classic loop 1.05x
//! the ring's service demand). Where the classic loops cannot do what the spec asks, the
//! rule keeps the ring rather than fail.

pub use crate::spec::{EngineChoice, EngineReason, Harness};
use crate::spec::{Explicit, RecvEngine, RingTuning, TestSpec, Workload};

impl TestSpec {
    /// The default rule: the harness this spec runs on when neither engine nor harness is
    /// named, and on what ground. Static: it reads the spec and what was given, nothing of
    /// the host.
    pub fn default_harness(&self, given: &Explicit) -> (Harness, EngineReason) {
        let ring = |why| (Harness::IoUring, why);
        match self.workload {
            Workload::Stream => return ring(EngineReason::Bulk),
            Workload::UdpStream | Workload::UdpRr => return ring(EngineReason::Datagrams),
            Workload::Rr | Workload::Crr => {}
        }
        // The shapes where the ring batches.
        if self.open_loop.is_some() {
            return ring(EngineReason::OpenLoop);
        }
        if self.burst > 1 {
            return ring(EngineReason::Burst);
        }
        // Workers are dealt the flows round-robin, at most one worker per flow.
        if self.flows > self.threads {
            return ring(EngineReason::SeveralFlows);
        }
        // What the classic loops cannot do: the ring does it rather than the test fail or
        // lose a figure.
        if self.transaction_limit.is_some() {
            return ring(EngineReason::Counted);
        }
        if self.verify && self.workload == Workload::Crr {
            return ring(EngineReason::Verified);
        }
        if self.ring_tuned(given) {
            return ring(EngineReason::RingTuned);
        }
        (Harness::Classic, EngineReason::OneInFlight)
    }

    /// Whether any ring setting differs from what the rule would leave: someone tuning the
    /// ring means to measure it.
    fn ring_tuned(&self, given: &Explicit) -> bool {
        let d = RingTuning::default();
        let r = &self.ring;
        let resolved_given = given.send_depth.is_some()
            || given.recv_depth.is_some()
            || given.buf_count.is_some()
            || given.buf_size.is_some()
            || given.sq_batch.is_some();
        resolved_given
            || r.sq_entries != d.sq_entries
            || r.cq_batch != d.cq_batch
            || r.cq_wait_us != d.cq_wait_us
            || r.sqpoll != d.sqpoll
            || r.napi_busy_poll_us != d.napi_busy_poll_us
            || r.registered_ring_fd != d.registered_ring_fd
            || r.fixed_files != d.fixed_files
            || r.task_run != d.task_run
    }

    /// Sets both sides' engines: a named engine as named, the other after it where one loop
    /// needs both from one harness, else the named harness's or the rule's. Records why.
    pub(crate) fn resolve_engines(&mut self, given: &Explicit) {
        let (harness, ground) = match given.harness {
            Some(h) => (h, EngineReason::HarnessAsked),
            None => self.default_harness(given),
        };
        let workload = self.workload;
        // rr, crr and the UDP tests run one loop per side for both directions; a classic
        // stream sender pairs with recv(2) unless a harness is named (netperf's shape).
        let one_loop = workload.is_transactional() || workload.is_udp();
        let (send, send_why) = match (given.send_engine, given.recv_engine) {
            (Some(e), _) => (e, EngineReason::Asked),
            (None, Some(r)) if one_loop => (Harness::of_recv(r).engines(workload).0, EngineReason::Paired),
            _ => (harness.engines(workload).0, ground),
        };
        let (recv, recv_why) = match (given.recv_engine, given.send_engine) {
            (Some(e), _) => (e, EngineReason::Asked),
            (None, Some(s)) if one_loop || (s.is_classic() && given.harness.is_none()) => {
                (Harness::of_send(s).engines(workload).1, EngineReason::Paired)
            }
            _ => (harness.engines(workload).1, ground),
        };
        // An MPTCP stream keeps the one-shot chain: a standing receive woken per 64 KiB
        // (SO_RCVLOWAT) stalled one on Linux 6.18 (its window closed and the sender's sends
        // never finished), and the chain is what the MPTCP tests measured.
        let recv = if self.socket.mptcp && given.recv_engine.is_none() && recv == RecvEngine::Multishot {
            RecvEngine::Recv
        } else {
            recv
        };
        for side in [&mut self.local, &mut self.remote] {
            side.send_engine = send;
            side.recv_engine = recv;
        }
        self.engine_choice = Some(EngineChoice { send: send_why, recv: recv_why });
    }

    /// This spec on `harness`'s engines on both sides, as naming the harness would have
    /// it (the other defaults stay as they are).
    pub fn on_harness(mut self, harness: Harness) -> TestSpec {
        let (send, recv) = harness.engines(self.workload);
        for side in [&mut self.local, &mut self.remote] {
            side.send_engine = send;
            side.recv_engine = recv;
        }
        let why = EngineReason::HarnessAsked;
        self.engine_choice = Some(EngineChoice { send: why, recv: why });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{OpenLoop, RecvEngine, SendEngine, SqPoll, DEFAULT_BACKLOG};

    /// A spec of `workload` with `edit` applied, resolved with `given`.
    fn resolved(workload: Workload, given: Explicit, edit: impl FnOnce(&mut TestSpec)) -> TestSpec {
        let mut s = TestSpec::for_workload(workload);
        edit(&mut s);
        s.resolve(&given);
        s
    }

    fn engines(s: &TestSpec) -> (SendEngine, RecvEngine, EngineReason, EngineReason) {
        assert_eq!(
            (s.local.send_engine, s.local.recv_engine),
            (s.remote.send_engine, s.remote.recv_engine),
            "both sides run one pair"
        );
        let c = s.engine_choice.expect("a resolved spec records why");
        (s.local.send_engine, s.local.recv_engine, c.send, c.recv)
    }

    /// The rule over a table of specs: classic where one transaction waits alone per
    /// worker, the ring wherever it batches or the classic loops lack what is asked; every
    /// spec it makes validates.
    #[test]
    fn the_rule_picks_classic_only_where_one_transaction_waits_alone() {
        use EngineReason::{Bulk, Burst, Counted, Datagrams, OneInFlight, RingTuned, SeveralFlows, Verified};
        const OPEN: OpenLoop = OpenLoop { rate: 1000, total: false, backlog: DEFAULT_BACKLOG };
        let none = Explicit::default();
        let classic = (SendEngine::Syscall, RecvEngine::Syscall);
        type Edit = fn(&mut TestSpec);
        type Row = (&'static str, Workload, Explicit, Edit, (SendEngine, RecvEngine), EngineReason);
        let table: Vec<Row> = vec![
            ("rr", Workload::Rr, none, |_| {}, classic, OneInFlight),
            ("crr", Workload::Crr, none, |_| {}, classic, OneInFlight),
            ("udp-rr", Workload::UdpRr, none, |_| {}, (SendEngine::Copy, RecvEngine::Recv), Datagrams),
            (
                "rr 2 flows 2 threads",
                Workload::Rr,
                none,
                |s| (s.flows, s.threads) = (2, 2),
                classic,
                OneInFlight,
            ),
            ("rr 1 flow 4 threads", Workload::Rr, none, |s| s.threads = 4, classic, OneInFlight),
            ("rr verify", Workload::Rr, none, |s| s.verify = true, classic, OneInFlight),
            ("rr no latency", Workload::Rr, none, |s| s.record_latency = false, classic, OneInFlight),
            (
                "rr latency split",
                Workload::Rr,
                none,
                |s| s.latency_split_ms = Some(100),
                classic,
                OneInFlight,
            ),
            ("rr 64 B", Workload::Rr, none, |s| s.request_size = 64, classic, OneInFlight),
            ("stream", Workload::Stream, none, |_| {}, (SendEngine::Copy, RecvEngine::Multishot), Bulk),
            (
                "maerts",
                Workload::Stream,
                none,
                |s| s.direction = crate::spec::Direction::ServerToClient,
                (SendEngine::Copy, RecvEngine::Multishot),
                Bulk,
            ),
            (
                "udp-stream",
                Workload::UdpStream,
                none,
                |_| {},
                (SendEngine::Copy, RecvEngine::Recv),
                Datagrams,
            ),
            (
                "rr 4 flows 1 thread",
                Workload::Rr,
                none,
                |s| s.flows = 4,
                (SendEngine::Copy, RecvEngine::Multishot),
                SeveralFlows,
            ),
            (
                "crr 3 flows 2 threads",
                Workload::Crr,
                none,
                |s| (s.flows, s.threads) = (3, 2),
                (SendEngine::Copy, RecvEngine::Recv),
                SeveralFlows,
            ),
            (
                "rr burst",
                Workload::Rr,
                none,
                |s| s.burst = 4,
                (SendEngine::Copy, RecvEngine::Multishot),
                Burst,
            ),
            (
                "udp-rr burst",
                Workload::UdpRr,
                none,
                |s| s.burst = 4,
                (SendEngine::Copy, RecvEngine::Recv),
                Datagrams,
            ),
            (
                "rr open loop",
                Workload::Rr,
                none,
                |s| s.open_loop = Some(OPEN),
                (SendEngine::Copy, RecvEngine::Multishot),
                EngineReason::OpenLoop,
            ),
            (
                "udp-rr open loop",
                Workload::UdpRr,
                none,
                |s| s.open_loop = Some(OPEN),
                (SendEngine::Copy, RecvEngine::Recv),
                Datagrams,
            ),
            (
                "rr counted",
                Workload::Rr,
                none,
                |s| s.transaction_limit = Some(10),
                (SendEngine::Copy, RecvEngine::Multishot),
                Counted,
            ),
            (
                "crr counted",
                Workload::Crr,
                none,
                |s| s.transaction_limit = Some(10),
                (SendEngine::Copy, RecvEngine::Recv),
                Counted,
            ),
            // The classic loops pace too (-b, --flow-rate).
            ("rr paced", Workload::Rr, none, |s| s.pacing.total_bps = Some(1_000_000), classic, OneInFlight),
            (
                "crr verify",
                Workload::Crr,
                none,
                |s| s.verify = true,
                (SendEngine::Copy, RecvEngine::Recv),
                Verified,
            ),
            (
                "rr sqpoll",
                Workload::Rr,
                none,
                |s| s.ring.sqpoll = Some(SqPoll { cpu: None, idle_ms: 100 }),
                (SendEngine::Copy, RecvEngine::Multishot),
                RingTuned,
            ),
            (
                "rr buf-count",
                Workload::Rr,
                Explicit { buf_count: Some(64), ..none },
                |_| {},
                (SendEngine::Copy, RecvEngine::Multishot),
                RingTuned,
            ),
        ];
        for (what, workload, given, edit, want, why) in table {
            let s = resolved(workload, given, edit);
            assert_eq!(engines(&s), (want.0, want.1, why, why), "{what}");
            assert_eq!(s.default_harness(&given).1, why, "{what}");
            s.validate()
                .unwrap_or_else(|e| panic!("{what}: the rule made a spec that does not validate: {e}"));
        }
    }

    /// A named engine always wins; the other follows it where one loop needs both; a named
    /// harness overrides the rule for both; a resolve after a change re-applies the rule.
    /// An MPTCP stream keeps the one-shot receive chain by default; a named engine still wins.
    #[test]
    fn an_mptcp_stream_receives_with_the_one_shot_chain() {
        use EngineReason::*;
        let none = Explicit::default();
        let s = resolved(Workload::Stream, none, |s| s.socket.mptcp = true);
        assert_eq!(engines(&s), (SendEngine::Copy, RecvEngine::Recv, Bulk, Bulk));
        let ring = Explicit { harness: Some(Harness::IoUring), ..none };
        let s = resolved(Workload::Stream, ring, |s| s.socket.mptcp = true);
        assert_eq!(engines(&s).1, RecvEngine::Recv);
        let asked = Explicit { recv_engine: Some(RecvEngine::Multishot), ..none };
        let s = resolved(Workload::Stream, asked, |s| s.socket.mptcp = true);
        assert_eq!(engines(&s), (SendEngine::Copy, RecvEngine::Multishot, Bulk, Asked));
        let s = resolved(Workload::Stream, none, |_| {});
        assert_eq!(engines(&s).1, RecvEngine::Multishot, "plain TCP keeps the standing receive");
    }

    #[test]
    fn named_engines_and_harnesses_win_over_the_rule() {
        use EngineReason::*;
        let none = Explicit::default();
        let ring = Explicit { harness: Some(Harness::IoUring), ..none };
        let s = resolved(Workload::Rr, ring, |_| {});
        assert_eq!(engines(&s), (SendEngine::Copy, RecvEngine::Multishot, HarnessAsked, HarnessAsked));
        let classic = Explicit { harness: Some(Harness::Classic), ..none };
        let s = resolved(Workload::Rr, classic, |s| s.flows = 4);
        assert_eq!(engines(&s), (SendEngine::Syscall, RecvEngine::Syscall, HarnessAsked, HarnessAsked));
        let s = resolved(Workload::Stream, classic, |_| {});
        assert_eq!(engines(&s), (SendEngine::Syscall, RecvEngine::Syscall, HarnessAsked, HarnessAsked));
        let zc = Explicit { send_engine: Some(SendEngine::Zc), ..none };
        let s = resolved(Workload::Rr, zc, |_| {});
        assert_eq!(engines(&s), (SendEngine::Zc, RecvEngine::Multishot, Asked, Paired), "rr's one loop");
        let s = resolved(Workload::Stream, zc, |_| {});
        assert_eq!(engines(&s), (SendEngine::Zc, RecvEngine::Multishot, Asked, Bulk));
        let recv = Explicit { recv_engine: Some(RecvEngine::Recv), ..none };
        let s = resolved(Workload::Rr, recv, |_| {});
        assert_eq!(engines(&s), (SendEngine::Copy, RecvEngine::Recv, Paired, Asked));
        let syscall_recv = Explicit { recv_engine: Some(RecvEngine::Syscall), ..none };
        let s = resolved(Workload::Rr, syscall_recv, |s| s.flows = 4);
        assert_eq!(engines(&s), (SendEngine::Syscall, RecvEngine::Syscall, Paired, Asked));
        let s = resolved(Workload::Stream, syscall_recv, |_| {});
        assert_eq!(engines(&s), (SendEngine::Copy, RecvEngine::Syscall, Bulk, Asked), "a stream mixes");
        let syscall_send = Explicit { send_engine: Some(SendEngine::Syscall), ..none };
        let s = resolved(Workload::Stream, syscall_send, |_| {});
        assert_eq!(engines(&s), (SendEngine::Syscall, RecvEngine::Syscall, Asked, Paired));
        let s =
            resolved(Workload::Stream, Explicit { harness: Some(Harness::IoUring), ..syscall_send }, |_| {});
        assert_eq!(engines(&s), (SendEngine::Syscall, RecvEngine::Multishot, Asked, HarnessAsked));
        let both = Explicit {
            send_engine: Some(SendEngine::Copy),
            recv_engine: Some(RecvEngine::Bundle),
            ..classic
        };
        let s = resolved(Workload::Rr, both, |_| {});
        assert_eq!(
            engines(&s),
            (SendEngine::Copy, RecvEngine::Bundle, Asked, Asked),
            "engines beat a harness"
        );
        // Resolving again after a change follows the changed spec.
        let mut s = TestSpec::for_workload(Workload::Rr);
        assert_eq!(engines(&s).0, SendEngine::Syscall);
        s.flows = 8;
        s.resolve(&none);
        assert_eq!(engines(&s), (SendEngine::Copy, RecvEngine::Multishot, SeveralFlows, SeveralFlows));
        let s = TestSpec::for_workload(Workload::Rr).on_harness(Harness::IoUring);
        assert_eq!(engines(&s), (SendEngine::Copy, RecvEngine::Multishot, HarnessAsked, HarnessAsked));
    }

    /// The choice is in the spec's JSON (the report's too) by its short names, a spec without
    /// it (an older report) still parses, and the wire form leaves it out.
    #[test]
    fn the_choice_is_in_the_json_and_may_be_absent() {
        let s = TestSpec::for_workload(Workload::Rr);
        let v = serde_json::to_value(&s).expect("json");
        assert_eq!(v["engine_choice"], serde_json::json!({"send": "one-in-flight", "recv": "one-in-flight"}));
        for r in [EngineReason::Asked, EngineReason::RingTuned, EngineReason::HarnessAsked] {
            assert_eq!(serde_json::to_value(r).expect("json"), serde_json::json!(r.name()));
        }
        let mut old = v.clone();
        old.as_object_mut().expect("an object").remove("engine_choice");
        let back: TestSpec = serde_json::from_value(old).expect("a spec without a choice");
        assert_eq!(back.engine_choice, None);
        let back: TestSpec = serde_json::from_value(v).expect("parse");
        assert_eq!(back, s);
    }
}
