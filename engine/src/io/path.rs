//! What a send or receive path is to a workload: the two traits, their events and op
//! tags, the cancel they share and
//! the check that a standing receive is not linked. The paths themselves are `send`'s and `recv`'s.

use io_uring::squeue::Flags;

use crate::ring::{Completion, FlowFd, Ring};
use crate::verify::Verifier;
use ringperf_core::error::{Error, Result};

/// Operation kinds in the low byte of user_data (see [`crate::ring::token`]).
pub mod op {
    /// The end of the measurement window.
    pub const DEADLINE: u8 = 1;
    /// A safety net for the side that waits for its peer: fires if the peer never finishes.
    pub const GUARD: u8 = 2;
    /// A send's result (also a zero-copy notification, told apart by its CQE flags).
    pub const SEND: u8 = 3;
    pub const RECV: u8 = 4;
    /// The file -> pipe half of a splice send.
    pub const SPLICE_IN: u8 = 5;
    /// A repeating interval tick (multishot Timeout).
    pub const INTERVAL: u8 = 6;
    /// A pacing refill tick (multishot Timeout).
    pub const PACE: u8 = 7;
    /// crr: a socket created for one cycle.
    pub const SOCKET: u8 = 8;
    /// crr: a connect (its CQE only appears on failure).
    pub const CONNECT: u8 = 9;
    /// crr: a close; the last CQE of a cycle.
    pub const CLOSE: u8 = 10;
    /// crr: the multishot accept on the session listener.
    pub const ACCEPT: u8 = 11;
    /// crr server: the receive that waits for the client's close.
    pub const PEER_CLOSE: u8 = 12;
    /// The poll on a side's stop signal (an eventfd).
    pub const STOP: u8 = 13;
    /// An AsyncCancel's own completion.
    pub const CANCEL: u8 = 14;
    /// udp-stream: a receiver's drain tick after its deadline.
    pub const DRAIN: u8 = 15;
    /// udp-rr: a transaction's timeout.
    pub const TX_TIMEOUT: u8 = 16;
    /// The stop watch: the control connection or the user's Ctrl-C pipe became readable.
    pub const ABORT: u8 = 17;
    /// crr server: the receive of a connection's header when the receive engine discards
    /// what it receives (trunc).
    pub const CRR_HEADER: u8 = 18;
    /// crr server: the close linked behind a response when the server closes first.
    pub const SERVER_CLOSE: u8 = 19;
    /// Open loop: the wakeup for the next due request (a one-shot absolute Timeout), told
    /// apart from a paced run's refill ticks.
    pub const DUE: u8 = 20;
}

/// A socket the workload made for one operation (crr's per cycle or per connection), and
/// the buffer owner whose memory serves it (see the paths' `per_op` constructors).
#[derive(Clone, Copy, Debug)]
pub struct PerOp {
    pub sock: FlowFd,
    pub owner: usize,
}

/// What a send-side completion meant for the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendEvent {
    /// A send finished: `bytes` left the application.
    Sent { flow: usize, bytes: u32 },
    /// A send was cancelled because an earlier SQE of its chain ended short (EOF).
    Cancelled { flow: usize },
    /// A linked chain of sends ended with one CQE (its other steps skipped theirs):
    /// `sent` sends moved `bytes`, and `cancelled` sends never ran.
    Chain { flow: usize, sent: u32, bytes: u64, cancelled: u32 },
    /// A buffer came back from the kernel: the flow may be able to send again.
    Released { flow: usize },
    /// A datagram path: the kernel did not send (`refused`: the peer's port answered ICMP
    /// port unreachable to an earlier datagram; otherwise the local queue was full). The
    /// datagrams' numbers are gone: the receiver counts them as lost.
    Dropped { flow: usize, refused: bool },
    /// An intermediate step; nothing for the workload to do.
    Nothing,
}

/// Puts payload on the sockets of one worker.
pub trait SendPath {
    /// The socket of `flow`, one of those the path was built with.
    fn fd(&self, flow: usize) -> FlowFd;
    /// How many more sends `flow` can start now (free buffers; idle pipe).
    fn available(&self, flow: usize) -> usize;
    /// Whether a successful send may skip its CQE (IOSQE_CQE_SKIP_SUCCESS).
    fn can_skip_success(&self) -> bool;
    /// Completions a linked chain of `sends` sends surely posts (one per send unless the
    /// path skips them).
    fn chain_cqes(&self, sends: usize) -> usize {
        sends
    }
    /// Whether a send can be linked to a receive in one request/response chain.
    fn can_chain(&self) -> bool {
        true
    }
    /// Queues one send of up to `len` bytes of `flow`'s stream starting at `offset`;
    /// `flags` go on the last SQE of the send. Returns the bytes it will send.
    #[inline]
    fn push(&mut self, ring: &mut Ring, flow: usize, offset: u64, len: u32, flags: Flags) -> Result<u32> {
        self.push_on(ring, PerOp { sock: self.fd(flow), owner: flow }, offset, len, flags)
    }
    /// Queues one send on `on.sock` from the message of buffer owner `on.owner`: up to
    /// `len` bytes from `offset`; `flags` go on the last SQE. Its completions carry the
    /// owner as their flow. Returns the bytes it will send.
    fn push_on(&mut self, ring: &mut Ring, on: PerOp, offset: u64, len: u32, flags: Flags) -> Result<u32>;
    /// Handles a completion with op SEND or SPLICE_IN.
    fn complete(&mut self, ring: &mut Ring, c: &Completion) -> Result<SendEvent>;
    /// Buffers the kernel still holds (zero-copy notifications not yet arrived).
    fn outstanding(&self) -> usize;
    /// The workload wanted to start more sends on `flow` than [`SendPath::available`]
    /// allowed: a path whose buffers wait for the kernel counts it, so a run held back by
    /// ringperf's own buffers says so.
    #[inline]
    fn short_of_buffers(&mut self, _flow: usize) {}
    /// The send stamp (CLOCK_MONOTONIC ns on the client's clock) the datagrams of the next
    /// sends carry: a path that does not number datagrams ignores it.
    #[inline]
    fn set_stamp(&mut self, _ns: u64) {}
    fn report(&self) -> ringperf_core::report::SendReport;
}

/// What a receive completion meant for the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvEvent {
    Data {
        flow: usize,
        bytes: u32,
    },
    Eof {
        flow: usize,
    },
    /// A receive linked behind one that came up short never ran.
    Cancelled {
        flow: usize,
    },
    /// Consumed by the path (ran out of buffers, re-armed); nothing for the workload.
    Nothing,
}

/// Takes payload off the sockets of one worker.
pub trait RecvPath {
    /// The socket of `flow`, one of those the path was built with.
    fn fd(&self, flow: usize) -> FlowFd;
    /// True if one arm keeps delivering until EOF (multishot); false if every receive is
    /// armed by the workload.
    fn multishot(&self) -> bool;
    /// Arms a receive of up to `len` bytes on `flow` (with `wait_all`: exactly `len`).
    #[inline]
    fn arm(&mut self, ring: &mut Ring, flow: usize, len: u32, wait_all: bool, flags: Flags) -> Result<()> {
        self.arm_on(ring, PerOp { sock: self.fd(flow), owner: flow }, len, wait_all, flags)
    }
    /// Arms a receive on `on.sock` for buffer owner `on.owner`; otherwise as
    /// [`RecvPath::arm`]. Its completions carry `token(op::RECV, owner)`. A multishot path
    /// keeps it armed on the socket until EOF, an error, or [`RecvPath::cancel_on`].
    fn arm_on(&mut self, ring: &mut Ring, on: PerOp, len: u32, wait_all: bool, flags: Flags) -> Result<()>;
    /// Ends `owner`'s receive armed by [`RecvPath::arm_on`]: it is never armed again, and
    /// cancelled if still in flight (it then completes with -ECANCELED). The cancel's own
    /// CQE carries `token(op::CANCEL, owner)` and is skipped on success.
    fn cancel_on(&mut self, ring: &mut Ring, owner: usize) -> Result<()>;
    /// Whether a receive of `owner` (armed by [`RecvPath::arm_on`]) is still in flight:
    /// after a completion, false once no more will come for it.
    fn live_on(&self, owner: usize) -> bool;
    /// Whether [`RecvPath::payload`] gives the bytes received (false: the kernel discards
    /// them, or every receive lands in one shared buffer).
    fn reads_payload(&self) -> bool;
    /// Handles a completion with op RECV; payload goes through `verify`.
    fn complete(&mut self, ring: &mut Ring, c: &Completion, verify: &mut Verifier) -> Result<RecvEvent>;
    /// The bytes a Data completion `c` delivered (for a bundle, those of its first
    /// buffer), for a workload that reads what it receives (a datagram's number, crr's
    /// header); valid until [`RecvPath::after_batch`]. Empty for a path that does not keep
    /// them.
    fn payload(&self, _c: &Completion) -> &[u8] {
        &[]
    }
    /// Called once after each batch of completions (recycles provided buffers).
    fn after_batch(&mut self) {}
    /// Receives a stream flow may keep linked in flight.
    fn chain(&self) -> usize {
        1
    }
    /// The chain length the stream receiver used, for the report.
    fn note_chain(&mut self, _depth: usize) {}
    fn report(&self) -> ringperf_core::report::RecvReport;
}

/// Queues a cancel of every op tagged `target`, its own CQE (tagged `token(op::CANCEL,
/// owner)`) skipped on success: what [`RecvPath::cancel_on`] sends.
pub(crate) fn push_cancel(ring: &mut Ring, target: u64, owner: usize) -> Result<()> {
    let e = io_uring::opcode::AsyncCancel2::new(io_uring::types::CancelBuilder::user_data(target).all())
        .build()
        .user_data(crate::ring::token(op::CANCEL, owner))
        .flags(Flags::SKIP_SUCCESS);
    // SAFETY: AsyncCancel points at no memory.
    unsafe { ring.push(&e) }
}

/// A standing (multishot) receive is never linked: a workload that asks for one has a bug.
pub(crate) fn standing_unlinked(flags: Flags) -> Result<()> {
    if flags.contains(Flags::IO_LINK) {
        return Err(Error::Protocol(
            "a multishot receive cannot be linked: this is a bug in ringperf".into(),
        ));
    }
    Ok(())
}

/// The error for a classic engine asked to build an io_uring path.
pub(crate) fn not_a_ring_engine(what: &str, name: &str) -> Error {
    Error::Protocol(format!("the {what} engine {name} has no ring path: this is a bug in ringperf"))
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    use super::*;
    use crate::io::{AnyRecv, AnySend};
    use ringperf_core::spec::{RecvEngine, RingTuning, SendEngine};

    /// A connected loopback TCP pair: (client, server).
    fn tcp_pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
        let c = TcpStream::connect(l.local_addr().expect("an address")).expect("connect");
        let (s, _) = l.accept().expect("accept");
        (c, s)
    }

    /// Runs the ring until `f` has said yes to `want` completions.
    fn reap_until(ring: &mut Ring, mut want: usize, mut f: impl FnMut(&mut Ring, &Completion) -> bool) {
        let mut out = Vec::with_capacity(ring.cq_entries());
        while want > 0 {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
            for c in &out {
                if f(ring, c) {
                    want = want.saturating_sub(1);
                }
            }
        }
    }

    /// Every send engine's per-operation path sends its owner's message (header, then the
    /// pattern) on the socket it is given, and every receive engine's takes it off another
    /// socket for the owner it was armed for; a standing receive ends when cancelled and is
    /// not armed again; a zero-copy buffer comes back with its notification.
    #[test]
    fn every_engine_moves_an_owners_message_on_a_socket_made_per_operation() {
        let headers = [[7u8; 4], [9u8; 4]];
        let body = 5000usize;
        let len = (4 + body) as u32;
        for send_engine in [SendEngine::Copy, SendEngine::Zc, SendEngine::ZcMsg, SendEngine::Splice] {
            for recv_engine in [RecvEngine::Recv, RecvEngine::Multishot, RecvEngine::Bundle] {
                let what = format!("{send_engine:?} -> {recv_engine:?}");
                let (a, b) = tcp_pair();
                let mut ring = Ring::new(&RingTuning::default(), 64).expect("a ring");
                let mut send =
                    AnySend::per_op(send_engine, &mut ring, 2, &headers, body).expect("a send path");
                let mut verify = Verifier::new(true, 3);
                // The header is owner 1's; the pattern starts after it.
                verify.restart(2, 4);
                let tuning = RingTuning { buf_size: 4096, buf_count: 16, ..RingTuning::default() };
                let mut recv =
                    AnyRecv::per_op(recv_engine, &mut ring, 3, len as usize, true, &tuning, &mut verify)
                        .expect("a receive path");
                assert!(recv.reads_payload() && send.available(1) > 0, "{what}");
                let a_sock = PerOp { sock: FlowFd::Raw(a.as_raw_fd()), owner: 1 };
                assert_eq!(send.push_on(&mut ring, a_sock, 0, len, Flags::empty()).expect("push"), len);
                let multishot = recv.multishot();
                let b_sock = PerOp { sock: FlowFd::Raw(b.as_raw_fd()), owner: 2 };
                recv.arm_on(&mut ring, b_sock, len, !multishot, Flags::empty()).expect("arm");
                assert!(recv.live_on(2), "{what}");
                let (mut sent, mut got, mut head) = (0u64, 0u32, Vec::new());
                reap_until(&mut ring, 2, |ring, c| match c.op() {
                    op::SEND | op::SPLICE_IN => match send.complete(ring, c).expect("a send") {
                        SendEvent::Sent { flow: 1, bytes } => {
                            sent += u64::from(bytes);
                            true
                        }
                        SendEvent::Chain { flow: 1, bytes, cancelled: 0, .. } => {
                            sent += bytes;
                            true
                        }
                        SendEvent::Nothing | SendEvent::Released { flow: 1 } => false,
                        other => panic!("{what}: {other:?}"),
                    },
                    op::RECV => match recv.complete(ring, c, &mut verify).expect("a receive") {
                        RecvEvent::Data { flow: 2, bytes } => {
                            if head.is_empty() {
                                head = recv.payload(c)[..4].to_vec();
                            }
                            recv.after_batch();
                            got += bytes;
                            got == len
                        }
                        RecvEvent::Nothing => false,
                        other => panic!("{what}: {other:?}"),
                    },
                    other => panic!("{what}: op {other}"),
                });
                assert_eq!((sent, got), (u64::from(len), len), "{what}");
                assert_eq!(head, [9u8; 4], "{what}: owner 1's header, not owner 0's");
                let v = verify.report().expect("a verify report");
                assert_eq!((v.bytes_checked, v.mismatches), (body as u64, 0), "{what}: the pattern after it");
                if multishot {
                    recv.cancel_on(&mut ring, 2).expect("cancel");
                    reap_until(&mut ring, 1, |ring, c| {
                        c.op() == op::RECV
                            && matches!(
                                recv.complete(ring, c, &mut verify),
                                Ok(RecvEvent::Cancelled { flow: 2 })
                            )
                    });
                }
                assert!(!recv.live_on(2), "{what}: the receive has ended");
                while send.outstanding() > 0 {
                    reap_until(&mut ring, 1, |ring, c| {
                        matches!(send.complete(ring, c), Ok(SendEvent::Released { flow: 1 }))
                    });
                }
                assert!(send.available(1) > 0, "{what}");
            }
        }
    }
}
