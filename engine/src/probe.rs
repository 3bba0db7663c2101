//! Probes what this kernel's io_uring supports: opcodes, setup flags, feature bits, and the
//! few behaviours that only a real operation reveals (does SendZc report usage?). The
//! result ([`IoUringProbe`], in the environment module) is recorded in every report's
//! environment, so results from two kernels can be told apart, and refuses an engine the
//! kernel lacks with a message that names what is missing.

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::OnceLock;

use crate::ring::uapi::{IORING_NOTIF_USAGE_ZC_COPIED, IORING_SEND_ZC_REPORT_USAGE};
use io_uring::{cqueue, opcode, register::Probe, types, IoUring};
pub use ringperf_core::env::{FeatureBits, IoUringProbe, SetupSupport};

/// Probes once per process; later calls return the cached result.
pub fn get() -> &'static IoUringProbe {
    static PROBE: OnceLock<IoUringProbe> = OnceLock::new();
    PROBE.get_or_init(run_probe)
}

const OPCODES: &[(&str, u8)] = &[
    ("SEND", opcode::Send::CODE),
    ("RECV", opcode::Recv::CODE),
    ("SEND_ZC", opcode::SendZc::CODE),
    ("SENDMSG_ZC", opcode::SendMsgZc::CODE),
    ("SENDMSG", opcode::SendMsg::CODE),
    ("RECVMSG", opcode::RecvMsg::CODE),
    ("SPLICE", opcode::Splice::CODE),
    ("TIMEOUT", opcode::Timeout::CODE),
    ("LINK_TIMEOUT", opcode::LinkTimeout::CODE),
    ("ASYNC_CANCEL", opcode::AsyncCancel::CODE),
    ("ACCEPT", opcode::Accept::CODE),
    ("CONNECT", opcode::Connect::CODE),
    ("SHUTDOWN", opcode::Shutdown::CODE),
    ("CLOSE", opcode::Close::CODE),
    ("SOCKET", opcode::Socket::CODE),
    ("READ_FIXED", opcode::ReadFixed::CODE),
    ("WRITE_FIXED", opcode::WriteFixed::CODE),
    ("PROVIDE_BUFFERS", opcode::ProvideBuffers::CODE),
    ("MSG_RING", opcode::MsgRingData::CODE),
];

fn run_probe() -> IoUringProbe {
    let ring: IoUring = match IoUring::new(8) {
        Ok(r) => r,
        Err(e) => {
            return IoUringProbe { available: false, error: Some(e.to_string()), ..IoUringProbe::default() }
        }
    };
    let mut p = Probe::new();
    let mut out = IoUringProbe { available: true, ..IoUringProbe::default() };
    if ring.submitter().register_probe(&mut p).is_ok() {
        for (name, code) in OPCODES {
            if p.is_supported(*code) {
                out.opcodes.push((*name).into());
            } else {
                out.missing_opcodes.push((*name).into());
            }
        }
    }
    let params = ring.params();
    out.features = FeatureBits {
        nodrop: params.is_feature_nodrop(),
        fast_poll: params.is_feature_fast_poll(),
        ext_arg: params.is_feature_ext_arg(),
        native_workers: params.is_feature_native_workers(),
        skip_cqe_on_success: params.is_feature_skip_cqe_on_success(),
        recvsend_bundle: params.is_feature_recvsend_bundle(),
        min_timeout: params.is_feature_min_timeout(),
        no_iowait: params.is_feature_no_iowait(),
    };
    let try_setup = |f: &dyn Fn(&mut io_uring::Builder)| {
        let mut b = IoUring::builder();
        f(&mut b);
        b.build(8).is_ok()
    };
    out.setup = SetupSupport {
        single_issuer: try_setup(&|b| {
            b.setup_single_issuer();
        }),
        defer_taskrun: try_setup(&|b| {
            b.setup_single_issuer().setup_defer_taskrun();
        }),
        coop_taskrun: try_setup(&|b| {
            b.setup_coop_taskrun();
        }),
        submit_all: try_setup(&|b| {
            b.setup_submit_all();
        }),
        no_sqarray: try_setup(&|b| {
            b.setup_no_sqarray();
        }),
        sqpoll: try_setup(&|b| {
            b.setup_sqpoll(10);
        }),
    };
    out.buffer_rings = probe_buffer_ring(&ring);
    if out.has("SEND_ZC") {
        match probe_send_zc() {
            Ok((reports, copied)) => {
                out.send_zc_reports_usage = Some(reports);
                out.send_zc_copied_on_loopback = Some(copied);
            }
            Err(_) => out.send_zc_reports_usage = None,
        }
    }
    out
}

fn probe_buffer_ring(ring: &IoUring) -> bool {
    let Ok(mem) = crate::buf::Mapping::new(4096) else { return false };
    // SAFETY: page-aligned zeroed memory for 8 entries that outlives the registration.
    let ok = unsafe { ring.submitter().register_buf_ring_with_flags(mem.as_ptr() as u64, 8, 7, 0) }.is_ok();
    if ok {
        let _ = ring.submitter().unregister_buf_ring(7);
    }
    ok
}

/// Sends 4 KiB with SendZc + REPORT_USAGE over a loopback TCP pair and reads the notification.
fn probe_send_zc() -> std::io::Result<(bool, bool)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let client = TcpStream::connect(listener.local_addr()?)?;
    let (mut server, _) = listener.accept()?;
    let mut ring: IoUring = IoUring::new(8)?;
    let buf = vec![7u8; 4096];
    let sqe = opcode::SendZc::new(types::Fd(client.as_raw_fd()), buf.as_ptr(), buf.len() as u32)
        .flags(libc::MSG_NOSIGNAL)
        .zc_flags(IORING_SEND_ZC_REPORT_USAGE)
        .build()
        .user_data(1);
    // SAFETY: `buf` outlives the ring's use of it: we wait for the notification below.
    unsafe { ring.submission().push(&sqe).map_err(|_| std::io::Error::other("SQ full"))? };
    let (mut result, mut notif) = (None, None);
    let mut rounds = 0;
    while notif.is_none() && rounds < 100 {
        rounds += 1;
        ring.submit_and_wait(1)?;
        for c in ring.completion() {
            if cqueue::notif(c.flags()) {
                notif = Some(c.result() as u32);
            } else {
                result = Some(c.result());
                if !cqueue::more(c.flags()) {
                    notif = Some(0);
                }
            }
        }
    }
    // Only what was sent is read, and never for long: a socket that refused the send (an
    // MPTCP one, when `mptcpize run` rewrote this pair's protocol) has nothing coming.
    if result.is_some_and(|r| r > 0) {
        let mut sink = vec![0u8; 4096];
        server.set_read_timeout(Some(std::time::Duration::from_secs(1)))?;
        let _ = server.read(&mut sink);
    }
    match (result, notif) {
        (Some(r), Some(n)) if r >= 0 => Ok((true, n & IORING_NOTIF_USAGE_ZC_COPIED != 0)),
        (Some(r), _) if r == -libc::EINVAL => Ok((false, false)),
        _ => Err(std::io::Error::other("no SendZc completion")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::spec::{RecvEngine, SendEngine};

    #[test]
    fn this_kernel_runs_every_engine() {
        let p = get();
        assert!(p.available, "{:?}", p.error);
        assert!(p.opcodes.iter().any(|o| o == "SEND"));
        for s in SendEngine::ALL {
            for r in RecvEngine::ALL {
                p.check_engines(s, r).unwrap();
            }
        }
        assert_eq!(p.send_zc_reports_usage, Some(true));
        // Loopback always copies: every SendZc notification on 127.0.0.1 carries ZC_COPIED.
        assert_eq!(p.send_zc_copied_on_loopback, Some(true));
    }

    #[test]
    fn a_kernel_without_send_zc_refuses_zc_by_name() {
        let mut p = get().clone();
        p.opcodes.retain(|o| o != "SEND_ZC");
        let e = p.check_engines(SendEngine::Zc, RecvEngine::Recv).unwrap_err().to_string();
        assert!(e.contains("IORING_OP_SEND_ZC"), "{e}");
        p.features.recvsend_bundle = false;
        let e = p.check_engines(SendEngine::Copy, RecvEngine::Bundle).unwrap_err().to_string();
        assert!(e.contains("BUNDLE"), "{e}");
    }
}
