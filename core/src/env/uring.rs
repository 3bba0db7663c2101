//! What this kernel's io_uring supports, as a report records it: opcodes, setup flags,
//! feature bits, and the few behaviours that only a real operation reveals (does SendZc
//! report usage?). The probing itself needs a ring and lives in the engine
//! (`ringperf_engine::probe`); this is its result, and the check that refuses an engine
//! the kernel lacks with a message that names what is missing.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::spec::{RecvEngine, SendEngine};

/// The kernel's io_uring, as probed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct IoUringProbe {
    /// False if io_uring could not be set up at all (disabled, seccomp, too old).
    pub available: bool,
    /// Why not, if not.
    pub error: Option<String>,
    /// Opcodes ringperf uses, supported by this kernel.
    pub opcodes: Vec<String>,
    /// Opcodes ringperf uses that this kernel lacks.
    pub missing_opcodes: Vec<String>,
    pub setup: SetupSupport,
    pub features: FeatureBits,
    /// A real SendZc with REPORT_USAGE over loopback delivered a notification that carries
    /// the usage bit (None: the probe could not run).
    pub send_zc_reports_usage: Option<bool>,
    /// That loopback SendZc was copied (it always is on loopback).
    pub send_zc_copied_on_loopback: Option<bool>,
    /// A provided-buffer ring could be registered (multishot receive).
    pub buffer_rings: bool,
}

/// Setup flags a ring could be created with.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetupSupport {
    pub single_issuer: bool,
    pub defer_taskrun: bool,
    pub coop_taskrun: bool,
    pub submit_all: bool,
    pub no_sqarray: bool,
    pub sqpoll: bool,
}

/// IORING_FEAT_* bits from io_uring_setup.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeatureBits {
    pub nodrop: bool,
    pub fast_poll: bool,
    pub ext_arg: bool,
    pub native_workers: bool,
    pub skip_cqe_on_success: bool,
    pub recvsend_bundle: bool,
    pub min_timeout: bool,
    pub no_iowait: bool,
}

impl IoUringProbe {
    /// Whether this kernel supports the opcode named `name` (as in `opcodes`).
    pub fn has(&self, name: &str) -> bool {
        self.opcodes.iter().any(|o| o == name)
    }

    /// Refuses engines this kernel cannot run, naming the missing piece.
    pub fn check_engines(&self, send: SendEngine, recv: RecvEngine) -> Result<()> {
        let need = |ok: bool, what: &str, engine: &str| {
            if ok {
                Ok(())
            } else {
                Err(Error::Usage(format!(
                    "engine {engine} needs {what}, which this kernel's io_uring lacks: pick another engine (see `ringperf probe`)"
                )))
            }
        };
        // A side whose engines are both classic makes no ring.
        if send.is_classic() && recv.is_classic() {
            return Ok(());
        }
        if !self.available {
            return Err(Error::Usage(format!(
                "io_uring is not usable here ({}): check /proc/sys/kernel/io_uring_disabled and any seccomp policy",
                self.error.as_deref().unwrap_or("unknown reason")
            )));
        }
        need(
            self.setup.single_issuer && self.setup.defer_taskrun,
            "SINGLE_ISSUER and DEFER_TASKRUN (Linux 6.1)",
            "rings",
        )?;
        match send {
            SendEngine::Copy => need(self.has("SEND"), "IORING_OP_SEND (Linux 5.6)", "copy")?,
            SendEngine::Zc => {
                need(self.has("SEND_ZC"), "IORING_OP_SEND_ZC (Linux 6.0)", "zc")?;
                need(
                    self.send_zc_reports_usage != Some(false),
                    "IORING_SEND_ZC_REPORT_USAGE (Linux 6.2)",
                    "zc",
                )?
            }
            SendEngine::ZcMsg => need(self.has("SENDMSG_ZC"), "IORING_OP_SENDMSG_ZC (Linux 6.1)", "zc-msg")?,
            SendEngine::Splice => need(self.has("SPLICE"), "IORING_OP_SPLICE (Linux 5.7)", "splice")?,
            SendEngine::Syscall | SendEngine::MsgZerocopy => {}
        }
        match recv {
            RecvEngine::Recv | RecvEngine::Trunc => {
                need(self.has("RECV"), "IORING_OP_RECV (Linux 5.6)", recv.name())
            }
            RecvEngine::Multishot => {
                need(self.buffer_rings, "provided-buffer rings (Linux 5.19/6.0)", "multishot")
            }
            RecvEngine::Bundle => need(
                self.buffer_rings && self.features.recvsend_bundle,
                "IORING_FEAT_RECVSEND_BUNDLE (Linux 6.10)",
                "bundle",
            ),
            RecvEngine::Syscall | RecvEngine::ZerocopyReceive => Ok(()),
        }
    }
}
