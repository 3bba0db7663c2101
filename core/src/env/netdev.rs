//! Interface ioctls on a plain socket: an interface's name from its index, its flags and
//! its MTU, and the `struct ifreq` that the ethtool commands also travel in. A socket's
//! ioctls act on the network namespace the socket was made in, which is this process's,
//! the same as the data sockets'.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SIOCGIFNAME: libc::c_ulong = 0x8910;
const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
const SIOCGIFMTU: libc::c_ulong = 0x8921;
const IFNAMSIZ: usize = 16;

/// The union in `struct ifreq` (linux/if.h): 24 bytes on 64-bit, the size of its largest
/// member, `struct ifmap`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union IfReqData {
    pub ifindex: libc::c_int,
    pub flags: libc::c_short,
    pub mtu: libc::c_int,
    pub data: *mut libc::c_void,
    _size: [u64; 3],
}

/// `struct ifreq`: an interface name and one value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct IfReq {
    pub name: [u8; IFNAMSIZ],
    pub data: IfReqData,
}

impl IfReq {
    /// An ifreq naming `dev`; an over-long name is an error, not a truncation.
    pub fn named(dev: &str) -> io::Result<IfReq> {
        let b = dev.as_bytes();
        if b.is_empty() || b.len() >= IFNAMSIZ || b.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{dev}' is not an interface name"),
            ));
        }
        let mut name = [0u8; IFNAMSIZ];
        name[..b.len()].copy_from_slice(b);
        Ok(IfReq { name, data: IfReqData { _size: [0; 3] } })
    }
}

/// A datagram socket used only for interface ioctls.
pub struct IfSocket {
    fd: OwnedFd,
}

impl IfSocket {
    pub fn open() -> io::Result<IfSocket> {
        // SAFETY: socket(2) has no memory effects.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        Ok(IfSocket { fd: unsafe { OwnedFd::from_raw_fd(raw) } })
    }

    /// Issues `request` with `req`, which the kernel reads and may fill in.
    ///
    /// # Safety
    /// `request` must be an interface ioctl that takes a `struct ifreq`, and if it reads
    /// through `req.data.data` that pointer must be valid for what the command accesses.
    pub unsafe fn ioctl(&self, request: libc::c_ulong, req: &mut IfReq) -> io::Result<()> {
        // SAFETY: `req` is a valid, writable ifreq; the caller vouches for the rest.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), request as _, req as *mut IfReq) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// The interface name of `ifindex`.
    pub fn name_of(&self, ifindex: u32) -> io::Result<String> {
        let mut req = IfReq { name: [0; IFNAMSIZ], data: IfReqData { _size: [0; 3] } };
        req.data.ifindex = ifindex as libc::c_int;
        // SAFETY: SIOCGIFNAME takes an ifreq and touches nothing else.
        unsafe { self.ioctl(SIOCGIFNAME, &mut req)? };
        let end = req.name.iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
        Ok(String::from_utf8_lossy(&req.name[..end]).into_owned())
    }

    pub fn flags(&self, dev: &str) -> io::Result<u32> {
        let mut req = IfReq::named(dev)?;
        // SAFETY: SIOCGIFFLAGS takes an ifreq and touches nothing else.
        unsafe { self.ioctl(SIOCGIFFLAGS, &mut req)? };
        // SAFETY: the kernel filled the flags member; ifr_flags is a short of bits.
        Ok(unsafe { req.data.flags } as u16 as u32)
    }

    pub fn is_loopback(&self, dev: &str) -> io::Result<bool> {
        Ok(self.flags(dev)? & libc::IFF_LOOPBACK as u32 != 0)
    }

    pub fn mtu(&self, dev: &str) -> io::Result<u32> {
        let mut req = IfReq::named(dev)?;
        // SAFETY: SIOCGIFMTU takes an ifreq and touches nothing else.
        unsafe { self.ioctl(SIOCGIFMTU, &mut req)? };
        // SAFETY: the kernel filled the mtu member.
        Ok(unsafe { req.data.mtu } as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifreq_has_the_kernels_size() {
        // 16 bytes of name and a 24-byte union: what the kernel copies in and out.
        assert_eq!(size_of::<IfReq>(), 40);
    }

    #[test]
    fn names_are_checked_not_truncated() {
        assert!(IfReq::named("lo").is_ok());
        assert!(IfReq::named("").is_err());
        assert!(IfReq::named("a-name-far-too-long").is_err());
        assert!(IfReq::named("nul\0inside").is_err());
    }

    #[test]
    fn lo_is_loopback_with_an_mtu() {
        let s = IfSocket::open().expect("socket");
        assert!(s.is_loopback("lo").expect("lo's flags"));
        assert!(s.mtu("lo").expect("lo's mtu") >= 1280);
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert_eq!(s.name_of(index).expect("a name"), "lo");
        assert!(s.mtu("no-such-dev0").is_err());
    }
}
