//! /proc/interrupts: the hardware interrupts of one network device, per queue and per CPU.
//! A device's lines are found by the names its driver gave them: the interface name
//! (`eth0-TxRx-0`, `eth0`), or for virtio the virtio device behind it (`virtio2-input.0`),
//! or its bus address in the chip column (`PCI-MSIX-0000:00:03.0`).

use super::proc_table::{column_delta, cpu_columns, row};

/// One numbered interrupt line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrqLine {
    /// The IRQ number (the row's name).
    pub irq: String,
    /// The action name(s), the last word(s) of the row.
    pub name: String,
    /// The rest of the description: chip, hardware IRQ, trigger.
    pub chip: String,
    pub counts: Vec<u64>,
}

/// Every numbered line of /proc/interrupts at one instant (the per-CPU architecture rows
/// like `LOC:` and `NMI:` are not a device's and are left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interrupts {
    pub cpus: Vec<usize>,
    pub lines: Vec<IrqLine>,
}

/// What names a device's interrupt lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceMatch {
    /// The interface name.
    pub device: String,
    /// The parent device's name in sysfs (`virtio2`), when it has one.
    pub parent: Option<String>,
    /// The driver's bus address (`0000:00:03.0`), when it has one.
    pub bus_info: Option<String>,
}

impl DeviceMatch {
    /// The match for `device`, its sysfs parent read from /sys/class/net/DEV/device.
    pub fn for_device(device: &str, bus_info: Option<&str>) -> DeviceMatch {
        let parent = std::fs::read_link(format!("/sys/class/net/{device}/device"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        DeviceMatch {
            device: device.to_string(),
            parent,
            bus_info: bus_info.filter(|b| !b.is_empty()).map(str::to_string),
        }
    }

    /// The queue part of an action name that belongs to this device (`input.0`,
    /// `TxRx-0`; empty for a line named after the device alone), or `None`.
    pub fn queue_of(&self, line: &IrqLine) -> Option<String> {
        for action in line.name.split(',').map(str::trim) {
            for prefix in std::iter::once(self.device.as_str()).chain(self.parent.as_deref()) {
                if action == prefix {
                    return Some(String::new());
                }
                if let Some(rest) = action.strip_prefix(prefix) {
                    if let Some(q) = rest.strip_prefix(['-', '@', ':', '_']) {
                        return Some(q.to_string());
                    }
                }
            }
        }
        // Some drivers name their vectors after the PCI address only (`0000:00:03.0-...`),
        // and the MSI chip column carries it too.
        let bus = self.bus_info.as_deref()?;
        (line.chip.contains(bus) || line.name.contains(bus)).then(|| line.name.clone())
    }
}

impl Interrupts {
    pub fn read() -> Result<Interrupts, String> {
        let text = std::fs::read_to_string("/proc/interrupts")
            .map_err(|e| format!("cannot read /proc/interrupts: {e}"))?;
        Interrupts::parse(&text).map_err(|e| format!("/proc/interrupts: {e}"))
    }

    pub fn parse(text: &str) -> Result<Interrupts, String> {
        let mut rows = text.lines();
        let cpus = cpu_columns(rows.next().ok_or("empty")?)?;
        let mut lines = Vec::new();
        for line in rows.filter(|l| !l.trim().is_empty()) {
            let (irq, counts, description) = row(line, cpus.len())?;
            if !irq.bytes().all(|b| b.is_ascii_digit()) {
                continue; // NMI, LOC, ...: per-CPU architecture counts, no device's
            }
            if counts.len() != cpus.len() {
                return Err(format!("IRQ {irq} has {} counts for {} CPUs", counts.len(), cpus.len()));
            }
            // The description is "chip hwirq-trigger  action[, action...]": the kernel
            // writes two spaces before the action names; without them the last word is it.
            let (chip, name) = match description.rfind("  ").or_else(|| description.rfind(' ')) {
                Some(at) => (description[..at].trim(), description[at..].trim()),
                None => ("", description),
            };
            lines.push(IrqLine {
                irq: irq.to_string(),
                name: name.to_string(),
                chip: chip.to_string(),
                counts,
            });
        }
        Ok(Interrupts { cpus, lines })
    }

    /// The lines of the device `m` names, as deltas over [before, self]; a line that
    /// appeared during the window counts from zero.
    pub fn device_since(
        &self,
        before: &Interrupts,
        m: &DeviceMatch,
    ) -> Result<Vec<(String, IrqLine)>, String> {
        if self.cpus != before.cpus {
            return Err("the online CPUs changed during the run".into());
        }
        let mut out = Vec::new();
        for line in &self.lines {
            let Some(queue) = m.queue_of(line) else { continue };
            let zero = vec![0; line.counts.len()];
            let old = before.lines.iter().find(|l| l.irq == line.irq).map_or(&zero, |l| &l.counts);
            out.push((queue, IrqLine { counts: column_delta(&line.counts, old), ..line.clone() }));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's /proc/interrupts (kernel 6.18, 2 vCPUs, virtio_net eth0 on virtio2,
    /// PCI 0000:00:03.0).
    const SAMPLE: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 25:          0          1  IO-APIC   6-edge      ACPI:Ged
 26:          0         17  IO-APIC   4-edge      ttyS0
 28:          0          0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config
 31:          0       1954 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats
 34:        171          0 PCI-MSIX-0000:00:05.0   1-edge      virtio4-input
 36:          0     417068 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0       1126 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:       1019          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 41:       5397          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
NMI:          0          0   Non-maskable interrupts
LOC:   37259014   37104458   Local timer interrupts
RES:    2353142    2368990   Rescheduling interrupts
ERR:          0
MIS:          0
";

    fn virtio_eth0() -> DeviceMatch {
        DeviceMatch { device: "eth0".into(), parent: Some("virtio2".into()), bus_info: None }
    }

    #[test]
    fn a_real_sample_finds_the_virtio_queues_of_eth0() {
        let before = Interrupts::parse(SAMPLE).unwrap();
        assert_eq!(before.cpus, vec![0, 1]);
        assert_eq!(before.lines.len(), 11);
        let after = Interrupts::parse(&SAMPLE.replace("1126", "1200")).unwrap();
        let mine = after.device_since(&before, &virtio_eth0()).unwrap();
        let queues: Vec<&str> = mine.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(queues, vec!["config", "input.0", "output.0"]);
        assert_eq!(mine[1].1.counts, vec![0, 74]);
        // virtio20 is not virtio2: a prefix must end at a separator.
        let other = DeviceMatch { device: "eth9".into(), parent: Some("virtio".into()), bus_info: None };
        assert!(after.device_since(&before, &other).unwrap().is_empty());
        // The bus address finds the same lines through the chip column.
        let by_bus =
            DeviceMatch { device: "ens3".into(), parent: None, bus_info: Some("0000:00:03.0".into()) };
        assert_eq!(after.device_since(&before, &by_bus).unwrap().len(), 3);
        let lo = DeviceMatch { device: "lo".into(), ..Default::default() };
        assert!(after.device_since(&before, &lo).unwrap().is_empty());
    }

    #[test]
    fn driver_named_vectors_and_shared_lines() {
        let t = "CPU0 CPU1\n 90: 5 6 IR-PCI-MSI 1-edge eth0-TxRx-0\n 91: 1 1 IO-APIC 2-edge  ahci, eth1\n 92: 0 0\n";
        let i = Interrupts::parse(t).unwrap();
        let e0 = DeviceMatch { device: "eth0".into(), ..Default::default() };
        assert_eq!(e0.queue_of(&i.lines[0]).as_deref(), Some("TxRx-0"));
        let e1 = DeviceMatch { device: "eth1".into(), ..Default::default() };
        assert_eq!(e1.queue_of(&i.lines[1]).as_deref(), Some(""));
    }

    #[test]
    fn garbage_truncated_and_unknown_input_is_an_error() {
        assert!(Interrupts::parse("").is_err());
        assert!(Interrupts::parse("garbage\n").is_err());
        assert!(Interrupts::parse("CPU0 CPU1\n 24: 1\n").is_err(), "a numbered line missing a CPU's count");
        let cut = &SAMPLE[..SAMPLE.find("1126").unwrap()];
        assert!(Interrupts::parse(cut).is_err());
        assert!(Interrupts::parse("CPU0\nfoo bar baz\n").is_err());
        let one = Interrupts::parse("CPU0\n 1: 5 x\n").unwrap();
        assert!(one.device_since(&Interrupts::parse(SAMPLE).unwrap(), &virtio_eth0()).is_err());
    }
}
