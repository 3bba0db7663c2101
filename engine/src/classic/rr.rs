//! Request/response over system calls, one transaction in flight per flow: the client
//! sends a request and receives the whole response, until the deadline, then half-closes;
//! the server answers every whole request until the client's EOF (netperf's TCP_RR loop;
//! over epoll with several flows, neper's).

use crate::classic::context::{Ctx, FlowLoop, Loop, Pattern};
use crate::classic::sys::{self, Epoll, Io};
use crate::classic::{ABORT, DEADLINE, GUARD};
use crate::verify::Verifier;
use crate::workload::driver::RoleReport;
use crate::workload::ending::{check_not_early, peer_stuck, shutdown_write};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::intervals::FlowCounters;
use ringperf_core::report::Ending;
use ringperf_core::report::{RecvReport, SendReport};
use ringperf_core::spec::{RecvEngine, TestSpec};

/// Where one flow's transaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing in flight (a client after the deadline; a server between requests).
    Idle,
    /// This many bytes of the message are out; the rest waits for room.
    Sending(usize),
    /// This many bytes of the message have arrived.
    Receiving(usize),
}

#[derive(Clone, Copy)]
struct Flow {
    phase: Phase,
    send_offset: u64,
    started: u64,
}

/// What both ends share: sizes, payload, the check, the engines' accounting.
struct Ends {
    /// What this end sends and receives per transaction.
    send_len: usize,
    recv_len: usize,
    pattern: Pattern,
    buf: Vec<u8>,
    verify: Verifier,
    flows: Vec<Flow>,
    send: SendReport,
    recv: RecvReport,
}

impl Ends {
    fn new(spec: &TestSpec, flows: usize, client: bool) -> Ends {
        let (send_len, recv_len) = if client {
            (spec.request_size as usize, spec.response_size as usize)
        } else {
            (spec.response_size as usize, spec.request_size as usize)
        };
        Ends {
            send_len,
            recv_len,
            pattern: Pattern::new(send_len),
            buf: vec![0; recv_len],
            verify: Verifier::new(spec.verify, flows),
            flows: vec![Flow { phase: Phase::Idle, send_offset: 0, started: 0 }; flows],
            send: SendReport::default(),
            recv: RecvReport {
                engine: RecvEngine::Syscall,
                landing_bytes: recv_len as u64,
                ..RecvReport::default()
            },
        }
    }

    /// Sends what is left of flow `f`'s message from byte `done`; returns the bytes now
    /// out (less than `send_len` when a non-blocking socket ran out of room, or a stop
    /// came while a new message waited for its pacing).
    fn send_from(&mut self, cx: &mut Ctx, f: usize, mut done: usize) -> Result<usize> {
        if done == 0 && !cx.pace(ABORT | GUARD) {
            return Ok(0);
        }
        while done < self.send_len {
            cx.calls.sends += 1;
            let off = self.flows[f].send_offset;
            match sys::send(cx.fds[f], self.pattern.at(off, self.send_len - done)) {
                Io::Done(n) => {
                    self.send.sends += 1;
                    self.flows[f].send_offset += n as u64;
                    cx.charge(n);
                    done += n;
                }
                Io::Again | Io::Eof if cx.fds.len() > 1 => break,
                Io::Again | Io::Eof => {
                    if cx.events() & (ABORT | GUARD) != 0 {
                        break;
                    }
                }
                Io::Failed(e) => {
                    return Err(Error::Peer(format!(
                        "a send on a data connection failed: {e}: did the peer close it?"
                    )))
                }
            }
        }
        Ok(done)
    }

    /// Starts flow `f`'s next message: as much as fits now, the rest when the socket is
    /// writable (`ep` then waits for room too).
    fn send_new(&mut self, cx: &mut Ctx, ep: &Epoll, f: usize) -> Result<()> {
        let out = self.send_from(cx, f, 0)?;
        self.flows[f].phase = if out < self.send_len {
            ep.modify(cx.fds[f], f as u64, (libc::EPOLLIN | libc::EPOLLOUT) as u32)?;
            Phase::Sending(out)
        } else {
            Phase::Receiving(0)
        };
        Ok(())
    }

    /// Flow `f`'s socket has room for more of the message that has `out` bytes out: sends
    /// them, and once the message is whole waits (in `ep`) only to receive.
    fn send_more(&mut self, cx: &mut Ctx, ep: &Epoll, f: usize, out: usize) -> Result<()> {
        let out = self.send_from(cx, f, out)?;
        self.flows[f].phase = if out == self.send_len {
            ep.modify(cx.fds[f], f as u64, libc::EPOLLIN as u32)?;
            Phase::Receiving(0)
        } else {
            Phase::Sending(out)
        };
        Ok(())
    }

    /// Receives what is left of flow `f`'s message after byte `got`; returns the bytes
    /// now in, or `None` at EOF. A non-blocking socket may return early.
    fn recv_from(&mut self, cx: &mut Ctx, f: usize, mut got: usize) -> Result<Option<usize>> {
        while got < self.recv_len {
            cx.calls.recvs += 1;
            self.recv.arms += 1;
            match sys::recv(cx.fds[f], &mut self.buf[..self.recv_len - got]) {
                Io::Done(n) => {
                    self.recv.data_cqes += 1;
                    self.verify.check(f, &self.buf[..n]);
                    got += n;
                }
                Io::Again if cx.fds.len() > 1 => break,
                Io::Again => {
                    if cx.events() & (ABORT | GUARD) != 0 {
                        return Ok(None);
                    }
                }
                Io::Eof => return Ok(None),
                Io::Failed(e) => {
                    return Err(Error::Peer(format!(
                        "a receive on a data connection failed: {e}: did the peer close it?"
                    )))
                }
            }
        }
        Ok(Some(got))
    }

    fn report(&self) -> RoleReport {
        RoleReport {
            send: Some(self.send.clone()),
            recv: Some(self.recv.clone()),
            verify: self.verify.report(),
            ..RoleReport::default()
        }
    }
}

fn count(k: &mut FlowCounters, sent: usize, received: usize) {
    k.transactions += 1;
    k.bytes_sent += sent as u64;
    k.bytes_received += received as u64;
}

fn closed_by_server() -> Error {
    Error::Peer("the server closed a data connection during the test".into())
}

pub struct Client {
    ends: Ends,
}

impl Client {
    pub fn new(spec: &TestSpec, flows: usize) -> Result<Client> {
        Ok(Client { ends: Ends::new(spec, flows, true) })
    }

    /// Starts flow `f`'s next transaction at `now`: its request, or as much as fits (the
    /// rest goes when the socket is writable).
    fn start(&mut self, cx: &mut Ctx, ep: &Epoll, f: usize, now: u64) -> Result<()> {
        self.ends.flows[f].started = now;
        self.ends.send_new(cx, ep, f)
    }
}

impl FlowLoop for Client {
    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<()> {
        let e = &mut self.ends;
        let mut now = cx.start_clock();
        while cx.events() & (DEADLINE | ABORT | GUARD) == 0 {
            if e.send_from(cx, 0, 0)? < e.send_len {
                return Ok(());
            }
            match e.recv_from(cx, 0, 0)? {
                Some(got) if got == e.recv_len => {}
                _ if cx.events() & (ABORT | GUARD) != 0 => return Ok(()),
                _ => return Err(closed_by_server()),
            }
            now = cx.record(now);
            count(&mut cx.counters[0], e.send_len, e.recv_len);
        }
        Ok(())
    }

    fn run_epoll(&mut self, cx: &mut Ctx) -> Result<()> {
        let nflows = cx.fds.len();
        let mut ep = cx.flows_epoll(libc::EPOLLIN)?;
        let now = cx.start_clock();
        for f in 0..nflows {
            self.start(cx, &ep, f, now)?;
        }
        let mut active = nflows;
        let mut stopping = false;
        while active > 0 {
            let flags = cx.events();
            if flags & (ABORT | GUARD) != 0 {
                return Ok(());
            }
            stopping |= flags & DEADLINE != 0;
            let n = cx.wait(&mut ep, -1)?;
            for i in 0..n {
                let Some((f, ready)) = cx.event(&ep, i) else {
                    continue;
                };
                let e = &mut self.ends;
                if let Phase::Sending(out) = e.flows[f].phase {
                    if ready & libc::EPOLLOUT as u32 != 0 {
                        e.send_more(cx, &ep, f, out)?;
                    }
                }
                let Phase::Receiving(got) = e.flows[f].phase else {
                    if ready & (libc::EPOLLIN | libc::EPOLLHUP) as u32 != 0 && e.flows[f].phase == Phase::Idle
                    {
                        return Err(closed_by_server());
                    }
                    continue;
                };
                if ready & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 == 0 {
                    continue;
                }
                match e.recv_from(cx, f, got)? {
                    None => {
                        if cx.events() & (ABORT | GUARD) != 0 {
                            return Ok(());
                        }
                        return Err(closed_by_server());
                    }
                    Some(got) if got < e.recv_len => e.flows[f].phase = Phase::Receiving(got),
                    Some(_) => {
                        let now = cx.record(e.flows[f].started);
                        count(&mut cx.counters[f], e.send_len, e.recv_len);
                        e.flows[f].phase = Phase::Idle;
                        if stopping {
                            active -= 1;
                        } else {
                            self.start(cx, &ep, f, now)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl Loop for Client {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        if let Some(end) = self.run_flows(cx, peer_stuck)? {
            return Ok(end);
        }
        // The server sees EOF and ends too.
        for &fd in cx.fds {
            shutdown_write(fd);
        }
        Ok(Ending::Completed)
    }

    fn report(&self) -> RoleReport {
        self.ends.report()
    }
}

pub struct Server {
    ends: Ends,
}

impl Server {
    pub fn new(spec: &TestSpec, flows: usize) -> Result<Server> {
        Ok(Server { ends: Ends::new(spec, flows, false) })
    }
}

impl FlowLoop for Server {
    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<()> {
        let e = &mut self.ends;
        loop {
            // The server ends at the client's EOF; this samples the interval ticks.
            cx.events();
            match e.recv_from(cx, 0, 0)? {
                Some(got) if got == e.recv_len => {}
                // EOF between requests or mid-request: the client has gone (a torn
                // request is a client that went away mid-message, as the ring path sees it).
                _ => {
                    if cx.events() & (ABORT | GUARD) == 0 {
                        check_not_early(cx.deadline_ns)?;
                    }
                    return Ok(());
                }
            }
            count(&mut cx.counters[0], e.send_len, e.recv_len);
            if e.send_from(cx, 0, 0)? < e.send_len {
                return Ok(());
            }
        }
    }

    fn run_epoll(&mut self, cx: &mut Ctx) -> Result<()> {
        let nflows = cx.fds.len();
        let mut ep = cx.flows_epoll(libc::EPOLLIN)?;
        for f in &mut self.ends.flows {
            f.phase = Phase::Receiving(0);
        }
        let mut open = nflows;
        while open > 0 && cx.events() & (ABORT | GUARD) == 0 {
            let n = cx.wait(&mut ep, -1)?;
            for i in 0..n {
                let Some((f, ready)) = cx.event(&ep, i) else {
                    continue;
                };
                let e = &mut self.ends;
                match e.flows[f].phase {
                    Phase::Sending(out) if ready & libc::EPOLLOUT as u32 != 0 => {
                        e.send_more(cx, &ep, f, out)?
                    }
                    Phase::Receiving(got) => match e.recv_from(cx, f, got)? {
                        None => {
                            if cx.events() & (ABORT | GUARD) == 0 {
                                check_not_early(cx.deadline_ns)?;
                            }
                            ep.delete(cx.fds[f])?;
                            e.flows[f].phase = Phase::Idle;
                            open -= 1;
                        }
                        Some(got) if got < e.recv_len => e.flows[f].phase = Phase::Receiving(got),
                        Some(_) => {
                            count(&mut cx.counters[f], e.send_len, e.recv_len);
                            e.send_new(cx, &ep, f)?;
                        }
                    },
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl Loop for Server {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        Ok(self.run_flows(cx, peer_stuck)?.unwrap_or(Ending::Completed))
    }

    fn report(&self) -> RoleReport {
        self.ends.report()
    }
}
