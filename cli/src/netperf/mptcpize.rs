//! `mptcpize run netperf ...`: mptcpd's wrapper preloads a library that turns every TCP
//! socket(2) of the program into an MPTCP one. ringperf's sockets mostly go through libc's
//! socket(), so the wrapper would reach them, but not crr's connections made on the ring,
//! nor the server, which would listen TCP and leave the connections fallen back; and the
//! report would not know. So the drop-in takes the wrapper as the user's word: a TCP test
//! run under it is the same test with `--mptcp` (MPTCP on both sides, said in the report).
//! `--mptcp` given on the command line does the same without the wrapper.

use super::call::Call;

/// The file name of mptcpd's preloaded wrapper library (libmptcpwrap.so.N).
const WRAPPER: &str = "libmptcpwrap.so";

/// Whether this process runs under `mptcpize run`: its LD_PRELOAD names the wrapper.
pub(super) fn preloaded() -> bool {
    std::env::var_os("LD_PRELOAD").is_some_and(|v| v.to_string_lossy().contains(WRAPPER))
}

/// Adds `--mptcp` to a TCP test's native command line when `wrapped` (and it is not there).
pub(super) fn apply(call: &mut Call, wrapped: bool) {
    let tcp = call.output.test.starts_with("TCP_");
    if wrapped && tcp && !call.native.iter().any(|a| a == "--mptcp") {
        call.native.push("--mptcp".into());
    }
}

#[cfg(test)]
mod tests {
    use super::super::lines::call;
    use super::*;

    #[test]
    fn the_wrapper_makes_a_tcp_test_mptcp_and_leaves_udp_alone() {
        let mut c = call("netperf -t TCP_RR -H 127.0.0.1");
        apply(&mut c, true);
        assert_eq!(c.native.iter().filter(|a| *a == "--mptcp").count(), 1, "{:?}", c.native);
        apply(&mut c, true);
        assert_eq!(c.native.iter().filter(|a| *a == "--mptcp").count(), 1, "added twice: {:?}", c.native);
        let mut u = call("netperf -t UDP_RR -H 127.0.0.1");
        apply(&mut u, true);
        assert!(!u.native.contains(&"--mptcp".to_string()), "{:?}", u.native);
        let mut plain = call("netperf -t TCP_STREAM");
        apply(&mut plain, false);
        assert!(!plain.native.contains(&"--mptcp".to_string()));
    }
}
