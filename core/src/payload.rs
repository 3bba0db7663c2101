//! Where a sending side's payload comes from: as the host that builds or runs a spec knows
//! it ([`Payload`]), and as it travels between hosts ([`WirePayload`], in a
//! [`crate::spec::WireSpec`]). The wire form has no variant that names a path, so no peer
//! can make this host open a file: it can name only a label that this host's operator
//! listed (`serve --payload-file LABEL=PATH`, [`PayloadFiles`]). The one conversion between
//! the two forms, where labels are resolved, is the control plane's (`ringperf_control::wire`).

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::setting::{Setting, Token};
use crate::text::peer_text;

/// The serve setting that lists payload files, for messages that tell an operator what to do.
pub const PAYLOAD_FILES: Token = Setting::ServePayloadFiles.token();

/// The longest label.
pub const MAX_LABEL_LEN: usize = 64;

/// A side's payload as this host knows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// ringperf's pattern, spliced from a memfd.
    #[default]
    Pattern,
    /// A file of this host: one its user named (`-F`), or a listed file a label resolved to.
    /// It never leaves this host.
    File(PathBuf),
    /// The file that the operator of the host running the side listed under this label;
    /// resolved there.
    Label(String),
}

/// A side's payload as it travels: the pattern or a label, never a path.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum WirePayload {
    #[default]
    Pattern,
    Label(String),
}

/// A file an operator lets controllers have this host send, under a label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayloadFile {
    pub label: String,
    pub path: PathBuf,
}

impl PayloadFile {
    /// `LABEL=PATH`, as `serve --payload-file` takes it.
    pub fn parse(arg: &str) -> Result<PayloadFile> {
        let Some((label, path)) = arg.split_once('=') else {
            return Err(Error::Usage(format!(
                "{PAYLOAD_FILES} '{arg}' has no label: give LABEL=PATH, e.g. big=/srv/payload.bin"
            )));
        };
        check_label(label)?;
        if path.is_empty() {
            return Err(Error::Usage(format!("{PAYLOAD_FILES} {label}= names no file: give LABEL=PATH")));
        }
        Ok(PayloadFile { label: label.to_string(), path: PathBuf::from(path) })
    }
}

impl fmt::Display for PayloadFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' ({})", self.label, self.path.display())
    }
}

/// A label: 1 to [`MAX_LABEL_LEN`] letters, digits, `.`, `_` or `-`.
pub fn check_label(label: &str) -> Result<()> {
    let ok = !label.is_empty()
        && label.len() <= MAX_LABEL_LEN
        && label.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "payload label '{}' is not a label: use 1 to {MAX_LABEL_LEN} letters, digits, '.', '_' or '-'",
        peer_text(label)
    )))
}

/// The files an operator listed (`serve --payload-file LABEL=PATH`), each checked when the
/// server starts: a regular file, readable, not empty. A session opens its file again when
/// it sends it, non-blocking and with the same checks, so the operator may replace a file
/// without a restart, and a path that became a FIFO or vanished fails that session only.
#[derive(Clone, Debug, Default)]
pub struct PayloadFiles {
    files: Vec<PayloadFile>,
}

impl PayloadFiles {
    /// Checks every file now, and that no label is listed twice.
    pub fn new(files: Vec<PayloadFile>) -> Result<PayloadFiles> {
        for (i, f) in files.iter().enumerate() {
            if files[..i].iter().any(|g| g.label == f.label) {
                return Err(Error::Usage(format!(
                    "{PAYLOAD_FILES}: label '{}' is given twice: give each file its own label",
                    f.label
                )));
            }
            check_label(&f.label)?;
            let what = format!("{PAYLOAD_FILES} {}", f.label);
            let opened = crate::input::open_regular(&f.path, &what)?;
            let len =
                opened.metadata().map_err(|e| Error::io(format!("reading the size of {what}"), e))?.len();
            if len == 0 {
                return Err(Error::Usage(format!(
                    "{what}: '{}' is empty: give a file with payload in it",
                    f.path.display()
                )));
            }
        }
        Ok(PayloadFiles { files })
    }

    /// The list as given, without the checks [`PayloadFiles::new`] makes at start (a
    /// session checks its file again when it opens it): for tests of what uses the list.
    pub fn unchecked(files: Vec<PayloadFile>) -> PayloadFiles {
        PayloadFiles { files }
    }

    pub fn iter(&self) -> impl Iterator<Item = &PayloadFile> {
        self.files.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The file listed under `label`, or an error that names the labels there are and no
    /// path (what goes back to a peer); `host` is what this host is to that peer.
    pub fn get(&self, label: &str, host: &str) -> Result<&PayloadFile> {
        if let Some(f) = self.files.iter().find(|f| f.label == label) {
            return Ok(f);
        }
        let has = if self.files.is_empty() {
            "it lists none".to_string()
        } else {
            let labels: Vec<&str> = self.files.iter().map(|f| f.label.as_str()).collect();
            format!("it lists {}", labels.join(", "))
        };
        Err(Error::Usage(format!(
            "this {host} has no payload file labelled '{}' ({has}): its operator lists them with `ringperf serve {PAYLOAD_FILES} LABEL=PATH`",
            peer_text(label)
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn payload_file_arguments_and_labels() {
        let f = PayloadFile::parse("big=/srv/a=b.bin").expect("parse");
        assert_eq!((f.label.as_str(), f.path.as_path()), ("big", Path::new("/srv/a=b.bin")));
        for bad in ["/srv/x", "=x", "a b=/x", "big=", &format!("{}=/x", "a".repeat(65))] {
            assert!(PayloadFile::parse(bad).is_err(), "{bad} was taken");
        }
        // Checked at start: a missing file, a directory or a device is refused.
        for path in ["/nonexistent/ringperf", "/", "/dev/zero"] {
            let e = PayloadFiles::new(vec![PayloadFile { label: "x".into(), path: path.into() }]);
            assert!(e.is_err(), "{path} was listed");
        }
        let exe = std::env::current_exe().expect("exe");
        let twice = vec![
            PayloadFile { label: "x".into(), path: exe.clone() },
            PayloadFile { label: "x".into(), path: exe.clone() },
        ];
        assert!(PayloadFiles::new(twice).unwrap_err().to_string().contains("given twice"));
        let one = PayloadFiles::new(vec![PayloadFile { label: "x".into(), path: exe.clone() }]).expect("ok");
        assert_eq!(one.get("x", "agent").expect("listed").path, exe);
    }
}
