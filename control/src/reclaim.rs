//! Sessions are reclaimed by their deadline, whatever they are blocked on. Each session
//! registers a duplicate of its control connection and a deadline, which it moves as it
//! goes (its setup's bound, then the test's end plus the peer grace). The accept loop
//! looks between polls and shuts the connection of a session past its deadline down
//! (`shutdown(2)`, both ways): whatever the session waits for ends at once, a control read
//! or write returns, and its workers, which watch the connection, stop and shut their data
//! sockets down. Its thread then ends, closing its sockets and giving its slot back. A
//! stopping server cuts the sessions still running at the end of its grace the same way.

use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ringperf_core::measure::clock::monotonic_ns;

/// Every live session's watch. Locked when a session starts, moves its deadline or ends,
/// and by the accept loop's look: never on a data path.
#[derive(Default)]
pub struct Watchdog {
    sessions: Mutex<Vec<Arc<Watched>>>,
}

struct Watched {
    peer: SocketAddr,
    /// A duplicate of the session's control connection: shutting it down ends the session.
    control: TcpStream,
    /// CLOCK_MONOTONIC ns past which the session is cut.
    deadline_ns: AtomicU64,
    /// The deadline is the stopping server's, not the session's own.
    stopping: AtomicBool,
    test: Mutex<Option<&'static str>>,
    cut: AtomicBool,
}

/// A session cut by the watchdog, for the log.
#[derive(Clone, Debug)]
pub struct Cut {
    pub peer: SocketAddr,
    /// The test it was running, if it had sent one.
    pub test: Option<&'static str>,
    /// Cut because the server is stopping and its grace is over, not at its own deadline.
    pub stopping: bool,
}

/// A session's registration; dropping it (the session ended) takes the session off.
pub struct Watch {
    dog: Arc<Watchdog>,
    me: Arc<Watched>,
}

impl Watchdog {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Watched>>> {
        // A thread that panicked while holding the lock left a consistent list: keep it.
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Watches the session on `control` (from `peer`), to be cut `within` from now unless
    /// it moves its deadline. `None` if the connection cannot be duplicated (no descriptor
    /// left): the session then runs on its own timeouts alone.
    pub fn register(
        dog: &Arc<Watchdog>,
        control: &TcpStream,
        peer: SocketAddr,
        within: Duration,
    ) -> Option<Watch> {
        let control = control.try_clone().ok()?;
        let me = Arc::new(Watched {
            peer,
            control,
            deadline_ns: AtomicU64::new(after(within)),
            stopping: AtomicBool::new(false),
            test: Mutex::new(None),
            cut: AtomicBool::new(false),
        });
        dog.lock().push(me.clone());
        Some(Watch { dog: dog.clone(), me })
    }

    /// Shuts down the control connection of every session past its deadline (each once);
    /// returns those it cut.
    pub fn cut_overdue(&self) -> Vec<Cut> {
        let now = monotonic_ns();
        let list = self.lock();
        let overdue = list.iter().filter(|w| w.deadline_ns.load(Ordering::Relaxed) <= now);
        let mut cuts = Vec::new();
        for w in overdue {
            if w.cut.swap(true, Ordering::Relaxed) {
                continue;
            }
            let _ = w.control.shutdown(Shutdown::Both);
            cuts.push(Cut {
                peer: w.peer,
                test: *w.test.lock().unwrap_or_else(|p| p.into_inner()),
                stopping: w.stopping.load(Ordering::Relaxed),
            });
        }
        cuts
    }

    /// The server is stopping: every session's deadline is at most `grace` from now.
    pub fn stop_within(&self, grace: Duration) {
        let by = after(grace);
        for w in self.lock().iter() {
            if w.deadline_ns.fetch_min(by, Ordering::Relaxed) > by {
                w.stopping.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Sessions still registered.
    pub fn live(&self) -> usize {
        self.lock().len()
    }
}

impl Watch {
    /// Moves the deadline to `within` from now (never past a stopping server's).
    pub fn deadline_in(&self, within: Duration) {
        let at = after(within);
        if self.me.stopping.load(Ordering::Relaxed) {
            self.me.deadline_ns.fetch_min(at, Ordering::Relaxed);
        } else {
            self.me.deadline_ns.store(at, Ordering::Relaxed);
        }
    }

    /// The session accepted `test`: the log names it if the session is cut.
    pub fn testing(&self, test: &'static str) {
        *self.me.test.lock().unwrap_or_else(|p| p.into_inner()) = Some(test);
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.dog.lock().retain(|w| !Arc::ptr_eq(w, &self.me));
    }
}

fn after(d: Duration) -> u64 {
    monotonic_ns().saturating_add(d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").expect("a listener");
        let a = TcpStream::connect(l.local_addr().expect("its address")).expect("a connection");
        let (b, _) = l.accept().expect("accepted");
        (a, b)
    }

    #[test]
    fn a_session_past_its_deadline_is_cut_once_and_its_reads_end() {
        let dog = Arc::new(Watchdog::default());
        let (_client, server) = pair();
        let peer = server.peer_addr().expect("peer");
        let w = Watchdog::register(&dog, &server, peer, Duration::from_secs(60)).expect("registered");
        w.testing("TCP_RR");
        assert!(dog.cut_overdue().is_empty(), "cut before its deadline");
        w.deadline_in(Duration::ZERO);
        let cuts = dog.cut_overdue();
        assert_eq!(cuts.len(), 1);
        assert_eq!((cuts[0].peer, cuts[0].test, cuts[0].stopping), (peer, Some("TCP_RR"), false));
        assert!(dog.cut_overdue().is_empty(), "cut twice");
        // A read the session was blocked in returns: EOF on the shut-down connection.
        let mut b = [0u8; 1];
        assert_eq!((&server).read(&mut b).expect("a read"), 0);
        assert_eq!(dog.live(), 1);
        drop(w);
        assert_eq!(dog.live(), 0);
    }

    #[test]
    fn a_stopping_server_brings_deadlines_forward_and_keeps_them_there() {
        let dog = Arc::new(Watchdog::default());
        let (_c1, s1) = pair();
        let (_c2, s2) = pair();
        let p1 = s1.peer_addr().expect("peer");
        let late = Watchdog::register(&dog, &s1, p1, Duration::from_secs(60)).expect("registered");
        let soon = Watchdog::register(&dog, &s2, p1, Duration::ZERO).expect("registered");
        dog.stop_within(Duration::ZERO);
        // A session moving its deadline on cannot move it past the server's.
        late.deadline_in(Duration::from_secs(60));
        let cuts = dog.cut_overdue();
        assert_eq!(cuts.len(), 2);
        let stopping: Vec<bool> = cuts.iter().map(|c| c.stopping).collect();
        assert_eq!(
            stopping.iter().filter(|s| **s).count(),
            1,
            "only the later session was cut for the stop: {cuts:?}"
        );
        drop((late, soon));
    }
}
