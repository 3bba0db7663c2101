//! Where a sending side's payload comes from: as the host that builds or runs a spec knows
//! it ([`Payload`]), and as it travels between hosts ([`WirePayload`], in a [`WireSpec`]).
//! The wire form has no variant that names a path, so no peer can make this host open a
//! file: it can name only a label that this host's operator listed
//! (`serve --payload-file LABEL=PATH`, [`PayloadFiles`]). A spec becomes wire in one
//! function ([`TestSpec::to_wire`]) and wire becomes local in one ([`WireSpec::into_local`]),
//! where labels are resolved.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::control::text::peer_text;
use crate::error::{Error, Result};
use crate::spec::{SpecSide, TestSpec};

/// The serve flag that lists payload files, for messages that tell an operator what to do.
pub const PAYLOAD_FILE_FLAG: &str = "--payload-file";

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

/// A test spec as it travels between hosts.
pub type WireSpec = TestSpec<WirePayload>;

/// Who a spec is sent to, which decides what its payloads may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipient {
    /// The server of a direct test: it runs the remote side. The client's own file stays
    /// on the client (the server receives whatever comes, and is told the pattern).
    Server,
    /// An agent that runs the client side for a controller: it sends only the pattern or
    /// a file its operator listed, so a path is refused.
    Agent,
}

impl TestSpec {
    /// This spec in its wire form for `to`, or why it cannot be sent: a path for another
    /// host to open.
    pub fn to_wire(&self, to: Recipient) -> Result<WireSpec> {
        // Why the engines are the ones they are is this host's to report; no peer acts on it.
        let local = TestSpec { engine_choice: None, ..self.clone() };
        local.map_payloads(|side, p| match (p, side, to) {
            (Payload::Pattern, ..) => Ok(WirePayload::Pattern),
            (Payload::Label(l), ..) => Ok(WirePayload::Label(l)),
            (Payload::File(_), SpecSide::Local, Recipient::Server) => Ok(WirePayload::Pattern),
            (Payload::File(_), SpecSide::Remote, _) => Err(Error::Usage(
                "a server never opens a file a client names: it sends the pattern, or a file its operator listed, named by its label".into(),
            )),
            (Payload::File(_), SpecSide::Local, Recipient::Agent) => Err(Error::Usage(format!(
                "a payload file of this host cannot be sent by an agent, which never opens a path a controller names: have the agent's operator list the file (`ringperf serve {PAYLOAD_FILE_FLAG} LABEL=PATH`) and name its label"
            ))),
        })
    }
}

impl WireSpec {
    /// The spec as this host runs it, `own` being the side it runs: that side's label
    /// becomes the file its operator listed under it (refused if there is none), the other
    /// side's stays a label (the host that runs it resolves it). Also the listed file
    /// chosen, for the log. This is the one place a spec from the wire becomes local.
    pub fn into_local(self, own: SpecSide, files: &PayloadFiles) -> Result<(TestSpec, Option<PayloadFile>)> {
        let mut chosen = None;
        let spec = self.map_payloads(|side, p| match p {
            WirePayload::Pattern => Ok(Payload::Pattern),
            WirePayload::Label(l) if side != own => Ok(Payload::Label(l)),
            WirePayload::Label(l) => {
                let host = if own == SpecSide::Local { "agent" } else { "server" };
                let f = files.get(&l, host)?;
                chosen = Some(f.clone());
                Ok(Payload::File(f.path.clone()))
            }
        })?;
        Ok((spec, chosen))
    }
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
                "{PAYLOAD_FILE_FLAG} '{arg}' has no label: give LABEL=PATH, e.g. big=/srv/payload.bin"
            )));
        };
        check_label(label)?;
        if path.is_empty() {
            return Err(Error::Usage(format!("{PAYLOAD_FILE_FLAG} {label}= names no file: give LABEL=PATH")));
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
                    "{PAYLOAD_FILE_FLAG}: label '{}' is given twice: give each file its own label",
                    f.label
                )));
            }
            check_label(&f.label)?;
            let what = format!("{PAYLOAD_FILE_FLAG} {}", f.label);
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
            "this {host} has no payload file labelled '{}' ({has}): its operator lists them with `ringperf serve {PAYLOAD_FILE_FLAG} LABEL=PATH`",
            peer_text(label)
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::spec::{Direction, SendEngine};

    fn listed(label: &str, path: &str) -> PayloadFiles {
        PayloadFiles { files: vec![PayloadFile { label: label.into(), path: path.into() }] }
    }

    fn sendfile(local: Payload, remote: Payload) -> TestSpec {
        let mut s = TestSpec::default();
        s.local.send_engine = SendEngine::Splice;
        s.remote.send_engine = SendEngine::Splice;
        s.local.payload = local;
        s.remote.payload = remote;
        s
    }

    /// The side a host runs gets the file its operator listed under the label; the other
    /// side's label is left for its own host; everything else is the spec as sent.
    #[test]
    fn wire_to_local_resolves_the_own_sides_label_only() {
        let files = listed("big", "/srv/big.bin");
        let spec = sendfile(Payload::Label("big".into()), Payload::Label("theirs".into()));
        let wire = spec.to_wire(Recipient::Agent).expect("labels travel");
        assert_eq!(wire.local.payload, WirePayload::Label("big".into()));
        let (local, chosen) = wire.clone().into_local(SpecSide::Local, &files).expect("listed");
        assert_eq!(local.local.payload, Payload::File("/srv/big.bin".into()));
        assert_eq!(local.remote.payload, Payload::Label("theirs".into()));
        assert_eq!(chosen.map(|f| f.label), Some("big".to_string()));
        let mut expected = spec.clone();
        expected.local.payload = Payload::File("/srv/big.bin".into());
        // Why the engines were chosen stays with the host that chose them.
        expected.engine_choice = None;
        assert_eq!(local, expected);
        // The server of the same spec resolves the remote side's, which it does not list.
        match wire.into_local(SpecSide::Remote, &files) {
            Err(Error::Usage(m)) => {
                assert!(
                    m.contains("this server has no payload file labelled 'theirs' (it lists big)"),
                    "{m}"
                );
                assert!(m.contains("--payload-file LABEL=PATH"), "{m}");
                assert!(!m.contains("/srv"), "the refusal names a path: {m}");
            }
            other => panic!("an unknown label was taken: {other:?}"),
        }
    }

    /// An unknown label is refused naming no path; a host that lists nothing says so.
    #[test]
    fn an_unknown_label_is_refused_naming_no_path() {
        let wire = sendfile(Payload::Label("../../etc/shadow".into()), Payload::Pattern)
            .to_wire(Recipient::Agent)
            .expect("a label is only a name");
        let err = wire.into_local(SpecSide::Local, &PayloadFiles::default()).expect_err("none listed");
        assert!(
            err.to_string()
                .contains("this agent has no payload file labelled '../../etc/shadow' (it lists none)"),
            "{err}"
        );
    }

    /// A path never becomes wire for an agent, nor for a server's side; the client's own
    /// file stays home when the server gets the spec.
    #[test]
    fn a_path_does_not_go_on_the_wire() {
        let f = || Payload::File("/etc/shadow".into());
        let own = sendfile(f(), Payload::Pattern);
        let e = own.to_wire(Recipient::Agent).expect_err("a path for an agent");
        assert!(e.to_string().contains("have the agent's operator list the file"), "{e}");
        let to_server = own.to_wire(Recipient::Server).expect("the client's own file");
        assert_eq!(to_server.local.payload, WirePayload::Pattern);
        assert!(!serde_json::to_string(&to_server).expect("json").contains("shadow"));
        let mut theirs = sendfile(Payload::Pattern, f());
        theirs.direction = Direction::ServerToClient;
        for to in [Recipient::Server, Recipient::Agent] {
            assert!(theirs.to_wire(to).is_err(), "{to:?} was sent a path");
        }
    }

    /// The wire form refuses the old field and any path-shaped payload as unknown.
    #[test]
    fn the_wire_form_has_no_place_for_a_path() {
        let mut v =
            serde_json::to_value(TestSpec::default().to_wire(Recipient::Agent).expect("wire")).expect("v");
        v["local"]["splice_file"] = serde_json::json!("/etc/shadow");
        let e = serde_json::from_value::<WireSpec>(v.clone()).expect_err("old field");
        assert!(e.to_string().contains("unknown field `splice_file`"), "{e}");
        v["local"].as_object_mut().expect("side").remove("splice_file");
        v["local"]["payload"] = serde_json::json!({ "file": "/etc/shadow" });
        let e = serde_json::from_value::<WireSpec>(v).expect_err("a file payload");
        assert!(e.to_string().contains("unknown variant `file`"), "{e}");
    }

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
