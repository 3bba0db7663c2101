//! /proc/net/softnet_stat: the per-CPU receive backlog counters, one row per online CPU,
//! hexadecimal columns. The column count grew over the kernel's history: 10 before 3.11
//! (processed, dropped, time_squeeze, 5 unused, cpu_collision, received_rps), then
//! flow_limit_count (11), then the backlog length and the CPU number (13, 5.10), then the
//! input and process queue lengths (15). Rows before the CPU-number column are in CPU order
//! of the online CPUs only.

/// One CPU's counters.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftnetRow {
    pub cpu: usize,
    pub processed: u64,
    pub dropped: u64,
    pub time_squeeze: u64,
    /// `None` on kernels whose rows are too short to carry it.
    pub received_rps: Option<u64>,
    pub flow_limit_count: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Softnet {
    pub rows: Vec<SoftnetRow>,
}

/// The columns of the counters kept, by position.
const PROCESSED: usize = 0;
const DROPPED: usize = 1;
const TIME_SQUEEZE: usize = 2;
const RECEIVED_RPS: usize = 9;
const FLOW_LIMIT: usize = 10;
const CPU_INDEX: usize = 12;

impl Softnet {
    pub fn read() -> Result<Softnet, String> {
        let text = std::fs::read_to_string("/proc/net/softnet_stat")
            .map_err(|e| format!("cannot read /proc/net/softnet_stat: {e}"))?;
        Softnet::parse(&text).map_err(|e| format!("/proc/net/softnet_stat: {e}"))
    }

    pub fn parse(text: &str) -> Result<Softnet, String> {
        let mut rows = Vec::new();
        for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let cols = line
                .split_whitespace()
                .map(|w| u64::from_str_radix(w, 16).map_err(|_| format!("row {i}: '{w}' is not hexadecimal")))
                .collect::<Result<Vec<u64>, String>>()?;
            if cols.len() < 10 {
                return Err(format!(
                    "row {i} has {} columns; every kernel since 2.6 writes at least 10",
                    cols.len()
                ));
            }
            let cpu = match cols.get(CPU_INDEX) {
                Some(&c) => {
                    usize::try_from(c).map_err(|_| format!("row {i}: CPU number {c} out of range"))?
                }
                None => i,
            };
            rows.push(SoftnetRow {
                cpu,
                processed: cols[PROCESSED],
                dropped: cols[DROPPED],
                time_squeeze: cols[TIME_SQUEEZE],
                received_rps: cols.get(RECEIVED_RPS).copied(),
                flow_limit_count: cols.get(FLOW_LIMIT).copied(),
            });
        }
        if rows.is_empty() {
            return Err("no rows".into());
        }
        Ok(Softnet { rows })
    }

    /// Counts over [before, self] per CPU, matched by CPU number. The counters are 32-bit
    /// in the kernel and wrap: a smaller value after is taken as one wrap.
    pub fn since(&self, before: &Softnet) -> Vec<SoftnetRow> {
        let d = |a: u64, b: u64| match a.checked_sub(b) {
            Some(x) => x,
            None if b <= u64::from(u32::MAX) => a + (1u64 << 32) - b,
            None => 0,
        };
        self.rows
            .iter()
            .map(|a| {
                let b = before
                    .rows
                    .iter()
                    .find(|b| b.cpu == a.cpu)
                    .copied()
                    .unwrap_or(SoftnetRow { cpu: a.cpu, ..*a });
                let o = |x: Option<u64>, y: Option<u64>| Some(d(x?, y?));
                SoftnetRow {
                    cpu: a.cpu,
                    processed: d(a.processed, b.processed),
                    dropped: d(a.dropped, b.dropped),
                    time_squeeze: d(a.time_squeeze, b.time_squeeze),
                    received_rps: o(a.received_rps, b.received_rps),
                    flow_limit_count: o(a.flow_limit_count, b.flow_limit_count),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's softnet_stat (kernel 6.18: 15 columns, the CPU number in the 13th).
    const SAMPLE: &str = "\
1b033d0b 000009fb 00000041 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
16fdccdf 00000716 0000003c 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000000 00000000
";

    #[test]
    fn a_real_sample_parses() {
        let s = Softnet::parse(SAMPLE).unwrap();
        assert_eq!(s.rows.len(), 2);
        assert_eq!(
            s.rows[0],
            SoftnetRow {
                cpu: 0,
                processed: 0x1b033d0b,
                dropped: 0x9fb,
                time_squeeze: 0x41,
                received_rps: Some(0),
                flow_limit_count: Some(0),
            }
        );
        assert_eq!(s.rows[1].cpu, 1);
        let later = Softnet::parse(&SAMPLE.replacen("1b033d0b", "1b033d1b", 1)).unwrap();
        let d = later.since(&s);
        assert_eq!((d[0].processed, d[1].processed, d[0].dropped), (16, 0, 0));
    }

    #[test]
    fn older_and_shorter_layouts() {
        // A 3.x kernel: 10 columns, no flow limit, no CPU number (row order is CPU order).
        let old = "00000010 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000002\n\
                   00000020 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n";
        let s = Softnet::parse(old).unwrap();
        assert_eq!((s.rows[1].cpu, s.rows[1].processed, s.rows[0].received_rps), (1, 0x20, Some(2)));
        assert_eq!(s.rows[0].flow_limit_count, None);
        // 11 columns: flow_limit_count, still no CPU number.
        let eleven = "00000010 0 0 0 0 0 0 0 0 0 00000005\n";
        assert_eq!(Softnet::parse(eleven).unwrap().rows[0].flow_limit_count, Some(5));
    }

    #[test]
    fn a_32_bit_wrap_is_one_wrap() {
        let a = Softnet::parse("fffffff0 0 0 0 0 0 0 0 0 0\n").unwrap();
        let b = Softnet::parse("00000010 0 0 0 0 0 0 0 0 0\n").unwrap();
        assert_eq!(b.since(&a)[0].processed, 0x20);
    }

    #[test]
    fn garbage_truncated_and_unknown_input_is_an_error() {
        assert!(Softnet::parse("").is_err());
        assert!(Softnet::parse("not hex at all\n").is_err());
        assert!(Softnet::parse("00000001 00000002 00000003\n").is_err(), "too few columns");
        assert!(Softnet::parse(&SAMPLE[..40]).is_err(), "a row cut short");
        assert!(Softnet::parse("0 0 0 0 0 0 0 0 0 0 0 0 ffffffffffffffffff\n").is_err(), "overflow");
    }
}
