//! The human lines of the kernel counters (engine `measure::kernel`): one line per item
//! per side, and with `--verbose` the full per-CPU, per-line and per-queue tables.

use std::fmt::Write;

use ringperf_core::measure::kernel::{Availability, CpuSplit, KernelCounters, NamedCount};
use ringperf_core::report::SideReport;

/// How many CPUs the compact split line shows before it says "--verbose".
const COMPACT_CPUS: usize = 4;

pub fn lines(o: &mut String, name: &str, s: &SideReport, verbose: bool) {
    let Some(k) = &s.kernel else { return };
    let _ = writeln!(o, "{name}  {}", split_line(k));
    let _ = writeln!(o, "{name}  {}", softirq_line(k));
    let _ = writeln!(o, "{name}  {}", interrupt_line(k));
    let _ = writeln!(o, "{name}  {}", nic_line(k));
    let _ = writeln!(o, "{name}  {}", placement_line(k));
    if verbose {
        tables(o, name, k);
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

fn split_text(c: &CpuSplit) -> String {
    format!(
        "CPU{} usr {:.0} sys {:.0} irq {:.0} soft {:.0} wait {:.0} steal {:.0} idle {:.0}",
        c.cpu,
        c.user + c.nice,
        c.system,
        c.irq,
        c.softirq,
        c.iowait,
        c.steal,
        c.idle
    )
}

pub fn split_line(k: &KernelCounters) -> String {
    let workers = if k.workers_pinned {
        format!("workers on CPU {}", cpu_list(&k.worker_cpus))
    } else {
        "workers unpinned".to_string()
    };
    let total: u64 = k.softirqs.iter().map(|c| c.net_rx + c.net_tx).sum();
    let softirq_cpus = if k.net_softirq_cpus.is_empty() {
        "no network softirqs".to_string()
    } else {
        let each: Vec<String> = k
            .net_softirq_cpus
            .iter()
            .filter_map(|cpu| k.softirqs.iter().find(|c| c.cpu == *cpu))
            .map(|c| {
                format!("CPU {} ({:.0} %)", c.cpu, 100.0 * (c.net_rx + c.net_tx) as f64 / total.max(1) as f64)
            })
            .collect();
        format!("net softirqs on {}", each.join(", "))
    };
    // The CPUs that matter first: the workers' and the softirqs'; all of them when few.
    let named: Vec<usize> = k.worker_cpus.iter().chain(&k.net_softirq_cpus).copied().collect();
    let mut shown: Vec<&CpuSplit> = if k.cpu_split.len() <= COMPACT_CPUS || named.is_empty() {
        k.cpu_split.iter().take(COMPACT_CPUS).collect()
    } else {
        k.cpu_split.iter().filter(|c| named.contains(&c.cpu)).take(COMPACT_CPUS).collect()
    };
    shown.sort_by_key(|c| c.cpu);
    let more = k.cpu_split.len() - shown.len();
    let accounting = match k.irq_time_accounting.available {
        Availability::Yes => "",
        Availability::No => " (irq/soft are tick samples: no IRQ time accounting)",
        Availability::Unknown => " (irq/soft may be tick samples: IRQ time accounting unknown)",
    };
    format!(
        "cpu split: {workers}; {softirq_cpus}; {} %{}{accounting}",
        shown.iter().map(|c| split_text(c)).collect::<Vec<_>>().join(", "),
        if more > 0 { format!(" (+{more} CPUs: --verbose)") } else { String::new() }
    )
}

pub fn softirq_line(k: &KernelCounters) -> String {
    let mut per_cpu: Vec<(u64, usize)> =
        k.softirqs.iter().map(|c| (c.net_rx, c.cpu)).filter(|(n, _)| *n > 0).collect();
    per_cpu.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let where_ = if per_cpu.is_empty() {
        String::new()
    } else {
        let each: Vec<String> =
            per_cpu.iter().take(COMPACT_CPUS).map(|(n, c)| format!("CPU {c} {n}")).collect();
        format!(" ({})", each.join(", "))
    };
    let mut line = format!("softirqs: NET_RX {}{where_}, NET_TX {}", k.net_rx_softirqs, k.net_tx_softirqs);
    if let Some(p) = k.packets_per_net_rx {
        let _ = write!(line, "; {p:.2} rx packets per NET_RX");
    }
    if !k.softnet.is_empty() {
        let sum =
            |f: fn(&ringperf_core::measure::kernel::SoftnetRow) -> u64| k.softnet.iter().map(f).sum::<u64>();
        let _ = write!(
            line,
            "; softnet: {} processed, {} dropped, {} squeezed",
            sum(|r| r.processed),
            sum(|r| r.dropped),
            sum(|r| r.time_squeeze)
        );
    }
    line
}

pub fn interrupt_line(k: &KernelCounters) -> String {
    let Some(i) = &k.interrupts else { return "interrupts: the egress device is not known".into() };
    if i.lines.is_empty() {
        return format!("interrupts of {}: none ({})", i.device, i.note.as_deref().unwrap_or("no lines"));
    }
    let busy: Vec<String> = i
        .lines
        .iter()
        .filter(|l| l.total > 0)
        .take(6)
        .map(|l| {
            let cpus: Vec<String> = i
                .cpus
                .iter()
                .zip(&l.per_cpu)
                .filter(|(_, n)| **n > 0)
                .map(|(c, n)| {
                    if l.per_cpu.iter().filter(|n| **n > 0).count() > 1 {
                        format!("CPU {c} {n}")
                    } else {
                        format!("CPU {c}")
                    }
                })
                .collect();
            format!(
                "{} {} on {}",
                if l.queue.is_empty() { &l.name } else { &l.queue },
                l.total,
                cpus.join("+")
            )
        })
        .collect();
    let mut line = format!("interrupts of {}: {} over {} lines", i.device, i.total, i.lines.len());
    if !busy.is_empty() {
        let _ = write!(line, " ({})", busy.join(", "));
    }
    if let Some(p) = k.packets_per_interrupt {
        let _ = write!(line, "; {p:.1} packets per interrupt");
    }
    line
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

pub fn nic_line(k: &KernelCounters) -> String {
    let Some(n) = &k.nic else { return "nic: the egress device is not known".into() };
    let mut line = format!("nic {} ({}): ", n.device, n.driver.as_deref().unwrap_or("driver unknown"));
    match n.link {
        Some(l) => {
            let _ = write!(
                line,
                "rx {} packets {}, tx {} packets {}, errors rx {} tx {}, drops rx {} tx {}",
                l.rx_packets,
                mb(l.rx_bytes),
                l.tx_packets,
                mb(l.tx_bytes),
                l.rx_errors,
                l.tx_errors,
                l.rx_dropped,
                l.tx_dropped
            );
        }
        None => line.push_str("no link statistics"),
    }
    let all = n.driver_counters.len() + n.queues.iter().map(|q| q.counters.len()).sum::<usize>();
    if all == 0 {
        line.push_str("; no driver counters");
    } else {
        let changed = n
            .driver_counters
            .iter()
            .chain(n.queues.iter().flat_map(|q| &q.counters))
            .filter(|c| c.delta > 0)
            .count();
        let _ = write!(line, "; driver counters: {changed} of {all} changed over {} queues", n.queues.len());
    }
    line
}

pub fn placement_line(k: &KernelCounters) -> String {
    if k.flows.is_empty() {
        return format!("placement: {}", k.placement_note.as_deref().unwrap_or("no data socket"));
    }
    format!("placement: {}", ringperf_core::measure::kernel::placement::summary(&k.flows))
}

fn nonzero(counts: &[NamedCount]) -> String {
    let v: Vec<String> =
        counts.iter().filter(|c| c.delta > 0).map(|c| format!("{} {}", c.name, c.delta)).collect();
    if v.is_empty() {
        "none changed".into()
    } else {
        v.join(", ")
    }
}

/// The full tables of `--verbose`.
fn tables(o: &mut String, name: &str, k: &KernelCounters) {
    let _ = writeln!(
        o,
        "{name}    CPU    usr   nice    sys    irq   soft   wait  steal   idle  ticks   NET_RX   NET_TX  processed  dropped  squeezed  rps  flow_limit"
    );
    for c in &k.cpu_split {
        let soft = k.softirqs.iter().find(|s| s.cpu == c.cpu);
        let net = k.softnet.iter().find(|s| s.cpu == c.cpu);
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let _ = writeln!(
            o,
            "{name}  {:>5} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6} {:>8} {:>8} {:>10} {:>8} {:>9} {:>4} {:>11}",
            c.cpu,
            c.user,
            c.nice,
            c.system,
            c.irq,
            c.softirq,
            c.iowait,
            c.steal,
            c.idle,
            c.ticks,
            opt(soft.map(|s| s.net_rx)),
            opt(soft.map(|s| s.net_tx)),
            opt(net.map(|s| s.processed)),
            opt(net.map(|s| s.dropped)),
            opt(net.map(|s| s.time_squeeze)),
            opt(net.and_then(|s| s.received_rps)),
            opt(net.and_then(|s| s.flow_limit_count)),
        );
    }
    let available = match k.irq_time_accounting.available {
        Availability::Yes => "yes",
        Availability::No => "no",
        Availability::Unknown => "unknown",
    };
    let _ = writeln!(o, "{name}  irq time accounting: {available}: {}", k.irq_time_accounting.source);
    if let Some(i) = k.interrupts.as_ref().filter(|i| !i.lines.is_empty()) {
        let cols: Vec<String> = i.cpus.iter().map(|c| format!("{:>9}", format!("CPU{c}"))).collect();
        let _ = writeln!(o, "{name}  {:>5} {:<24} {:>9}{}", "IRQ", "line", "total", cols.join(""));
        for l in &i.lines {
            let per: Vec<String> = l.per_cpu.iter().map(|n| format!("{n:>9}")).collect();
            let _ = writeln!(o, "{name}  {:>5} {:<24} {:>9}{}", l.irq, l.name, l.total, per.join(""));
        }
    }
    if let Some(n) = &k.nic {
        if !n.driver_counters.is_empty() {
            let _ = writeln!(o, "{name}  driver counters of {}: {}", n.device, nonzero(&n.driver_counters));
        }
        for q in &n.queues {
            let _ =
                writeln!(o, "{name}  driver counters of {} {}: {}", n.device, q.queue, nonzero(&q.counters));
        }
    }
    for f in &k.flows {
        let show = |v: Option<u32>| v.map_or("unknown".to_string(), |v| v.to_string());
        let _ =
            writeln!(o, "{name}  flow {}: rx on CPU {}, NAPI id {}", f.flow, show(f.rx_cpu), show(f.napi_id));
    }
    for u in &k.unavailable {
        let _ = writeln!(o, "{name}  not measured: {u}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::measure::kernel::{
        CpuSoftirqs, DeviceInterrupts, FlowPlacement, InterruptLine, LinkStats, NicCounters, QueueCounters,
    };

    /// A side on a virtio_net NIC: two queues' interrupts, driver counters per queue.
    fn virtio_side() -> KernelCounters {
        let line = |irq: &str, queue: &str, per_cpu: Vec<u64>| InterruptLine {
            irq: irq.into(),
            name: format!("virtio2-{queue}"),
            queue: queue.into(),
            total: per_cpu.iter().sum(),
            per_cpu,
        };
        KernelCounters {
            worker_cpus: vec![1],
            workers_pinned: true,
            softirqs: vec![
                CpuSoftirqs { cpu: 0, net_rx: 900, net_tx: 10 },
                CpuSoftirqs { cpu: 1, net_rx: 90, net_tx: 0 },
            ],
            net_rx_softirqs: 990,
            net_tx_softirqs: 10,
            net_softirq_cpus: vec![0],
            interrupts: Some(DeviceInterrupts {
                device: "eth0".into(),
                cpus: vec![0, 1],
                lines: vec![
                    line("37", "config", vec![0, 0]),
                    line("38", "input.0", vec![0, 800]),
                    line("39", "output.0", vec![50, 50]),
                ],
                total: 900,
                note: None,
            }),
            nic: Some(NicCounters {
                device: "eth0".into(),
                driver: Some("virtio_net".into()),
                link: Some(LinkStats {
                    rx_packets: 2000,
                    tx_packets: 700,
                    rx_bytes: 3_000_000,
                    ..Default::default()
                }),
                driver_counters: vec![NamedCount { name: "tx_timeouts".into(), delta: 0 }],
                queues: vec![QueueCounters {
                    queue: "rx0".into(),
                    counters: vec![NamedCount { name: "packets".into(), delta: 2000 }],
                }],
            }),
            packets_per_net_rx: Some(2000.0 / 990.0),
            packets_per_interrupt: Some(3.0),
            flows: vec![FlowPlacement { flow: 0, rx_cpu: Some(1), napi_id: Some(8193) }],
            ..Default::default()
        }
    }

    #[test]
    fn a_nic_side_names_its_queues_cpus_and_counters() {
        let k = virtio_side();
        let split = split_line(&k);
        assert!(split.contains("workers on CPU 1; net softirqs on CPU 0 (91 %)"), "{split}");
        let irqs = interrupt_line(&k);
        assert_eq!(
            irqs,
            "interrupts of eth0: 900 over 3 lines (input.0 800 on CPU 1, output.0 100 on CPU 0 50+CPU 1 50); 3.0 packets per interrupt"
        );
        let soft = softirq_line(&k);
        assert!(
            soft.starts_with(
                "softirqs: NET_RX 990 (CPU 0 900, CPU 1 90), NET_TX 10; 2.02 rx packets per NET_RX"
            ),
            "{soft}"
        );
        let nic = nic_line(&k);
        assert!(nic.starts_with("nic eth0 (virtio_net): rx 2000 packets 3.0 MB, tx 700 packets"), "{nic}");
        assert!(nic.ends_with("driver counters: 1 of 2 changed over 1 queues"), "{nic}");
        assert_eq!(placement_line(&k), "placement: 1 flow: rx on CPU 1 ×1; NAPI id 8193 ×1");
        let mut full = String::new();
        tables(&mut full, "local ", &k);
        assert!(full.contains("driver counters of eth0 rx0: packets 2000"), "{full}");
        assert!(full.contains("driver counters of eth0: none changed"), "{full}");
        assert!(
            full.lines().any(|l| l.contains("virtio2-input.0") && l.trim_end().ends_with("800")),
            "{full}"
        );
    }

    #[test]
    fn a_side_without_a_device_or_sockets_says_so() {
        let k = KernelCounters {
            placement_note: Some("crr: no lasting connection".into()),
            ..Default::default()
        };
        assert_eq!(interrupt_line(&k), "interrupts: the egress device is not known");
        assert_eq!(nic_line(&k), "nic: the egress device is not known");
        assert_eq!(placement_line(&k), "placement: crr: no lasting connection");
        assert!(split_line(&k).contains("workers unpinned; no network softirqs"));
    }
}
