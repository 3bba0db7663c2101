//! How each front end spells a [`Setting`]: the library names settings in its errors and
//! hints by token (`{burst}`), and the front end the user typed decides how they read.
//! Native spellings come from the clap definitions of the flags (each setting names the
//! flag that sets it, by its clap id), so a renamed flag renames every hint; the netperf
//! drop-in spells the settings netperf has its way and the rest as ringperf does.

use std::collections::HashMap;
use std::sync::OnceLock;

use ringperf_core::Setting;

/// The flag that sets each setting: the command it is looked for in first, and its clap id.
const FLAGS: &[(Setting, &str, &str)] = &[
    (Setting::Duration, "stream", "length_ms"),
    (Setting::ByteLimit, "stream", "byte_limit"),
    (Setting::TransactionLimit, "rr", "transaction_limit"),
    (Setting::SendSize, "stream", "send_size"),
    (Setting::RecvSize, "stream", "recv_size"),
    (Setting::RequestSize, "rr", "sizes"),
    (Setting::ResponseSize, "rr", "sizes"),
    (Setting::Flows, "stream", "flows"),
    (Setting::Threads, "stream", "threads"),
    (Setting::Cpus, "stream", "cpus"),
    (Setting::Interval, "stream", "interval"),
    (Setting::Reverse, "stream", "reverse"),
    (Setting::Bidir, "stream", "bidir"),
    (Setting::Host, "stream", "host"),
    (Setting::LocalAddress, "stream", "local_bind"),
    (Setting::From, "stream", "from"),
    (Setting::PayloadFile, "sendfile", "file"),
    (Setting::Verify, "stream", "verify"),
    (Setting::RequireZeroCopy, "stream", "require_zero_copy"),
    (Setting::TotalRate, "stream", "rate"),
    (Setting::FlowRate, "stream", "flow_rate"),
    (Setting::FqRate, "stream", "fq_rate"),
    (Setting::OpenLoopRate, "rr", "tx_rate"),
    (Setting::OpenLoopTotal, "rr", "rate_total"),
    (Setting::Backlog, "rr", "backlog"),
    (Setting::Burst, "rr", "burst"),
    (Setting::Mss, "stream", "mss"),
    (Setting::Rcvlowat, "stream", "rcvlowat"),
    (Setting::Nodelay, "stream", "nodelay"),
    (Setting::Cork, "stream", "cork"),
    (Setting::Mptcp, "stream", "mptcp"),
    (Setting::CongestionControl, "stream", "congestion_control"),
    (Setting::Linger0, "crr", "linger0"),
    (Setting::ClientPorts, "crr", "client_ports"),
    (Setting::Gso, "udp-stream", "gso"),
    (Setting::Gro, "udp-stream", "gro"),
    (Setting::UdpTimeout, "udp-rr", "timeout_us"),
    (Setting::SendEngine, "stream", "send_engine"),
    (Setting::RecvEngine, "stream", "recv_engine"),
    (Setting::SqEntries, "stream", "sq_entries"),
    (Setting::SqBatch, "stream", "sq_batch"),
    (Setting::CqBatch, "stream", "cq_batch"),
    (Setting::CqWait, "stream", "cq_wait_us"),
    (Setting::TaskRun, "stream", "task_run"),
    (Setting::Sqpoll, "stream", "sqpoll"),
    (Setting::SendDepth, "stream", "send_depth"),
    (Setting::RecvDepth, "stream", "recv_depth"),
    (Setting::BufCount, "stream", "buf_count"),
    (Setting::BufSize, "stream", "buf_size"),
    (Setting::NapiBusyPoll, "stream", "napi_busy_poll_us"),
    (Setting::ProfileHz, "stream", "hz"),
    (Setting::NoProfile, "stream", "no_profile"),
    (Setting::ServeBind, "serve", "bind"),
    (Setting::ServePort, "serve", "port"),
    (Setting::PskFile, "serve", "psk_file"),
    (Setting::Allow, "serve", "allow"),
    (Setting::AllowThirdParty, "serve", "allow_third_party"),
    (Setting::PublicEndpoint, "serve", "public_endpoint"),
    (Setting::MaxDuration, "serve", "max_duration"),
    (Setting::MaxFlows, "serve", "max_flows"),
    (Setting::MaxMessage, "serve", "max_message"),
    (Setting::MaxMemory, "serve", "max_memory"),
    (Setting::MaxTotalMemory, "serve", "max_total_memory"),
    (Setting::MaxRate, "serve", "max_rate"),
    (Setting::MaxSessions, "serve", "max_sessions"),
    (Setting::MaxSessionsPerHost, "serve", "max_sessions_per_host"),
    (Setting::MaxHandshakes, "serve", "max_handshakes"),
    (Setting::ServePayloadFiles, "serve", "payload_files"),
];

/// The settings netperf has an option for, as netperf spells them (its test-specific
/// options after `--`, as its own messages write them).
const NETPERF: &[(Setting, &str)] = &[
    (Setting::Duration, "-l"),
    (Setting::Host, "-H"),
    (Setting::Cpus, "-T"),
    (Setting::Interval, "-D"),
    (Setting::LocalAddress, "-L"),
    (Setting::PayloadFile, "-F"),
    (Setting::SendSize, "-- -m"),
    (Setting::RecvSize, "-- -M"),
    (Setting::RequestSize, "-- -r"),
    (Setting::ResponseSize, "-- -r"),
    (Setting::Nodelay, "-- -D"),
    (Setting::Cork, "-- -C"),
    (Setting::CongestionControl, "-- -K"),
    (Setting::Burst, "-- -b"),
    (Setting::UdpTimeout, "-- -e"),
];

/// How ringperf's own command line spells a setting: a test flag's short form when it has
/// one (as the netperf-shaped flags are known: `-l`, `-m`, `-H`), else its long form; a
/// serve flag's long form (`--port`, which an operator's service file spells out).
pub fn native(setting: Setting) -> Option<String> {
    static NATIVE: OnceLock<HashMap<Setting, String>> = OnceLock::new();
    NATIVE.get_or_init(|| table(Form::Usual)).get(&setting).cloned()
}

/// How the netperf drop-in spells a setting: netperf's option where it has one, else
/// ringperf's long option (the drop-in passes those through), else ringperf's flag named
/// as ringperf's, since netperf gives its short letters other meanings.
pub fn netperf(setting: Setting) -> Option<String> {
    static LONG: OnceLock<HashMap<Setting, String>> = OnceLock::new();
    NETPERF
        .iter()
        .find(|(s, _)| *s == setting)
        .map(|(_, f)| f.to_string())
        .or_else(|| LONG.get_or_init(|| table(Form::Long)).get(&setting).cloned())
        .or_else(|| native(setting).map(|f| format!("ringperf's {f}")))
}

/// Which form of a flag a front end writes.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// Short for a test flag, long for a serve flag, whichever the flag has otherwise.
    Usual,
    /// Long only.
    Long,
}

fn table(form: Form) -> HashMap<Setting, String> {
    let cmd = super::command();
    FLAGS
        .iter()
        .filter_map(|&(setting, command, id)| Some((setting, spelling(&cmd, command, id, form)?)))
        .collect()
}

/// The flag with clap id `id`, in `command` or else in any command.
fn spelling(cmd: &clap::Command, command: &str, id: &str, form: Form) -> Option<String> {
    let flag = |arg: &clap::Arg| {
        let short = arg.get_short().map(|c| format!("-{c}"));
        let long = arg.get_long().map(|l| format!("--{l}"));
        match form {
            Form::Long => long,
            Form::Usual if command == "serve" => long.or(short),
            Form::Usual => short.or(long),
        }
    };
    let find = |c: &clap::Command| c.get_arguments().find(|a| a.get_id() == id).and_then(flag);
    cmd.find_subcommand(command).and_then(find).or_else(|| cmd.get_subcommands().find_map(find))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::setting::spell_settings;

    #[test]
    fn every_setting_has_a_native_flag_that_parses() {
        let cmd = crate::args::command();
        for s in Setting::ALL {
            let flag = native(*s).unwrap_or_else(|| panic!("{s:?} has no flag in the registry"));
            let (_, command, _) = FLAGS.iter().find(|(f, ..)| f == s).unwrap();
            let sub = cmd.find_subcommand(command).unwrap();
            let known = sub.get_arguments().any(|a| {
                a.get_short().map(|c| format!("-{c}")) == Some(flag.clone())
                    || a.get_long().map(|l| format!("--{l}")) == Some(flag.clone())
            });
            assert!(known, "{s:?}: {flag} is not a flag of `ringperf {command}`");
        }
    }

    #[test]
    fn the_front_end_decides_the_spelling() {
        let text = "use {duration} with 0.001 to 3600 seconds, or lower {max-rate}";
        assert_eq!(spell_settings(text, native), "use -l with 0.001 to 3600 seconds, or lower --max-rate");
        let size = "{send-size} 1 does not fit";
        assert_eq!(spell_settings(size, native), "-m 1 does not fit");
        assert_eq!(spell_settings(size, netperf), "-- -m 1 does not fit");
        assert_eq!(netperf(Setting::MaxRate), native(Setting::MaxRate), "netperf has no such option");
        assert_eq!(netperf(Setting::OpenLoopRate).as_deref(), Some("--rate"), "a long option passes through");
        assert_eq!(netperf(Setting::TotalRate).as_deref(), Some("ringperf's -b"), "netperf's -b is a burst");
    }
}
