//! Who held a flow back: the kernel's own chronographs of a TCP sender (tcp_info
//! `busy_time`, `rwnd_limited`, `sndbuf_limited`), read at the window's open and at its
//! end, as shares of the window.
//!
//! The kernel keeps one chronograph running per socket while its write queue holds data
//! (tcp_chrono_start/stop), of one of three kinds: busy sending, held by the receiver's
//! window, or held by its own send buffer. `tcpi_busy_time` is the sum of all three
//! (tcp_get_info_chrono_stats), so "sending" is busy − rwnd-limited − sndbuf-limited, and
//! the rest of the window the socket had nothing queued: its application did not give it
//! data to send. The chronographs tick in jiffies (1 to 10 ms).

use serde::{Deserialize, Serialize};

/// A flow's chronographs at one instant: cumulative since the socket opened, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chronos {
    /// CLOCK_MONOTONIC when they were read.
    pub at_ns: u64,
    /// Write queue not empty: the three kinds below together.
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
}

/// What held a flow (or a side's flows) back over the window: the chronographs' deltas
/// between the window's open and its end, and their shares of it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    /// How many flows are summed (1 for a flow's own).
    pub flows: u32,
    /// The window each flow was watched over, summed over the flows (flows × window), µs.
    pub window_us: u64,
    /// The write queue held data (sending, or held by either window below), µs.
    pub busy_us: u64,
    /// Held by the receiver's advertised window, µs.
    pub rwnd_limited_us: u64,
    /// Held by the send buffer (SO_SNDBUF, or the autotuned one), µs.
    pub sndbuf_limited_us: u64,
    /// The shares of the window, percent: busy, and its three parts (rwnd-limited,
    /// sndbuf-limited, and sending = busy − both), and idle = 100 − busy (nothing queued).
    pub busy_percent: f64,
    pub rwnd_limited_percent: f64,
    pub sndbuf_limited_percent: f64,
    pub sending_percent: f64,
    pub idle_percent: f64,
}

/// One cause a flow's time went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Data queued, the receiver's window closed.
    ReceiverWindow,
    /// The application waited for room in the send buffer.
    SendBuffer,
    /// Data queued or in flight and both windows open: the congestion window, pacing, the
    /// round trip (data waiting for its ACK) or the CPU set the pace.
    Sending,
    /// Nothing queued: the sending application did not keep the socket fed.
    NothingToSend,
}

impl Cause {
    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Cause::ReceiverWindow => "the receiver's window",
            Cause::SendBuffer => "the send buffer",
            Cause::Sending => "sending (cwnd, pacing, round trip or CPU)",
            Cause::NothingToSend => "the application (nothing queued to send)",
        }
    }

    /// Its short name among the others.
    pub fn short(self) -> &'static str {
        match self {
            Cause::ReceiverWindow => "receiver's window",
            Cause::SendBuffer => "send buffer",
            Cause::Sending => "sending",
            Cause::NothingToSend => "nothing to send",
        }
    }
}

/// The share of the window a cause must hold to be named as the one that limited a flow.
pub const DOMINANT_PERCENT: f64 = 50.0;

impl Limits {
    /// A flow's limits between two reads of its chronographs.
    pub fn between(open: &Chronos, end: &Chronos) -> Limits {
        Limits::from_sums(
            1,
            end.at_ns.saturating_sub(open.at_ns) / 1000,
            end.busy_us.saturating_sub(open.busy_us),
            end.rwnd_limited_us.saturating_sub(open.rwnd_limited_us),
            end.sndbuf_limited_us.saturating_sub(open.sndbuf_limited_us),
        )
    }

    /// The limits of summed deltas, with their shares. The chronographs tick in jiffies, so
    /// busy may run up to a tick past the window that brackets it: the shares then take
    /// the busy time as the window, which keeps each within [0, 100] and their sum at 100.
    pub fn from_sums(
        flows: u32,
        window_us: u64,
        busy_us: u64,
        rwnd_limited_us: u64,
        sndbuf_limited_us: u64,
    ) -> Limits {
        let span = window_us.max(busy_us).max(1) as f64;
        let pct = |us: u64| 100.0 * us as f64 / span;
        let (busy, rwnd, sndbuf) = (pct(busy_us), pct(rwnd_limited_us), pct(sndbuf_limited_us));
        Limits {
            flows,
            window_us,
            busy_us,
            rwnd_limited_us,
            sndbuf_limited_us,
            busy_percent: busy,
            rwnd_limited_percent: rwnd,
            sndbuf_limited_percent: sndbuf,
            sending_percent: (busy - rwnd - sndbuf).max(0.0),
            idle_percent: 100.0 - busy,
        }
    }

    /// The sum of several flows' limits: shares of their flow-time (`None` from none).
    pub fn sum<'a>(flows: impl IntoIterator<Item = &'a Limits>) -> Option<Limits> {
        let mut n = 0u32;
        let (mut w, mut b, mut r, mut s) = (0u64, 0u64, 0u64, 0u64);
        for l in flows {
            n += l.flows;
            w += l.window_us;
            b += l.busy_us;
            r += l.rwnd_limited_us;
            s += l.sndbuf_limited_us;
        }
        (n > 0).then(|| Limits::from_sums(n, w, b, r, s))
    }

    /// Each cause's share of the window, in the order the report lists them.
    pub fn shares(&self) -> [(Cause, f64); 4] {
        [
            (Cause::ReceiverWindow, self.rwnd_limited_percent),
            (Cause::SendBuffer, self.sndbuf_limited_percent),
            (Cause::Sending, self.sending_percent),
            (Cause::NothingToSend, self.idle_percent),
        ]
    }

    /// The cause that held at least [`DOMINANT_PERCENT`] of the window, if one did.
    pub fn dominant(&self) -> Option<(Cause, f64)> {
        self.shares().into_iter().filter(|(_, p)| *p >= DOMINANT_PERCENT).max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, busy: u64, rwnd: u64, sndbuf: u64) -> Chronos {
        Chronos {
            at_ns: ms * 1_000_000,
            busy_us: busy * 1000,
            rwnd_limited_us: rwnd * 1000,
            sndbuf_limited_us: sndbuf * 1000,
        }
    }

    #[test]
    fn deltas_over_the_window_not_since_the_socket_opened() {
        // 500 ms busy before the window; in it 1000 ms, 600 busy of which 400 rwnd, 100 sndbuf.
        let l = Limits::between(&at(1000, 500, 300, 0), &at(2000, 1100, 700, 100));
        assert_eq!(
            (l.window_us, l.busy_us, l.rwnd_limited_us, l.sndbuf_limited_us),
            (1_000_000, 600_000, 400_000, 100_000)
        );
        assert!((l.busy_percent - 60.0).abs() < 1e-9 && (l.rwnd_limited_percent - 40.0).abs() < 1e-9);
        assert!((l.sending_percent - 10.0).abs() < 1e-9 && (l.idle_percent - 40.0).abs() < 1e-9);
        assert_eq!(l.dominant(), None, "no cause holds half the window");
    }

    #[test]
    fn a_tick_past_the_window_keeps_the_shares_in_bounds() {
        let l = Limits::from_sums(1, 1_000_000, 1_004_000, 900_000, 0);
        assert!((l.busy_percent - 100.0).abs() < 1e-9 && l.idle_percent.abs() < 1e-9);
        let sum: f64 = l.shares().iter().map(|s| s.1).sum();
        assert!((sum - 100.0).abs() < 1e-9 && l.rwnd_limited_percent <= 100.0);
        assert_eq!(l.dominant().map(|d| d.0), Some(Cause::ReceiverWindow));
    }

    #[test]
    fn a_side_sums_flow_time() {
        let a = Limits::from_sums(1, 1_000_000, 1_000_000, 1_000_000, 0);
        let b = Limits::from_sums(1, 1_000_000, 0, 0, 0);
        let s = Limits::sum([&a, &b]).unwrap();
        assert_eq!((s.flows, s.window_us), (2, 2_000_000));
        assert!((s.rwnd_limited_percent - 50.0).abs() < 1e-9 && (s.idle_percent - 50.0).abs() < 1e-9);
        assert!(Limits::sum([]).is_none());
        // A tie at half is still one cause dominating: the first listed.
        assert!(s.dominant().is_some());
    }
}
