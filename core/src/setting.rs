//! The settings a test, a ring or a server takes, by name: what errors and hints point at
//! instead of a command-line flag. A library cannot know which front end the user typed
//! (ringperf's own flags, the netperf drop-in's), so its text names a setting with a token
//! (`{burst}`, from [`Setting::token`]) and the front end that prints the text spells it
//! ([`spell_settings`]). Unspelled, a token still reads as the setting's name.

use std::fmt;
use std::sync::OnceLock;

/// Declares the settings once: the variant, its token name and what it is in words.
macro_rules! settings {
    ($( $(#[$meta:meta])* $variant:ident = $name:literal, $words:literal; )*) => {
        /// A setting an error or a hint names.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Setting {
            $( $(#[$meta])* $variant, )*
        }

        impl Setting {
            /// Every setting, in declaration order.
            pub const ALL: &'static [Setting] = &[ $( Setting::$variant, )* ];

            /// Its name: what goes between the braces of its token.
            pub const fn name(self) -> &'static str {
                match self { $( Setting::$variant => $name, )* }
            }

            /// What it is, in words.
            pub const fn words(self) -> &'static str {
                match self { $( Setting::$variant => $words, )* }
            }
        }
    };
}

settings! {
    // What a test asks for.
    Duration = "duration", "the test length";
    ByteLimit = "byte-limit", "the byte count per flow";
    TransactionLimit = "transaction-limit", "the transaction count per flow";
    SendSize = "send-size", "the send size";
    RecvSize = "recv-size", "the receive size";
    RequestSize = "request-size", "the request size";
    ResponseSize = "response-size", "the response size";
    Flows = "flows", "the number of flows";
    Threads = "threads", "the number of worker threads";
    Cpus = "cpus", "the CPUs to pin workers to";
    Interval = "interval", "the interval of interim samples";
    Reverse = "reverse", "the server-to-client direction";
    Bidir = "bidir", "both directions at once";
    Host = "host", "the server's host";
    LocalAddress = "local-address", "the local address";
    From = "from", "the third-party sending agent";
    PayloadFile = "payload-file", "the payload file";
    Verify = "verify", "payload verification";
    RequireZeroCopy = "require-zero-copy", "requiring zero-copy sends";
    // Rates and pacing.
    TotalRate = "total-rate", "the total send rate";
    FlowRate = "flow-rate", "the per-flow send rate";
    FqRate = "fq-rate", "the fq pacing rate";
    OpenLoopRate = "open-loop-rate", "the open-loop request rate per flow";
    OpenLoopTotal = "open-loop-total", "the open-loop request rate in total";
    Backlog = "backlog", "the open-loop backlog";
    Burst = "burst", "the transactions in flight per flow";
    // Sockets.
    Mss = "mss", "the TCP maximum segment size";
    Rcvlowat = "rcvlowat", "the receive low-water mark";
    Nodelay = "nodelay", "TCP_NODELAY";
    Cork = "cork", "TCP_CORK";
    Mptcp = "mptcp", "Multipath TCP";
    CongestionControl = "congestion-control", "the congestion control";
    Linger0 = "linger0", "closing with a zero linger";
    ClientPorts = "client-ports", "the client port range";
    Gso = "gso", "UDP send segmentation";
    Gro = "gro", "UDP receive coalescing";
    UdpTimeout = "udp-timeout", "the UDP request timeout";
    // Engines and the ring.
    SendEngine = "send-engine", "the send engine";
    RecvEngine = "recv-engine", "the receive engine";
    SqEntries = "sq-entries", "the submission queue size";
    SqBatch = "sq-batch", "the submission batch";
    CqBatch = "cq-batch", "the completion batch";
    CqWait = "cq-wait", "the completion min-wait";
    TaskRun = "task-run", "the task-run mode";
    Sqpoll = "sqpoll", "the SQ polling thread";
    SendDepth = "send-depth", "the sends in flight per flow";
    RecvDepth = "recv-depth", "the receives in flight per flow";
    BufCount = "buf-count", "the provided-buffer count";
    BufSize = "buf-size", "the provided-buffer size";
    NapiBusyPoll = "napi-busy-poll", "the NAPI busy-poll time";
    // The kernel cost profile.
    ProfileHz = "profile-hz", "the profile's sampling rate";
    NoProfile = "no-profile", "running without the profile";
    // What a server's operator sets.
    ServeBind = "serve-bind", "the server's bind address";
    ServePort = "serve-port", "the server's port";
    PskFile = "psk-file", "the pre-shared key file";
    Allow = "allow", "the server's allowed clients";
    AllowThirdParty = "allow-third-party", "third-party work on an agent";
    PublicEndpoint = "public-endpoint", "the agent's public endpoint";
    MaxDuration = "max-duration", "the server's longest test";
    MaxFlows = "max-flows", "the server's most flows";
    MaxMessage = "max-message", "the server's largest message";
    MaxMemory = "max-memory", "the server's payload memory per test";
    MaxTotalMemory = "max-total-memory", "the server's payload memory in total";
    MaxRate = "max-rate", "the server's rate limit";
    MaxSessions = "max-sessions", "the server's most sessions";
    MaxSessionsPerHost = "max-sessions-per-host", "the server's most sessions per host";
    MaxHandshakes = "max-handshakes", "the server's most handshakes";
    ServePayloadFiles = "serve-payload-files", "the payload files a server lists";
}

impl Setting {
    /// The setting named `name` (a token's inside).
    pub fn from_name(name: &str) -> Option<Setting> {
        Setting::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// Its token, `{name}`, for a message a front end spells.
    pub const fn token(self) -> Token {
        Token(self)
    }
}

/// A setting as it stands in a message: `{name}` until a front end spells it.
#[derive(Clone, Copy, Debug)]
pub struct Token(pub Setting);

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{}}}", self.0.name())
    }
}

/// How the front end of this process spells a setting: installed once, at start, by the
/// program that parses the command line; a library on its own has none.
pub type Spelling = fn(Setting) -> Option<String>;

static SPELLING: OnceLock<Spelling> = OnceLock::new();

/// Installs the front end's spelling for [`spelled`] (the first one installed stays).
pub fn set_spelling(spelling: Spelling) {
    let _ = SPELLING.set(spelling);
}

/// `text` with its setting tokens spelled as this process's front end spells them, or as
/// it is when none was installed. Errors print through it; text kept for later (report
/// notes, log lines) is spelled when it is made.
pub fn spelled(text: &str) -> String {
    match SPELLING.get() {
        Some(spell) => spell_settings(text, spell),
        None => text.to_string(),
    }
}

/// The settings `text` names by token, in order (repeats included).
pub fn settings_in(text: &str) -> Vec<Setting> {
    let mut found = Vec::new();
    spell_settings(text, |s| {
        found.push(s);
        None
    });
    found
}

/// `text` with each setting token replaced by what `spell` gives for it; a token `spell`
/// has no spelling for is left as it is (it still names the setting), and braces around
/// anything that is not a setting's name are text.
pub fn spell_settings(text: &str, mut spell: impl FnMut(Setting) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let setting = after.find('}').and_then(|close| Some((close, Setting::from_name(&after[..close])?)));
        match setting {
            Some((close, s)) => {
                match spell(s) {
                    Some(spelled) => out.push_str(&spelled),
                    None => out.push_str(&rest[open..open + close + 2]),
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, s) in Setting::ALL.iter().enumerate() {
            assert_eq!(Setting::from_name(s.name()), Some(*s));
            assert!(Setting::ALL[..i].iter().all(|o| o.name() != s.name()), "{} twice", s.name());
        }
    }

    #[test]
    fn tokens_are_spelled_and_other_braces_left_alone() {
        let text = format!(
            "{} {{x}} over {} flows: lower {} or {{flows",
            Setting::Burst.token(),
            8,
            Setting::Flows.token()
        );
        assert_eq!(text, "{burst} {x} over 8 flows: lower {flows} or {flows");
        let spelled = spell_settings(&text, |s| (s == Setting::Burst).then(|| "--burst".to_string()));
        assert_eq!(spelled, "--burst {x} over 8 flows: lower {flows} or {flows");
        assert_eq!(settings_in(&text), vec![Setting::Burst, Setting::Flows]);
    }
}
