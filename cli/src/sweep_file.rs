//! A sweep as its JSON holds it: each point's parameters and its report (or why it has
//! none), and the form of a sweep stopped before its last point. `sweep` writes it; `plot`
//! and `render` read it back.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use ringperf_core::TestReport;

/// One point's parameters, in command-line order: (name, value as typed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point(pub Vec<(String, String)>);

impl Point {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

// A JSON object whose keys keep their order (serde_json's own map sorts them), so a saved
// sweep still knows which list came first.
impl Serialize for Point {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Point {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Point, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Point;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of parameter names to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Point, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, serde_json::Value>()? {
                    let v = match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    out.push((k, v));
                }
                Ok(Point(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// One point of a sweep as it appears in the JSON: its report, or why it has none.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Entry {
    pub point: Point,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<TestReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A sweep stopped before its last point (Ctrl-C), as its JSON: the points it has, marked
/// the way a single run's partial report is. A whole sweep stays a plain array.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct PartialSweep {
    pub partial: bool,
    pub partial_reason: String,
    pub points: Vec<Entry>,
}
