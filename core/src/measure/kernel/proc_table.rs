//! The layout /proc/softirqs and /proc/interrupts share: a header of `CPUn` column names
//! (only the online CPUs), then one row per source, `NAME:` followed by one decimal count
//! per column and, in /proc/interrupts, a free-text description.

/// The CPU numbers of a header line (`CPU0 CPU1 ...`), in column order.
pub fn cpu_columns(header: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for word in header.split_whitespace() {
        let n = word
            .strip_prefix("CPU")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| format!("header word '{word}' is not a CPU column"))?;
        cpus.push(n);
    }
    if cpus.is_empty() {
        return Err("the header names no CPU column".into());
    }
    Ok(cpus)
}

/// One row split into its name (before the colon), its `ncols` counts, and what follows
/// them. Rows with fewer counts than columns (the `ERR:` and `MIS:` totals of
/// /proc/interrupts) give the counts they have and an empty description.
pub fn row(line: &str, ncols: usize) -> Result<(&str, Vec<u64>, &str), String> {
    let (name, rest) =
        line.split_once(':').ok_or_else(|| format!("row without a colon: '{}'", clip(line)))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("row without a name: '{}'", clip(line)));
    }
    let mut counts = Vec::with_capacity(ncols);
    let mut tail = rest;
    while counts.len() < ncols {
        let trimmed = tail.trim_start();
        let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let word = &trimmed[..end];
        match word.parse::<u64>() {
            Ok(v) => {
                counts.push(v);
                tail = &trimmed[end..];
            }
            Err(_) => break,
        }
    }
    if counts.is_empty() {
        return Err(format!("row '{name}' has no counts"));
    }
    Ok((name, counts, tail.trim()))
}

/// A line shortened for an error message.
fn clip(line: &str) -> String {
    line.chars().take(60).collect()
}

/// `after - before` per column, 0 where a counter went backwards (a CPU went offline and
/// back, or a wrap): a delta over the window is never negative.
pub fn column_delta(after: &[u64], before: &[u64]) -> Vec<u64> {
    after.iter().enumerate().map(|(i, a)| a.saturating_sub(before.get(i).copied().unwrap_or(*a))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_rows() {
        assert_eq!(cpu_columns("   CPU0       CPU1  ").unwrap(), vec![0, 1]);
        assert_eq!(cpu_columns("CPU0 CPU3").unwrap(), vec![0, 3]);
        assert!(cpu_columns("").is_err());
        assert!(cpu_columns("CPU0 XYZ").is_err());
        let (n, c, d) =
            row(" 38:          0       1126 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0", 2).unwrap();
        assert_eq!((n, c, d), ("38", vec![0, 1126], "PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0"));
        let (n, c, d) = row("ERR:          0", 2).unwrap();
        assert_eq!((n, c, d), ("ERR", vec![0], ""));
        assert!(row("no colon here", 2).is_err());
        assert!(row(": 1 2", 2).is_err());
        assert!(row("X: abc", 2).is_err());
        assert_eq!(column_delta(&[5, 3], &[2, 4]), vec![3, 0]);
        assert_eq!(column_delta(&[5, 3], &[2]), vec![3, 0]);
    }
}
