//! `datagram`: numbered UDP datagrams. One send is one or more datagrams of `size` bytes
//! (several with GSO), each starting with its number in its flow (8 bytes, little endian);
//! the path writes the numbers, so every workload that sends datagrams numbers them the
//! same way. Each send a flow has in flight owns a buffer: the kernel copies a datagram
//! when the send runs, so the buffer is free again at the send's CQE. A datagram with room
//! for it also carries the stamp the workload last set (bytes 8 to 16; 0 until it sets
//! one), so every datagram of a send, or of a chain stamped once, carries the same time.

use io_uring::opcode;
use io_uring::squeue::Flags;

use crate::io::path::{op, PerOp, SendEvent, SendPath};
use crate::ring::{cqe_error, slot_token, Completion, FlowFd, Ring};
use crate::with_fd;
use ringperf_core::error::Result;
use ringperf_core::report::SendReport;
use ringperf_core::spec::{UDP_SEQ_LEN, UDP_STAMPED_LEN};

/// The slot of a send that skips its success CQE: it holds no buffer past its issue.
const UNTRACKED: usize = u32::MAX as usize;

pub struct DatagramSend {
    fds: Vec<FlowFd>,
    /// Per flow, `depth` buffers of `send_len` bytes.
    bufs: Vec<u8>,
    size: usize,
    send_len: usize,
    depth: usize,
    /// Per flow: the buffer its next send takes, and its sends in flight.
    next_slot: Vec<usize>,
    in_flight: Vec<usize>,
    /// The send stamp of the datagrams pushed next (0: unstamped).
    stamp: u64,
    report: SendReport,
}

impl DatagramSend {
    /// `size`: bytes per datagram; `per_send`: datagrams per send; `depth`: sends a flow
    /// may have in flight.
    pub fn new(fds: &[FlowFd], size: usize, per_send: usize, depth: usize) -> DatagramSend {
        let send_len = size * per_send.max(1);
        let depth = depth.max(1);
        DatagramSend {
            fds: fds.to_vec(),
            bufs: vec![0u8; fds.len() * depth * send_len],
            size: size.max(1),
            send_len,
            depth,
            next_slot: vec![0; fds.len()],
            in_flight: vec![0; fds.len()],
            stamp: 0,
            report: SendReport::default(),
        }
    }
}

impl SendPath for DatagramSend {
    #[inline]
    fn fd(&self, flow: usize) -> FlowFd {
        self.fds[flow]
    }

    #[inline]
    fn available(&self, flow: usize) -> usize {
        self.depth - self.in_flight[flow]
    }

    #[inline]
    fn can_skip_success(&self) -> bool {
        true
    }

    /// Datagrams of `on.owner`'s numbering on `on.sock`, a connected UDP socket (the
    /// flow's own, or one the workload made). `first`: the number of the send's first
    /// datagram (the next ones count up from it); where a stream path takes a byte offset,
    /// a datagram path takes a datagram number.
    #[inline]
    fn push_on(&mut self, ring: &mut Ring, on: PerOp, first: u64, len: u32, flags: Flags) -> Result<u32> {
        let PerOp { sock, owner: flow } = on;
        let len = (len as usize).min(self.send_len);
        let slot = self.next_slot[flow];
        self.next_slot[flow] = (slot + 1) % self.depth;
        let start = (flow * self.depth + slot) * self.send_len;
        let buf = &mut self.bufs[start..start + len];
        for (k, d) in buf.chunks_mut(self.size).enumerate() {
            if d.len() >= UDP_SEQ_LEN as usize {
                d[..UDP_SEQ_LEN as usize].copy_from_slice(&(first + k as u64).to_le_bytes());
            }
            if d.len() >= UDP_STAMPED_LEN as usize {
                d[UDP_SEQ_LEN as usize..UDP_STAMPED_LEN as usize].copy_from_slice(&self.stamp.to_le_bytes());
            }
        }
        let tracked = !flags.contains(Flags::SKIP_SUCCESS);
        let token_slot = if tracked {
            self.in_flight[flow] += 1;
            slot
        } else {
            UNTRACKED
        };
        let ptr = buf.as_ptr();
        let e = with_fd!(sock, |t| opcode::Send::new(t, ptr, len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(slot_token(op::SEND, flow, token_slot))
            .flags(flags));
        self.report.sends += 1;
        // SAFETY: the buffer lives in this path, which its owner drops after the ring; a
        // tracked buffer is not taken again until this send's CQE.
        unsafe { ring.push(&e)? };
        Ok(len as u32)
    }

    #[inline]
    fn complete(&mut self, _ring: &mut Ring, c: &Completion) -> Result<SendEvent> {
        let flow = c.flow();
        if c.slot() != UNTRACKED {
            self.in_flight[flow] -= 1;
        }
        match c.result {
            r if r >= 0 => Ok(SendEvent::Sent { flow, bytes: r as u32 }),
            r if r == -libc::ECANCELED => Ok(SendEvent::Cancelled { flow }),
            r if r == -libc::ENOBUFS || r == -libc::EAGAIN => Ok(SendEvent::Dropped { flow, refused: false }),
            r if r == -libc::ECONNREFUSED => Ok(SendEvent::Dropped { flow, refused: true }),
            r => Err(cqe_error("a UDP send", r)),
        }
    }

    fn outstanding(&self) -> usize {
        0
    }

    #[inline]
    fn set_stamp(&mut self, ns: u64) {
        self.stamp = ns;
    }

    fn report(&self) -> SendReport {
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
    fn numbers_each_datagram_and_frees_its_buffer_at_the_cqe() {
        let rx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let tx = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        tx.connect(rx.local_addr().expect("an address")).expect("connect");
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let (size, per_send) = (16usize, 3usize);
        let mut path = DatagramSend::new(&[FlowFd::Raw(tx.as_raw_fd())], size, per_send, 2);
        assert_eq!(path.available(0), 2);
        path.set_stamp(1234);
        let sent = path.push(&mut ring, 0, 7, (size * per_send) as u32, Flags::empty()).expect("push");
        assert_eq!(sent as usize, size * per_send);
        assert_eq!(path.available(0), 1);
        // A send that posts no CQE on success holds no buffer.
        path.push(&mut ring, 0, 10, size as u32, Flags::SKIP_SUCCESS).expect("push");
        assert_eq!(path.available(0), 1);
        let numbers: Vec<u64> = path.bufs[..size * per_send]
            .chunks(size)
            .map(|d| u64::from_le_bytes(d[..8].try_into().expect("8 bytes")))
            .collect();
        assert_eq!(numbers, [7, 8, 9]);
        let stamps: Vec<u64> = path.bufs[..size * per_send]
            .chunks(size)
            .map(|d| u64::from_le_bytes(d[8..16].try_into().expect("8 bytes")))
            .collect();
        assert_eq!(stamps, [1234; 3], "every datagram of the send carries the stamp");
        let mut out = Vec::with_capacity(ring.cq_entries());
        while out.is_empty() {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
        }
        assert_eq!(out.len(), 1);
        let event = path.complete(&mut ring, &out[0]).expect("a sent datagram");
        assert_eq!(event, SendEvent::Sent { flow: 0, bytes: (size * per_send) as u32 });
        assert_eq!(path.available(0), 2);
        let mut got = [0u8; 64];
        let n = rx.recv(&mut got).expect("the first datagram");
        assert_eq!(n, size * per_send);
        assert_eq!(u64::from_le_bytes(got[..8].try_into().expect("8 bytes")), 7);
    }
}
