//! Every output the CLI writes for its user goes through here: standard output and the files
//! that flags name (--plot, sweep's --output, --profile-out). Nothing is written and then
//! forgotten: a write that fails is said on stderr, naming the output and the reason, and
//! the exit code says so (coreutils' rule), while the command's other outputs are still
//! written, so what was measured survives wherever it can.
//!
//! Exit codes: [`WRITE_FAILED`] (1, as coreutils) for an output that could not be written, and
//! [`CLOSED_PIPE`] (141) when standard output's reader went away (`| head`): the status a shell
//! shows for a process that SIGPIPE ended, as `yes | head` ends. Rust ignores SIGPIPE, so the
//! write returns EPIPE instead of killing the process, and a running test is stopped the
//! way Ctrl-C stops it (see [`crate::interrupt::Stopper`]).
//!
//! Files: an existing output that is not a regular file (a device node such as /dev/null, a
//! FIFO, a socket) is written into, never replaced. A regular file, or a new path, gets its
//! text in a temporary file beside it, synced and renamed over it, so that a reader (or a
//! Ctrl-C) never meets half a document; on any error the temporary file is removed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Exit code when an output could not be written (coreutils' convention).
pub const WRITE_FAILED: i32 = 1;

/// Exit code when standard output's reader closed it: 128 + SIGPIPE, what a shell reports
/// for a filter that a closed pipe ended.
pub const CLOSED_PIPE: i32 = 141;

/// The first output that failed, for the exit code (later failures are said, not kept).
static FIRST_FAILURE: Mutex<Option<Failure>> = Mutex::new(None);

/// Whether descriptor 1 was closed when the process started. Rust's runtime opens
/// /dev/null on a closed standard descriptor before `main`, so that writes to it would
/// succeed and lose the report without a word: the binary looks first (see main.rs) and
/// says so through [`stdout_closed_at_start`].
static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Marks standard output as closed since the start: every write to it then fails (EBADF).
pub fn stdout_closed_at_start() {
    STDOUT_CLOSED_AT_START.store(true, Ordering::Relaxed);
}

/// Whether a write to standard output failed.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// The program name on error lines (`netperf` when invoked as netperf).
static PROGRAM: Mutex<&'static str> = Mutex::new("ringperf");

/// An output that could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// "writing the report to standard output: No space left on device".
    pub message: String,
    /// Standard output's reader went away (EPIPE).
    pub closed_pipe: bool,
}

/// Names this program on the error lines this module prints.
pub fn set_program(name: &'static str) {
    *PROGRAM.lock().unwrap_or_else(|p| p.into_inner()) = name;
}

/// Writes `text` to standard output and flushes it. `what` names the text for the error
/// line ("the report", "an interval line"). A failure is said on stderr (except a closed
/// pipe, whose reader chose to stop), kept for the exit code, and returned.
pub fn stdout(what: &str, text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    let written = if STDOUT_CLOSED_AT_START.load(Ordering::Relaxed) {
        Err(io::Error::from_raw_os_error(libc::EBADF))
    } else {
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    match written {
        Ok(()) => Ok(()),
        Err(e) => {
            STDOUT_FAILED.store(true, Ordering::Relaxed);
            Err(failed(&format!("writing {what} to standard output"), &e))
        }
    }
}

/// Writes a log line to standard error; a failure is kept for the exit code (and said
/// nowhere: standard error is what failed).
pub fn log(line: &str) -> Result<(), Failure> {
    let mut err = io::stderr().lock();
    match err.write_all(line.as_bytes()).and_then(|()| err.flush()) {
        Ok(()) => Ok(()),
        Err(e) => Err(keep(Failure {
            message: format!("writing the log to standard error: {}", reason(&e)),
            closed_pipe: e.kind() == ErrorKind::BrokenPipe,
        })),
    }
}

/// Whether standard output has already failed (later writes would only fail again).
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// The exit code of a command whose own result is `code`: an output that could not be
/// written decides it, whatever the run gave, since its user did not get what it measured.
pub fn exit_code(code: i32) -> i32 {
    match &*FIRST_FAILURE.lock().unwrap_or_else(|p| p.into_inner()) {
        Some(f) if f.closed_pipe => CLOSED_PIPE,
        Some(_) => WRITE_FAILED,
        None => code,
    }
}

/// Records and says a failed output: `doing` is "writing X to Y".
fn failed(doing: &str, e: &io::Error) -> Failure {
    let closed_pipe = e.kind() == ErrorKind::BrokenPipe;
    let f = Failure { message: format!("{doing}: {}", reason(e)), closed_pipe };
    if !closed_pipe {
        let program = *PROGRAM.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(io::stderr(), "{program}: {}", f.message);
    }
    keep(f)
}

/// Keeps `f` for the exit code if it is the first failure.
fn keep(f: Failure) -> Failure {
    FIRST_FAILURE.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| f.clone());
    f
}

/// The OS's words for `e`, without Rust's " (os error 28)".
fn reason(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(at) => s[..at].to_string(),
        None => s,
    }
}

/// Writes `text` to the file at `path` whole (see the module's note on files); `what` names
/// it for the error line ("the chart", "the sweep's JSON"). A failure is said on stderr,
/// kept for the exit code, and returned; no temporary file is left behind.
pub fn file(path: &Path, what: &str, text: &str) -> Result<(), Failure> {
    write_file(path, text.as_bytes())
        .map_err(|e| failed(&format!("writing {what} to '{}'", path.display()), &e))
}

/// Whether writing `path` replaces it (a regular file, or nothing there yet), so that it
/// may be rewritten as a run goes; other outputs (a device, a FIFO) are streams, written once.
pub fn replaces(path: &Path) -> bool {
    match fs::metadata(path) {
        Ok(m) => m.is_file(),
        Err(_) => true,
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => replace(path, Some(m.permissions().mode()), bytes),
        Ok(m) => write_into(path, m.file_type().is_fifo(), bytes),
        Err(e) if e.kind() == ErrorKind::NotFound => replace(path, None, bytes),
        Err(e) => Err(e),
    }
}

/// Writes into an existing non-regular file (a device node, a FIFO), never replacing it. A
/// FIFO that nobody reads is an error at once rather than a wait for ever.
fn write_into(path: &Path, fifo: bool, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| {
        if fifo && e.raw_os_error() == Some(libc::ENXIO) {
            io::Error::other("no process is reading this FIFO")
        } else {
            e
        }
    })?;
    blocking(&f)?;
    f.write_all(bytes)?;
    f.flush()
}

/// Clears O_NONBLOCK on `f`, set only so that opening a FIFO cannot wait.
fn blocking(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor `f` owns; it reads flags and touches no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: F_SETFL on the same descriptor with its own flags minus O_NONBLOCK.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes a temporary file beside `path` (its symlinks followed, so a link stays a link),
/// syncs it, gives it `mode` (the replaced file's) and renames it over `path`.
fn replace(path: &Path, mode: Option<u32>, bytes: &[u8]) -> io::Result<()> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let tmp = temp_beside(&target)?;
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).mode(0o666).open(&tmp)?;
        if let Some(mode) = mode {
            f.set_permissions(fs::Permissions::from_mode(mode & 0o7777))?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, &target)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// A name for a temporary file in `target`'s directory that no other run takes:
/// `.NAME.ringperf-PID-N.tmp`.
fn temp_beside(target: &Path) -> io::Result<PathBuf> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "the path names no file"))?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".ringperf-{}-{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    Ok(target.with_file_name(tmp))
}

/// Prints `s` (`what`, for the error line if standard output fails: see [`stdout`]).
pub(crate) fn print(what: &str, s: &str) {
    let _ = stdout(what, s);
}

/// Prints clap's --help or --version text (coloured on a terminal, as clap would).
pub(crate) fn print_help(e: &clap::Error) {
    use std::io::IsTerminal;
    let text =
        if std::io::stdout().is_terminal() { e.render().ansi().to_string() } else { e.render().to_string() };
    print("the help", &text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringperf-output-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_regular_file_is_replaced_whole_keeping_its_mode_and_its_link() {
        let d = scratch("regular");
        let p = d.join("out.json");
        write_file(&p, b"first").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"first", "a new path is created");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write_file(&p, b"second").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second");
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640, "the mode is kept");
        let link = d.join("link.json");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        write_file(&link, b"third").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(fs::read(&p).unwrap(), b"third", "the link's target is written");
        assert_eq!(entries(&d), ["link.json", "out.json"], "no temporary file is left");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_device_is_written_into_and_a_full_one_is_an_error() {
        write_file(Path::new("/dev/null"), b"x").unwrap();
        assert!(
            fs::metadata("/dev/null").unwrap().file_type().is_char_device(),
            "/dev/null is still a device"
        );
        if Path::new("/dev/full").exists() {
            let e = write_file(Path::new("/dev/full"), b"x").unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        }
    }

    #[test]
    fn a_fifo_nobody_reads_is_an_error_at_once_and_stays_a_fifo() {
        let d = scratch("fifo");
        let p = d.join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = write_file(&p, b"x").unwrap_err();
        assert!(e.to_string().contains("no process is reading"), "{e}");
        assert!(fs::metadata(&p).unwrap().file_type().is_fifo(), "the FIFO was replaced");
        assert!(!replaces(&p) && replaces(&d.join("new")));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file_and_names_the_path() {
        let d = scratch("fail");
        // A non-empty directory where the file should be: the rename over it fails after
        // the temporary file was written.
        let p = d.join("taken");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("inside"), b"").unwrap();
        assert!(replace(&p, None, b"x").is_err());
        assert_eq!(entries(&d), ["taken"], "a temporary file was left");
        let f = file(&p, "the chart", "x").unwrap_err();
        assert!(f.message.starts_with(&format!("writing the chart to '{}': ", p.display())), "{}", f.message);
        assert!(!f.closed_pipe);
        assert_eq!(entries(&d), ["taken"], "a temporary file was left");
        assert_eq!(exit_code(0), WRITE_FAILED, "a failed output decides the exit code");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_os_reason_is_given_without_its_number() {
        assert_eq!(reason(&io::Error::from_raw_os_error(libc::ENOSPC)), "No space left on device");
    }
}
