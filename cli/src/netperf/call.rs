//! What a netperf command line becomes: the native call that gives the test's spec, and
//! everything else it asks (the output's style, banners, verbosity), with the netperf
//! conventions it is read against.

/// netperf's control port, where a `netserver` (or `ringperf serve -p 12865`) listens.
pub const NETPERF_PORT: u16 = 12865;

/// The variable whose words join a netperf-form command line as ringperf options, so a
/// harness that cannot change netperf's arguments can still pick engines:
/// `RINGPERF_ARGS="--recv-engine multishot" flent ...`.
pub const ARGS_ENV: &str = "RINGPERF_ARGS";

/// The longest a count test (negative -l) may run: netperf has no bound, every ringperf
/// load has one.
pub const COUNT_CAP_SECS: u64 = 600;

/// How the result is printed: netperf's output selectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// -k: NAME=value lines.
    Keyval,
    /// -o: a CSV header line (with -P 1) and a CSV value line.
    Csv,
    /// -O: columns under a header (with -P 1).
    Columns,
}

/// Everything a netperf command line asks that is not the test itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// netperf's test name (TCP_STREAM, ...).
    pub test: &'static str,
    /// -P: banners and headers.
    pub banner: bool,
    /// -v: 0 only the figure, 1 the classic table, 2 and more add detail.
    pub verbosity: u8,
    /// -D: print interim results while the test runs.
    pub demo: bool,
    /// -k/-o/-O with the names asked for (empty: netperf's default set for the style).
    pub select: Option<(Style, Vec<String>)>,
    /// -c or -C: netperf's default selection then adds its CPU names.
    pub cpu: bool,
    /// -f: the throughput unit letter.
    pub units: String,
    /// -Y as netperf would report it: the TOS byte of each side (`None`: left alone).
    pub tos: (Option<u8>, Option<u8>),
    /// -F: the file whose bytes this process's sends carry (TCP_SENDFILE sends the file
    /// itself instead).
    pub fill_file: Option<String>,
}

impl Default for Output {
    /// netperf's defaults: TCP_STREAM, banners, the classic table, 10^6bits/s.
    fn default() -> Self {
        Output {
            test: "TCP_STREAM",
            banner: true,
            verbosity: 1,
            demo: false,
            select: None,
            cpu: false,
            units: "m".into(),
            tos: (None, None),
            fill_file: None,
        }
    }
}

/// A netperf command line as ringperf runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The native command line (argv[0] first) that gives the test's spec.
    pub native: Vec<String>,
    pub output: Output,
}
