//! The `ringperf` binary: everything lives in the `ringperf_cli` library.

fn main() {
    std::process::exit(ringperf_cli::main());
}
