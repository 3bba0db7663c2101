//! Bulk transfer over system calls: the sender sends `-m` bytes per call until the
//! deadline, then half-closes; the receiver receives `-M` bytes per call until every flow
//! reaches EOF (netperf's TCP_STREAM loop; over epoll with several flows, neper's).

use std::os::fd::RawFd;

use crate::classic::context::{Ctx, FlowLoop, Loop, Pattern};
use crate::classic::msgzc::MsgZeroCopy;
use crate::classic::sys::{self, Io};
use crate::classic::zcrecv::{wait_readable, ZeroCopyRecv};
use crate::classic::{ABORT, DEADLINE, GUARD};
use crate::verify::Verifier;
use crate::workload::driver::RoleReport;
use crate::workload::ending::{check_not_early, peer_not_reading, peer_stuck, shutdown_write};
use ringperf_core::error::{Error, Result};
use ringperf_core::report::Ending;
use ringperf_core::report::{RecvReport, SendReport};
use ringperf_core::spec::{RecvEngine, SendEngine, TestSpec};

/// Calls one ready flow gets before the loop serves the others: a flow that can always
/// send (or always has data) does not starve the rest.
const CALLS_PER_TURN: usize = 16;

pub struct Sender {
    pattern: Pattern,
    size: usize,
    offsets: Vec<u64>,
    /// msg-zerocopy: the sends are MSG_ZEROCOPY, and this accounts their completions.
    zero_copy: Option<MsgZeroCopy>,
    report: SendReport,
}

impl Sender {
    pub fn new(spec: &TestSpec, fds: &[RawFd], engine: SendEngine) -> Result<Sender> {
        let size = spec.send_size as usize;
        let zero_copy = (engine == SendEngine::MsgZerocopy).then(|| MsgZeroCopy::new(fds)).transpose()?;
        Ok(Sender {
            pattern: Pattern::new(size),
            size,
            offsets: vec![0; fds.len()],
            zero_copy,
            report: SendReport::default(),
        })
    }

    /// One send on flow `f`; `Ok(false)` when the socket has no room.
    #[inline]
    fn send_once(&mut self, cx: &mut Ctx, f: usize) -> Result<bool> {
        cx.calls.sends += 1;
        let flags = if self.zero_copy.is_some() { MsgZeroCopy::FLAGS } else { 0 };
        match sys::send_flags(cx.fds[f], self.pattern.at(self.offsets[f], self.size), flags) {
            Io::Done(n) => {
                self.offsets[f] += n as u64;
                self.report.sends += 1;
                cx.counters[f].bytes_sent += n as u64;
                cx.charge(n);
                if let Some(zc) = &mut self.zero_copy {
                    zc.sent(f, n);
                    zc.between_sends(cx, f)?;
                }
                Ok(true)
            }
            Io::Again | Io::Eof => Ok(false),
            // Out of option memory for zero-copy sends: wait for completions, then go on.
            Io::Failed(e) if e.raw_os_error() == Some(libc::ENOBUFS) && self.zero_copy.is_some() => {
                if let Some(zc) = &mut self.zero_copy {
                    zc.short_of_memory(cx, f)?;
                }
                Ok(true)
            }
            Io::Failed(e) => Err(Error::Peer(format!(
                "a send on a data connection failed: {e}: did the receiver stop or close it?"
            ))),
        }
    }
}

impl FlowLoop for Sender {
    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<()> {
        while cx.events() & (DEADLINE | ABORT | GUARD) == 0 {
            if cx.pace(DEADLINE | ABORT | GUARD) {
                self.send_once(cx, 0)?;
            }
        }
        Ok(())
    }

    fn run_epoll(&mut self, cx: &mut Ctx) -> Result<()> {
        let mut ep = cx.flows_epoll(libc::EPOLLOUT)?;
        while cx.events() & (DEADLINE | ABORT | GUARD) == 0 {
            let n = cx.wait(&mut ep, -1)?;
            for i in 0..n {
                let Some((token, ready)) = cx.event(&ep, i) else {
                    continue;
                };
                // EPOLLERR: zero-copy completions are waiting in the error queue.
                if let Some(zc) = self.zero_copy.as_mut().filter(|_| ready & libc::EPOLLERR as u32 != 0) {
                    zc.read(cx, token)?;
                }
                for _ in 0..CALLS_PER_TURN {
                    if !cx.pace(DEADLINE | ABORT | GUARD) || !self.send_once(cx, token)? {
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Loop for Sender {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        if let Some(end) = self.run_flows(cx, peer_not_reading)? {
            return Ok(end);
        }
        if let Some(zc) = &mut self.zero_copy {
            // Every send's completion, before the stream ends.
            zc.wait_all(cx)?;
            if let Some(end) = cx.stopped(peer_not_reading) {
                return end;
            }
        }
        for &fd in cx.fds {
            shutdown_write(fd);
        }
        Ok(Ending::Completed)
    }

    fn report(&self) -> RoleReport {
        let mut send = self.report.clone();
        send.zero_copy = self.zero_copy.as_ref().map(MsgZeroCopy::report);
        RoleReport { send: Some(send), ..RoleReport::default() }
    }
}

pub struct Receiver {
    buf: Vec<u8>,
    verify: Verifier,
    open: Vec<bool>,
    /// zerocopy-receive: each flow's mapped window and the accounting.
    zero_copy: Option<ZeroCopyRecv>,
    report: RecvReport,
}

impl Receiver {
    pub fn new(spec: &TestSpec, fds: &[RawFd], engine: RecvEngine) -> Result<Receiver> {
        let size = spec.recv_size as usize;
        let zero_copy =
            (engine == RecvEngine::ZerocopyReceive).then(|| ZeroCopyRecv::new(fds, size)).transpose()?;
        Ok(Receiver {
            buf: vec![0; size],
            verify: Verifier::new(spec.verify, fds.len()),
            open: vec![true; fds.len()],
            zero_copy,
            report: RecvReport { engine, landing_bytes: size as u64, ..RecvReport::default() },
        })
    }

    /// One zero-copy receive on flow `f` (waiting for data first when `blocking`), and a
    /// recv(2) for what it could neither map nor copy, or to tell EOF from nothing queued.
    fn zero_copy_once(&mut self, cx: &mut Ctx, f: usize, blocking: bool) -> Result<bool> {
        let Receiver { buf, verify, zero_copy: Some(zc), report, .. } = self else { return Ok(false) };
        if blocking {
            wait_readable(cx, cx.fds[f]);
        }
        report.arms += 1;
        let got = zc.receive(cx, f)?;
        let (mapped, copied) = zc.landed(f, got);
        let n = mapped.len() + copied.len();
        if n > 0 {
            report.data_cqes += 1;
            verify.check(f, mapped);
            verify.check(f, copied);
            cx.counters[f].bytes_received += n as u64;
        }
        if n > 0 && got.skip == 0 {
            return Ok(true);
        }
        let want = if got.skip > 0 { got.skip.min(buf.len()) } else { buf.len() };
        cx.calls.recvs += 1;
        match sys::recv(cx.fds[f], &mut buf[..want]) {
            Io::Done(m) => {
                verify.check(f, &buf[..m]);
                cx.counters[f].bytes_received += m as u64;
                zc.read_by_recv(m);
                Ok(true)
            }
            Io::Again => Ok(n > 0),
            Io::Eof => {
                self.ended(cx, f)?;
                Ok(false)
            }
            Io::Failed(e) => {
                Err(Error::Peer(format!("a receive on a data connection failed: {e}: did the sender stop?")))
            }
        }
    }

    /// Flow `f` reached EOF: too early is the peer's failure, unless the run was stopped.
    fn ended(&mut self, cx: &mut Ctx, f: usize) -> Result<()> {
        if cx.stopped(peer_stuck).is_none() {
            check_not_early(cx.deadline_ns)?;
        }
        self.open[f] = false;
        Ok(())
    }

    /// One receive on flow `f`: `Ok(true)` if it brought data, `Ok(false)` if nothing was
    /// queued or the flow reached EOF (then marked closed).
    #[inline]
    fn recv_once(&mut self, cx: &mut Ctx, f: usize) -> Result<bool> {
        if self.zero_copy.is_some() {
            return self.zero_copy_once(cx, f, cx.fds.len() == 1);
        }
        cx.calls.recvs += 1;
        self.report.arms += 1;
        match sys::recv(cx.fds[f], &mut self.buf) {
            Io::Done(n) => {
                self.report.data_cqes += 1;
                self.verify.check(f, &self.buf[..n]);
                cx.counters[f].bytes_received += n as u64;
                Ok(true)
            }
            Io::Again => Ok(false),
            Io::Eof => {
                self.ended(cx, f)?;
                Ok(false)
            }
            Io::Failed(e) => {
                Err(Error::Peer(format!("a receive on a data connection failed: {e}: did the sender stop?")))
            }
        }
    }
}

impl FlowLoop for Receiver {
    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<()> {
        while self.open[0] {
            self.recv_once(cx, 0)?;
            if cx.events() & (ABORT | GUARD) != 0 {
                break;
            }
        }
        Ok(())
    }

    fn run_epoll(&mut self, cx: &mut Ctx) -> Result<()> {
        let mut ep = cx.flows_epoll(libc::EPOLLIN)?;
        let mut open = cx.fds.len();
        while open > 0 && cx.events() & (ABORT | GUARD) == 0 {
            let n = cx.wait(&mut ep, -1)?;
            for i in 0..n {
                let Some((f, _)) = cx.event(&ep, i) else {
                    continue;
                };
                for _ in 0..CALLS_PER_TURN {
                    if !self.recv_once(cx, f)? {
                        break;
                    }
                }
                if !self.open[f] {
                    ep.delete(cx.fds[f])?;
                    open -= 1;
                }
            }
        }
        Ok(())
    }
}

impl Loop for Receiver {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        Ok(self.run_flows(cx, peer_stuck)?.unwrap_or(Ending::Completed))
    }

    fn report(&self) -> RoleReport {
        let mut recv = self.report.clone();
        recv.zero_copy = self.zero_copy.as_ref().map(ZeroCopyRecv::report);
        RoleReport { recv: Some(recv), verify: self.verify.report(), ..RoleReport::default() }
    }
}
