//! Reading the numbers a tool printed, with errors that name the tool and the field.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::{BenchError, Result};

pub(crate) fn json_f64(v: &Value, tool: &str, pointer: &str) -> Result<f64> {
    v.pointer(pointer).and_then(Value::as_f64).ok_or_else(|| {
        BenchError::Tool(format!("{tool}'s JSON has no number at {pointer}: is this a supported version?"))
    })
}

pub(crate) fn json_u64(v: &Value, tool: &str, pointer: &str) -> Result<u64> {
    v.pointer(pointer).and_then(Value::as_u64).ok_or_else(|| {
        BenchError::Tool(format!(
            "{tool}'s JSON has no whole number at {pointer}: is this a supported version?"
        ))
    })
}

/// The KEY=VALUE lines of a tool's output (netperf -k, neper), keys as printed; the first
/// occurrence of a key wins.
pub(crate) fn key_values(text: &str) -> HashMap<&str, &str> {
    let mut kv = HashMap::new();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            kv.entry(k.trim()).or_insert(v.trim());
        }
    }
    kv
}

/// A number among `kv`, or an error naming the tool and the key.
pub(crate) fn kv_f64(kv: &HashMap<&str, &str>, tool: &str, key: &str) -> Result<f64> {
    kv.get(key).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite()).ok_or_else(|| {
        BenchError::Tool(format!("{tool} printed no number for {key}: is this a supported version?"))
    })
}
