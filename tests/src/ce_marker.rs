//! A tc classifier that marks every ECN-capable packet CE, for tests that need a path
//! which signals congestion: this kernel has no marking qdisc (no netem, red, fq_codel)
//! and CI has no clang, so the program is four hand-written eBPF instructions loaded with
//! bpf(2) and pinned in a bpffs of the test's own, where `tc ... bpf object-pinned` finds it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// include/uapi/linux/bpf.h: commands, the program type, the helper's id.
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_PIN: libc::c_long = 6;
const BPF_PROG_TYPE_SCHED_CLS: u32 = 3;
const BPF_FUNC_SKB_ECN_SET_CE: i32 = 97;
/// TC_ACT_OK: the packet goes on.
const TC_ACT_OK: i32 = 0;

/// One eBPF instruction (struct bpf_insn): opcode, dst/src registers, offset, immediate.
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

/// The program: bpf_skb_ecn_set_ce(skb) (r1 holds the skb on entry), then return TC_ACT_OK.
const PROGRAM: [Insn; 3] = [
    // BPF_JMP | BPF_CALL
    Insn { code: 0x85, regs: 0, off: 0, imm: BPF_FUNC_SKB_ECN_SET_CE },
    // BPF_ALU64 | BPF_MOV | BPF_K: r0 = TC_ACT_OK
    Insn { code: 0xb7, regs: 0, off: 0, imm: TC_ACT_OK },
    // BPF_JMP | BPF_EXIT
    Insn { code: 0x95, regs: 0, off: 0, imm: 0 },
];

/// union bpf_attr for BPF_PROG_LOAD, up to the fields this loader sets (the kernel takes a
/// shorter attr and reads the rest as zero).
#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
}

/// union bpf_attr for BPF_OBJ_PIN.
#[repr(C)]
#[derive(Default)]
struct ObjPin {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
}

/// The marking program, loaded and pinned in a private bpffs; unpinned, unmounted and
/// closed when dropped.
pub struct CeMarker {
    dir: PathBuf,
    pin: PathBuf,
    fd: libc::c_int,
}

impl CeMarker {
    /// Loads the program and pins it under `dir` (made for it, with a bpffs mounted on it:
    /// `ip netns exec` remounts /sys, so /sys/fs/bpf would not be the same inside), or says
    /// why the kernel would not.
    pub fn load(dir: &Path) -> Result<CeMarker, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let cdir = CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: every pointer is a NUL-terminated string that outlives the call.
        let r = unsafe { libc::mount(c"bpf".as_ptr(), cdir.as_ptr(), c"bpf".as_ptr(), 0, std::ptr::null()) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_dir(dir);
            return Err(format!("cannot mount a bpffs on {}: {e}", dir.display()));
        }
        let mut marker = CeMarker { dir: dir.to_path_buf(), pin: dir.join("ce_marker"), fd: -1 };
        marker.fd = prog_load()?;
        let cpin = CString::new(marker.pin.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let attr = ObjPin { pathname: cpin.as_ptr() as u64, bpf_fd: marker.fd as u32, file_flags: 0 };
        // SAFETY: `attr` is a valid bpf_attr prefix of the size given, its path outlives the call.
        let r = unsafe {
            libc::syscall(libc::SYS_bpf, BPF_OBJ_PIN, &attr as *const ObjPin, std::mem::size_of::<ObjPin>())
        };
        if r < 0 {
            return Err(format!("BPF_OBJ_PIN {}: {}", marker.pin.display(), std::io::Error::last_os_error()));
        }
        Ok(marker)
    }

    /// Where the program is pinned, for `tc filter add ... bpf object-pinned PATH`.
    pub fn pinned(&self) -> &Path {
        &self.pin
    }
}

/// BPF_PROG_LOAD of [`PROGRAM`]; an error carries the verifier's log.
fn prog_load() -> Result<libc::c_int, String> {
    let mut log = vec![0u8; 4096];
    let license = c"GPL";
    let mut name = [0u8; 16];
    name[..9].copy_from_slice(b"ce_marker");
    let attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_SCHED_CLS,
        insn_cnt: PROGRAM.len() as u32,
        insns: PROGRAM.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: name,
        ..ProgLoad::default()
    };
    // SAFETY: `attr` is a valid bpf_attr prefix of the size given; the program, license and
    // log buffer it points to outlive the call, the log writable for `log_size` bytes.
    let fd = unsafe {
        libc::syscall(libc::SYS_bpf, BPF_PROG_LOAD, &attr as *const ProgLoad, std::mem::size_of::<ProgLoad>())
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        return Err(format!("BPF_PROG_LOAD: {e}: {}", String::from_utf8_lossy(&log[..end]).trim()));
    }
    Ok(fd as libc::c_int)
}

impl Drop for CeMarker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pin);
        if self.fd >= 0 {
            // SAFETY: the descriptor is this marker's own, closed once.
            unsafe { libc::close(self.fd) };
        }
        if let Ok(c) = CString::new(self.dir.as_os_str().as_bytes()) {
            // SAFETY: a NUL-terminated path that outlives the call.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
