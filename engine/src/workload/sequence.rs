//! Per-flow sequence accounting for UDP: a sliding bitmap over the last WINDOW sequence
//! numbers tells a late (reordered) datagram from a duplicate without a per-datagram
//! allocation or search.

/// Sequence numbers the bitmap remembers behind the highest one seen.
pub const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

/// What one flow's receiver saw.
#[derive(Clone, Debug)]
pub struct SeqTracker {
    /// The highest sequence number seen, plus one (0: nothing yet).
    next: u64,
    /// Bit `s % WINDOW` is set when `s` arrived, for `s` in `[next - WINDOW, next)`.
    bits: [u64; WORDS],
    /// Distinct datagrams seen (late ones left out).
    pub unique: u64,
    pub reordered: u64,
    pub duplicated: u64,
    /// Older than the window: counted as lost, since a duplicate cannot be ruled out.
    pub late: u64,
}

impl Default for SeqTracker {
    fn default() -> Self {
        SeqTracker { next: 0, bits: [0; WORDS], unique: 0, reordered: 0, duplicated: 0, late: 0 }
    }
}

/// Puts each flow's sequence tally (`trackers[f]` for flow `f`) into a receiver's report,
/// per flow and summed.
pub fn add_sequences(r: &mut ringperf_core::report::UdpReport, trackers: &[SeqTracker]) {
    for (f, t) in trackers.iter().enumerate() {
        let fr = &mut r.flows[f];
        fr.datagrams_received = t.unique;
        fr.lost = t.lost();
        fr.reordered = t.reordered;
        fr.duplicated = t.duplicated;
        r.datagrams_received += t.unique;
        r.lost += t.lost();
        r.reordered += t.reordered;
        r.duplicated += t.duplicated;
        r.late += t.late;
        r.sequence_span += t.span();
    }
}

impl SeqTracker {
    #[inline]
    fn bit(s: u64) -> (usize, u64) {
        let i = s % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Accounts one arrival.
    #[inline]
    pub fn on(&mut self, seq: u64) {
        if seq >= self.next {
            // The slots of the skipped numbers held numbers that now leave the window.
            if seq - self.next >= WINDOW {
                self.bits = [0; WORDS];
            } else {
                for s in self.next..seq {
                    let (w, b) = Self::bit(s);
                    self.bits[w] &= !b;
                }
            }
            let (w, b) = Self::bit(seq);
            self.bits[w] |= b;
            self.next = seq + 1;
            self.unique += 1;
        } else if self.next - seq > WINDOW {
            self.late += 1;
        } else {
            let (w, b) = Self::bit(seq);
            if self.bits[w] & b != 0 {
                self.duplicated += 1;
            } else {
                self.bits[w] |= b;
                self.unique += 1;
                self.reordered += 1;
            }
        }
    }

    /// Sequence numbers up to the highest seen: every one of them was received or lost.
    pub fn span(&self) -> u64 {
        self.next
    }

    /// Numbers up to the highest seen that never arrived (within the window).
    pub fn lost(&self) -> u64 {
        self.next - self.unique
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_reorders_duplicates_and_late_arrivals_add_up() {
        let mut t = SeqTracker::default();
        for s in [0, 1, 2, 5, 3, 3, 7] {
            t.on(s);
        }
        // 4 and 6 missing; 3 came late once and once more as a duplicate.
        assert_eq!((t.span(), t.unique, t.lost(), t.reordered, t.duplicated), (8, 6, 2, 1, 1));
        t.on(7 + WINDOW + 10);
        t.on(4); // far behind the window now
        assert_eq!(t.late, 1);
        assert_eq!(t.unique + t.lost(), t.span());
        // A slot reused for a new number does not look like a duplicate of the old one.
        let mut u = SeqTracker::default();
        u.on(0);
        u.on(WINDOW + 1);
        u.on(WINDOW);
        assert_eq!((u.duplicated, u.reordered, u.unique), (0, 1, 3));
    }
}
