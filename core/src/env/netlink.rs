//! A minimal NETLINK_ROUTE client: send one request, collect its replies, walk the
//! attributes in them. Just enough for the route and qdisc queries of environment capture;
//! the parsing half works on plain byte slices so it can be tested on captured buffers.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub const RTM_NEWLINK: u16 = 16;
pub const RTM_GETLINK: u16 = 18;
pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_GETROUTE: u16 = 26;
pub const RTM_NEWQDISC: u16 = 36;
pub const RTM_GETQDISC: u16 = 38;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
pub const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_MULTI: u16 = 0x2;
pub const NLM_F_DUMP: u16 = 0x300;

/// struct ifinfomsg: family u8, pad u8, type u16, index i32, flags u32, change u32.
pub const IFINFOMSG_LEN: usize = 16;

/// struct nlmsghdr: len u32, type u16, flags u16, seq u32, pid u32.
const HEADER_LEN: usize = 16;
/// Attribute types carry two flag bits (nested, byte order) above the type proper.
const NLA_TYPE_MASK: u16 = 0x3fff;
/// A reply that does not come within this is a kernel that will not answer.
const RECV_TIMEOUT: Duration = Duration::from_secs(2);
/// The kernel fills dump messages up to about 32 KiB; twice that never truncates.
const RECV_BUFFER: usize = 64 * 1024;

/// Netlink rounds every header, payload and attribute up to 4 bytes.
pub fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// One netlink message inside a received buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    /// What follows the header (for route and tc messages: a family header, then attributes).
    pub payload: &'a [u8],
}

/// Splits a received buffer into its messages. A length field that does not fit the buffer
/// is an error: the buffer was truncated or is not netlink.
pub fn messages(buf: &[u8]) -> Result<Vec<Message<'_>>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + HEADER_LEN <= buf.len() {
        let len = u32_at(buf, at) as usize;
        if len < HEADER_LEN || at + len > buf.len() {
            return Err(format!(
                "netlink message of {len} bytes at offset {at} overruns a {}-byte buffer",
                buf.len()
            ));
        }
        out.push(Message {
            kind: u16::from_ne_bytes([buf[at + 4], buf[at + 5]]),
            flags: u16::from_ne_bytes([buf[at + 6], buf[at + 7]]),
            seq: u32_at(buf, at + 8),
            payload: &buf[at + HEADER_LEN..at + len],
        });
        at += align4(len);
    }
    Ok(out)
}

/// The attributes (rtattr / nlattr: len u16, type u16, value) packed in `buf`, in order.
/// A malformed tail ends the walk rather than failing: what parsed before it is kept.
pub fn attributes(buf: &[u8]) -> Attributes<'_> {
    Attributes { buf, at: 0 }
}

pub struct Attributes<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Attributes<'a> {
    /// (type, value)
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.buf;
        if self.at + 4 > b.len() {
            return None;
        }
        let len = u16::from_ne_bytes([b[self.at], b[self.at + 1]]) as usize;
        let kind = u16::from_ne_bytes([b[self.at + 2], b[self.at + 3]]) & NLA_TYPE_MASK;
        if len < 4 || self.at + len > b.len() {
            return None;
        }
        let value = &b[self.at + 4..self.at + len];
        self.at += align4(len);
        Some((kind, value))
    }
}

/// Appends one attribute to a request body.
pub fn push_attribute(body: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let len = 4 + value.len();
    body.extend_from_slice(&(len as u16).to_ne_bytes());
    body.extend_from_slice(&kind.to_ne_bytes());
    body.extend_from_slice(value);
    body.resize(align4(body.len()), 0);
}

/// A NUL-terminated string attribute value.
pub fn attr_str(value: &[u8]) -> String {
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    String::from_utf8_lossy(&value[..end]).into_owned()
}

pub fn attr_u32(value: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(value.get(..4)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    // Netlink speaks host byte order.
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A NETLINK_ROUTE socket in this process's network namespace.
pub struct Netlink {
    fd: OwnedFd,
    seq: u32,
}

impl Netlink {
    pub fn open() -> io::Result<Netlink> {
        // SAFETY: socket(2) has no memory effects.
        let raw = unsafe {
            libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE)
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let tv = libc::timeval { tv_sec: RECV_TIMEOUT.as_secs() as libc::time_t, tv_usec: 0 };
        // SAFETY: `tv` is a valid timeval of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&raw const tv).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Netlink { fd, seq: 0 })
    }

    /// Sends one request and returns the payloads of the kernel's replies of type
    /// `reply_kind`: every part of a dump, or the single answer of a plain request.
    /// A netlink error reply becomes the io::Error it carries.
    pub fn request(
        &mut self,
        kind: u16,
        flags: u16,
        body: &[u8],
        reply_kind: u16,
    ) -> io::Result<Vec<Vec<u8>>> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut msg = Vec::with_capacity(HEADER_LEN + body.len());
        msg.extend_from_slice(&((HEADER_LEN + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
        msg.extend_from_slice(&seq.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(body);
        // SAFETY: all-zero is a valid sockaddr_nl; pid 0 addresses the kernel.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `msg` and `kernel` are valid for the lengths passed.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&raw const kernel).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }

        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut out = Vec::new();
        loop {
            // SAFETY: `buf` is writable for its whole length.
            let n = unsafe {
                libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC)
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = n as usize;
            if n > buf.len() {
                return Err(io::Error::other(format!(
                    "netlink reply of {n} bytes did not fit {} bytes",
                    buf.len()
                )));
            }
            let msgs = messages(&buf[..n]).map_err(io::Error::other)?;
            for m in msgs {
                if m.seq != seq {
                    continue; // a late answer to an earlier request
                }
                match m.kind {
                    NLMSG_ERROR | NLMSG_DONE => {
                        // Both carry an errno (0 for an ACK or a clean end), negated.
                        let code =
                            m.payload.get(..4).map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                        if code < 0 {
                            return Err(io::Error::from_raw_os_error(-code));
                        }
                        return Ok(out);
                    }
                    k if k == reply_kind => {
                        out.push(m.payload.to_vec());
                        if !dump && m.flags & NLM_F_MULTI == 0 {
                            return Ok(out);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_with_padding() {
        let mut b = Vec::new();
        push_attribute(&mut b, 1, b"noqueue\0");
        push_attribute(&mut b, 4, &7u32.to_ne_bytes());
        push_attribute(&mut b, 9, b"abc"); // 7 bytes: padded to 8
        push_attribute(&mut b, 2, &[]);
        assert_eq!(b.len(), 12 + 8 + 8 + 4);
        let got: Vec<(u16, Vec<u8>)> = attributes(&b).map(|(k, v)| (k, v.to_vec())).collect();
        assert_eq!(got.len(), 4);
        assert_eq!(attr_str(&got[0].1), "noqueue");
        assert_eq!(attr_u32(&got[1].1), Some(7));
        assert_eq!(got[2], (9, b"abc".to_vec()));
        assert_eq!(got[3], (2, vec![]));
    }

    #[test]
    fn a_malformed_tail_ends_the_walk_without_panicking() {
        let mut b = Vec::new();
        push_attribute(&mut b, 1, b"ok\0");
        b.extend_from_slice(&[200, 0, 1, 0, 1, 2]); // claims 200 bytes, has 6
        let got: Vec<u16> = attributes(&b).map(|(k, _)| k).collect();
        assert_eq!(got, vec![1]);
        assert_eq!(attributes(&[1, 0]).count(), 0);
        assert_eq!(attributes(&[2, 0, 1, 0]).count(), 0, "a length under the header size");
    }

    #[test]
    fn nested_and_byteorder_flags_are_masked_off_the_type() {
        let mut b = Vec::new();
        push_attribute(&mut b, 0x8000 | 2, &[0; 4]);
        assert_eq!(attributes(&b).next().map(|(k, _)| k), Some(2));
    }

    #[test]
    fn messages_split_and_reject_overruns() {
        let mut buf = Vec::new();
        for (kind, payload) in [(RTM_NEWQDISC, &b"abcde"[..]), (NLMSG_DONE, &0i32.to_ne_bytes()[..])] {
            let len = HEADER_LEN + payload.len();
            buf.extend_from_slice(&(len as u32).to_ne_bytes());
            buf.extend_from_slice(&kind.to_ne_bytes());
            buf.extend_from_slice(&NLM_F_MULTI.to_ne_bytes());
            buf.extend_from_slice(&5u32.to_ne_bytes());
            buf.extend_from_slice(&0u32.to_ne_bytes());
            buf.extend_from_slice(payload);
            buf.resize(align4(buf.len()), 0);
        }
        let m = messages(&buf).expect("two messages");
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].kind, m[0].seq, m[0].payload), (RTM_NEWQDISC, 5, &b"abcde"[..]));
        assert_eq!(m[1].kind, NLMSG_DONE);
        buf[0] = 250; // the first message now claims more than the buffer holds
        assert!(messages(&buf).is_err());
    }

    #[test]
    fn the_kernel_answers_a_route_dump() {
        let mut nl = Netlink::open().expect("a NETLINK_ROUTE socket");
        let rtmsg = [0u8; 12]; // AF_UNSPEC: every family
        let routes = nl.request(RTM_GETROUTE, NLM_F_DUMP, &rtmsg, RTM_NEWROUTE).expect("a route dump");
        assert!(!routes.is_empty(), "no routes at all, not even the local table");
    }
}
