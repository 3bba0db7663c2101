//! /proc/softirqs: how many times each softirq ran on each CPU. Only the network ones
//! (NET_RX, NET_TX) are kept.

use super::proc_table::{column_delta, cpu_columns, row};

/// NET_RX and NET_TX counts per CPU column at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Softirqs {
    pub cpus: Vec<usize>,
    pub net_rx: Vec<u64>,
    pub net_tx: Vec<u64>,
}

impl Softirqs {
    pub fn read() -> Result<Softirqs, String> {
        let text = std::fs::read_to_string("/proc/softirqs")
            .map_err(|e| format!("cannot read /proc/softirqs: {e}"))?;
        Softirqs::parse(&text).map_err(|e| format!("/proc/softirqs: {e}"))
    }

    pub fn parse(text: &str) -> Result<Softirqs, String> {
        let mut lines = text.lines();
        let cpus = cpu_columns(lines.next().ok_or("empty")?)?;
        let (mut net_rx, mut net_tx) = (None, None);
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let (name, counts, _) = row(line, cpus.len())?;
            if counts.len() != cpus.len() {
                return Err(format!("row '{name}' has {} counts for {} CPUs", counts.len(), cpus.len()));
            }
            match name {
                "NET_RX" => net_rx = Some(counts),
                "NET_TX" => net_tx = Some(counts),
                _ => {}
            }
        }
        match (net_rx, net_tx) {
            (Some(net_rx), Some(net_tx)) => Ok(Softirqs { cpus, net_rx, net_tx }),
            _ => Err("no NET_RX or NET_TX row".into()),
        }
    }

    /// Counts over [before, self], per CPU; an error if the CPU columns changed.
    pub fn since(&self, before: &Softirqs) -> Result<Softirqs, String> {
        if self.cpus != before.cpus {
            return Err("the online CPUs changed during the run".into());
        }
        Ok(Softirqs {
            cpus: self.cpus.clone(),
            net_rx: column_delta(&self.net_rx, &before.net_rx),
            net_tx: column_delta(&self.net_tx, &before.net_tx),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's /proc/softirqs (kernel 6.18, 2 vCPUs).
    pub const SAMPLE: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:     648901     659930
      NET_TX:      83430     112869
      NET_RX:  363316456  295370854
       BLOCK:          0     417046
    IRQ_POLL:          0          0
     TASKLET:      24753      28371
       SCHED:     451769     465751
     HRTIMER:   34854138   34656994
         RCU:    1608525    1585162
";

    #[test]
    fn a_real_sample_parses_and_deltas() {
        let a = Softirqs::parse(SAMPLE).unwrap();
        assert_eq!(a.cpus, vec![0, 1]);
        assert_eq!(a.net_rx, vec![363316456, 295370854]);
        assert_eq!(a.net_tx, vec![83430, 112869]);
        let later = SAMPLE.replace("363316456", "363316500");
        let d = Softirqs::parse(&later).unwrap().since(&a).unwrap();
        assert_eq!(d.net_rx, vec![44, 0]);
        assert_eq!(d.net_tx, vec![0, 0]);
    }

    #[test]
    fn garbage_truncated_and_unknown_input_is_an_error() {
        assert!(Softirqs::parse("").is_err());
        assert!(Softirqs::parse("hello world\n").is_err());
        // Truncated in the middle of the NET_RX row: a missing count.
        let cut = &SAMPLE[..SAMPLE.find("295370854").unwrap()];
        assert!(Softirqs::parse(cut).is_err());
        // Truncated before NET_RX.
        assert!(Softirqs::parse(&SAMPLE[..SAMPLE.find("NET_RX").unwrap()]).is_err());
        assert!(Softirqs::parse("CPU0\nNET_RX: x\nNET_TX: 1\n").is_err());
        let three = Softirqs::parse("CPU0 CPU1 CPU2\nNET_RX: 1 2 3\nNET_TX: 1 2 3\n").unwrap();
        assert!(three.since(&Softirqs::parse(SAMPLE).unwrap()).is_err());
    }
}
