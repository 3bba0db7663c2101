//! The SIOCETHTOOL ioctl, natively (not by running `ethtool`): driver information, the
//! offload switches (legacy single-feature get commands, one per offload), and interrupt
//! coalescing. Layouts and command numbers are those of linux/ethtool.h.

use std::io;

use serde::{Deserialize, Serialize};

use super::netdev::{IfReq, IfSocket};

const SIOCETHTOOL: libc::c_ulong = 0x8946;

const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GCOALESCE: u32 = 0x0e;
const ETHTOOL_GRXCSUM: u32 = 0x14;
const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_GSG: u32 = 0x18;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_GGRO: u32 = 0x2b;

/// struct ethtool_value
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// struct ethtool_drvinfo
#[repr(C)]
struct EthtoolDrvinfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

/// struct ethtool_coalesce: the command and 22 u32 settings, in this order.
#[repr(C)]
#[derive(Default)]
struct EthtoolCoalesce {
    cmd: u32,
    rx_coalesce_usecs: u32,
    rx_max_coalesced_frames: u32,
    rx_coalesce_usecs_irq: u32,
    rx_max_coalesced_frames_irq: u32,
    tx_coalesce_usecs: u32,
    tx_max_coalesced_frames: u32,
    tx_coalesce_usecs_irq: u32,
    tx_max_coalesced_frames_irq: u32,
    stats_block_coalesce_usecs: u32,
    use_adaptive_rx_coalesce: u32,
    use_adaptive_tx_coalesce: u32,
    rest: [u32; 11],
}

/// What GDRVINFO says about the driver behind an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverInfo {
    pub driver: String,
    pub version: String,
    pub firmware: String,
    pub bus_info: String,
}

/// The offload switches that change a result. None: the kernel would not say.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// TCP segmentation offload (any of its variants on).
    pub tso: Option<bool>,
    /// Generic segmentation offload: segmenting in software just before the driver.
    pub gso: Option<bool>,
    /// Generic receive offload: coalescing received segments before the stack.
    pub gro: Option<bool>,
    /// Scatter-gather: sending from non-contiguous buffers (TSO and zero copy need it).
    pub sg: Option<bool>,
    pub tx_checksum: Option<bool>,
    pub rx_checksum: Option<bool>,
}

/// Interrupt coalescing, as the driver reports it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coalescing {
    pub rx_usecs: u32,
    pub rx_frames: u32,
    pub tx_usecs: u32,
    pub tx_frames: u32,
    pub adaptive_rx: bool,
    pub adaptive_tx: bool,
}

/// Runs one ethtool command whose struct starts with its `cmd` word.
///
/// # Safety
/// `T` must be the struct the kernel reads and writes for the command in its first word.
unsafe fn ethtool<T>(sock: &IfSocket, dev: &str, cmd: &mut T) -> io::Result<()> {
    let mut req = IfReq::named(dev)?;
    req.data.data = (cmd as *mut T).cast();
    // SAFETY: SIOCETHTOOL takes an ifreq whose data points to the command's struct, which
    // the caller guarantees `T` is, and which lives across the call.
    unsafe { sock.ioctl(SIOCETHTOOL, &mut req) }
}

pub fn driver(sock: &IfSocket, dev: &str) -> io::Result<DriverInfo> {
    let mut d = EthtoolDrvinfo {
        cmd: ETHTOOL_GDRVINFO,
        driver: [0; 32],
        version: [0; 32],
        fw_version: [0; 32],
        bus_info: [0; 32],
        erom_version: [0; 32],
        reserved2: [0; 12],
        n_priv_flags: 0,
        n_stats: 0,
        testinfo_len: 0,
        eedump_len: 0,
        regdump_len: 0,
    };
    // SAFETY: GDRVINFO reads and writes a struct ethtool_drvinfo.
    unsafe { ethtool(sock, dev, &mut d)? };
    Ok(DriverInfo {
        driver: c_str(&d.driver),
        version: c_str(&d.version),
        firmware: c_str(&d.fw_version),
        bus_info: c_str(&d.bus_info),
    })
}

fn feature(sock: &IfSocket, dev: &str, cmd: u32) -> io::Result<bool> {
    let mut v = EthtoolValue { cmd, data: 0 };
    // SAFETY: the legacy feature gets read and write a struct ethtool_value.
    unsafe { ethtool(sock, dev, &mut v)? };
    Ok(v.data != 0)
}

/// Every offload switch, with a note for each one the kernel would not report.
pub fn offloads(sock: &IfSocket, dev: &str) -> (Offloads, Vec<String>) {
    let mut notes = Vec::new();
    let mut get = |name: &str, cmd: u32| match feature(sock, dev, cmd) {
        Ok(b) => Some(b),
        Err(e) => {
            notes.push(format!("{name} of {dev}: {e}"));
            None
        }
    };
    let o = Offloads {
        tso: get("tso", ETHTOOL_GTSO),
        gso: get("gso", ETHTOOL_GGSO),
        gro: get("gro", ETHTOOL_GGRO),
        sg: get("sg", ETHTOOL_GSG),
        tx_checksum: get("tx checksum", ETHTOOL_GTXCSUM),
        rx_checksum: get("rx checksum", ETHTOOL_GRXCSUM),
    };
    (o, notes)
}

/// Interrupt coalescing; EOPNOTSUPP from drivers without it (lo, veth).
pub fn coalescing(sock: &IfSocket, dev: &str) -> io::Result<Coalescing> {
    let mut c = EthtoolCoalesce { cmd: ETHTOOL_GCOALESCE, ..Default::default() };
    // SAFETY: GCOALESCE reads and writes a struct ethtool_coalesce.
    unsafe { ethtool(sock, dev, &mut c)? };
    Ok(Coalescing {
        rx_usecs: c.rx_coalesce_usecs,
        rx_frames: c.rx_max_coalesced_frames,
        tx_usecs: c.tx_coalesce_usecs,
        tx_frames: c.tx_max_coalesced_frames,
        adaptive_rx: c.use_adaptive_rx_coalesce != 0,
        adaptive_tx: c.use_adaptive_tx_coalesce != 0,
    })
}

fn c_str(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_have_the_kernels_sizes() {
        assert_eq!(size_of::<EthtoolValue>(), 8);
        assert_eq!(size_of::<EthtoolDrvinfo>(), 196);
        assert_eq!(size_of::<EthtoolCoalesce>(), 23 * 4);
    }

    #[test]
    fn lo_reports_its_offloads() {
        let s = IfSocket::open().expect("socket");
        let (o, notes) = offloads(&s, "lo");
        assert!(notes.is_empty(), "lo's offloads not readable: {notes:?}");
        // The loopback device always has scatter-gather; its checksums are never computed.
        assert_eq!(o.sg, Some(true));
        assert!(o.tso.is_some() && o.gso.is_some() && o.gro.is_some());
        assert!(feature(&s, "no-such-dev0", ETHTOOL_GTSO).is_err());
    }
}
