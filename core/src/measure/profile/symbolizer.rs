//! The symbolizer: kernel addresses to function names through /proc/kallsyms, and this
//! process's user addresses through its own binary and libraries (blazesym does both).
//! It runs once per window, after the window closed, on every distinct address at once.

use std::collections::HashMap;

use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::{MaybeDefault, Pid};

/// Address to name; an address nothing names is shown as `[unknown]`.
pub struct Names(HashMap<u64, String>);

pub const UNKNOWN: &str = "[unknown]";

impl Names {
    pub fn get(&self, addr: u64) -> &str {
        self.0.get(&addr).map_or(UNKNOWN, String::as_str)
    }

    /// Builds names from pairs (tests, and folding several lookups into one).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (u64, String)>) -> Names {
        Names(pairs.into_iter().collect())
    }

    /// Every name of `addrs` given by `source`; an error leaves them unknown (the
    /// categories then say `other-kernel`, and the report's note says why).
    fn of(symbolizer: &Symbolizer, source: &Source, addrs: &mut Vec<u64>) -> Result<Names, String> {
        addrs.sort_unstable();
        addrs.dedup();
        let found = symbolizer.symbolize(source, Input::AbsAddr(addrs)).map_err(|e| e.to_string())?;
        let map = addrs
            .iter()
            .zip(found)
            .filter_map(|(&a, s)| match s {
                Symbolized::Sym(sym) => Some((a, sym.name.into_owned())),
                Symbolized::Unknown(_) => None,
            })
            .collect();
        Ok(Names(map))
    }
}

/// Names of kernel addresses, from /proc/kallsyms only (no vmlinux search: it is slow and
/// the function name is all a category needs).
pub fn kernel(mut addrs: Vec<u64>) -> Result<Names, String> {
    let source = Kernel { vmlinux: MaybeDefault::None, debug_syms: false, ..Kernel::default() };
    let symbolizer = Symbolizer::new();
    Names::of(&symbolizer, &Source::Kernel(source), &mut addrs).map_err(|e| {
        format!("kernel symbols unreadable ({e}): check that /proc/kallsyms shows addresses (kptr_restrict)")
    })
}

/// Names of this process's user addresses (only the folded stacks need them).
pub fn own_process(mut addrs: Vec<u64>) -> Result<Names, String> {
    let source = Process { debug_syms: false, perf_map: false, ..Process::new(Pid::Slf) };
    let symbolizer = Symbolizer::builder().enable_demangling(true).build();
    Names::of(&symbolizer, &Source::Process(source), &mut addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_functions_are_named() {
        let addr = own_process as *const () as u64;
        let names = own_process(vec![addr]).unwrap();
        assert!(names.get(addr).contains("own_process"), "{}", names.get(addr));
    }

    #[test]
    fn kernel_addresses_from_kallsyms_are_named() {
        let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else { return };
        // An exported function with a real address (zeros mean kptr_restrict hides them).
        let Some(addr) = text.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            let (a, kind, name) = (f.next()?, f.next()?, f.next()?);
            (name == "tcp_sendmsg" && kind.eq_ignore_ascii_case("t"))
                .then(|| u64::from_str_radix(a, 16).ok())?
        }) else {
            return;
        };
        if addr == 0 {
            return;
        }
        let names = kernel(vec![addr + 1]).unwrap();
        assert_eq!(names.get(addr + 1), "tcp_sendmsg");
        assert_eq!(names.get(12345), UNKNOWN);
    }
}
