//! Application pacing: a token bucket per flow, refilled on the ticks of a multishot
//! Timeout on the worker's ring. Nothing sleeps and nothing reads a clock per send; the
//! clock is read once per tick to refill by the time that really passed.
//!
//! Every workload paces what its side sends with it: a stream's sends, a request or a
//! response (or a burst's worth of them in one send), a crr cycle's request or response,
//! a datagram. A transaction that finds no tokens waits for the next tick: the role keeps
//! it as it keeps one waiting for a send buffer, and the tick's [`Pacer::take_waiting`]
//! sends it. Unpaced, [`Pacer::allow`] is one compare of a field: the hot path reads no
//! clock. The classic loops have no ring timer: they refill by the clock when a bucket is
//! in debt and sleep until it is not ([`Pacer::debt_ns`]).

use crate::io::op;
use crate::ring::{token, Ring};
use ringperf_core::error::Result;
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::spec::TestSpec;

/// Each flow's send rate on one side, in bits/s: what the spec asks (`-b`, `--flow-rate`),
/// held to `max_rate_bps` (a server's `--max-rate`, the whole session's, shared evenly by
/// its flows) whatever the spec asks, so a server's limit binds a client that asked for no
/// rate or lied about it. `None`: unpaced.
pub fn flow_send_rate_bps(spec: &TestSpec, max_rate_bps: Option<u64>) -> Option<u64> {
    let asked = spec.pacing.flow_rate_bps(spec.flows);
    let cap = max_rate_bps.map(|m| (m / u64::from(spec.flows.max(1))).max(1));
    match (asked, cap) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// A crr server's send rate per worker, in bits/s: any worker may serve any flow's
/// connection, so each holds the session's flows' rates together to its share of them.
pub fn crr_server_rate_bps(spec: &TestSpec, max_rate_bps: Option<u64>) -> Option<u64> {
    flow_send_rate_bps(spec, max_rate_bps)
        .map(|r| (r.saturating_mul(u64::from(spec.flows.max(1))) / spec.workers() as u64).max(1))
}

/// The refill tick's bounds: at most every 20 us, at least every 10 ms.
const MIN_TICK_NS: f64 = 20_000.0;
const MAX_TICK_NS: f64 = 10_000_000.0;
/// How much time of its rate a bucket holds.
const BUCKET_NS: f64 = 2.0 * MAX_TICK_NS;
/// The most often a message sender's bucket ticks (see [`Pacer::for_messages`]).
const MIN_MESSAGE_TICK_NS: f64 = 250_000.0;

pub struct Pacer {
    /// Bytes per nanosecond per flow; 0 when pacing is off.
    rate: f64,
    tokens: Vec<f64>,
    /// The most a flow may save up: [`BUCKET_NS`] of its rate, and at least two sends.
    burst: f64,
    last_ns: u64,
    /// The refill period.
    tick_ns: u64,
    waiting: Vec<bool>,
}

impl Pacer {
    /// `rate_bps`: each flow's payload rate in bits per second (`None`: no pacing).
    pub fn new(rate_bps: Option<u64>, flows: usize, send_size: u32) -> Pacer {
        Pacer::for_chains(rate_bps, flows, send_size, 1)
    }

    /// [`Pacer::new`] for a sender that refills a flow `chain` sends at a time: a tick per
    /// half chain at the paced rate, within 20 us .. 10 ms. (A tick per send cost a small
    /// datagram sender a timer wakeup per datagram or two, more CPU than the sends.)
    pub fn for_chains(rate_bps: Option<u64>, flows: usize, send_size: u32, chain: u32) -> Pacer {
        let unit = f64::from(send_size) * f64::from(chain.max(1));
        Pacer::ticking(rate_bps, flows, send_size, unit, MIN_TICK_NS)
    }

    /// [`Pacer::new`] for a side that sends a message (or a burst's send of them) of up to
    /// `send_size` bytes at a time and then waits for its peer (rr, crr, udp-rr): a tick
    /// per half message at the rate, but no more often than [`MIN_MESSAGE_TICK_NS`]. A
    /// small request's rate seldom binds (the round trip does), and a tick every 20 us cost
    /// a paced client more CPU than its transactions.
    pub fn for_messages(rate_bps: Option<u64>, flows: usize, send_size: u32) -> Pacer {
        Pacer::ticking(rate_bps, flows, send_size, f64::from(send_size), MIN_MESSAGE_TICK_NS)
    }

    fn ticking(rate_bps: Option<u64>, flows: usize, send_size: u32, unit: f64, min_tick_ns: f64) -> Pacer {
        let rate = rate_bps.map_or(0.0, |r| r as f64 / 8.0 / 1e9);
        let tick_ns = if rate > 0.0 { (unit / rate / 2.0).clamp(min_tick_ns, MAX_TICK_NS) as u64 } else { 0 };
        // The bucket holds 20 ms of rate (two of the longest ticks): a worker that handles
        // its ticks late, or runs late on a busy machine, catches up instead of losing the
        // time, while the rate stays the rate. (Holding 5 ms, a stream paced at 200 Mbit/s
        // and ticking every 10 ms sent 125-156 Mbit/s, and a udp-rr server under load half
        // its rate.)
        let burst = (rate * BUCKET_NS).max(2.0 * f64::from(send_size));
        Pacer {
            rate,
            tokens: vec![f64::from(send_size); flows],
            burst,
            last_ns: 0,
            tick_ns,
            waiting: vec![false; flows],
        }
    }

    pub fn enabled(&self) -> bool {
        self.rate > 0.0
    }

    /// Starts the refill clock (a classic loop, which has no tick).
    pub fn start_clock(&mut self) {
        self.last_ns = monotonic_ns();
    }

    /// Arms the refill tick.
    pub fn start(&mut self, ring: &mut Ring) -> Result<()> {
        if !self.enabled() || self.tick_ns == 0 {
            return Ok(());
        }
        self.start_clock();
        ring.push_ticks(self.tick_ns, token(op::PACE, 0))
    }

    /// Takes `bytes` of tokens for one send of `flow`, or marks it waiting.
    #[inline]
    pub fn allow(&mut self, flow: usize, bytes: u32) -> bool {
        if self.rate == 0.0 {
            return true;
        }
        let t = &mut self.tokens[flow];
        if *t >= f64::from(bytes) {
            *t -= f64::from(bytes);
            true
        } else {
            self.waiting[flow] = true;
            false
        }
    }

    /// Takes the tokens of as many `unit`-byte messages of `flow` as it has, up to `most`
    /// (a burst's send carries several), and returns how many; 0 marks the flow waiting.
    #[inline]
    pub fn allow_up_to(&mut self, flow: usize, unit: u32, most: u32) -> u32 {
        if self.rate == 0.0 || most == 0 {
            return most;
        }
        let t = &mut self.tokens[flow];
        let k = ((*t / f64::from(unit.max(1))).floor() as u32).min(most);
        if k == 0 {
            self.waiting[flow] = true;
        } else {
            *t -= f64::from(k) * f64::from(unit);
        }
        k
    }

    /// A classic loop: `None` when `flow` may send now (its bucket is out of debt, refilled
    /// by the clock if it was in debt), else how long until it will be, in ns. Unpaced, no
    /// clock is read.
    #[inline]
    pub fn debt_ns(&mut self, flow: usize) -> Option<u64> {
        if self.rate == 0.0 || self.tokens[flow] >= 0.0 {
            return None;
        }
        self.tick();
        let debt = -self.tokens[flow];
        (debt > 0.0).then(|| ((debt / self.rate).ceil() as u64).max(1))
    }

    /// A tick: refill every flow by the time that passed.
    pub fn tick(&mut self) {
        self.refill_at(monotonic_ns());
    }

    /// Refills every flow by the time from the last refill to `now`.
    fn refill_at(&mut self, now: u64) {
        let add = self.rate * now.saturating_sub(self.last_ns) as f64;
        self.last_ns = now;
        for t in &mut self.tokens {
            *t = (*t + add).min(self.burst);
        }
    }

    /// Charges `bytes` that already moved on `flow` (a policed receive); false once its
    /// bucket is overdrawn, and the flow is then marked waiting.
    #[inline]
    pub fn charge(&mut self, flow: usize, bytes: u32) -> bool {
        if self.rate == 0.0 {
            return true;
        }
        let t = &mut self.tokens[flow];
        *t -= f64::from(bytes);
        if *t >= 0.0 {
            true
        } else {
            self.waiting[flow] = true;
            false
        }
    }

    /// True (and no longer waiting) if `flow` was waiting and its bucket is out of debt.
    #[inline]
    pub fn release(&mut self, flow: usize) -> bool {
        if self.waiting[flow] && self.tokens[flow] >= 0.0 {
            self.waiting[flow] = false;
            true
        } else {
            false
        }
    }

    /// Flows that ran out of tokens since the last call, cleared as they are returned.
    pub fn take_waiting(&mut self, flow: usize) -> bool {
        std::mem::take(&mut self.waiting[flow])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_gate_sends_and_refill_with_time() {
        let mut p = Pacer::new(Some(8_000_000_000), 2, 1000); // 1 byte per ns per flow
        assert!(p.allow(0, 1000)); // the first send is free
        assert!(!p.allow(0, 1000));
        assert!(p.take_waiting(0));
        assert!(!p.take_waiting(0));
        p.last_ns = monotonic_ns() - 5_000;
        p.tick();
        assert!(p.allow(0, 1000));
        let off = Pacer::new(None, 1, 1000);
        assert!(!off.enabled());
    }

    /// A request/response side: a response larger than a tick's refill waits for the ticks
    /// that pay for it, and over many ticks the bytes let through stay at the rate (plus
    /// the one response the bucket starts with), whatever the response's size.
    #[test]
    fn transactions_wait_for_their_tokens_and_hold_the_rate() {
        // 8 Mbit/s: 1 byte per us. 10 kB responses, ticks every 1 ms (1 kB each).
        let response = 10_000;
        let mut p = Pacer::for_messages(Some(8_000_000), 1, response);
        let t0 = 1_000_000_000;
        p.last_ns = t0;
        assert!(p.allow(0, response), "the first response is paid for by the bucket's start");
        assert!(!p.allow(0, response));
        assert!(p.take_waiting(0), "a response without tokens waits for the tick");
        // It goes at the tick that completes its 10 kB: the tenth.
        for k in 1..10u64 {
            p.refill_at(t0 + k * 1_000_000);
            assert!(!p.allow(0, response), "tick {k}: only {} bytes of tokens", k * 1000);
        }
        p.refill_at(t0 + 10_000_000);
        assert!(p.allow(0, response), "tick 10 pays for the response");
        let mut sent = 2 * u64::from(response);
        for k in 11..=1000u64 {
            p.refill_at(t0 + k * 1_000_000);
            // A server answers what it owes at each tick, as long as the tokens last.
            while p.allow(0, response) {
                sent += u64::from(response);
            }
        }
        // One second: 1 MB at the rate, plus the first response.
        assert!(sent <= 1_000_000 + u64::from(response), "{sent} bytes in 1 s at 1 MB/s");
        assert!(sent >= 1_000_000 - u64::from(response), "{sent} bytes in 1 s at 1 MB/s");
        // A burst's send takes what the tokens cover, and none marks the flow waiting.
        let mut b = Pacer::for_messages(Some(8_000_000), 1, 4 * 1000);
        assert_eq!(b.allow_up_to(0, 1000, 16), 4, "the bucket starts with one burst send");
        assert_eq!(b.allow_up_to(0, 1000, 16), 0);
        assert!(b.take_waiting(0));
        b.last_ns = t0;
        b.refill_at(t0 + 2_500_000);
        assert_eq!(b.allow_up_to(0, 1000, 16), 2, "2.5 ms pays for two 1 kB messages");
        // Unpaced: everything goes, and no flow ever waits.
        let mut off = Pacer::new(None, 1, 1000);
        assert_eq!(off.allow_up_to(0, 1000, 16), 16);
        assert!(off.allow(0, u32::MAX) && !off.take_waiting(0));
    }

    /// A classic loop: a flow in debt learns how long its debt takes to pay off.
    #[test]
    fn debt_says_how_long_to_wait() {
        let mut p = Pacer::new(Some(8_000_000), 1, 0); // 1 byte per us
        p.start_clock();
        assert_eq!(p.debt_ns(0), None, "out of debt: send now");
        p.charge(0, 50_000);
        let wait = p.debt_ns(0).expect("50 kB of debt");
        // 50 ms at the rate, less the little time that passed since the charge.
        assert!((40_000_000..=50_000_000).contains(&wait), "{wait} ns");
        let mut off = Pacer::new(None, 1, 0);
        off.charge(0, u32::MAX);
        assert_eq!(off.debt_ns(0), None);
    }

    #[test]
    fn a_sides_limit_caps_what_its_flows_send_whatever_the_spec_asks() {
        let spec = |total_bps, flows| TestSpec {
            pacing: ringperf_core::spec::Pacing { total_bps, per_flow_bps: None },
            flows,
            ..TestSpec::default()
        };
        assert_eq!(flow_send_rate_bps(&spec(None, 4), None), None, "unpaced");
        assert_eq!(flow_send_rate_bps(&spec(Some(400), 4), None), Some(100));
        // A server at --max-rate 200 paces a client that asked for nothing, or for more.
        assert_eq!(flow_send_rate_bps(&spec(None, 4), Some(200)), Some(50));
        assert_eq!(flow_send_rate_bps(&spec(Some(4000), 4), Some(200)), Some(50));
        assert_eq!(flow_send_rate_bps(&spec(Some(100), 4), Some(200)), Some(25), "the client's, when lower");
        // crr: one bucket per server worker, the flows' rates shared by the workers.
        let crr = TestSpec { threads: 2, ..spec(Some(4000), 4) };
        assert_eq!(crr_server_rate_bps(&crr, Some(200)), Some(100));
        assert_eq!(crr_server_rate_bps(&spec(None, 4), None), None);
    }

    #[test]
    fn chains_tick_per_half_chain() {
        let tick = |p: &Pacer| p.tick_ns;
        // 1400-byte datagrams at 1 Gbit/s: 11.2 us per datagram.
        assert_eq!(tick(&Pacer::new(Some(1_000_000_000), 1, 1400)), 20_000, "clamped to 20 us");
        assert_eq!(tick(&Pacer::for_chains(Some(1_000_000_000), 1, 1400, 32)), 179_200);
        assert_eq!(tick(&Pacer::for_chains(Some(1_000), 1, 1400, 32)), 10_000_000, "at most 10 ms");
        // A message sender ticks at most every 250 us: 64-byte requests at 200 Mbit/s
        // would tick every 1.3 us per half request.
        assert_eq!(tick(&Pacer::for_messages(Some(200_000_000), 1, 64)), 250_000);
        assert_eq!(tick(&Pacer::for_messages(Some(200_000_000), 1, 60_000)), 1_200_000);
        // The bucket holds two of the longest ticks of rate: a late tick loses nothing.
        let stream = Pacer::for_chains(Some(200_000_000), 1, 128 * 1024, 4);
        assert_eq!(stream.tick_ns, 10_000_000);
        assert_eq!(stream.burst, 25e-3 * 2.0 * 10_000_000.0);
    }

    #[test]
    fn charges_overdraw_and_hold_a_flow_until_it_is_out_of_debt() {
        let mut p = Pacer::new(Some(8_000), 2, 128 * 1024); // 1 byte per ms per flow
        assert!(p.charge(0, 1000), "the bucket starts with one receive's worth");
        assert!(!p.charge(0, 200_000));
        assert!(!p.release(0), "still in debt");
        assert!(!p.release(1), "never held");
        p.tokens[0] = 0.0;
        assert!(p.release(0));
        assert!(!p.release(0), "released once");
        let mut off = Pacer::new(None, 1, 1000);
        assert!(off.charge(0, u32::MAX));
    }
}
