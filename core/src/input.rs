//! Files a user names as input: a plan, a report, a key, a payload file. Each is opened
//! without blocking, so a FIFO or a device cannot hold the open; checked to be a regular
//! file (or stdin, where a command takes `-`); and read up to a cap that belongs to its
//! kind, so no input can wedge the tool or grow it without bound. A payload file is
//! streamed, not read here: it gets the open and the check ([`open_regular`]) and no cap.

use std::fs::{File, FileType, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{Error, Result};
use crate::units::format_bytes;

/// A kind of input: what messages call it, and the most of it that is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputKind {
    pub what: &'static str,
    pub cap: u64,
}

/// A --json report, a sweep's JSON or --profile-out's folded stacks (diff, plot).
pub const REPORT: InputKind = InputKind { what: "report", cap: 1 << 30 };
/// A plan (TOML): room for 100,000 tests of a few hundred bytes each.
pub const PLAN: InputKind = InputKind { what: "plan", cap: 64 << 20 };
/// A key file (`--psk-file`, a plan's `key_file`): a key is at most 4 KiB.
pub const KEY: InputKind = InputKind { what: "key file", cap: 8 << 10 };
/// netperf's output selection file (-k, -o, -O): a list of names.
pub const SELECTION: InputKind = InputKind { what: "output selection file", cap: 1 << 20 };

/// Opens `path` (a `what`, for messages) for reading and checks that it is a regular file,
/// without ever waiting in open(): the path's type is checked before it is opened (a FIFO
/// or a device is refused unopened), the open is non-blocking, and the opened file's own
/// type is checked again (the path may have changed in between). The file comes back in
/// blocking mode: O_NONBLOCK only keeps open() from waiting.
pub fn open_regular(path: &Path, what: &str) -> Result<File> {
    let meta = std::fs::metadata(path).map_err(|e| cannot_open(path, what, e))?;
    check_regular(path, what, meta.file_type())?;
    let file = open_nonblocking(path, what)?;
    let meta = file.metadata().map_err(|e| cannot_open(path, what, e))?;
    check_regular(path, what, meta.file_type())?;
    set_blocking(&file).map_err(|e| cannot_open(path, what, e))?;
    Ok(file)
}

/// The whole of the regular file at `path`, if it is at most `kind.cap` bytes.
pub fn read(path: &Path, kind: InputKind) -> Result<Vec<u8>> {
    read_from(open_regular(path, kind.what)?, path, kind)
}

/// [`read`] of a file already opened with [`open_regular`] (to look at its metadata first).
pub fn read_from(file: File, path: &Path, kind: InputKind) -> Result<Vec<u8>> {
    let size = file.metadata().map_err(|e| cannot_open(path, kind.what, e))?.len();
    if size > kind.cap {
        return Err(too_big(&path.display().to_string(), kind, &format_bytes(size)));
    }
    read_capped(file, &path.display().to_string(), kind)
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String> {
    text(read(path, kind)?, &path.display().to_string(), kind)
}

/// [`read_text`], where `-` is stdin (read up to the same cap; a pipe is what stdin is for).
pub fn read_text_or_stdin(path: &Path, kind: InputKind) -> Result<String> {
    read_text_or(path, kind, std::io::stdin().lock())
}

fn read_text_or(path: &Path, kind: InputKind, stdin: impl Read) -> Result<String> {
    if path.as_os_str() == "-" {
        return text(read_capped(stdin, "stdin", kind)?, "stdin", kind);
    }
    read_text(path, kind)
}

/// The first `len` bytes (or fewer, if it ends first) of a regular file or a character
/// device (netperf's fill file, which may be /dev/urandom). Both the open and the reads
/// are non-blocking, so a terminal or a device with nothing to give fails at once.
pub fn read_prefix(path: &Path, what: &str, len: u64) -> Result<Vec<u8>> {
    let device_or_file = |t: FileType| t.is_file() || t.is_char_device();
    let meta = std::fs::metadata(path).map_err(|e| cannot_open(path, what, e))?;
    if !device_or_file(meta.file_type()) {
        check_regular(path, what, meta.file_type())?;
    }
    let file = open_nonblocking(path, what)?;
    let meta = file.metadata().map_err(|e| cannot_open(path, what, e))?;
    if !device_or_file(meta.file_type()) {
        check_regular(path, what, meta.file_type())?;
    }
    let mut bytes = Vec::new();
    file.take(len).read_to_end(&mut bytes).map_err(|e| {
        Error::Usage(format!("cannot read the {what} '{}': {e}: give a readable file", path.display()))
    })?;
    Ok(bytes)
}

fn open_nonblocking(path: &Path, what: &str) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| cannot_open(path, what, e))
}

fn set_blocking(file: &File) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor `file` owns; it reads flags and touches no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: F_SETFL on a descriptor `file` owns, with the flags it had less O_NONBLOCK.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// At most `kind.cap` bytes of `r`; more is refused (the input may have grown since it was
/// sized, or be a pipe).
fn read_capped(r: impl Read, shown: &str, kind: InputKind) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(kind.cap.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| {
        Error::Usage(format!("cannot read the {} '{shown}': {e}: give a readable file", kind.what))
    })?;
    if bytes.len() as u64 > kind.cap {
        return Err(too_big(shown, kind, &format!("over {}", format_bytes(kind.cap))));
    }
    Ok(bytes)
}

fn text(bytes: Vec<u8>, shown: &str, kind: InputKind) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!(
            "the {} '{shown}' is not UTF-8 text (invalid byte at offset {}): give the {} as text",
            kind.what,
            e.utf8_error().valid_up_to(),
            kind.what
        ))
    })
}

fn check_regular(path: &Path, what: &str, t: FileType) -> Result<()> {
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(Error::Usage(format!(
        "the {what} '{}' is {kind}, not a regular file, so it could block or never end: give a regular file",
        path.display()
    )))
}

fn too_big(shown: &str, kind: InputKind, size: &str) -> Error {
    Error::Usage(format!(
        "the {} '{shown}' is {size}, more than the {} a {} may be: give the right file, or split it",
        kind.what,
        format_bytes(kind.cap),
        kind.what
    ))
}

fn cannot_open(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Usage(format!(
        "cannot read the {what} '{}': {e}: check the path and its permissions",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::io::Cursor;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    /// A fresh directory of this test process, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            static N: AtomicU32 = AtomicU32::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("ringperf-input-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("scratch dir");
            Scratch(dir)
        }

        fn fifo(&self) -> PathBuf {
            let p = self.0.join("fifo");
            let c = CString::new(p.as_os_str().as_bytes()).expect("path");
            // SAFETY: mkfifo reads a NUL-terminated path that lives across the call.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
            p
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn refused(r: Result<impl std::fmt::Debug>, says: &str) {
        match r {
            Err(Error::Usage(m)) => assert!(m.contains(says), "{m:?} does not say {says:?}"),
            other => panic!("expected a usage error saying {says:?}, got {other:?}"),
        }
    }

    /// A FIFO with no writer would hold a blocking open() for ever: it is refused at once,
    /// by every reader, and so is a directory.
    #[test]
    fn a_fifo_or_a_directory_is_refused_at_once() {
        let dir = Scratch::new();
        let fifo = dir.fifo();
        let began = Instant::now();
        refused(read(&fifo, PLAN), "is a FIFO, not a regular file");
        refused(open_regular(&fifo, "payload file"), "the payload file");
        refused(read_prefix(&fifo, "fill file", 16), "is a FIFO");
        refused(read_text_or(&fifo, REPORT, Cursor::new(b"{}")), "is a FIFO");
        refused(read(&dir.0, REPORT), "is a directory");
        // Bounded only so a regression fails instead of hanging the suite.
        assert!(began.elapsed() < Duration::from_secs(5));
    }

    /// /dev/zero never ends: as a capped input it is refused before a byte is read; as a
    /// fill file (a device, read non-blocking) only the prefix asked for is read.
    #[test]
    fn dev_zero_is_refused_as_an_input_and_read_only_to_its_prefix_as_a_fill() {
        let zero = Path::new("/dev/zero");
        refused(read(zero, REPORT), "is a character device");
        refused(read_text(zero, PLAN), "is a character device");
        refused(open_regular(zero, "payload file"), "is a character device");
        assert_eq!(read_prefix(zero, "fill file", 4096).expect("prefix"), vec![0u8; 4096]);
    }

    /// A regular file over its kind's cap is refused naming both sizes; one at the cap is
    /// read whole, and is returned blocking.
    #[test]
    fn a_file_over_its_cap_is_refused_and_one_within_it_is_read_whole() {
        let dir = Scratch::new();
        let tiny = InputKind { what: "plan", cap: 16 };
        let path = dir.0.join("plan.toml");
        std::fs::write(&path, b"0123456789abcdef").expect("write");
        assert_eq!(read(&path, tiny).expect("at the cap"), b"0123456789abcdef");
        std::fs::write(&path, b"0123456789abcdefX").expect("write");
        refused(read(&path, tiny), "17 B, more than the 16 B a plan may be");
        let f = open_regular(&path, "payload file").expect("regular");
        // SAFETY: F_GETFL on a descriptor the File owns.
        let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0, "the payload file is handed on blocking");
        std::fs::write(&path, [0xff, 0xfe]).expect("write");
        refused(read_text(&path, tiny), "is not UTF-8 text");
        refused(read(&dir.0.join("missing"), tiny), "cannot read the plan");
    }

    /// `-` is stdin, read to the same cap.
    #[test]
    fn a_dash_reads_stdin_to_the_cap() {
        let tiny = InputKind { what: "report", cap: 8 };
        assert_eq!(
            read_text_or(Path::new("-"), tiny, Cursor::new(b"{\"a\":1}")).expect("stdin"),
            "{\"a\":1}"
        );
        refused(read_text_or(Path::new("-"), tiny, Cursor::new(b"{\"a\":12345}")), "'stdin' is over 8 B");
    }
}
