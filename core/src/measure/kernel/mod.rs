//! Kernel counters over one side's measurement window: the CPU split of /proc/stat, the
//! network softirqs, the egress device's interrupts, the softnet backlog counters, the
//! device's link and driver counters, and where each flow was received. Everything is read
//! once just before the window opens and once right after the workers end, never during
//! the run, and reported as the change between the two. All of it but the device's
//! counters is host-wide: a run sharing the host with other traffic counts that too.

pub mod interrupts;
pub mod irqtime;
pub mod nic;
pub mod placement;
mod proc_table;
pub mod softirqs;
pub mod softnet;

use std::os::fd::RawFd;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::env::NetworkEnvironment;
use crate::measure::cpu::{CpuTicks, ProcStat};
use interrupts::{DeviceMatch, Interrupts};
pub use irqtime::{Availability, IrqTimeAccounting};
pub use nic::{LinkStats, NamedCount, QueueCounters};
use nic::{NicReader, NicSnapshot};
pub use placement::FlowPlacement;
use softirqs::Softirqs;
use softnet::Softnet;
pub use softnet::SoftnetRow;

/// One CPU's window, split by what it ran: each field a percentage of that CPU's ticks.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuSplit {
    pub cpu: usize,
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
    /// USER_HZ ticks the CPU had in the window: the resolution of the percentages.
    pub ticks: u64,
}

/// One CPU's network softirqs over the window.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSoftirqs {
    pub cpu: usize,
    pub net_rx: u64,
    pub net_tx: u64,
}

/// One interrupt line of the egress device over the window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct InterruptLine {
    pub irq: String,
    /// The line's name in /proc/interrupts (`virtio2-input.0`).
    pub name: String,
    /// The queue part of the name (`input.0`; empty for a line named after the device).
    pub queue: String,
    pub total: u64,
    /// Per CPU, in the order of [`DeviceInterrupts::cpus`].
    pub per_cpu: Vec<u64>,
}

/// The egress device's interrupts over the window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceInterrupts {
    pub device: String,
    /// The CPU of each per-CPU column.
    pub cpus: Vec<usize>,
    pub lines: Vec<InterruptLine>,
    pub total: u64,
    /// Why there are no lines (loopback has no interrupts; a device whose lines are not
    /// named after it).
    pub note: Option<String>,
}

/// The egress device's own counters over the window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct NicCounters {
    pub device: String,
    pub driver: Option<String>,
    /// rtnetlink IFLA_STATS64; `None` when it could not be read (see `unavailable`).
    pub link: Option<LinkStats>,
    /// The driver's device-wide counters (ETHTOOL_GSTATS), as deltas.
    pub driver_counters: Vec<NamedCount>,
    /// The driver's per-queue counters, the queue taken out of their names.
    pub queues: Vec<QueueCounters>,
}

/// Everything this module measures for one side.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct KernelCounters {
    /// Whether the irq and softirq columns of the split are exact or tick samples.
    pub irq_time_accounting: IrqTimeAccounting,
    pub cpu_split: Vec<CpuSplit>,
    /// Softirq and hardirq shares of all CPUs' ticks together, 0..=100.
    pub softirq_percent: f64,
    pub irq_percent: f64,
    /// The CPUs the side's workers were pinned to; empty when they were not pinned.
    pub worker_cpus: Vec<usize>,
    pub workers_pinned: bool,
    /// NET_RX and NET_TX softirqs per CPU (/proc/softirqs).
    pub softirqs: Vec<CpuSoftirqs>,
    pub net_rx_softirqs: u64,
    pub net_tx_softirqs: u64,
    /// The CPUs that ran the network softirqs, most first: each with at least a tenth of
    /// all NET_RX plus NET_TX.
    pub net_softirq_cpus: Vec<usize>,
    pub interrupts: Option<DeviceInterrupts>,
    /// /proc/net/softnet_stat per CPU.
    pub softnet: Vec<SoftnetRow>,
    pub nic: Option<NicCounters>,
    /// The device's received packets per NET_RX softirq (all CPUs).
    pub packets_per_net_rx: Option<f64>,
    /// The device's packets (received plus sent) per device interrupt.
    pub packets_per_interrupt: Option<f64>,
    /// Each data socket's receive CPU and NAPI id at the end of the run.
    pub flows: Vec<FlowPlacement>,
    /// Why `flows` is empty, when it is.
    pub placement_note: Option<String>,
    /// What could not be measured, and why.
    pub unavailable: Vec<String>,
}

/// The counters of one instant.
pub struct KernelSnapshot {
    softirqs: Result<Softirqs, String>,
    interrupts: Result<Interrupts, String>,
    softnet: Result<Softnet, String>,
    nic: NicSnapshot,
}

/// What a side knows before its window: the device, the driver, the workers' CPUs, and the
/// readers it opened for them.
pub struct KernelProbe {
    device: Option<DeviceMatch>,
    driver: Option<String>,
    loopback: bool,
    nic: Option<NicReader>,
    worker_cpus: Vec<Option<usize>>,
    notes: Vec<String>,
}

/// Reading the kernel configuration costs a decompression: once per process.
fn irq_time_accounting() -> IrqTimeAccounting {
    static ONCE: OnceLock<IrqTimeAccounting> = OnceLock::new();
    ONCE.get_or_init(irqtime::detect).clone()
}

/// How a side's data sockets can be asked where they were received.
pub enum DataSocketsAtEnd<'a> {
    /// One socket per flow, in flow order.
    Flows(&'a [RawFd]),
    /// No socket lasts to the end of the run; the reason says why.
    None(&'static str),
}

impl KernelProbe {
    /// Before the window: finds the device's interrupt names and opens its counters.
    pub fn prepare(network: Option<&NetworkEnvironment>, worker_cpus: &[Option<usize>]) -> KernelProbe {
        let mut p = KernelProbe {
            device: None,
            driver: None,
            loopback: false,
            nic: None,
            worker_cpus: worker_cpus.to_vec(),
            notes: Vec::new(),
        };
        match network.and_then(|n| Some((n, n.device.as_deref()?))) {
            Some((n, dev)) => {
                p.driver = n.driver.clone();
                p.loopback = n.driver.as_deref() == Some("loopback");
                p.device = Some(DeviceMatch::for_device(dev, n.bus_info.as_deref()));
                p.nic = Some(NicReader::open(dev));
            }
            None => p.notes.push("device counters: the egress device is not known".into()),
        }
        let _ = irq_time_accounting();
        p
    }

    /// The counters now (just before the window opens, and right after it closes).
    pub fn snapshot(&mut self) -> KernelSnapshot {
        KernelSnapshot {
            softirqs: Softirqs::read(),
            interrupts: if self.device.is_some() { Interrupts::read() } else { Err(String::new()) },
            softnet: Softnet::read(),
            nic: self.nic.as_mut().map(NicReader::snapshot).unwrap_or_default(),
        }
    }

    /// The report over [before, now]: takes the closing snapshot itself; `stat_*` are the
    /// /proc/stat snapshots the side's CPU figures came from.
    pub fn report(
        &mut self,
        before: KernelSnapshot,
        stat_before: &ProcStat,
        stat_after: &ProcStat,
        sockets: DataSocketsAtEnd,
    ) -> KernelCounters {
        let after = self.snapshot();
        let mut k = KernelCounters { irq_time_accounting: irq_time_accounting(), ..Default::default() };
        k.unavailable.append(&mut self.notes.clone());
        cpu_split(&mut k, stat_before, stat_after);

        let mut workers: Vec<usize> = self.worker_cpus.iter().flatten().copied().collect();
        workers.sort_unstable();
        workers.dedup();
        k.workers_pinned = !workers.is_empty();
        k.worker_cpus = workers;

        match (&after.softirqs, &before.softirqs) {
            (Ok(a), Ok(b)) => match a.since(b) {
                Ok(d) => {
                    k.softirqs = d
                        .cpus
                        .iter()
                        .enumerate()
                        .map(|(i, &cpu)| CpuSoftirqs { cpu, net_rx: d.net_rx[i], net_tx: d.net_tx[i] })
                        .collect();
                    k.net_rx_softirqs = d.net_rx.iter().sum();
                    k.net_tx_softirqs = d.net_tx.iter().sum();
                    k.net_softirq_cpus = busiest(&k.softirqs);
                }
                Err(e) => k.unavailable.push(format!("softirqs: {e}")),
            },
            (Err(e), _) | (_, Err(e)) => k.unavailable.push(e.clone()),
        }

        if let Some(m) = &self.device {
            k.interrupts =
                Some(self.device_interrupts(m, &before.interrupts, &after.interrupts, &mut k.unavailable));
        }

        match (&after.softnet, &before.softnet) {
            (Ok(a), Ok(b)) => k.softnet = a.since(b),
            (Err(e), _) | (_, Err(e)) => k.unavailable.push(e.clone()),
        }

        if let Some(reader) = &mut self.nic {
            let link = match (after.nic.link, before.nic.link) {
                (Some(a), Some(b)) => Some(a.since(&b)),
                _ => None,
            };
            let counts = match (&after.nic.driver, &before.nic.driver) {
                (Some(a), Some(b)) if a.len() == b.len() && a.len() == reader.names.len() => reader
                    .names
                    .iter()
                    .zip(a.iter().zip(b))
                    .map(|(name, (a, b))| NamedCount { name: name.clone(), delta: a.saturating_sub(*b) })
                    .collect(),
                _ => Vec::new(),
            };
            let (driver_counters, queues) = nic::group(counts);
            k.unavailable.append(&mut reader.unavailable);
            k.nic = Some(NicCounters {
                device: reader.device.clone(),
                driver: self.driver.clone(),
                link,
                driver_counters,
                queues,
            });
        }

        let rx_packets = k.nic.as_ref().and_then(|n| n.link).map(|l| l.rx_packets);
        let all_packets = k.nic.as_ref().and_then(|n| n.link).map(|l| l.rx_packets + l.tx_packets);
        k.packets_per_net_rx =
            rx_packets.filter(|_| k.net_rx_softirqs > 0).map(|p| p as f64 / k.net_rx_softirqs as f64);
        let irqs = k.interrupts.as_ref().map_or(0, |i| i.total);
        k.packets_per_interrupt = all_packets.filter(|_| irqs > 0).map(|p| p as f64 / irqs as f64);

        match sockets {
            DataSocketsAtEnd::Flows(fds) => {
                k.flows = fds.iter().enumerate().map(|(flow, &fd)| placement::read(flow, fd)).collect()
            }
            DataSocketsAtEnd::None(why) => k.placement_note = Some(why.to_string()),
        }
        k
    }

    fn device_interrupts(
        &self,
        m: &DeviceMatch,
        before: &Result<Interrupts, String>,
        after: &Result<Interrupts, String>,
        unavailable: &mut Vec<String>,
    ) -> DeviceInterrupts {
        let mut d = DeviceInterrupts { device: m.device.clone(), ..Default::default() };
        let (a, b) = match (after, before) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                unavailable.push(e.clone());
                d.note = Some(e.clone());
                return d;
            }
        };
        d.cpus = a.cpus.clone();
        match a.device_since(b, m) {
            Ok(lines) => {
                d.lines = lines
                    .into_iter()
                    .map(|(queue, l)| InterruptLine {
                        total: l.counts.iter().sum(),
                        irq: l.irq,
                        name: l.name,
                        queue,
                        per_cpu: l.counts,
                    })
                    .collect();
                d.total = d.lines.iter().map(|l| l.total).sum();
            }
            Err(e) => unavailable.push(format!("interrupts of {}: {e}", m.device)),
        }
        if d.lines.is_empty() {
            d.note = Some(if self.loopback {
                format!("{} is the loopback device: it has no interrupts", m.device)
            } else {
                format!(
                    "no line of /proc/interrupts is named after {} (virtual devices such as veth have none)",
                    m.device
                )
            });
        }
        d
    }
}

/// Each CPU's split, matched by CPU number, and the side's softirq and irq shares.
fn cpu_split(k: &mut KernelCounters, before: &ProcStat, after: &ProcStat) {
    let (mut soft, mut hard, mut all) = (0u64, 0u64, 0u64);
    for (i, a) in after.cpus.iter().enumerate() {
        let Some(cpu) = after.ids.get(i).copied() else { continue };
        let Some(j) = before.ids.iter().position(|&id| id == cpu) else { continue };
        let d: CpuTicks = a.delta(&before.cpus[j]);
        let total = d.total();
        soft += d.softirq;
        hard += d.irq;
        all += total;
        let pct = |v: u64| if total == 0 { 0.0 } else { 100.0 * v as f64 / total as f64 };
        k.cpu_split.push(CpuSplit {
            cpu,
            user: pct(d.user),
            nice: pct(d.nice),
            system: pct(d.system),
            irq: pct(d.irq),
            softirq: pct(d.softirq),
            iowait: pct(d.iowait),
            steal: pct(d.steal),
            idle: pct(d.idle),
            ticks: total,
        });
    }
    let pct = |v: u64| if all == 0 { 0.0 } else { 100.0 * v as f64 / all as f64 };
    k.softirq_percent = pct(soft);
    k.irq_percent = pct(hard);
}

/// CPUs with at least a tenth of all network softirqs, most first.
fn busiest(per_cpu: &[CpuSoftirqs]) -> Vec<usize> {
    let total: u64 = per_cpu.iter().map(|c| c.net_rx + c.net_tx).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut v: Vec<(u64, usize)> =
        per_cpu.iter().map(|c| (c.net_rx + c.net_tx, c.cpu)).filter(|(n, _)| n * 10 >= total).collect();
    v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    v.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's /proc/stat per-CPU lines, then the same a few seconds later.
    const STAT_BEFORE: &str = "cpu  439706 54168 457514 437794 325609 0 209401 617 0 0
cpu0 213529 25590 228929 231529 155547 0 107041 289 0 0
cpu1 226177 28577 228584 206265 170061 0 102360 328 0 0
intr 103056452 0 0 0
";
    const STAT_AFTER: &str = "cpu  440006 54168 457814 437994 325609 0 209601 617 0 0
cpu0 213629 25590 229129 231529 155547 0 107141 289 0 0
cpu1 226377 28577 228684 206465 170061 0 102460 328 0 0
intr 103056452 0 0 0
";

    #[test]
    fn the_split_of_each_cpu_sums_to_100() {
        let mut k = KernelCounters::default();
        cpu_split(&mut k, &ProcStat::parse(STAT_BEFORE).unwrap(), &ProcStat::parse(STAT_AFTER).unwrap());
        assert_eq!(k.cpu_split.len(), 2);
        for c in &k.cpu_split {
            let sum = c.user + c.nice + c.system + c.irq + c.softirq + c.iowait + c.steal + c.idle;
            assert!((sum - 100.0).abs() < 1e-9, "CPU {} sums to {sum}", c.cpu);
        }
        // cpu0: 100 user, 200 system, 100 softirq of 400 ticks.
        let c0 = k.cpu_split[0];
        assert_eq!((c0.cpu, c0.ticks), (0, 400));
        assert!((c0.softirq - 25.0).abs() < 1e-9 && (c0.system - 50.0).abs() < 1e-9);
        // 200 softirq ticks of 1000 overall.
        assert!((k.softirq_percent - 20.0).abs() < 1e-9);
    }

    #[test]
    fn the_busiest_softirq_cpus_come_first() {
        let c = |cpu, net_rx, net_tx| CpuSoftirqs { cpu, net_rx, net_tx };
        assert_eq!(busiest(&[c(0, 5, 0), c(1, 90, 5), c(2, 0, 0)]), vec![1]);
        assert_eq!(busiest(&[c(0, 40, 0), c(1, 60, 0)]), vec![1, 0]);
        assert!(busiest(&[c(0, 0, 0)]).is_empty());
    }

    #[test]
    fn a_loopback_window_counts_softirqs_and_names_the_device() {
        let env = NetworkEnvironment {
            device: Some("lo".into()),
            driver: Some("loopback".into()),
            ..Default::default()
        };
        let mut probe = KernelProbe::prepare(Some(&env), &[Some(0)]);
        let stat_before = ProcStat::read().unwrap();
        let before = probe.snapshot();
        // Some loopback traffic inside the window.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        drop((l, c));
        let stat_after = ProcStat::read().unwrap();
        let k = probe.report(before, &stat_before, &stat_after, DataSocketsAtEnd::None("none here"));
        assert_eq!(k.worker_cpus, vec![0]);
        assert!(k.workers_pinned);
        let nic = k.nic.as_ref().expect("lo's counters");
        assert_eq!(nic.device, "lo");
        assert!(nic.link.expect("lo has stats64").rx_packets > 0);
        let irqs = k.interrupts.as_ref().expect("an interrupts entry");
        assert!(irqs.lines.is_empty() && irqs.note.as_deref().is_some_and(|n| n.contains("loopback")));
        assert!(!k.softnet.is_empty());
        assert_eq!(k.placement_note.as_deref(), Some("none here"));
    }

    mod never_panic {
        use super::super::*;
        use proptest::prelude::*;

        /// Text shaped like the files (digits, hex, colons, CPU headers, names) more often
        /// than pure noise would be.
        fn procish() -> impl Strategy<Value = String> {
            prop_oneof![
                ".{0,400}",
                "(CPU[0-9]{1,2} {1,4}){0,4}\n([ A-Z_0-9]{0,8}:( {1,3}[0-9a-f]{1,10}){0,5}[ a-z0-9.-]{0,20}\n){0,6}",
            ]
        }

        proptest! {
            #[test]
            fn arbitrary_input_never_panics_the_parsers(text in procish(), bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
                let a = Softirqs::parse(&text);
                if let (Ok(a), Ok(b)) = (&a, Softirqs::parse(&text)) {
                    let _ = a.since(&b);
                }
                if let Ok(i) = Interrupts::parse(&text) {
                    let m = DeviceMatch { device: "eth0".into(), parent: Some("virtio2".into()), bus_info: Some("0000:00:03.0".into()) };
                    let _ = i.device_since(&i, &m);
                }
                if let Ok(s) = Softnet::parse(&text) {
                    let _ = s.since(&s);
                }
                let _ = ProcStat::parse(&text);
                let _ = irqtime::from_config(&text);
                let _ = nic::split_queue(&text);
                let _ = nic::LinkStats::parse_link_message(&bytes);
                let lossy = String::from_utf8_lossy(&bytes);
                let _ = Softirqs::parse(&lossy);
                let _ = Interrupts::parse(&lossy);
                let _ = Softnet::parse(&lossy);
            }
        }
    }
}
