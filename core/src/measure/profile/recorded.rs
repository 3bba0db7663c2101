//! The attribution rules checked on two recorded profiles (`testdata/`): the same 1-byte rr
//! on one CPU, once through the classic loop and once through io_uring. Beside each
//! recorded stack is the category it was counted into by hand; the rules must agree line
//! by line, and the tool's share and the network path's must add up to the hand count.

use std::collections::BTreeMap;

use super::categories::{Category, TABLE};
use super::report::FoldedLine;

const CLASSIC: &str = include_str!("testdata/rr_classic.folded");
const IO_URING: &str = include_str!("testdata/rr_io_uring.folded");

/// One recorded line: the category written beside it, and the line as the profile wrote it.
struct Labelled<'a> {
    number: usize,
    expected: Category,
    line: FoldedLine<'a>,
    text: &'a str,
}

fn read(fixture: &'static str) -> Vec<Labelled<'static>> {
    let lines = fixture.lines().enumerate().filter(|(_, l)| !l.starts_with('#') && !l.is_empty());
    lines
        .map(|(i, l)| {
            let (id, text) = l.split_once('\t').unwrap_or_else(|| panic!("line {}: no category: {l}", i + 1));
            let expected = TABLE
                .iter()
                .find(|c| c.id == id)
                .unwrap_or_else(|| panic!("line {}: no category {id}", i + 1))
                .category;
            let line = FoldedLine::parse(text)
                .unwrap_or_else(|| panic!("line {}: not a folded line: {text}", i + 1));
            Labelled { number: i + 1, expected, line, text }
        })
        .collect()
}

/// Samples per category by the rules.
fn by_rules(lines: &[Labelled]) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    for l in lines {
        *out.entry(l.line.category().id()).or_insert(0) += l.line.samples;
    }
    out
}

/// The tool's samples and the busy samples (idle left out), by the rules.
fn tool_and_busy(lines: &[Labelled]) -> (u64, u64) {
    let busy = lines.iter().filter(|l| l.line.category() != Category::Idle);
    let tool = busy.clone().filter(|l| l.line.category().is_tool());
    (tool.map(|l| l.line.samples).sum(), busy.map(|l| l.line.samples).sum())
}

#[test]
fn every_recorded_stack_lands_in_the_category_counted_by_hand() {
    for (name, fixture) in [("rr_classic", CLASSIC), ("rr_io_uring", IO_URING)] {
        let lines = read(fixture);
        assert!(lines.len() > 50, "{name}: {} lines", lines.len());
        let wrong: Vec<String> = lines
            .iter()
            .filter(|l| l.line.category() != l.expected)
            .map(|l| {
                format!(
                    "{name}:{} counted {}, the rules say {}: {}",
                    l.number,
                    l.expected.id(),
                    l.line.category().id(),
                    l.text
                )
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}

#[test]
fn the_tool_and_the_network_path_add_up_to_the_hand_count() {
    // The hand count of each fixture, category by category (samples).
    let classic = [
        ("other-user", 942),
        ("scheduler", 184),
        ("tcp", 104),
        ("tool-user", 99),
        ("syscall", 81),
        ("other-kernel", 50),
        ("device", 33),
        ("alloc", 31),
        ("ip", 18),
        ("socket", 16),
        ("copy", 16),
        ("tool-threads", 15),
        ("idle", 1),
    ];
    let io_uring = [
        ("other-user", 1064),
        ("scheduler", 176),
        ("tool-user", 123),
        ("io_uring", 68),
        ("syscall", 33),
        ("tcp", 29),
        ("other-kernel", 24),
        ("device", 16),
        ("tool-threads", 8),
        ("ip", 7),
    ];
    // The tool (user space, helper threads, io_uring, syscall entry/exit) of the busy samples:
    // 99 + 81 + 15 of 1589 through the classic loop, 123 + 68 + 33 + 8 of 1548 through io_uring.
    for (name, fixture, counted, tool) in [
        ("rr_classic", CLASSIC, &classic[..], (195, 1589)),
        ("rr_io_uring", IO_URING, &io_uring[..], (232, 1548)),
    ] {
        let lines = read(fixture);
        assert_eq!(by_rules(&lines), counted.iter().copied().collect(), "{name}");
        let (t, busy) = tool_and_busy(&lines);
        assert_eq!((t, busy), tool, "{name}: tool {:.2} % of busy samples", 100.0 * t as f64 / busy as f64);
    }
}

#[test]
fn the_harness_is_the_tools_and_nobody_elses() {
    for (name, fixture) in [("rr_classic", CLASSIC), ("rr_io_uring", IO_URING)] {
        for l in read(fixture) {
            let c = l.line.category();
            let thread = l.text.split(';').next().unwrap_or_default();
            let at = format!("{name}:{}: {}", l.number, l.text);
            // ringperf's threads that move no data are the tool's, whatever they ran.
            if thread.starts_with("ringperf-") && thread != super::categories::DATA_THREAD {
                assert_eq!(c, Category::ToolThreads, "{at}");
            }
            // Another process's time, or the idle task's, is never the tool's.
            if thread == "[other-process]" || thread == "swapper" {
                assert!(!c.is_tool(), "{at}");
            }
            // The leaf is io_uring's own code: io_uring machinery.
            if l.line.kernel.first().is_some_and(|f| f.starts_with("io_") || f.starts_with("__io_")) {
                assert_eq!(c, Category::IoUring, "{at}");
            }
            // Nothing but the way in and back (entry, dispatch, rseq): syscall entry/exit.
            let entry = ["entry_SYSCALL_64_after_hwframe", "do_syscall_64", "exit_to_user_mode_loop"];
            let only_entry = l.line.kernel.iter().all(|f| entry.contains(f) || f.contains("rseq"));
            if thread == super::categories::DATA_THREAD && !l.line.kernel.is_empty() && only_entry {
                assert_eq!(c, Category::Syscall, "{at}");
            }
        }
    }
}
