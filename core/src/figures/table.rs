//! The figures, in keyval order (the order `--keyval` prints and `--csv` columns keep;
//! the CLI places the settings among them). A keyval name is netperf's omni output name
//! where netperf has one, ringperf's own otherwise; the manual (docs/confidence.md) lists
//! them all and a test keeps that list equal to the output.

use super::figure::{Better, Figure, Unit};
use super::text::{
    call_size, cpus, fixed, kernel, link, mptcp, opt, profile, retrans, rx_cpus, softnet_dropped,
    softnet_squeezed, udp, us, whole_us,
};

pub(super) const FIGURES: &[Figure] = &[
    Figure::headline("throughput", "throughput", Unit::BitsPerSec, |f| Some(f.throughput_bits_per_sec))
        .per_interval(|s| Some(s.throughput_bits_per_sec()))
        .judged(Better::Higher),
    Figure::field("TEST", |c| c.report.test.clone())
        .netperf_own("TEST", |c| Some(c.report.spec.netperf_name().to_string())),
    // netperf reports request/response throughput in transactions per second.
    Figure::field("THROUGHPUT", |c| {
        if c.rr {
            opt(c.figures.transactions_per_sec, 2)
        } else {
            fixed(c.units.convert(c.figures.throughput_bits_per_sec), 2)
        }
    })
    .netperf("THROUGHPUT"),
    Figure::field("THROUGHPUT_UNITS", |c| if c.rr { "Trans/s".into() } else { c.units.label().into() })
        .netperf("THROUGHPUT_UNITS"),
    Figure::field("THROUGHPUT_CONFID", |c| c.confid(if c.rr { "transactions/s" } else { "throughput" }))
        .netperf("THROUGHPUT_CONFID"),
    Figure::headline("transactions", "transactions/s", Unit::TransPerSec, |f| f.transactions_per_sec)
        .per_interval(|s| (s.transactions > 0).then(|| s.transactions_per_sec()))
        .judged(Better::Higher)
        .keyval("TRANSACTION_RATE", |c| opt(c.figures.transactions_per_sec, 2))
        .netperf("TRANSACTION_RATE"),
    Figure::field("ELAPSED_TIME", |c| fixed(c.report.local.elapsed_ns as f64 / 1e9, 3))
        .netperf_own("ELAPSED_TIME", |c| Some(fixed(c.report.local.elapsed_ns as f64 / 1e9, 2))),
    // netperf's meaning: the size of this side's sends, 0 where it does not send in a
    // stream, the request in request/response (REMOTE_RECV_SIZE likewise for the server).
    Figure::field("LOCAL_SEND_SIZE", |c| call_size(&c.report.spec, true, true)).netperf("LOCAL_SEND_SIZE"),
    Figure::field("REMOTE_RECV_SIZE", |c| call_size(&c.report.spec, false, false))
        .netperf("REMOTE_RECV_SIZE"),
    Figure::field("LSS_SIZE_END", |c| c.report.local.socket.send_buffer.to_string()).netperf("LSS_SIZE_END"),
    Figure::field("LSR_SIZE_END", |c| c.report.local.socket.recv_buffer.to_string()).netperf("LSR_SIZE_END"),
    Figure::field("RSS_SIZE_END", |c| c.remote(|s| s.socket.send_buffer.to_string())).netperf("RSS_SIZE_END"),
    Figure::field("RSR_SIZE_END", |c| c.remote(|s| s.socket.recv_buffer.to_string())).netperf("RSR_SIZE_END"),
    Figure::headline("local_cpu", "local CPU busy", Unit::CpuPercent, |f| Some(f.local_cpu_percent))
        .per_interval(|s| s.busy_percent)
        .judged(Better::Lower)
        .keyval("LOCAL_CPU_UTIL", |c| fixed(c.figures.local_cpu_percent, 2))
        .netperf("LOCAL_CPU_UTIL"),
    Figure::headline("remote_cpu", "remote CPU busy", Unit::CpuPercent, |f| f.remote_cpu_percent)
        .judged(Better::Lower)
        .keyval("REMOTE_CPU_UTIL", |c| opt(c.figures.remote_cpu_percent, 2))
        .netperf("REMOTE_CPU_UTIL"),
    Figure::field("LOCAL_CPU_CONFID", |c| c.confid("local CPU")).netperf("LOCAL_CPU_CONFID"),
    Figure::field("REMOTE_CPU_CONFID", |c| c.confid("remote CPU")).netperf("REMOTE_CPU_CONFID"),
    Figure::field("LOCAL_CPU_COUNT", |c| c.report.local.cpu.system.cpus.to_string())
        .netperf("LOCAL_CPU_COUNT"),
    Figure::field("REMOTE_CPU_COUNT", |c| c.remote(|s| s.cpu.system.cpus.to_string()))
        .netperf("REMOTE_CPU_COUNT"),
    Figure::headline("local_sd", "local service demand", Unit::ServiceDemand, |f| f.local_sd_us)
        .judged(Better::Lower)
        .keyval("LOCAL_SD", |c| opt(c.figures.local_sd_us, 3))
        .netperf("LOCAL_SD"),
    Figure::headline("remote_sd", "remote service demand", Unit::ServiceDemand, |f| f.remote_sd_us)
        .judged(Better::Lower)
        .keyval("REMOTE_SD", |c| opt(c.figures.remote_sd_us, 3))
        .netperf("REMOTE_SD"),
    Figure::field("SD_UNITS", |c| if c.rr { "usec/Tran".into() } else { "usec/KB".into() })
        .netperf("SD_UNITS"),
    // The keyval field is the whole side's (every CSV row prints it); the chart's, each iteration's.
    Figure::headline("local_ns_per_segment", "local CPU per segment", Unit::NsPerSegment, |f| {
        f.local_ns_per_segment
    })
    .keyval("LOCAL_SD_PER_SEGMENT", |c| opt(c.report.local.service_demand.ns_per_segment, 1)),
    Figure::headline("remote_ns_per_segment", "remote CPU per segment", Unit::NsPerSegment, |f| {
        f.remote_ns_per_segment
    })
    .keyval("REMOTE_SD_PER_SEGMENT", |c| c.remote(|s| opt(s.service_demand.ns_per_segment, 1))),
    Figure::field("LOCAL_TOOL_OVERHEAD", |c| fixed(c.report.local.cpu.tool_overhead_percent, 3)),
    Figure::field("REMOTE_TOOL_OVERHEAD", |c| c.remote(|s| fixed(s.cpu.tool_overhead_percent, 3))),
    Figure::field("LOCAL_TRANSPORT_RETRANS", |c| retrans(&c.report.local))
        .netperf_own("LOCAL_TRANSPORT_RETRANS", |c| {
            Some(c.report.local.tcp.as_ref().map_or(0, |t| t.total_retrans).to_string())
        }),
    Figure::field("REMOTE_TRANSPORT_RETRANS", |c| c.remote(retrans))
        .netperf_own("REMOTE_TRANSPORT_RETRANS", |c| {
            Some(c.report.remote.as_ref()?.tcp.as_ref().map_or(0, |t| t.total_retrans).to_string())
        }),
    // netperf prints its latencies in whole microseconds, but for the mean ones.
    Figure::field("RT_LATENCY", |c| opt(c.latency().map(|l| l.mean_ns / 1e3), 3)).netperf("RT_LATENCY"),
    Figure::field("MIN_LATENCY", |c| us(c.latency().map(|l| l.min_ns)))
        .netperf_own("MIN_LATENCY", |c| whole_us(us(c.latency().map(|l| l.min_ns)))),
    Figure::field("MEAN_LATENCY", |c| opt(c.latency().map(|l| l.mean_ns / 1e3), 3)).netperf("MEAN_LATENCY"),
    Figure::headline("p50", "p50 round trip", Unit::LatencyNs, |f| f.p50_latency_ns.map(|n| n as f64))
        .per_interval(|s| s.latency_p50_ns.map(|n| n as f64))
        .judged(Better::Lower)
        .keyval("P50_LATENCY", |c| us(c.figures.p50_latency_ns))
        .netperf_own("P50_LATENCY", |c| whole_us(us(c.figures.p50_latency_ns))),
    Figure::field("P90_LATENCY", |c| us(c.latency().map(|l| l.p90_ns)))
        .netperf_own("P90_LATENCY", |c| whole_us(us(c.latency().map(|l| l.p90_ns)))),
    Figure::headline("p99", "p99 round trip", Unit::LatencyNs, |f| f.p99_latency_ns.map(|n| n as f64))
        .per_interval(|s| s.latency_p99_ns.map(|n| n as f64))
        .judged(Better::Lower)
        .keyval("P99_LATENCY", |c| us(c.figures.p99_latency_ns))
        .netperf_own("P99_LATENCY", |c| whole_us(us(c.figures.p99_latency_ns))),
    Figure::field("MAX_LATENCY", |c| us(c.latency().map(|l| l.max_ns)))
        .netperf_own("MAX_LATENCY", |c| whole_us(us(c.latency().map(|l| l.max_ns)))),
    Figure::field("CONFIDENCE_LEVEL", |c| {
        c.report.confidence.as_ref().map_or(String::new(), |k| fixed(100.0 * k.target.level, 1))
    })
    .netperf("CONFIDENCE_LEVEL"),
    // A CSV row is one run: its own iteration number.
    Figure::field("CONFIDENCE_ITERATION", |c| match (c.iteration, &c.report.confidence) {
        (Some(i), _) => (i + 1).to_string(),
        (None, Some(k)) => k.iterations.to_string(),
        (None, None) => "1".into(),
    })
    .netperf("CONFIDENCE_ITERATION"),
    Figure::field("ZERO_COPY_FRACTION", |c| opt(c.report.zero_copy_fraction(), 4)),
    Figure::field("LOCAL_RELEASE", |c| c.report.environment.local.kernel_release.clone())
        .netperf("LOCAL_RELEASE"),
    Figure::field("REMOTE_RELEASE", |c| c.report.environment.remote.kernel_release.clone())
        .netperf("REMOTE_RELEASE"),
    // UDP: the sender's sends and the receiver's receives (netperf's call counts), the
    // receiver's own rate and datagram accounting.
    Figure::field("LOCAL_SEND_CALLS", |c| udp(c.sender, |u| u.sends.to_string())).netperf("LOCAL_SEND_CALLS"),
    Figure::field("REMOTE_RECV_CALLS", |c| udp(c.receiver, |u| u.receives.to_string()))
        .netperf("REMOTE_RECV_CALLS"),
    Figure::field("REMOTE_THROUGHPUT", |c| match c.receiver.filter(|rx| rx.udp.is_some()) {
        Some(_) => opt(c.report.receive_rate_bits_per_sec().map(|b| c.units.convert(b)), 2),
        None => String::new(),
    }),
    Figure::field("DATAGRAMS_SENT", |c| udp(c.sender, |u| u.datagrams_sent.to_string())),
    Figure::field("DATAGRAMS_RECEIVED", |c| udp(c.receiver, |u| u.datagrams_received.to_string())),
    Figure::field("LOST_DATAGRAMS", |c| c.report.lost_datagrams().map_or(String::new(), |n| n.to_string())),
    Figure::field("REORDERED_DATAGRAMS", |c| udp(c.receiver, |u| u.reordered.to_string())),
    Figure::field("DUPLICATE_DATAGRAMS", |c| udp(c.receiver, |u| u.duplicated.to_string())),
    Figure::field("DATAGRAMS_PER_SEND", |c| udp(c.sender, |u| fixed(u.datagrams_per_send(), 2))),
    Figure::field("DATAGRAMS_PER_RECV", |c| udp(c.receiver, |u| fixed(u.datagrams_per_receive(), 2))),
    Figure::field("LOCAL_SD_PER_DATAGRAM", |c| udp(Some(&c.report.local), |u| opt(u.us_per_datagram, 3))),
    Figure::field("REMOTE_SD_PER_DATAGRAM", |c| udp(c.report.remote.as_ref(), |u| opt(u.us_per_datagram, 3))),
    Figure::field("UDP_TIMEOUTS", |c| udp(Some(&c.report.local), |u| c.rr_only(u.timeouts))),
    Figure::field("UDP_RETRANSMISSIONS", |c| udp(Some(&c.report.local), |u| c.rr_only(u.retransmissions))),
    Figure::field("CRR_CONNECTIONS", |c| {
        c.report.local.crr.as_ref().map_or(String::new(), |k| k.connections.to_string())
    }),
    // The kernel counters of each side (measure::kernel), after the settings that came
    // before them, so that those keep the CSV columns scripts read them from.
    Figure::headline("local_softirq", "local softirq time", Unit::CpuPercent, |f| f.local_softirq_percent)
        .keyval("LOCAL_SOFTIRQ_PERCENT", |c| opt(c.figures.local_softirq_percent, 2)),
    Figure::headline("remote_softirq", "remote softirq time", Unit::CpuPercent, |f| f.remote_softirq_percent)
        .keyval("REMOTE_SOFTIRQ_PERCENT", |c| opt(c.figures.remote_softirq_percent, 2)),
    Figure::field("LOCAL_IRQ_PERCENT", |c| kernel(Some(&c.report.local), |k| fixed(k.irq_percent, 2))),
    Figure::field("REMOTE_IRQ_PERCENT", |c| kernel(c.report.remote.as_ref(), |k| fixed(k.irq_percent, 2))),
    Figure::field("LOCAL_NET_RX_SOFTIRQS", |c| {
        kernel(Some(&c.report.local), |k| k.net_rx_softirqs.to_string())
    }),
    Figure::field("REMOTE_NET_RX_SOFTIRQS", |c| {
        kernel(c.report.remote.as_ref(), |k| k.net_rx_softirqs.to_string())
    }),
    Figure::field("LOCAL_NET_TX_SOFTIRQS", |c| {
        kernel(Some(&c.report.local), |k| k.net_tx_softirqs.to_string())
    }),
    Figure::field("REMOTE_NET_TX_SOFTIRQS", |c| {
        kernel(c.report.remote.as_ref(), |k| k.net_tx_softirqs.to_string())
    }),
    Figure::headline("local_packets_per_net_rx", "local rx packets per NET_RX softirq", Unit::Ratio, |f| {
        f.local_packets_per_net_rx
    })
    .keyval("LOCAL_PACKETS_PER_NET_RX", |c| opt(c.figures.local_packets_per_net_rx, 3)),
    Figure::headline("remote_packets_per_net_rx", "remote rx packets per NET_RX softirq", Unit::Ratio, |f| {
        f.remote_packets_per_net_rx
    })
    .keyval("REMOTE_PACKETS_PER_NET_RX", |c| opt(c.figures.remote_packets_per_net_rx, 3)),
    Figure::field("LOCAL_PACKETS_PER_INTERRUPT", |c| {
        kernel(Some(&c.report.local), |k| opt(k.packets_per_interrupt, 3))
    }),
    Figure::field("REMOTE_PACKETS_PER_INTERRUPT", |c| {
        kernel(c.report.remote.as_ref(), |k| opt(k.packets_per_interrupt, 3))
    }),
    Figure::field("LOCAL_INTERRUPTS", |c| {
        kernel(Some(&c.report.local), |k| {
            k.interrupts.as_ref().map_or(String::new(), |i| i.total.to_string())
        })
    }),
    Figure::field("REMOTE_INTERRUPTS", |c| {
        kernel(c.report.remote.as_ref(), |k| {
            k.interrupts.as_ref().map_or(String::new(), |i| i.total.to_string())
        })
    }),
    Figure::field("LOCAL_SOFTNET_DROPPED", |c| kernel(Some(&c.report.local), softnet_dropped)),
    Figure::field("REMOTE_SOFTNET_DROPPED", |c| kernel(c.report.remote.as_ref(), softnet_dropped)),
    Figure::field("LOCAL_SOFTNET_SQUEEZED", |c| kernel(Some(&c.report.local), softnet_squeezed)),
    Figure::field("REMOTE_SOFTNET_SQUEEZED", |c| kernel(c.report.remote.as_ref(), softnet_squeezed)),
    Figure::field("LOCAL_NIC", |c| {
        kernel(Some(&c.report.local), |k| k.nic.as_ref().map_or(String::new(), |n| n.device.clone()))
    }),
    Figure::field("REMOTE_NIC", |c| {
        kernel(c.report.remote.as_ref(), |k| k.nic.as_ref().map_or(String::new(), |n| n.device.clone()))
    }),
    Figure::field("LOCAL_NIC_RX_PACKETS", |c| link(Some(&c.report.local), |l| l.rx_packets)),
    Figure::field("LOCAL_NIC_TX_PACKETS", |c| link(Some(&c.report.local), |l| l.tx_packets)),
    Figure::field("REMOTE_NIC_RX_PACKETS", |c| link(c.report.remote.as_ref(), |l| l.rx_packets)),
    Figure::field("REMOTE_NIC_TX_PACKETS", |c| link(c.report.remote.as_ref(), |l| l.tx_packets)),
    Figure::field("LOCAL_NIC_ERRORS", |c| link(Some(&c.report.local), |l| l.rx_errors + l.tx_errors)),
    Figure::field("REMOTE_NIC_ERRORS", |c| link(c.report.remote.as_ref(), |l| l.rx_errors + l.tx_errors)),
    Figure::field("LOCAL_NIC_DROPS", |c| link(Some(&c.report.local), |l| l.rx_dropped + l.tx_dropped)),
    Figure::field("REMOTE_NIC_DROPS", |c| link(c.report.remote.as_ref(), |l| l.rx_dropped + l.tx_dropped)),
    // Space-separated CPU numbers, most network softirqs first.
    Figure::field("LOCAL_NET_SOFTIRQ_CPUS", |c| kernel(Some(&c.report.local), |k| cpus(&k.net_softirq_cpus))),
    Figure::field("REMOTE_NET_SOFTIRQ_CPUS", |c| {
        kernel(c.report.remote.as_ref(), |k| cpus(&k.net_softirq_cpus))
    }),
    Figure::field("LOCAL_RX_CPUS", |c| kernel(Some(&c.report.local), rx_cpus)),
    Figure::field("REMOTE_RX_CPUS", |c| kernel(c.report.remote.as_ref(), rx_cpus)),
    // The kernel cost profile's honest tool overhead (user space, helper threads, io_uring
    // and syscall entry/exit, percent of busy CPU) and the network path's service demand (in SD_UNITS, and per segment in
    // ns), after every field before them so those keep their CSV columns. Empty without a
    // profile; the keyval fields are the whole side's, the charts' each iteration's.
    Figure::headline(
        "local_tool_overhead_with_kernel",
        "local tool overhead, user + io_uring + syscalls",
        Unit::BusyPercent,
        |f| f.local_tool_overhead_percent,
    )
    .profiled()
    .keyval("LOCAL_TOOL_OVERHEAD_WITH_KERNEL", |c| {
        profile(Some(&c.report.local), |p| fixed(p.tool_overhead_percent, 3))
    }),
    Figure::headline(
        "remote_tool_overhead_with_kernel",
        "remote tool overhead, user + io_uring + syscalls",
        Unit::BusyPercent,
        |f| f.remote_tool_overhead_percent,
    )
    .profiled()
    .keyval("REMOTE_TOOL_OVERHEAD_WITH_KERNEL", |c| {
        profile(c.report.remote.as_ref(), |p| fixed(p.tool_overhead_percent, 3))
    }),
    Figure::headline("local_network_sd", "local network path service demand", Unit::ServiceDemand, |f| {
        f.local_network_sd_us
    })
    .profiled()
    .keyval("LOCAL_NETWORK_SD", |c| profile(Some(&c.report.local), |p| c.network_sd(p))),
    Figure::headline("remote_network_sd", "remote network path service demand", Unit::ServiceDemand, |f| {
        f.remote_network_sd_us
    })
    .profiled()
    .keyval("REMOTE_NETWORK_SD", |c| profile(c.report.remote.as_ref(), |p| c.network_sd(p))),
    Figure::field("LOCAL_NETWORK_SD_PER_SEGMENT", |c| {
        profile(Some(&c.report.local), |p| opt(p.network_service_demand.ns_per_segment, 1))
    }),
    Figure::field("REMOTE_NETWORK_SD_PER_SEGMENT", |c| {
        profile(c.report.remote.as_ref(), |p| opt(p.network_service_demand.ns_per_segment, 1))
    }),
    // One-way delays (udp-stream, udp-rr; µs): after every older column, settings included.
    Figure::field("ONE_WAY_C2S_P50_LATENCY", |c| us(c.one_way(true).map(|d| d.p50_ns))),
    Figure::field("ONE_WAY_C2S_P99_LATENCY", |c| us(c.one_way(true).map(|d| d.p99_ns))),
    Figure::field("ONE_WAY_S2C_P50_LATENCY", |c| us(c.one_way(false).map(|d| d.p50_ns))),
    Figure::field("ONE_WAY_S2C_P99_LATENCY", |c| us(c.one_way(false).map(|d| d.p99_ns))),
    Figure::field("ONE_WAY_CLOCK_UNCERTAINTY", |c| us(c.report.clock.map(|k| k.one_way_uncertainty_ns()))),
    // Who held each side's sending flows back (tcp_info's chronographs over the window, as
    // shares of their flow-time), ECN marks echoed and the smallest RTT: after every older
    // column, settings included.
    Figure::headline("local_busy", "local flows busy (data queued)", Unit::WindowPercent, |f| {
        f.local_busy_percent
    })
    .keyval("LOCAL_BUSY_PERCENT", |c| opt(c.figures.local_busy_percent, 2)),
    Figure::headline("remote_busy", "remote flows busy (data queued)", Unit::WindowPercent, |f| {
        f.remote_busy_percent
    })
    .keyval("REMOTE_BUSY_PERCENT", |c| opt(c.figures.remote_busy_percent, 2)),
    Figure::headline(
        "local_rwnd_limited",
        "local flows held by the receiver's window",
        Unit::WindowPercent,
        |f| f.local_rwnd_limited_percent,
    )
    .judged(Better::Lower)
    .keyval("LOCAL_RWND_LIMITED_PERCENT", |c| opt(c.figures.local_rwnd_limited_percent, 2)),
    Figure::headline(
        "remote_rwnd_limited",
        "remote flows held by the receiver's window",
        Unit::WindowPercent,
        |f| f.remote_rwnd_limited_percent,
    )
    .judged(Better::Lower)
    .keyval("REMOTE_RWND_LIMITED_PERCENT", |c| opt(c.figures.remote_rwnd_limited_percent, 2)),
    Figure::headline(
        "local_sndbuf_limited",
        "local flows held by the send buffer",
        Unit::WindowPercent,
        |f| f.local_sndbuf_limited_percent,
    )
    .judged(Better::Lower)
    .keyval("LOCAL_SNDBUF_LIMITED_PERCENT", |c| opt(c.figures.local_sndbuf_limited_percent, 2)),
    Figure::headline(
        "remote_sndbuf_limited",
        "remote flows held by the send buffer",
        Unit::WindowPercent,
        |f| f.remote_sndbuf_limited_percent,
    )
    .judged(Better::Lower)
    .keyval("REMOTE_SNDBUF_LIMITED_PERCENT", |c| opt(c.figures.remote_sndbuf_limited_percent, 2)),
    Figure::headline("local_delivered_ce", "local segments echoed CE-marked", Unit::Count, |f| {
        f.local_delivered_ce
    })
    .judged(Better::Lower)
    .keyval("LOCAL_DELIVERED_CE", |c| opt(c.figures.local_delivered_ce, 0)),
    Figure::headline("remote_delivered_ce", "remote segments echoed CE-marked", Unit::Count, |f| {
        f.remote_delivered_ce
    })
    .judged(Better::Lower)
    .keyval("REMOTE_DELIVERED_CE", |c| opt(c.figures.remote_delivered_ce, 0)),
    Figure::headline("local_min_rtt", "local min RTT", Unit::LatencyNs, |f| f.local_min_rtt_ns)
        .judged(Better::Lower)
        .keyval("LOCAL_MIN_RTT", |c| opt(c.figures.local_min_rtt_ns.map(|n| n / 1e3), 1)),
    Figure::headline("remote_min_rtt", "remote min RTT", Unit::LatencyNs, |f| f.remote_min_rtt_ns)
        .judged(Better::Lower)
        .keyval("REMOTE_MIN_RTT", |c| opt(c.figures.remote_min_rtt_ns.map(|n| n / 1e3), 1)),
    // MPTCP (--mptcp; empty without it): the most subflows a connection of the side had
    // (empty for crr, whose connections are not read), and its connections that fell back
    // to TCP (crr: its handshakes that did).
    Figure::field("LOCAL_MPTCP_SUBFLOWS", |c| mptcp(Some(&c.report.local), subflows)),
    Figure::field("REMOTE_MPTCP_SUBFLOWS", |c| mptcp(c.report.remote.as_ref(), subflows)),
    Figure::field("LOCAL_MPTCP_FALLBACKS", |c| mptcp(Some(&c.report.local), |m| Some(m.fallback))),
    Figure::field("REMOTE_MPTCP_FALLBACKS", |c| mptcp(c.report.remote.as_ref(), |m| Some(m.fallback))),
    // netperf's own omni outputs that `--keyval` does not print.
    Figure::netperf_only("PROTOCOL", |c| {
        Some(if c.report.spec.workload.is_udp() { "UDP" } else { "TCP" }.into())
    }),
    Figure::netperf_only("DIRECTION", |c| {
        let sending = c.report.local.bytes_sent >= c.report.local.bytes_received;
        Some(
            match (c.rr, sending) {
                (true, _) => "Send|Recv",
                (false, true) => "Send",
                (false, false) => "Receive",
            }
            .into(),
        )
    }),
    Figure::netperf_only("TRANSPORT_MSS", |c| Some(c.report.local.socket.mss.to_string())),
    // ringperf marks both sides' data sockets alike; netperf's "not set" otherwise.
    Figure::netperf_only("LOCAL_SOCKET_TOS", |c| Some(tos(c.report.spec.socket.tos))),
    Figure::netperf_only("REMOTE_SOCKET_TOS", |c| Some(tos(c.report.spec.socket.tos))),
    Figure::netperf_only("LOCAL_BYTES_SENT", |c| Some(c.report.local.bytes_sent.to_string())),
    Figure::netperf_only("LOCAL_BYTES_RECVD", |c| Some(c.report.local.bytes_received.to_string())),
    Figure::netperf_only("REMOTE_BYTES_SENT", |c| Some(c.report.remote.as_ref()?.bytes_sent.to_string())),
    Figure::netperf_only("REMOTE_BYTES_RECVD", |c| {
        Some(c.report.remote.as_ref()?.bytes_received.to_string())
    }),
    Figure::netperf_only("LOCAL_RECV_SIZE", |c| Some(call_size(&c.report.spec, true, false))),
    Figure::netperf_only("REMOTE_SEND_SIZE", |c| Some(call_size(&c.report.spec, false, true))),
    // The one field that is not the report's: this process's command line.
    Figure::netperf_only("COMMAND_LINE", |_| Some(std::env::args().collect::<Vec<_>>().join(" "))),
    Figure::netperf_only("LOCAL_VERSION", |c| Some(c.report.tool_version.clone())),
    Figure::netperf_only("REMOTE_VERSION", |c| Some(c.report.tool_version.clone())),
];

/// The most subflows of a side's connections; none for crr's, which were not read.
fn subflows(m: &crate::measure::mptcp::MptcpReport) -> Option<u32> {
    m.handshakes.is_none().then_some(m.max_subflows)
}

/// A TOS byte as netperf prints it, its "not set" without one.
fn tos(t: Option<u8>) -> String {
    t.map_or_else(|| "0xffffffff".to_string(), |t| format!("{t:#04x}"))
}
