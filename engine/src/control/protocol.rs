//! Length-prefixed JSON messages: a 4-byte big-endian length, then that many bytes of JSON.
//! Frames are capped, every read has a deadline (set on the socket by the caller), and
//! anything malformed is an error, never a panic.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::env::Environment;
use crate::error::{Error, Result};
use crate::report::SideReport;
use crate::spec::TestSpec;

/// Bumped on any incompatible change; both ends must speak the same version.
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest frame either end accepts. A spec or a side report is a few KiB; latency
/// histograms are deflated.
pub const MAX_FRAME: usize = 1 << 20;

/// Client to server.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    /// Always first. Kept minimal so every version can parse another's.
    Hello { protocol: u32, tool_version: String },
    /// The test to run.
    Test { spec: Box<TestSpec> },
    /// Open the measurement window now.
    Go,
    /// crr: every client cycle has finished, so the server's workers may stop.
    FlowsDone,
}

/// Server to client.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMessage {
    Welcome {
        protocol: u32,
        tool_version: String,
        environment: Box<Environment>,
    },
    /// Data connections may now be opened to `data_port`, each starting with `cookie`.
    Ready {
        data_port: u16,
        cookie: u64,
        /// UDP workloads: one server socket per flow, on these ports in flow order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        udp_ports: Vec<u16>,
    },
    /// The server side's measurements, after its window closed.
    Report {
        side: Box<SideReport>,
    },
    /// The session failed; the server closes it after sending this.
    Error {
        kind: ErrorKind,
        message: String,
    },
}

/// Which exit code an error reply maps to on the client.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Usage,
    Requirement,
    Peer,
    Protocol,
}

impl ErrorKind {
    pub fn of(e: &Error) -> ErrorKind {
        match e {
            Error::Usage(_) => ErrorKind::Usage,
            Error::Requirement(_) => ErrorKind::Requirement,
            Error::Protocol(_) => ErrorKind::Protocol,
            Error::Peer(_) | Error::Io { .. } => ErrorKind::Peer,
        }
    }

    /// The error the client raises for a server's error reply.
    pub fn into_error(self, message: String) -> Error {
        let message = format!("server: {message}");
        match self {
            ErrorKind::Usage => Error::Usage(message),
            ErrorKind::Requirement => Error::Requirement(message),
            ErrorKind::Peer => Error::Peer(message),
            ErrorKind::Protocol => Error::Protocol(message),
        }
    }
}

/// Writes one frame.
pub fn write_frame<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<()> {
    let body = serde_json::to_vec(msg).map_err(|e| Error::Protocol(format!("cannot encode message: {e}")))?;
    if body.len() > MAX_FRAME {
        return Err(Error::Protocol(format!(
            "message of {} bytes is over the {MAX_FRAME}-byte frame cap",
            body.len()
        )));
    }
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame).map_err(|e| io_error("sending a control message", e))?;
    w.flush().map_err(|e| io_error("sending a control message", e))
}

/// Reads one frame and decodes it. `what` names the expected message for errors.
pub fn read_frame<T: DeserializeOwned>(r: &mut impl Read, what: &str) -> Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).map_err(|e| io_error(&format!("waiting for {what}"), e))?;
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(Error::Protocol(format!(
            "frame of {len} bytes (while waiting for {what}) is outside 1..={MAX_FRAME}"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).map_err(|e| io_error(&format!("reading {what}"), e))?;
    decode(&body, what)
}

/// Decodes a frame body: invalid UTF-8, invalid JSON and the wrong shape are all errors.
pub fn decode<T: DeserializeOwned>(body: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(body)
        .map_err(|e| Error::Protocol(format!("malformed message while waiting for {what}: {e}")))
}

fn io_error(what: &str, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            Error::Peer(format!("timed out {what}: the peer stopped answering"))
        }
        io::ErrorKind::UnexpectedEof => {
            Error::Peer(format!("the peer closed the control connection while {what}"))
        }
        _ => Error::Peer(format!("control connection failed while {what}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_roundtrip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &ClientMessage::Go).unwrap();
        let m: ClientMessage = read_frame(&mut &buf[..], "go").unwrap();
        assert!(matches!(m, ClientMessage::Go));
    }

    #[test]
    fn oversized_empty_and_garbage_frames_are_errors() {
        let huge = u32::MAX.to_be_bytes();
        assert!(matches!(read_frame::<ClientMessage>(&mut &huge[..], "x"), Err(Error::Protocol(_))));
        let empty = 0u32.to_be_bytes();
        assert!(matches!(read_frame::<ClientMessage>(&mut &empty[..], "x"), Err(Error::Protocol(_))));
        for body in
            [&b"\xff\xfe"[..], b"{not json", br#"{"type":"launch_missiles"}"#, br#"{"type":"hello"}"#, b"[]"]
        {
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(body);
            assert!(
                matches!(read_frame::<ClientMessage>(&mut &f[..], "x"), Err(Error::Protocol(_))),
                "{body:?}"
            );
        }
        let short = [0u8, 0, 0, 10, b'{'];
        assert!(matches!(read_frame::<ClientMessage>(&mut &short[..], "x"), Err(Error::Peer(_))));
    }
}
