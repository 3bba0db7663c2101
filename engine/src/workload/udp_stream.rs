//! UDP stream: the sender puts numbered datagrams on every flow until its deadline, as
//! fast as it can or paced (-b); the receiver accounts every sequence number.
//!
//! Every datagram starts with its flow's 8-byte sequence number. With GSO one send is
//! several datagrams of the segment size, each with its own number. A send buffer is not
//! rewritten while its send is in flight: each in-flight send of a flow has its own buffer
//! (copy sends complete once the kernel has copied, so the buffer is free again then).
//!
//! A datagram with room for it carries the sender's send stamp after its number, read once
//! per chain (every datagram of the chain carries it); the receiver takes one arrival time
//! per completion batch and records the one-way delay of each stamped datagram.
//!
//! UDP has no EOF, so the receiver ends on its own clock: at its deadline it keeps
//! receiving while datagrams still arrive, checking every DRAIN_TICK, for at most
//! DRAIN_MAX; its elapsed time ends at the last tick that saw data.

use std::os::fd::RawFd;

use io_uring::squeue::Flags;

use crate::io::{op, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::net::udp::HELLO_BIT;
use crate::ring::{Completion, Ring};
use crate::verify::Verifier;
use crate::workload::drain::Drain;
use crate::workload::driver::{RoleReport, Run, Wait, Workload};
use crate::workload::pacer::Pacer;
use crate::workload::sequence::{add_sequences, SeqTracker};
use crate::workload::standing::StandingReceives;
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::intervals::FlowCounters;
use ringperf_core::measure::one_way::OneWayRecorder;
use ringperf_core::report::{UdpFlowReport, UdpReport};
use ringperf_core::spec::{TestSpec, UDP_SEQ_LEN};

/// How often the receiver looks whether datagrams still arrive after its deadline.
pub(crate) const DRAIN_TICK_NS: u64 = 20_000_000;
/// The longest the receiver drains after its deadline.
pub(crate) const DRAIN_MAX_NS: u64 = 200_000_000;

/// Provided buffers of a receiver's multishot ring.
const UDP_RING_BUFFERS: u16 = 1024;

/// The sending side of one worker: numbered datagrams through a datagram send path.
pub struct UdpSender<S> {
    path: S,
    flows: usize,
    size: usize,
    per_send: usize,
    depth: usize,
    /// Per flow: the next sequence number.
    seq: Vec<u64>,
    pacer: Pacer,
    in_flight: Vec<usize>,
    total: usize,
    report: UdpReport,
    /// The receiver records one-way delays: stamp each chain (one clock read per chain),
    /// shifting this side's clock by this offset onto the client's.
    stamp_offset: Option<i64>,
    /// Datagrams each flow sends before it stops (the spec's byte limit in whole
    /// datagrams, as netperf counts a UDP_STREAM's bytes; u64::MAX when timed).
    budget: u64,
}

impl<S: SendPath> UdpSender<S> {
    /// `path` numbers each datagram (see `io::send::DatagramSend`) and holds
    /// `send_depth` sends per flow.
    pub fn new(spec: &TestSpec, path: S, flows: usize) -> UdpSender<S> {
        let size = spec.send_size as usize;
        let per_send = spec.udp_datagrams_per_send() as usize;
        let depth = udp_send_depth(spec);
        UdpSender {
            path,
            flows,
            size,
            per_send,
            depth,
            seq: vec![0; flows],
            pacer: Pacer::for_chains(
                spec.pacing.flow_rate_bps(spec.flows),
                flows,
                (per_send * size) as u32,
                depth as u32,
            ),
            in_flight: vec![0; flows],
            total: 0,
            report: UdpReport {
                datagram_size: spec.send_size,
                gso_segment: spec.udp.gso_segment,
                flows: vec![UdpFlowReport::default(); flows],
                ..UdpReport::default()
            },
            stamp_offset: spec.one_way_unmeasured(true).is_none().then_some(spec.clock_offset_ns),
            budget: spec.byte_limit.map_or(u64::MAX, |b| b.div_ceil(u64::from(spec.send_size.max(1)))),
        }
    }

    /// Every flow has sent its whole budget.
    fn sent_all(&self) -> bool {
        // A timed test has no budget: no walk over the flows at every batch.
        self.budget != u64::MAX && self.seq.iter().all(|&s| s >= self.budget)
    }

    fn send_bytes(&self) -> u32 {
        (self.per_send * self.size) as u32
    }

    /// Queues flow `f`'s next chain: its sends go out linked, so they leave in sequence
    /// order.
    fn refill(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        let bytes = self.send_bytes();
        // A byte count: no more sends than the flow's remaining datagrams take (a counter,
        // not a clock).
        let left = self.budget - self.seq[f].min(self.budget);
        let room = self
            .depth
            .min(self.path.available(f))
            .min(usize::try_from(left.div_ceil(self.per_send as u64)).unwrap_or(usize::MAX));
        let mut k = 0;
        while k < room && self.pacer.allow(f, bytes) {
            k += 1;
        }
        if let (Some(offset), true) = (self.stamp_offset, k > 0) {
            self.path.set_stamp((monotonic_ns() as i64).wrapping_sub(offset) as u64);
        }
        for i in 1..=k {
            let flags = if i < k { Flags::IO_LINK } else { Flags::empty() };
            // The last send of a count carries only the datagrams left.
            let datagrams = (self.per_send as u64).min(self.budget - self.seq[f]);
            let len =
                if datagrams < self.per_send as u64 { datagrams as u32 * self.size as u32 } else { bytes };
            self.path.push(ring, f, self.seq[f], len, flags)?;
            self.seq[f] += datagrams;
            self.report.sends += 1;
        }
        self.in_flight[f] += k;
        self.total += k;
        Ok(())
    }

    fn sent(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<usize> {
        Ok(match self.path.complete(ring, c)? {
            SendEvent::Sent { flow, bytes } => {
                let d = (bytes as usize).div_ceil(self.size) as u64;
                self.report.flows[flow].datagrams_sent += d;
                self.report.datagrams_sent += d;
                run.counters[flow].bytes_sent += u64::from(bytes);
                flow
            }
            // The kernel refused the datagrams (local queue full, or a cancelled link):
            // their numbers are gone, so the receiver sees them as lost. Say so.
            SendEvent::Cancelled { flow } | SendEvent::Dropped { flow, refused: false } => {
                self.report.send_errors += self.per_send as u64;
                flow
            }
            // Past the deadline the receiver may have ended its drain already: it stops
            // once a drain tick saw no datagram, and a sender that runs late (a loaded CPU)
            // handles the completions of the chains it refilled before its deadline's.
            // Its closed port refusing what came after the window is the end, not a
            // failure. The clock is read only on this error.
            SendEvent::Dropped { flow, refused: true }
                if run.stopping || monotonic_ns() >= run.deadline_ns =>
            {
                run.stopping = true;
                flow
            }
            SendEvent::Dropped { refused: true, .. } => {
                return Err(Error::Peer(
                    "the receiver's UDP port is closed (ICMP port unreachable): did the server stop?".into(),
                ))
            }
            SendEvent::Chain { .. } | SendEvent::Released { .. } | SendEvent::Nothing => {
                return Err(Error::Protocol(
                    "a UDP send path reported a stream event: this is a bug in ringperf".into(),
                ))
            }
        })
    }
}

/// Sends per linked chain of a UDP sender, as the spec says (its default: `TestSpec::resolve`).
pub fn udp_send_depth(spec: &TestSpec) -> usize {
    spec.ring.send_depth.max(1) as usize
}

/// Sends on every flow until the deadline, then waits for the sends in flight. The sends
/// in flight at a stop die with the ring, which goes before their buffers.
impl<S: SendPath> Workload for UdpSender<S> {
    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        for f in 0..self.flows {
            self.refill(ring, f)?;
        }
        Ok(())
    }

    fn wait(&self) -> Wait {
        // Every send in flight completes on its own (UDP does not wait for the peer), so
        // wait for all of them: the kernel runs each chain's links within one enter.
        Wait::All(self.total)
    }

    fn done(&self, run: &Run) -> bool {
        (run.stopping || self.sent_all()) && self.total == 0
    }

    fn on_pace(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.pacer.tick();
        for f in 0..self.flows {
            if self.pacer.take_waiting(f) && !run.stopping && self.in_flight[f] == 0 {
                self.refill(ring, f)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        if c.op() != op::SEND {
            return Ok(false);
        }
        let f = self.sent(ring, c, run)?;
        self.in_flight[f] -= 1;
        self.total -= 1;
        if !run.stopping && self.in_flight[f] == 0 {
            self.refill(ring, f)?;
        }
        Ok(true)
    }

    fn report(&self) -> RoleReport {
        RoleReport { udp: Some(self.report.clone()), ..RoleReport::default() }
    }
}

/// The receiving side of one worker: a standing receive per flow through a datagram
/// receive path, every datagram's number into the flow's sequence tracker.
pub struct UdpReceiver<R> {
    path: R,
    size: usize,
    seq: Vec<SeqTracker>,
    receives: StandingReceives,
    report: UdpReport,
    /// Off: the sequence tracker checks what a datagram receiver gets.
    verify: Verifier,
    /// The one-way delays of stamped datagrams (`None`: the spec does not stamp them).
    one_way: Option<OneWayRecorder>,
}

/// Buffers of `size` bytes a UDP receiver's path needs: one datagram each, or a GRO batch.
pub fn udp_recv_buffers(spec: &TestSpec) -> (u16, usize) {
    let size = spec.send_size as usize;
    (UDP_RING_BUFFERS, if spec.udp.gro { 65_536.max(size) } else { size })
}

impl<R: RecvPath> UdpReceiver<R> {
    /// `flows_done`: see [`StandingReceives::new`] (`None`: the deadline ends the test).
    pub fn new(spec: &TestSpec, path: R, flows: usize, flows_done: Option<RawFd>) -> UdpReceiver<R> {
        UdpReceiver {
            path,
            size: spec.send_size as usize,
            seq: vec![SeqTracker::default(); flows],
            receives: StandingReceives::new(Drain::new(DRAIN_TICK_NS, DRAIN_MAX_NS), flows, flows_done),
            report: UdpReport {
                datagram_size: spec.send_size,
                gro: spec.udp.gro,
                flows: vec![UdpFlowReport::default(); flows],
                ..UdpReport::default()
            },
            verify: Verifier::new(false, 0),
            one_way: OneWayRecorder::for_direction(spec, true),
        }
    }

    fn udp_report(&self) -> UdpReport {
        let mut r = self.report.clone();
        r.one_way = self.one_way.as_ref().map(OneWayRecorder::report);
        r.no_buffers = self.path.report().enobufs;
        add_sequences(&mut r, &self.seq);
        r
    }

    /// Accounts one receive on flow `f` (several datagrams with GRO).
    fn received(&mut self, f: usize, c: &Completion, counters: &mut [FlowCounters]) {
        self.report.receives += 1;
        // GRO hands over equal-size datagrams back to back (the last may be shorter);
        // every datagram of the test has the spec's size.
        for d in self.path.payload(c).chunks(self.size) {
            if d.len() < UDP_SEQ_LEN as usize {
                self.report.stray += 1;
                continue;
            }
            let seq = u64::from_le_bytes(d[..8].try_into().expect("8 bytes"));
            if seq & HELLO_BIT != 0 {
                self.report.stray += 1;
                continue;
            }
            self.seq[f].on(seq);
            if let Some(w) = &mut self.one_way {
                w.record(d);
            }
            counters[f].bytes_received += d.len() as u64;
        }
    }
}

/// Receives on every flow until the deadline and the drain after it. The standing
/// receives at a stop die with the ring, which goes before the buffer ring they fill.
impl<R: RecvPath> Workload for UdpReceiver<R> {
    fn watches(&self) -> bool {
        self.receives.driver_watches()
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.receives.start(ring, &mut self.path)
    }

    fn done(&self, _run: &Run) -> bool {
        self.receives.all_ended()
    }

    fn on_deadline(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.receives.on_deadline(ring, run.deadline_ns)
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        // STOP: the client's sender is done, what it sent is here or on its way.
        if self.receives.complete(ring, c.op())? {
            return Ok(true);
        }
        match c.op() {
            op::RECV => {
                match self.path.complete(ring, c, &mut self.verify)? {
                    RecvEvent::Data { bytes: 0, .. } => self.report.stray += 1,
                    RecvEvent::Data { .. } => {
                        self.received(c.flow(), c, run.counters);
                        self.receives.saw_data();
                    }
                    RecvEvent::Cancelled { .. } => {
                        self.receives.cancelled();
                        return Ok(true);
                    }
                    RecvEvent::Nothing => {}
                    RecvEvent::Eof { .. } => {
                        return Err(Error::Protocol(
                            "a datagram receive path reported EOF: this is a bug in ringperf".into(),
                        ))
                    }
                }
                self.receives.after_receive(ring, &mut self.path, c)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.path.after_batch();
        if let Some(w) = &mut self.one_way {
            w.end_batch();
        }
    }

    fn report(&self) -> RoleReport {
        // The end of this side's window: the last drain tick that still saw datagrams.
        RoleReport { udp: Some(self.udp_report()), end_ns: self.receives.end_ns(), ..RoleReport::default() }
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    use super::*;
    use crate::io::recv::DatagramRecv;
    use crate::io::send::DatagramSend;
    use crate::net::udp::{set_gro, set_gso};
    use crate::ring::FlowFd;
    use crate::workload::driver::Workload as _;
    use ringperf_core::measure::intervals::IntervalSampler;
    use ringperf_core::spec::{RingTuning, Workload};

    /// Sends `sender`'s first chain and reaps until a send completes refused (the port it
    /// targets is closed), handing every completion to the sender with `deadline_ns`.
    fn run_into_a_closed_port(deadline_ns: u64) -> (Result<bool>, bool) {
        let gone = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let to = gone.local_addr().expect("an address");
        drop(gone);
        let tx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        tx.connect(to).expect("connect");
        let mut spec = TestSpec::for_workload(Workload::UdpStream);
        spec.send_size = 64;
        spec.ring.send_depth = 4;
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let path = DatagramSend::new(&[FlowFd::Raw(tx.as_raw_fd())], 64, 1, 4);
        let mut sender = UdpSender::new(&spec, path, 1);
        let mut sampler = IntervalSampler::new(0, 1, &[], false, None);
        let mut counters = [FlowCounters::default()];
        let mut run = Run { counters: &mut counters, sampler: &mut sampler, deadline_ns, stopping: false };
        sender.start(&mut ring, &mut run).expect("a chain");
        let mut out = Vec::with_capacity(ring.cq_entries());
        // Loopback answers the first datagram's ICMP before the next send: the chain's
        // later sends, or the refilled ones, come back refused.
        for _ in 0..64 {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
            for c in &out {
                let refused = c.result == -libc::ECONNREFUSED;
                let handled = sender.complete(&mut ring, c, &mut run);
                if refused || handled.is_err() {
                    return (handled, run.stopping);
                }
            }
            if run.stopping {
                break;
            }
        }
        panic!("no send was refused by a closed loopback port");
    }

    /// A closed port refusing datagrams fails a run before its deadline (the server went
    /// away) and ends it quietly after (the receiver ended its drain first).
    #[test]
    fn a_refused_send_fails_before_the_deadline_and_ends_the_run_after_it() {
        let (before, _) = run_into_a_closed_port(monotonic_ns() + 60_000_000_000);
        assert!(matches!(before, Err(Error::Peer(_))), "{before:?}");
        let (after, stopping) = run_into_a_closed_port(monotonic_ns());
        assert!(matches!(after, Ok(true)), "{after:?}");
        assert!(stopping, "the sender starts nothing more");
    }

    /// A byte count (netperf's negative -l) sends whole datagrams up to it and then no
    /// more: 100 datagrams for 6,380 bytes of 64-byte datagrams, numbered 0 to 99, one at a
    /// time and as GSO sends of 64 (the last send carries the 36 left), and the sender is
    /// done before any deadline.
    #[test]
    fn a_byte_count_sends_exactly_its_whole_datagrams() {
        for gso in [None, Some(64u32)] {
            let rx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
            let tx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
            tx.connect(rx.local_addr().expect("an address")).expect("connect");
            rx.set_nonblocking(true).expect("nonblocking");
            let tx = socket2::Socket::from(tx);
            // Room for every datagram: loopback drops what a full buffer cannot take.
            socket2::SockRef::from(&rx).set_recv_buffer_size(1 << 20).expect("SO_RCVBUF");
            let mut spec = TestSpec::for_workload(Workload::UdpStream);
            spec.send_size = 64;
            spec.ring.send_depth = 4;
            spec.udp.gso_segment = gso;
            spec.byte_limit = Some(100 * 64 - 20);
            if let Some(seg) = gso {
                set_gso(&tx, seg).expect("UDP_SEGMENT");
            }
            let per_send = spec.udp_datagrams_per_send() as usize;
            let mut ring = Ring::new(&RingTuning::default(), 64).expect("a ring");
            let path = DatagramSend::new(&[FlowFd::Raw(tx.as_raw_fd())], 64, per_send, 4);
            let mut sender = UdpSender::new(&spec, path, 1);
            let mut sampler = IntervalSampler::new(0, 1, &[], false, None);
            let mut counters = [FlowCounters::default()];
            let deadline_ns = monotonic_ns() + 60_000_000_000;
            let mut run =
                Run { counters: &mut counters, sampler: &mut sampler, deadline_ns, stopping: false };
            sender.start(&mut ring, &mut run).expect("a chain");
            let mut out = Vec::with_capacity(ring.cq_entries());
            // Bounded: a sender that ignored its count would never be done.
            for _ in 0..1000 {
                if sender.done(&run) {
                    break;
                }
                ring.submit_and_wait_for(sender.total).expect("enter");
                ring.reap(&mut out);
                for c in &out {
                    assert!(sender.complete(&mut ring, c, &mut run).expect("a send"), "{gso:?}");
                }
            }
            assert!(sender.done(&run), "{gso:?}: still sending after 1000 batches");
            assert!(!run.stopping, "{gso:?}: the count ended it, not the deadline");
            assert_eq!(run.counters[0].bytes_sent, 100 * 64, "{gso:?}");
            let mut seqs = Vec::new();
            let mut buf = [0u8; 128];
            while let Ok(n) = rx.recv(&mut buf) {
                assert_eq!(n, 64, "{gso:?}");
                seqs.push(u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")));
            }
            assert_eq!(seqs, (0..100).collect::<Vec<u64>>(), "{gso:?}");
        }
    }

    /// A GSO send of 64 numbered 64-byte datagrams reaches a UDP_GRO socket as one
    /// coalesced receive; the receiver must split it per datagram and account each number,
    /// so two such sends are 128 datagrams received and none lost, not 2 received and 126
    /// lost.
    #[test]
    fn a_coalesced_gro_receive_counts_every_datagram_in_it() {
        const SIZE: usize = 64;
        const PER_SEND: usize = 64;
        let rx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let tx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        tx.connect(rx.local_addr().expect("an address")).expect("connect");
        let tx = socket2::Socket::from(tx);
        let rx = socket2::Socket::from(rx);
        set_gso(&tx, SIZE as u32).expect("UDP_SEGMENT");
        set_gro(&rx).expect("UDP_GRO");

        let mut spec = TestSpec::for_workload(Workload::UdpStream);
        spec.send_size = SIZE as u32;
        spec.udp.gro = true;
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let (count, size) = udp_recv_buffers(&spec);
        let path = DatagramRecv::new(&mut ring, &[FlowFd::Raw(rx.as_raw_fd())], count, size).expect("a path");
        let mut receiver = UdpReceiver::new(&spec, path, 1, None);
        receiver.path.arm(&mut ring, 0, 0, false, Flags::empty()).expect("arm");

        for first in [0u64, PER_SEND as u64] {
            let mut send = vec![0u8; SIZE * PER_SEND];
            for (k, d) in send.chunks_mut(SIZE).enumerate() {
                d[..8].copy_from_slice(&(first + k as u64).to_le_bytes());
            }
            assert_eq!(tx.send(&send).expect("a GSO send"), send.len());
        }

        let mut counters = [FlowCounters::default()];
        let mut verify = Verifier::new(false, 0);
        let mut out = Vec::with_capacity(ring.cq_entries());
        let total = (2 * SIZE * PER_SEND) as u64;
        while counters[0].bytes_received < total {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
            for c in &out {
                let event = receiver.path.complete(&mut ring, c, &mut verify).expect("a datagram");
                assert!(matches!(event, RecvEvent::Data { flow: 0, .. }), "{event:?}");
                receiver.received(0, c, &mut counters);
            }
            receiver.path.after_batch();
        }
        let r = receiver.udp_report();
        assert!(
            r.receives < 2 * PER_SEND as u64,
            "UDP_GRO did not coalesce: {} receives for {} datagrams",
            r.receives,
            2 * PER_SEND
        );
        assert_eq!(r.datagrams_received, 2 * PER_SEND as u64, "every datagram of a coalesced receive counts");
        assert_eq!((r.lost, r.duplicated, r.stray), (0, 0, 0));
        assert_eq!(r.sequence_span, 2 * PER_SEND as u64);
    }
}
