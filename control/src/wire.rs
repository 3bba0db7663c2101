//! The one conversion between a spec as this host knows it and as it travels: a spec
//! becomes wire in [`to_wire`], where a path is refused or left home, and wire becomes
//! local in [`into_local`], where a label becomes the file this host's operator listed
//! under it (`serve --payload-file LABEL=PATH`, [`PayloadFiles`]). The wire form
//! ([`WireSpec`], [`WirePayload`]) has no variant that names a path, so no peer can make
//! this host open a file of its choosing.

use ringperf_core::error::{Error, Result};
use ringperf_core::payload::{Payload, PayloadFile, PayloadFiles, WirePayload, PAYLOAD_FILES};
use ringperf_core::spec::{SpecSide, TestSpec, WireSpec};

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

/// `spec` in its wire form for `to`, or why it cannot be sent: a path for another host to
/// open.
pub fn to_wire(spec: &TestSpec, to: Recipient) -> Result<WireSpec> {
    // Why the engines are the ones they are is this host's to report; no peer acts on it.
    let local = TestSpec { engine_choice: None, ..spec.clone() };
    local.map_payloads(|side, p| match (p, side, to) {
        (Payload::Pattern, ..) => Ok(WirePayload::Pattern),
        (Payload::Label(l), ..) => Ok(WirePayload::Label(l)),
        (Payload::File(_), SpecSide::Local, Recipient::Server) => Ok(WirePayload::Pattern),
        (Payload::File(_), SpecSide::Remote, _) => Err(Error::Usage(
            "a server never opens a file a client names: it sends the pattern, or a file its operator listed, named by its label".into(),
        )),
        (Payload::File(_), SpecSide::Local, Recipient::Agent) => Err(Error::Usage(format!(
            "a payload file of this host cannot be sent by an agent, which never opens a path a controller names: have the agent's operator list the file (`ringperf serve {PAYLOAD_FILES} LABEL=PATH`) and name its label"
        ))),
    })
}

/// The spec `wire` as this host runs it, `own` being the side it runs: that side's label
/// becomes the file its operator listed under it (refused if there is none), the other
/// side's stays a label (the host that runs it resolves it). Also the listed file chosen,
/// for the log. This is the one place a spec from the wire becomes local.
pub fn into_local(
    wire: WireSpec,
    own: SpecSide,
    files: &PayloadFiles,
) -> Result<(TestSpec, Option<PayloadFile>)> {
    let mut chosen = None;
    let spec = wire.map_payloads(|side, p| match p {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::spec::{Direction, SendEngine};

    fn listed(label: &str, path: &str) -> PayloadFiles {
        PayloadFiles::unchecked(vec![PayloadFile { label: label.into(), path: path.into() }])
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
        let wire = to_wire(&spec, Recipient::Agent).expect("labels travel");
        assert_eq!(wire.local.payload, WirePayload::Label("big".into()));
        let (local, chosen) = into_local(wire.clone(), SpecSide::Local, &files).expect("listed");
        assert_eq!(local.local.payload, Payload::File("/srv/big.bin".into()));
        assert_eq!(local.remote.payload, Payload::Label("theirs".into()));
        assert_eq!(chosen.map(|f| f.label), Some("big".to_string()));
        let mut expected = spec.clone();
        expected.local.payload = Payload::File("/srv/big.bin".into());
        // Why the engines were chosen stays with the host that chose them.
        expected.engine_choice = None;
        assert_eq!(local, expected);
        // The server of the same spec resolves the remote side's, which it does not list.
        match into_local(wire, SpecSide::Remote, &files) {
            Err(Error::Usage(m)) => {
                assert!(
                    m.contains("this server has no payload file labelled 'theirs' (it lists big)"),
                    "{m}"
                );
                assert!(m.contains("{serve-payload-files} LABEL=PATH"), "{m}");
                assert!(!m.contains("/srv"), "the refusal names a path: {m}");
            }
            other => panic!("an unknown label was taken: {other:?}"),
        }
    }

    /// An unknown label is refused naming no path; a host that lists nothing says so.
    #[test]
    fn an_unknown_label_is_refused_naming_no_path() {
        let spec = sendfile(Payload::Label("../../etc/shadow".into()), Payload::Pattern);
        let wire = to_wire(&spec, Recipient::Agent).expect("a label is only a name");
        let err = into_local(wire, SpecSide::Local, &PayloadFiles::default()).expect_err("none listed");
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
        let e = to_wire(&own, Recipient::Agent).expect_err("a path for an agent");
        assert!(e.to_string().contains("have the agent's operator list the file"), "{e}");
        let to_server = to_wire(&own, Recipient::Server).expect("the client's own file");
        assert_eq!(to_server.local.payload, WirePayload::Pattern);
        assert!(!serde_json::to_string(&to_server).expect("json").contains("shadow"));
        let mut theirs = sendfile(Payload::Pattern, f());
        theirs.direction = Direction::ServerToClient;
        for to in [Recipient::Server, Recipient::Agent] {
            assert!(to_wire(&theirs, to).is_err(), "{to:?} was sent a path");
        }
    }

    /// The wire form refuses the old field and any path-shaped payload as unknown.
    #[test]
    fn the_wire_form_has_no_place_for_a_path() {
        let mut v =
            serde_json::to_value(to_wire(&TestSpec::default(), Recipient::Agent).expect("wire")).expect("v");
        v["local"]["splice_file"] = serde_json::json!("/etc/shadow");
        let e = serde_json::from_value::<WireSpec>(v.clone()).expect_err("old field");
        assert!(e.to_string().contains("unknown field `splice_file`"), "{e}");
        v["local"].as_object_mut().expect("side").remove("splice_file");
        v["local"]["payload"] = serde_json::json!({ "file": "/etc/shadow" });
        let e = serde_json::from_value::<WireSpec>(v).expect_err("a file payload");
        assert!(e.to_string().contains("unknown variant `file`"), "{e}");
    }

    /// Why the engines were chosen is this host's to report: the spec that travels leaves
    /// it out, so any peer of the protocol takes the spec.
    #[test]
    fn the_engine_choice_stays_home() {
        let s = TestSpec::for_workload(ringperf_core::spec::Workload::Rr);
        assert!(s.engine_choice.is_some());
        let wire = to_wire(&s, Recipient::Server).expect("a wire spec");
        assert_eq!(wire.engine_choice, None);
        assert!(serde_json::to_value(&wire).expect("json").get("engine_choice").is_none());
    }
}
