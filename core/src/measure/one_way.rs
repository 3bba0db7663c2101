//! One-way delay of stamped UDP datagrams: the receiver's arrival time minus the sender's
//! send stamp, both CLOCK_MONOTONIC on the client's clock (a server shifts its own by the
//! offset the client estimated, see `TestSpec::clock_offset_ns`), into an HDR histogram
//! merged like the round-trip one.
//!
//! The arrival time is one clock read per completion batch, taken lazily at the batch's
//! first stamped datagram, so no datagram costs a clock read of its own.

use serde::{Deserialize, Serialize};

use crate::measure::clock::monotonic_ns;
use crate::measure::latency::{LatencyRecorder, LatencySummary};
use crate::spec::{TestSpec, UDP_SEQ_LEN, UDP_STAMPED_LEN};

/// One-way delays of one direction's datagrams: arrival minus send stamp on the client's
/// clock (see docs/figures.md).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct OneWayReport {
    /// The delays; `None` when no stamped datagram arrived.
    pub delay: Option<LatencySummary>,
    /// Stamped datagrams that did not arrive after their send stamp on the corrected clock
    /// (the offset estimate is off by more than their delay): recorded as 1 ns.
    pub not_after_send: u64,
    /// The clock offset's uncertainty the figure carries (0: same host, exact), as the
    /// client labelled it; `None` before the client merged both sides.
    #[serde(default)]
    pub uncertainty_ns: Option<u64>,
    /// False when the uncertainty is over half the p50 delay: the figure cannot be trusted.
    #[serde(default)]
    pub trusted: Option<bool>,
}

impl OneWayReport {
    /// Labels the figure with the clock's uncertainty and whether it can be trusted.
    pub fn label(&mut self, uncertainty_ns: u64) {
        self.uncertainty_ns = Some(uncertainty_ns);
        self.trusted = self.delay.as_ref().map(|d| uncertainty_ns.saturating_mul(2) <= d.p50_ns);
    }
}

/// The send stamp a datagram carries after its sequence number; `None` for a datagram
/// too short for one or sent unstamped (0: a peer that does not stamp leaves it so).
#[inline]
pub fn stamp_of(datagram: &[u8]) -> Option<u64> {
    let bytes = datagram.get(UDP_SEQ_LEN as usize..UDP_STAMPED_LEN as usize)?;
    let mut b = [0u8; 8];
    b.copy_from_slice(bytes);
    Some(u64::from_le_bytes(b)).filter(|&s| s != 0)
}

/// One receiver's one-way delays.
pub struct OneWayRecorder {
    delays: LatencyRecorder,
    /// Stamped datagrams that did not arrive after their stamp on the corrected clock.
    not_after_send: u64,
    /// This batch's arrival time on the client's clock, 0 until its first stamped datagram.
    batch_arrival: u64,
    clock_offset_ns: i64,
}

impl OneWayRecorder {
    /// A recorder for the datagrams of one direction, or `None` when the spec does not
    /// stamp them (see `TestSpec::one_way_unmeasured`).
    pub fn for_direction(spec: &TestSpec, request: bool) -> Option<OneWayRecorder> {
        spec.one_way_unmeasured(request).is_none().then(|| OneWayRecorder {
            delays: LatencyRecorder::new(),
            not_after_send: 0,
            batch_arrival: 0,
            clock_offset_ns: spec.clock_offset_ns,
        })
    }

    /// This completion batch's arrival time on the client's clock: read at the first call
    /// of a batch, the same for the rest of it.
    #[inline]
    pub fn batch_arrival(&mut self) -> u64 {
        if self.batch_arrival == 0 {
            self.batch_arrival = (monotonic_ns() as i64).wrapping_sub(self.clock_offset_ns) as u64;
        }
        self.batch_arrival
    }

    /// Records a datagram that arrived at `arrival` (client's clock) with `datagram`'s stamp.
    #[inline]
    pub fn record_at(&mut self, arrival: u64, datagram: &[u8]) {
        let Some(sent) = stamp_of(datagram) else { return };
        match arrival.checked_sub(sent) {
            Some(d) if d > 0 => self.delays.record(d),
            _ => {
                self.not_after_send += 1;
                self.delays.record(1);
            }
        }
    }

    /// Records a datagram of this completion batch.
    #[inline]
    pub fn record(&mut self, datagram: &[u8]) {
        if stamp_of(datagram).is_some() {
            let arrival = self.batch_arrival();
            self.record_at(arrival, datagram);
        }
    }

    /// The batch is over: the next one reads the clock again.
    #[inline]
    pub fn end_batch(&mut self) {
        self.batch_arrival = 0;
    }

    pub fn report(&self) -> OneWayReport {
        OneWayReport {
            delay: self.delays.summary(),
            not_after_send: self.not_after_send,
            uncertainty_ns: None,
            trusted: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{RecvEngine, SendEngine, Workload};

    fn datagram(seq: u64, stamp: u64, len: usize) -> Vec<u8> {
        let mut d = vec![0u8; len];
        d[..8].copy_from_slice(&seq.to_le_bytes());
        if len >= 16 {
            d[8..16].copy_from_slice(&stamp.to_le_bytes());
        }
        d
    }

    #[test]
    fn records_arrival_minus_stamp_and_skips_unstamped_datagrams() {
        let spec = TestSpec::for_workload(Workload::UdpStream);
        let mut r = OneWayRecorder::for_direction(&spec, true).expect("1 KiB datagrams are stamped");
        r.record_at(10_000, &datagram(1, 7_000, 64));
        r.record_at(10_000, &datagram(2, 0, 64));
        r.record_at(10_000, &datagram(3, 7_000, 8));
        r.record_at(10_000, &datagram(4, 12_000, 64));
        let rep = r.report();
        let d = rep.delay.expect("two stamped datagrams");
        assert_eq!(d.count, 2);
        assert_eq!(rep.not_after_send, 1, "the stamp after the arrival is counted");
        assert!((2_990..=3_010).contains(&d.max_ns), "{}", d.max_ns);
    }

    #[test]
    fn a_server_puts_its_arrivals_on_the_client_clock() {
        let mut spec = TestSpec::for_workload(Workload::UdpStream);
        spec.clock_offset_ns = 1_000_000_000;
        let mut r = OneWayRecorder::for_direction(&spec, true).expect("stamped");
        let local = monotonic_ns();
        let arrival = r.batch_arrival();
        assert!(arrival <= local - 999_000_000 && arrival + 1_001_000_000 >= local, "{arrival} vs {local}");
        assert_eq!(r.batch_arrival(), arrival, "one read per batch");
        r.end_batch();
        assert!(r.batch_arrival() >= arrival);
    }

    /// A figure whose clock uncertainty is over half its p50 cannot be trusted; one host's
    /// (uncertainty 0) always can.
    #[test]
    fn the_label_distrusts_an_uncertainty_over_half_the_p50() {
        let spec = TestSpec::for_workload(Workload::UdpStream);
        let mut r = OneWayRecorder::for_direction(&spec, true).expect("stamped");
        for _ in 0..100 {
            r.record_at(20_000, &datagram(1, 10_000, 64));
        }
        let mut rep = r.report();
        let p50 = rep.delay.as_ref().expect("recorded").p50_ns;
        rep.label(0);
        assert_eq!((rep.uncertainty_ns, rep.trusted), (Some(0), Some(true)));
        rep.label(p50 / 2);
        assert_eq!(rep.trusted, Some(true), "exactly half the p50 is still trusted");
        rep.label(p50 / 2 + 10);
        assert_eq!(rep.trusted, Some(false));
        let mut nothing = OneWayRecorder::for_direction(&spec, true).expect("stamped").report();
        nothing.label(5);
        assert_eq!(nothing.trusted, None, "no figure, no verdict");
    }

    #[test]
    fn small_or_classic_datagrams_are_not_measured_and_say_why() {
        // The ring's udp-rr: 8-byte datagrams alone run on the classic loop by default.
        let rr = TestSpec::for_workload(Workload::UdpRr).on_harness(crate::harness::Harness::IoUring);
        assert_eq!(rr.one_way_unmeasured(true).as_deref(), Some("datagrams smaller than 16 B"));
        assert!(OneWayRecorder::for_direction(&rr, false).is_none());
        let rr = TestSpec { request_size: 64, ..rr };
        assert!(rr.one_way_unmeasured(true).is_none());
        assert!(rr.one_way_unmeasured(false).is_some(), "the 8-byte responses are not");
        let mut classic = TestSpec::for_workload(Workload::UdpStream);
        classic.remote.send_engine = SendEngine::Syscall;
        classic.remote.recv_engine = RecvEngine::Syscall;
        assert_eq!(
            classic.one_way_unmeasured(true).as_deref(),
            Some("the syscall engine does not stamp datagrams")
        );
    }
}
