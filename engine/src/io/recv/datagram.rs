//! `datagram`: a standing multishot receive per UDP flow into a provided-buffer ring, one
//! CQE per datagram (several datagrams back to back with GRO). The workload reads each
//! completion's bytes through [`RecvPath::payload`] (a UDP receiver tracks every
//! datagram's number, udp-rr matches a response to its request), and decides itself when
//! a receive that ended is armed again: a UDP side ends by cancelling its receives, not at
//! EOF. A datagram longer than a buffer is cut to it.

use io_uring::squeue::Flags;
use io_uring::{cqueue, opcode};

use crate::buf::BufRing;
use crate::io::path::{op, push_cancel, standing_unlinked, PerOp, RecvEvent, RecvPath};
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::verify::Verifier;
use crate::with_fd;
use ringperf_core::error::{Error, Result};
use ringperf_core::report::RecvReport;
use ringperf_core::spec::RecvEngine;

/// The buffer group of a datagram receiver's ring.
const BGID: u16 = 1;

pub struct DatagramRecv {
    fds: Vec<FlowFd>,
    /// Per flow: a receive is armed and its last CQE has not come.
    live: Vec<bool>,
    /// The provided-buffer ring shared by the worker's flows.
    bufs: BufRing,
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
            bufs,
            report: RecvReport { engine: RecvEngine::Multishot, landing_bytes, ..RecvReport::default() },
        })
    }
}

impl RecvPath for DatagramRecv {
    fn fd(&self, flow: usize) -> FlowFd {
        self.fds[flow]
    }

    /// A standing receive on `on.sock` (a connected UDP socket: the flow's own, or one the
    /// workload made) into the shared ring.
    fn arm_on(&mut self, ring: &mut Ring, on: PerOp, _: u32, _: bool, flags: Flags) -> Result<()> {
        let PerOp { sock, owner: flow } = on;
        standing_unlinked(flags)?;
        let bgid = self.bufs.bgid();
        let e = with_fd!(sock, |t| opcode::RecvMulti::new(t, bgid).build().user_data(token(op::RECV, flow)));
        self.report.arms += 1;
        self.live[flow] = true;
        // SAFETY: the buffer ring lives in this path, which its owner drops after the ring.
        unsafe { ring.push(&e) }
    }

    fn multishot(&self) -> bool {
        true
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
    /// report counts, or an ICMP error of an earlier send).
    #[inline]
    fn complete(&mut self, _ring: &mut Ring, c: &Completion, _verify: &mut Verifier) -> Result<RecvEvent> {
        let flow = c.flow();
        if !c.more() {
            self.live[flow] = false;
        }
        match c.result {
            r if r > 0 => {
                let Some(bid) = cqueue::buffer_select(c.flags) else {
                    return Err(Error::Protocol("a multishot UDP receive came without a buffer".into()));
                };
                // Staged only: the kernel cannot fill it again before `after_batch`
                // publishes it, so `payload` still reads this datagram until then.
                self.bufs.recycle(bid);
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
        match cqueue::buffer_select(c.flags) {
            Some(bid) => self.bufs.data(bid, c.result as usize),
            None => &[],
        }
    }

    #[inline]
    fn after_batch(&mut self) {
        self.bufs.publish();
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
    use ringperf_core::spec::RingTuning;

    #[test]
    fn hands_each_datagram_to_the_workload() {
        let rx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let tx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let to = rx.local_addr().expect("an address");
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let mut path = DatagramRecv::new(&mut ring, &[FlowFd::Raw(rx.as_raw_fd())], 4, 64).expect("a path");
        assert!(path.arm(&mut ring, 0, 0, false, Flags::IO_LINK).is_err());
        path.arm(&mut ring, 0, 0, false, Flags::empty()).expect("arm");
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
}
