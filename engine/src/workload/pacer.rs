//! Application pacing: a token bucket per flow, refilled on the ticks of a multishot
//! Timeout on the worker's ring. Nothing sleeps and nothing reads a clock per send; the
//! clock is read once per tick to refill by the time that really passed.

use io_uring::{opcode, types};

use crate::error::Result;
use crate::io::op;
use crate::measure::clock::monotonic_ns;
use crate::ring::{token, Ring};

pub struct Pacer {
    /// Bytes per nanosecond per flow; 0 when pacing is off.
    rate: f64,
    tokens: Vec<f64>,
    /// The most a flow may save up: 5 ms of its rate, and at least two sends.
    burst: f64,
    last_ns: u64,
    /// The refill period, and its timespec (boxed: the kernel reads it when the multishot
    /// timeout is submitted).
    tick_ns: u64,
    ts: Box<types::Timespec>,
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
        let rate = rate_bps.map_or(0.0, |r| r as f64 / 8.0 / 1e9);
        let unit = f64::from(send_size) * f64::from(chain.max(1));
        let tick_ns = if rate > 0.0 { (unit / rate / 2.0).clamp(20_000.0, 10_000_000.0) as u64 } else { 0 };
        // The bucket holds 5 ms of rate: a worker that handles its ticks late (a busy
        // machine) catches up instead of losing the time, while the rate stays the rate.
        let burst = (rate * 5e6).max(2.0 * f64::from(send_size));
        Pacer {
            rate,
            tokens: vec![f64::from(send_size); flows],
            burst,
            last_ns: 0,
            tick_ns,
            ts: Box::new(
                types::Timespec::new().sec(tick_ns / 1_000_000_000).nsec((tick_ns % 1_000_000_000) as u32),
            ),
            waiting: vec![false; flows],
        }
    }

    pub fn enabled(&self) -> bool {
        self.rate > 0.0
    }

    /// Arms the refill tick.
    pub fn start(&mut self, ring: &mut Ring) -> Result<()> {
        if !self.enabled() || self.tick_ns == 0 {
            return Ok(());
        }
        self.last_ns = monotonic_ns();
        let e = opcode::Timeout::new(&*self.ts)
            .count(0)
            .flags(types::TimeoutFlags::MULTISHOT)
            .build()
            .user_data(token(op::PACE, 0));
        // SAFETY: the timespec is boxed in self and outlives the ring's use of it.
        unsafe { ring.push(&e) }
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

    /// A tick: refill every flow by the time that passed.
    pub fn tick(&mut self) {
        let now = monotonic_ns();
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

    #[test]
    fn chains_tick_per_half_chain() {
        let tick = |p: &Pacer| p.tick_ns;
        // 1400-byte datagrams at 1 Gbit/s: 11.2 us per datagram.
        assert_eq!(tick(&Pacer::new(Some(1_000_000_000), 1, 1400)), 20_000, "clamped to 20 us");
        assert_eq!(tick(&Pacer::for_chains(Some(1_000_000_000), 1, 1400, 32)), 179_200);
        assert_eq!(tick(&Pacer::for_chains(Some(1_000), 1, 1400, 32)), 10_000_000, "at most 10 ms");
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
