//! Which engine ran on each side and why, as the report's header and `--keyval` say it.

use ringperf_core::harness::{EngineChoice, EngineReason};
use ringperf_core::TestReport;

/// Why an engine is the one it is, in words (`send`: the send engine's, else the receive
/// engine's, which a named other engine pairs with).
pub fn reason_text(reason: EngineReason, send: bool) -> &'static str {
    match reason {
        EngineReason::Asked => "as asked",
        EngineReason::HarnessAsked => "as asked by --harness",
        EngineReason::Paired if send => "paired with the receive engine asked for",
        EngineReason::Paired => "paired with the send engine asked for",
        EngineReason::OneInFlight => "default: one transaction in flight per worker",
        EngineReason::SeveralFlows => "default: several flows per worker",
        EngineReason::Burst => "default: a burst keeps several transactions in flight",
        EngineReason::OpenLoop => "default: an open loop keeps its schedule on the ring's timers",
        EngineReason::Bulk => "default: a bulk stream batches on the ring",
        EngineReason::Datagrams => "default: datagrams batch on the ring",
        EngineReason::Counted => "default: the classic loops keep no --transactions count",
        EngineReason::Verified => "default: the classic crr loop does not --verify",
        EngineReason::RingTuned => "default: ring settings were given",
    }
}

/// The header's engines: `send engine X, receive engine Y (why)`, one reason when both
/// engines have the same, each its own otherwise; no reason for a report that predates them.
pub fn header(r: &TestReport) -> String {
    let (send, recv) = r.engine_pair();
    match r.spec.engine_choice {
        None => format!("send engine {}, receive engine {}", send.name(), recv.name()),
        Some(EngineChoice { send: a, recv: b }) if a == b => {
            format!("send engine {}, receive engine {} ({})", send.name(), recv.name(), reason_text(a, true))
        }
        Some(EngineChoice { send: a, recv: b }) => format!(
            "send engine {} ({}), receive engine {} ({})",
            send.name(),
            reason_text(a, true),
            recv.name(),
            reason_text(b, false)
        ),
    }
}

/// `ENGINE_REASON`: the reason's short name, or `SEND/RECV` when the engines have
/// different ones; empty for a report that predates them.
pub fn keyval(r: &TestReport) -> String {
    match r.spec.engine_choice {
        None => String::new(),
        Some(EngineChoice { send, recv }) if send == recv => send.name().to_string(),
        Some(EngineChoice { send, recv }) => format!("{}/{}", send.name(), recv.name()),
    }
}
