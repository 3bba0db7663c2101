//! How a UDP side that waits for its peer ends: UDP has no EOF, so after its deadline it
//! keeps receiving while datagrams still arrive, looking every `tick` whether any came,
//! until a tick saw none or a limit passed; then it cancels its standing receives. Its
//! window ends at the last tick that still saw data.

use io_uring::{opcode, types};

use crate::io::op;
use crate::ring::{token, Ring};
use crate::workload::ending::cancel_receives;
use ringperf_core::error::Result;
use ringperf_core::measure::clock::monotonic_ns;

pub struct Drain {
    /// Boxed: the kernel reads it when the timeout is submitted.
    tick: Box<types::Timespec>,
    /// How long after the deadline the drain may last at most.
    max_ns: u64,
    draining: bool,
    /// When the drain started: the deadline, or when the client said it was done.
    from_ns: u64,
    /// Datagrams since the last tick.
    since_tick: u64,
    cancelled: bool,
    end_ns: Option<u64>,
}

impl Drain {
    pub fn new(tick_ns: u64, max_ns: u64) -> Drain {
        let tick = types::Timespec::new().sec(tick_ns / 1_000_000_000).nsec((tick_ns % 1_000_000_000) as u32);
        Drain {
            tick: Box::new(tick),
            max_ns,
            draining: false,
            from_ns: 0,
            since_tick: 0,
            cancelled: false,
            end_ns: None,
        }
    }

    /// The deadline came, or the client said its flows are done (`deadline_ns` is then
    /// now): the window ends here unless data still comes. Only the first start counts.
    pub fn start(&mut self, ring: &mut Ring, deadline_ns: u64) -> Result<()> {
        if self.draining {
            return Ok(());
        }
        self.draining = true;
        self.from_ns = deadline_ns;
        self.end_ns = Some(deadline_ns);
        self.since_tick = 0;
        self.push_tick(ring)
    }

    /// A datagram arrived.
    #[inline]
    pub fn saw_data(&mut self) {
        if self.draining {
            self.since_tick += 1;
        }
    }

    /// A DRAIN tick: go on while data comes and the limit allows, else cancel the
    /// standing receives of `flows` flows (once).
    pub fn on_tick(&mut self, ring: &mut Ring, flows: usize) -> Result<()> {
        let now = monotonic_ns();
        if self.since_tick > 0 {
            self.end_ns = Some(now);
        }
        if self.since_tick > 0 && now < self.from_ns + self.max_ns {
            self.since_tick = 0;
            self.push_tick(ring)
        } else if !self.cancelled {
            self.cancelled = true;
            cancel_receives(ring, flows)
        } else {
            Ok(())
        }
    }

    /// Handles the completions that end a receiving side's run: the stop that says the
    /// peer is done (a quiet period from now ends the test), the drain's ticks, and cancels
    /// (nothing to do). False for any other.
    pub fn complete(&mut self, ring: &mut Ring, kind: u8, flows: usize) -> Result<bool> {
        match kind {
            op::CANCEL => {}
            op::STOP => self.start(ring, monotonic_ns())?,
            op::DRAIN => self.on_tick(ring, flows)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The standing receives have been cancelled: a receive that ends is not re-armed.
    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// Where this side's window ends, once the deadline has come.
    pub fn end_ns(&self) -> Option<u64> {
        self.end_ns
    }

    fn push_tick(&mut self, ring: &mut Ring) -> Result<()> {
        let e = opcode::Timeout::new(&*self.tick).build().user_data(token(op::DRAIN, 0));
        // SAFETY: the timespec is boxed in self, which outlives the ring's use of it.
        unsafe { ring.push(&e) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::spec::RingTuning;

    #[test]
    fn drains_while_data_comes_then_cancels_once() {
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let deadline = monotonic_ns();
        let mut drain = Drain::new(1_000_000, 60_000_000_000);
        drain.saw_data();
        assert_eq!(drain.end_ns(), None, "data before the deadline does not extend the window");
        drain.start(&mut ring, deadline).expect("a tick");
        assert_eq!(drain.end_ns(), Some(deadline));
        drain.saw_data();
        drain.on_tick(&mut ring, 1).expect("another tick");
        assert!(!drain.cancelled());
        let extended = drain.end_ns().expect("an end");
        assert!(extended >= deadline);
        drain.on_tick(&mut ring, 1).expect("a cancel");
        assert!(drain.cancelled());
        assert_eq!(drain.end_ns(), Some(extended), "a quiet tick does not move the end");
        drain.on_tick(&mut ring, 1).expect("nothing more");
        assert!(drain.cancelled());
    }

    /// The client's "done" starts the drain early; the deadline that comes later does not
    /// start it again (nor move the window's end back).
    #[test]
    fn an_early_start_is_the_only_start() {
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let early = monotonic_ns();
        let mut drain = Drain::new(1_000_000, 60_000_000_000);
        drain.start(&mut ring, early).expect("a tick");
        drain.on_tick(&mut ring, 1).expect("a cancel");
        assert!(drain.cancelled());
        drain.start(&mut ring, early + 10_000_000_000).expect("nothing");
        assert_eq!(drain.end_ns(), Some(early));
    }

    #[test]
    fn stops_at_its_limit_even_while_data_comes() {
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let deadline = monotonic_ns().saturating_sub(1_000_000_000);
        let mut drain = Drain::new(1_000_000, 1_000_000);
        drain.start(&mut ring, deadline).expect("a tick");
        drain.saw_data();
        drain.on_tick(&mut ring, 1).expect("a cancel");
        assert!(drain.cancelled());
    }
}
