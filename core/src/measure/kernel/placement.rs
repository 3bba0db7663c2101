//! Which CPU and which NIC queue served each data socket: SO_INCOMING_CPU (the CPU that
//! last ran the socket's receive path) and SO_INCOMING_NAPI_ID (the NAPI context, i.e.
//! the receive queue, the last packet came from; 0 where the device has no NAPI, as lo).

use std::os::fd::RawFd;

use serde::{Deserialize, Serialize};

/// The asm-generic socket option numbers (x86, arm, riscv; linux/socket.h).
const SO_INCOMING_CPU: libc::c_int = 49;
const SO_INCOMING_NAPI_ID: libc::c_int = 56;

/// One data socket's placement at the end of the run, before it closed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowPlacement {
    pub flow: usize,
    /// `None` when nothing was received on it yet (the kernel answers -1) or it would not say.
    pub rx_cpu: Option<u32>,
    /// 0: the packets came through no NAPI context (loopback). `None`: the kernel would not say.
    pub napi_id: Option<u32>,
}

fn int_option(fd: RawFd, name: libc::c_int) -> Option<i32> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes of the sizes passed.
    let rc = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, name, (&raw mut v).cast(), &mut len) };
    (rc == 0).then_some(v)
}

/// Reads the placement of `fd`, the socket of `flow`.
pub fn read(flow: usize, fd: RawFd) -> FlowPlacement {
    FlowPlacement {
        flow,
        rx_cpu: int_option(fd, SO_INCOMING_CPU).and_then(|c| u32::try_from(c).ok()),
        napi_id: int_option(fd, SO_INCOMING_NAPI_ID).map(|n| n as u32),
    }
}

/// "8 flows: rx on CPU 1 ×8, NAPI id 0 ×8": how many flows each CPU and each NAPI id served.
pub fn summary(flows: &[FlowPlacement]) -> String {
    let tally = |key: &dyn Fn(&FlowPlacement) -> Option<u32>| {
        let mut seen: std::collections::BTreeMap<Option<u32>, usize> = Default::default();
        for f in flows {
            *seen.entry(key(f)).or_default() += 1;
        }
        seen
    };
    let show = |m: std::collections::BTreeMap<Option<u32>, usize>, what: &str| {
        m.into_iter()
            .map(|(k, n)| match k {
                Some(v) => format!("{what} {v} ×{n}"),
                None => format!("{what} unknown ×{n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let n = flows.len();
    format!(
        "{n} flow{}: rx on {}; {}",
        if n == 1 { "" } else { "s" },
        show(tally(&|f| f.rx_cpu), "CPU"),
        show(tally(&|f| f.napi_id), "NAPI id")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_loopback_socket_that_received_names_a_cpu_and_napi_id_0() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        let p = read(3, s.as_raw_fd());
        let ncpu = crate::env::online_cpus() as u32;
        assert!(p.rx_cpu.is_some_and(|c| c < ncpu.max(1) * 64), "{p:?}");
        assert_eq!(p.napi_id, Some(0), "lo has no NAPI");
        assert_eq!(p.flow, 3);
    }

    #[test]
    fn the_summary_counts_flows_per_cpu_and_napi_id() {
        let f = |flow, cpu, napi| FlowPlacement { flow, rx_cpu: cpu, napi_id: napi };
        let s = summary(&[f(0, Some(1), Some(0)), f(1, Some(1), Some(0)), f(2, None, Some(0))]);
        assert_eq!(s, "3 flows: rx on CPU unknown ×1, CPU 1 ×2; NAPI id 0 ×3");
        assert_eq!(summary(&[f(0, Some(0), Some(9))]), "1 flow: rx on CPU 0 ×1; NAPI id 9 ×1");
    }
}
