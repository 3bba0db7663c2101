//! Combining what several workers of one side measured into that side's figures: sums for
//! counters, exact merges for histograms, flows back in their global order.

use crate::error::Result;
use crate::measure::intervals::LatencySplit;
use crate::measure::latency::{merge_summaries, LatencyRecorder};
use crate::report::Ending;
use crate::report::{
    CrrReport, IntervalSample, LatencyPhases, LatencySummary, OneWayReport, OpenLoopReport, RecvReport,
    RingCounters, RrReport, SendReport, SpliceReport, SyscallCounters, ToolCpu, UdpFlowReport, UdpReport,
    VerifyReport, ZeroCopyRecvReport, ZeroCopyReport,
};

/// crr counters summed over workers; `None` when no worker ran crr.
pub fn crr<'a>(all: impl Iterator<Item = &'a CrrReport>) -> Option<CrrReport> {
    all.fold(None, |acc: Option<CrrReport>, c| {
        let a = acc.unwrap_or_default();
        Some(CrrReport {
            connections: a.connections + c.connections,
            port_busy: a.port_busy + c.port_busy,
            rejected: a.rejected + c.rejected,
            linger0: a.linger0 || c.linger0,
            server_closed_first: a.server_closed_first || c.server_closed_first,
        })
    })
}

/// rr depths over workers: the deepest any flow went; `None` when no worker ran rr.
pub fn rr<'a>(all: impl Iterator<Item = &'a RrReport>) -> Option<RrReport> {
    all.fold(None, |acc: Option<RrReport>, r| {
        let a = acc.unwrap_or_default();
        let open_loop = match (a.open_loop, r.open_loop) {
            (Some(x), Some(y)) => Some(OpenLoopReport {
                target_rate: x.target_rate + y.target_rate,
                scheduled: x.scheduled + y.scheduled,
                sent: x.sent + y.sent,
                slipped: x.slipped + y.slipped,
                dropped: x.dropped + y.dropped,
                unsent_at_end: x.unsent_at_end + y.unsent_at_end,
                slip_allowance_ns: x.slip_allowance_ns.max(y.slip_allowance_ns),
            }),
            (x, y) => x.or(y),
        };
        Some(RrReport {
            burst: a.burst.max(r.burst),
            max_in_flight: a.max_in_flight.max(r.max_in_flight),
            open_loop,
        })
    })
}

/// UDP counters summed over workers (`all[w]` is worker w's, its flows in local order),
/// flows put back in global order, and the CPU cost per datagram from the side's busy time.
pub fn udp(all: Vec<Option<&UdpReport>>, nflows: usize, busy_us: f64) -> Option<UdpReport> {
    let workers = all.len();
    let mut out: Option<UdpReport> = None;
    for (w, r) in all.into_iter().enumerate() {
        let Some(r) = r else { continue };
        let o = out.get_or_insert_with(|| UdpReport {
            datagram_size: r.datagram_size,
            gso_segment: r.gso_segment,
            gro: r.gro,
            flows: vec![UdpFlowReport::default(); nflows],
            ..UdpReport::default()
        });
        o.datagrams_sent += r.datagrams_sent;
        o.sends += r.sends;
        o.send_errors += r.send_errors;
        o.datagrams_received += r.datagrams_received;
        o.receives += r.receives;
        o.lost += r.lost;
        o.reordered += r.reordered;
        o.duplicated += r.duplicated;
        o.late += r.late;
        o.sequence_span += r.sequence_span;
        o.stray += r.stray;
        o.foreign_datagrams += r.foreign_datagrams;
        o.timeouts += r.timeouts;
        o.retransmissions += r.retransmissions;
        o.stale_responses += r.stale_responses;
        o.one_way = one_way(o.one_way.take(), r.one_way.as_ref());
        for (l, f) in r.flows.iter().enumerate() {
            if let Some(g) = o.flows.get_mut(global_flow(w, l, workers)) {
                *g = *f;
            }
        }
    }
    if let Some(o) = &mut out {
        let datagrams = o.datagrams_sent + o.datagrams_received;
        o.us_per_datagram = (datagrams > 0).then(|| busy_us / datagrams as f64);
    }
    out
}

/// Two workers' (or iterations') one-way delays: the histograms merged exactly, the counts
/// summed, the larger uncertainty kept (the client labels the result again).
pub fn one_way(a: Option<OneWayReport>, b: Option<&OneWayReport>) -> Option<OneWayReport> {
    let Some(b) = b else { return a };
    let Some(a) = a else { return Some(b.clone()) };
    let delays: Vec<&LatencySummary> = a.delay.iter().chain(b.delay.iter()).collect();
    Some(OneWayReport {
        delay: if delays.is_empty() { None } else { merge_summaries(&delays) },
        not_after_send: a.not_after_send + b.not_after_send,
        uncertainty_ns: a.uncertainty_ns.max(b.uncertainty_ns),
        trusted: None,
    })
}

pub fn ring(all: &[RingCounters]) -> RingCounters {
    all.iter().fold(RingCounters::default(), |a, c| RingCounters {
        enters: a.enters + c.enters,
        sqes: a.sqes + c.sqes,
        cqes: a.cqes + c.cqes,
        syscalls: match (a.syscalls, c.syscalls) {
            (Some(x), Some(y)) => Some(SyscallCounters {
                sends: x.sends + y.sends,
                recvs: x.recvs + y.recvs,
                epoll_waits: x.epoll_waits + y.epoll_waits,
                other: x.other + y.other,
            }),
            (x, y) => x.or(y),
        },
    })
}

pub fn tool(all: &[ToolCpu]) -> ToolCpu {
    all.iter().fold(ToolCpu::default(), |a, c| ToolCpu {
        thread_ns: a.thread_ns + c.thread_ns,
        user_us: a.user_us + c.user_us,
        system_us: a.system_us + c.system_us,
        helper_ns: a.helper_ns + c.helper_ns,
    })
}

pub fn latency(all: Vec<LatencyRecorder>) -> LatencyRecorder {
    let mut it = all.into_iter();
    let mut total = it.next().unwrap_or_default();
    for l in it {
        total.merge(&l);
    }
    total
}

/// Each worker's latency phases merged phase by phase; `None` unless every worker split
/// (a worker whose window ended before its tick would leave its round trips out).
pub fn latency_phases(all: Vec<Option<LatencySplit>>) -> Option<LatencyPhases> {
    let all: Option<Vec<LatencySplit>> = all.into_iter().collect();
    let all = all.filter(|a| !a.is_empty())?;
    let split_ns = all.iter().map(|s| s.at_ns).max().unwrap_or(0);
    let (mut first, mut second) = (LatencyRecorder::new(), LatencyRecorder::new());
    for s in &all {
        first.merge(&s.first);
        second.merge(&s.second);
    }
    Some(LatencyPhases { split_ns, first: first.summary(), second: second.summary() })
}

/// Interval samples of the same tick summed across workers. Percentiles cannot be summed:
/// p50 is the transaction-weighted mean of the workers' p50s and p99 the largest p99, an
/// approximation the field docs state.
pub fn intervals(all: Vec<Vec<IntervalSample>>) -> Vec<IntervalSample> {
    let mut it = all.into_iter();
    let mut out = it.next().unwrap_or_default();
    for worker in it {
        for (i, s) in worker.into_iter().enumerate() {
            let Some(o) = out.get_mut(i) else {
                out.push(s);
                continue;
            };
            let (to, ts) = (o.transactions, s.transactions);
            o.latency_p50_ns = match (o.latency_p50_ns, s.latency_p50_ns) {
                (Some(a), Some(b)) if to + ts > 0 => Some((a * to + b * ts) / (to + ts)),
                (a, b) => a.or(b),
            };
            o.latency_p99_ns = o.latency_p99_ns.max(s.latency_p99_ns);
            o.bytes_sent += s.bytes_sent;
            o.bytes_received += s.bytes_received;
            o.transactions += s.transactions;
            o.retransmits += s.retransmits;
            o.duration_ns = o.duration_ns.max(s.duration_ns);
        }
    }
    out
}

pub fn send(all: Vec<SendReport>) -> Option<SendReport> {
    let mut it = all.into_iter();
    let mut out = it.next()?;
    for s in it {
        out.sends += s.sends;
        out.zero_copy = match (out.zero_copy.take(), s.zero_copy) {
            (Some(a), Some(b)) => Some(zero_copy(a, b)),
            (a, b) => a.or(b),
        };
        out.splice = match (out.splice.take(), s.splice) {
            (Some(a), Some(b)) => Some(SpliceReport {
                pipe_size: a.pipe_size.min(b.pipe_size),
                short_in: a.short_in + b.short_in,
                short_out: a.short_out + b.short_out,
                leftover_splices: a.leftover_splices + b.leftover_splices,
                chain_depth: a.chain_depth.max(b.chain_depth),
                sched_batch: a.sched_batch && b.sched_batch,
                // Every worker of a side splices from the same -F file.
                file_bytes: a.file_bytes.or(b.file_bytes),
                file_smaller_than_send: a.file_smaller_than_send.or(b.file_smaller_than_send),
            }),
            (a, b) => a.or(b),
        };
    }
    Some(out)
}

fn zero_copy(a: ZeroCopyReport, b: ZeroCopyReport) -> ZeroCopyReport {
    let lat: Vec<_> = a.notification_latency.iter().chain(b.notification_latency.iter()).collect();
    ZeroCopyReport {
        sends: a.sends + b.sends,
        cancelled: a.cancelled + b.cancelled,
        notifications: a.notifications + b.notifications,
        copied: a.copied + b.copied,
        bytes_zero_copy: a.bytes_zero_copy + b.bytes_zero_copy,
        bytes_copied: a.bytes_copied + b.bytes_copied,
        notification_latency: if lat.is_empty() { None } else { merge_summaries(&lat) },
        latency_sample_every: a.latency_sample_every,
        buffers_per_flow: a.buffers_per_flow.min(b.buffers_per_flow),
        buffer_waits: a.buffer_waits + b.buffer_waits,
        fixed_buffers: a.fixed_buffers && b.fixed_buffers,
        completion_ranges: a.completion_ranges + b.completion_ranges,
    }
}

pub fn recv(all: Vec<RecvReport>) -> Option<RecvReport> {
    let mut it = all.into_iter();
    let mut out = it.next()?;
    for r in it {
        out.arms += r.arms;
        out.data_cqes += r.data_cqes;
        out.enobufs += r.enobufs;
        out.rearms += r.rearms;
        out.zero_copy = match (out.zero_copy.take(), r.zero_copy) {
            (Some(a), Some(b)) => Some(ZeroCopyRecvReport {
                receives: a.receives + b.receives,
                bytes_mapped: a.bytes_mapped + b.bytes_mapped,
                bytes_copied: a.bytes_copied + b.bytes_copied,
                bytes_read: a.bytes_read + b.bytes_read,
            }),
            (a, b) => a.or(b),
        };
        if out.buffers_per_cqe.len() < r.buffers_per_cqe.len() {
            out.buffers_per_cqe.resize(r.buffers_per_cqe.len(), 0);
        }
        for (o, n) in out.buffers_per_cqe.iter_mut().zip(r.buffers_per_cqe) {
            *o += n;
        }
    }
    Some(out)
}

pub fn verify(all: Vec<VerifyReport>) -> Option<VerifyReport> {
    let mut it = all.into_iter();
    let mut out = it.next()?;
    for v in it {
        out.bytes_checked += v.bytes_checked;
        out.mismatches += v.mismatches;
        out.first_mismatch = out.first_mismatch.or(v.first_mismatch);
        out.cost_ns += v.cost_ns;
        out.not_checked = out.not_checked.or(v.not_checked);
    }
    Some(out)
}

/// Which global flow a worker's `local` flow is: flows are dealt round-robin.
#[inline]
pub fn global_flow(worker: usize, local: usize, workers: usize) -> usize {
    worker + local * workers
}

/// How a side ended, from how each of its workers did. A stop on request wins (every
/// worker watches the same descriptor, and a stop explains the failures it causes), then
/// the first failure; the side completed only if every worker did.
pub fn ending(all: Vec<Result<Ending>>) -> Result<Ending> {
    if all.iter().any(|e| matches!(e, Ok(Ending::Aborted))) {
        return Ok(Ending::Aborted);
    }
    all.into_iter().find(Result::is_err).unwrap_or(Ok(Ending::Completed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn endings_combine_stop_then_failure_then_completion() {
        let fail = || Err(Error::Peer("reset".into()));
        assert!(matches!(ending(vec![]), Ok(Ending::Completed)));
        assert!(matches!(ending(vec![Ok(Ending::Completed), Ok(Ending::Completed)]), Ok(Ending::Completed)));
        assert!(matches!(ending(vec![Ok(Ending::Completed), fail()]), Err(Error::Peer(_))));
        assert!(matches!(ending(vec![fail(), Ok(Ending::Aborted)]), Ok(Ending::Aborted)));
    }

    #[test]
    fn round_robin_flows_cover_every_index_once() {
        let (flows, workers) = (10, 3);
        let mut seen = vec![false; flows];
        for w in 0..workers {
            let mine = (w..flows).step_by(workers).count();
            for l in 0..mine {
                let g = global_flow(w, l, workers);
                assert!(!seen[g]);
                seen[g] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn interval_sums_line_up_by_tick() {
        let s = |b: u64, t: u64, p99: u64| IntervalSample {
            bytes_sent: b,
            transactions: t,
            latency_p50_ns: Some(p99 / 2),
            latency_p99_ns: Some(p99),
            duration_ns: 100,
            ..IntervalSample::default()
        };
        let m = intervals(vec![vec![s(1, 10, 100), s(2, 10, 100)], vec![s(10, 30, 300), s(20, 0, 50)]]);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].bytes_sent, m[0].transactions), (11, 40));
        assert_eq!(m[0].latency_p99_ns, Some(300));
        assert_eq!(m[0].latency_p50_ns, Some((50 * 10 + 150 * 30) / 40));
        assert_eq!(m[1].bytes_sent, 22);
    }
}
