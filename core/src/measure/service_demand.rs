//! Service demand, netperf's unit of cost: busy CPU µs (summed over all CPUs) per KB
//! of payload, or per transaction.

use serde::{Deserialize, Serialize};

use crate::report::SystemCpu;

/// netperf's service demand: busy CPU microseconds (all CPUs) per unit of work of this side.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct ServiceDemand {
    /// Per KB (1024 bytes) of payload this side moved (sent plus received).
    pub us_per_kb: Option<f64>,
    /// Per transaction (rr).
    pub us_per_transaction: Option<f64>,
    /// Busy CPU nanoseconds per TCP data segment this side sent and received (TCP_INFO
    /// data_segs_out + data_segs_in): the per-packet figure that moves with TSO/GSO/GRO.
    pub ns_per_segment: Option<f64>,
}

/// Service demand of one side from its own byte, transaction and TCP data segment counts.
pub fn service_demand(cpu: &SystemCpu, bytes_moved: u64, transactions: u64, segments: u64) -> ServiceDemand {
    let per = |units: f64| if units > 0.0 { Some(cpu.busy_us / units) } else { None };
    ServiceDemand {
        us_per_kb: per(bytes_moved as f64 / 1024.0),
        us_per_transaction: if transactions > 0 { per(transactions as f64) } else { None },
        ns_per_segment: if segments > 0 { per(segments as f64).map(|us| us * 1000.0) } else { None },
    }
}

/// Tool user-space CPU as a share of all busy CPU, in percent.
pub fn tool_overhead_percent(tool_user_us: u64, cpu: &SystemCpu) -> f64 {
    if cpu.busy_us <= 0.0 {
        0.0
    } else {
        100.0 * tool_user_us as f64 / cpu.busy_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(busy_us: f64) -> SystemCpu {
        SystemCpu { cpus: 2, busy_percent: 50.0, steal_percent: 0.0, busy_us, per_cpu_busy_percent: vec![] }
    }

    #[test]
    fn per_kb_and_per_transaction() {
        let sd = service_demand(&cpu(1_000_000.0), 1024 * 1000, 500, 4000);
        assert!((sd.us_per_kb.unwrap() - 1000.0).abs() < 1e-9);
        assert!((sd.us_per_transaction.unwrap() - 2000.0).abs() < 1e-9);
        assert!((sd.ns_per_segment.unwrap() - 250_000.0).abs() < 1e-6);
        let none = service_demand(&cpu(1.0), 0, 0, 0);
        assert!(
            none.us_per_kb.is_none() && none.us_per_transaction.is_none() && none.ns_per_segment.is_none()
        );
    }

    #[test]
    fn overhead_is_a_share_of_busy() {
        assert!((tool_overhead_percent(250_000, &cpu(1_000_000.0)) - 25.0).abs() < 1e-9);
        assert_eq!(tool_overhead_percent(5, &cpu(0.0)), 0.0);
    }
}
