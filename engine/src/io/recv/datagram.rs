//! `datagram`: a standing multishot receive per UDP flow into a provided-buffer ring, one
//! CQE per datagram (several datagrams back to back with GRO). The workload reads each
//! completion's bytes through [`RecvPath::payload`] (a UDP receiver tracks every
//! datagram's number), and decides itself when a receive that ended is armed again: a
//! UDP side ends by cancelling its receives, not at EOF.
//!
//! In its one-shot mode ([`DatagramRecv::one_shot`]) every arm is one plain receive of one
//! datagram into the flow's own buffer, which a request/response side needs: the arm can
//! be linked (to a LinkTimeout), and the datagram stays readable through `payload` until
//! that flow is armed again.

use io_uring::{cqueue, opcode, squeue};

use crate::buf::{BufRing, Mapping, CACHE_LINE};
use crate::error::{Error, Result};
use crate::io::{op, push_cancel, RecvEvent, RecvPath};
use crate::report::RecvReport;
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::spec::RecvEngine;
use crate::verify::Verifier;
use crate::with_fd;

/// The buffer group of a datagram receiver's ring.
const BGID: u16 = 1;

/// Where a datagram lands.
enum Landing {
    /// Multishot: a provided-buffer ring shared by the worker's flows.
    Provided {
        bufs: BufRing,
        /// Buffers handed back since the last publish.
        staged: bool,
    },
    /// One-shot: one buffer of `stride` bytes per flow, `len` of them received into.
    PerFlow { bufs: Mapping, stride: usize, len: u32 },
}

pub struct DatagramRecv {
    fds: Vec<FlowFd>,
    /// Per flow: a receive is armed and its last CQE has not come.
    live: Vec<bool>,
    landing: Landing,
    report: RecvReport,
}

impl DatagramRecv {
    /// `count` buffers of `size` bytes (the largest datagram, or a GRO batch).
    pub fn new(ring: &mut Ring, fds: &[FlowFd], count: u16, size: usize) -> Result<DatagramRecv> {
        let bufs = BufRing::new(ring, count, size, BGID, true)?;
        let landing_bytes = bufs.landing_bytes() as u64;
        Ok(DatagramRecv {
            fds: fds.to_vec(),
            live: vec![false; fds.len()],
            landing: Landing::Provided { bufs, staged: false },
            report: RecvReport { engine: RecvEngine::Multishot, landing_bytes, ..RecvReport::default() },
        })
    }

    /// One-shot receives of datagrams up to `size` bytes (longer ones are truncated), each
    /// flow into its own buffer.
    pub fn one_shot(fds: &[FlowFd], size: usize) -> Result<DatagramRecv> {
        // A buffer per flow starts on a cache line, as the stream copy path's do.
        let stride = size.max(1).next_multiple_of(CACHE_LINE);
        let bufs = Mapping::new(stride * fds.len().max(1))?;
        let landing_bytes = bufs.len() as u64;
        Ok(DatagramRecv {
            fds: fds.to_vec(),
            live: vec![false; fds.len()],
            landing: Landing::PerFlow { bufs, stride, len: size as u32 },
            report: RecvReport { engine: RecvEngine::Recv, landing_bytes, ..RecvReport::default() },
        })
    }
}

impl RecvPath for DatagramRecv {
    fn multishot(&self) -> bool {
        matches!(self.landing, Landing::Provided { .. })
    }

    fn arm(
        &mut self,
        ring: &mut Ring,
        flow: usize,
        len: u32,
        wait_all: bool,
        flags: squeue::Flags,
    ) -> Result<()> {
        self.arm_on(ring, self.fds[flow], flow, len, wait_all, flags)
    }

    /// A datagram receive on `sock` (a connected UDP socket the workload made), landing
    /// in `owner`'s buffer (one-shot) or the shared ring (multishot).
    fn arm_on(
        &mut self,
        ring: &mut Ring,
        sock: FlowFd,
        flow: usize,
        _len: u32,
        _wait_all: bool,
        flags: squeue::Flags,
    ) -> Result<()> {
        let e = match &mut self.landing {
            Landing::Provided { bufs, .. } => {
                if flags.contains(squeue::Flags::IO_LINK) {
                    return Err(Error::Protocol(
                        "a multishot receive cannot be linked: this is a bug in ringperf".into(),
                    ));
                }
                let bgid = bufs.bgid();
                with_fd!(sock, |t| opcode::RecvMulti::new(t, bgid).build().user_data(token(op::RECV, flow)))
            }
            Landing::PerFlow { bufs, stride, len } => {
                // SAFETY: flow < the flows the mapping was sized for, `stride` bytes each.
                let ptr = unsafe { bufs.as_ptr().add(flow * *stride) };
                with_fd!(sock, |t| opcode::Recv::new(t, ptr, *len)
                    .build()
                    .user_data(token(op::RECV, flow))
                    .flags(flags))
            }
        };
        self.report.arms += 1;
        self.live[flow] = true;
        // SAFETY: the buffer ring or the flow's buffer lives in this path, which its owner
        // drops after the ring; a flow's buffer is armed once at a time.
        unsafe { ring.push(&e) }
    }

    fn cancel_on(&mut self, ring: &mut Ring, owner: usize) -> Result<()> {
        push_cancel(ring, token(op::RECV, owner), owner)
    }

    #[inline]
    fn live_on(&self, owner: usize) -> bool {
        self.live[owner]
    }

    fn reads_payload(&self) -> bool {
        true
    }

    /// Data (also an empty datagram: `bytes` 0), Cancelled (the workload cancelled the
    /// receive, or its linked timeout fired), or Nothing (the buffers ran out, which the
    /// report counts, or an ICMP error of an earlier send). A one-shot receive has ended
    /// whatever came back.
    #[inline]
    fn complete(&mut self, _ring: &mut Ring, c: &Completion, _verify: &mut Verifier) -> Result<RecvEvent> {
        let flow = c.flow();
        if !c.more() {
            self.live[flow] = false;
        }
        match c.result {
            r if r > 0 => {
                if let Landing::Provided { bufs, staged } = &mut self.landing {
                    let Some(bid) = cqueue::buffer_select(c.flags) else {
                        return Err(Error::Protocol("a multishot UDP receive came without a buffer".into()));
                    };
                    // Staged only: the kernel cannot fill it again before `after_batch`
                    // publishes it, so `payload` still reads this datagram until then.
                    bufs.recycle(bid);
                    *staged = true;
                }
                self.report.data_cqes += 1;
                Ok(RecvEvent::Data { flow, bytes: r as u32 })
            }
            0 => Ok(RecvEvent::Data { flow, bytes: 0 }),
            r if r == -libc::ECANCELED => Ok(RecvEvent::Cancelled { flow }),
            // Every provided buffer was full: the kernel drops what comes until the ring
            // is refilled (the sequence numbers show it).
            r if r == -libc::ENOBUFS => {
                self.report.enobufs += 1;
                Ok(RecvEvent::Nothing)
            }
            r if r == -libc::ECONNREFUSED => Ok(RecvEvent::Nothing),
            r => Err(cqe_error("a UDP receive", r)),
        }
    }

    #[inline]
    fn payload(&self, c: &Completion) -> &[u8] {
        if c.result <= 0 {
            return &[];
        }
        match &self.landing {
            Landing::Provided { bufs, .. } => match cqueue::buffer_select(c.flags) {
                Some(bid) => bufs.data(bid, c.result as usize),
                None => &[],
            },
            Landing::PerFlow { bufs, stride, len } => {
                let n = (c.result as u32).min(*len) as usize;
                bufs.slice(c.flow() * *stride, n)
            }
        }
    }

    #[inline]
    fn after_batch(&mut self) {
        if let Landing::Provided { bufs, staged: staged @ true } = &mut self.landing {
            bufs.publish();
            *staged = false;
        }
    }

    fn report(&self) -> RecvReport {
        self.report.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    use super::*;
    use crate::spec::RingTuning;

    #[test]
    fn hands_each_datagram_to_the_workload() {
        let rx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let tx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let to = rx.local_addr().expect("an address");
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let mut path = DatagramRecv::new(&mut ring, &[FlowFd::Raw(rx.as_raw_fd())], 4, 64).expect("a path");
        assert!(path.arm(&mut ring, 0, 0, false, squeue::Flags::IO_LINK).is_err());
        path.arm(&mut ring, 0, 0, false, squeue::Flags::empty()).expect("arm");
        tx.send_to(b"first datagram", to).expect("send");
        tx.send_to(b"second", to).expect("send");
        let mut verify = Verifier::new(false, 0);
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut out = Vec::with_capacity(ring.cq_entries());
        while got.len() < 2 {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
            for c in &out {
                match path.complete(&mut ring, c, &mut verify).expect("a datagram") {
                    RecvEvent::Data { flow: 0, bytes } => {
                        assert_eq!(path.payload(c).len(), bytes as usize);
                        got.push(path.payload(c).to_vec());
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            path.after_batch();
        }
        assert_eq!(got, [b"first datagram".to_vec(), b"second".to_vec()]);
        assert_eq!(path.report().data_cqes, 2);
    }

    #[test]
    fn one_shot_keeps_each_flows_datagram_and_links_to_a_timeout() {
        let rx: Vec<UdpSocket> =
            (0..2).map(|_| UdpSocket::bind("127.0.0.1:0").expect("a loopback socket")).collect();
        let tx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let fds: Vec<FlowFd> = rx.iter().map(|s| FlowFd::Raw(s.as_raw_fd())).collect();
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let mut path = DatagramRecv::one_shot(&fds, 8).expect("a path");
        assert!(!path.multishot());
        let mut verify = Verifier::new(false, 0);
        let mut out = Vec::with_capacity(ring.cq_entries());

        // Flow 1 waits behind a linked timeout that fires: its receive comes back cancelled.
        path.arm(&mut ring, 1, 8, false, squeue::Flags::IO_LINK).expect("arm");
        let soon = io_uring::types::Timespec::new().nsec(1_000_000);
        let timeout = opcode::LinkTimeout::new(&soon).build().user_data(token(op::TX_TIMEOUT, 1));
        // SAFETY: `soon` outlives the wait below, which reaps the timeout's CQE.
        unsafe { ring.push(&timeout).expect("push") };
        let mut cancelled = false;
        let mut timed_out = false;
        while !(cancelled && timed_out) {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
            for c in &out {
                if c.op() == op::TX_TIMEOUT {
                    timed_out = true;
                } else {
                    let e = path.complete(&mut ring, c, &mut verify).expect("a completion");
                    assert_eq!(e, RecvEvent::Cancelled { flow: 1 });
                    cancelled = true;
                }
            }
        }

        // Both flows armed; each datagram lands in its own flow's buffer, cut to 8 bytes.
        path.arm(&mut ring, 0, 8, false, squeue::Flags::empty()).expect("arm");
        path.arm(&mut ring, 1, 8, false, squeue::Flags::empty()).expect("arm");
        tx.send_to(b"flow zero!", rx[0].local_addr().expect("an address")).expect("send");
        tx.send_to(b"one", rx[1].local_addr().expect("an address")).expect("send");
        let mut got = [Vec::new(), Vec::new()];
        while got.iter().any(Vec::is_empty) {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
            for c in &out {
                match path.complete(&mut ring, c, &mut verify).expect("a datagram") {
                    RecvEvent::Data { flow, bytes } => {
                        assert_eq!(path.payload(c).len(), bytes as usize);
                        got[flow] = path.payload(c).to_vec();
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        assert_eq!(got, [b"flow zer".to_vec(), b"one".to_vec()]);
        assert_eq!(path.report().arms, 3);
        assert_eq!(path.report().data_cqes, 2);
    }
}
