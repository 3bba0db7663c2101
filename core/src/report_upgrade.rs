//! Reports that earlier versions wrote, read as this version's: `diff` and `plot` keep
//! working on saved baselines. Schema 4 made a side's `splice_file` (a path, or null for
//! the pattern) its `payload`.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses JSON holding reports (one, a sweep's array, anything that embeds them), first
/// rewriting what older schemas named differently.
pub fn parse<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    if !text.contains("\"splice_file\"") {
        return serde_json::from_str(text);
    }
    let mut v: Value = serde_json::from_str(text)?;
    upgrade(&mut v);
    serde_json::from_value(v)
}

/// Rewrites every `splice_file` in `v` as the `payload` it now is. The parser bounds the
/// nesting, and so this recursion.
fn upgrade(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(old) = m.remove("splice_file") {
                let payload = match old {
                    Value::String(path) => serde_json::json!({ "file": path }),
                    _ => serde_json::json!("pattern"),
                };
                m.insert("payload".into(), payload);
            }
            m.values_mut().for_each(upgrade);
        }
        Value::Array(a) => a.iter_mut().for_each(upgrade),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::Payload;
    use crate::spec::TestSpec;

    /// A schema-3 spec, as reports carried it, reads as the same spec with its payload.
    #[test]
    fn a_schema_3_spec_reads_with_its_payload() {
        let mut v = serde_json::to_value(TestSpec::default()).expect("json");
        for (side, old) in [("local", serde_json::json!("/srv/x.bin")), ("remote", Value::Null)] {
            v[side].as_object_mut().expect("side").remove("payload");
            v[side]["splice_file"] = old;
        }
        let text = serde_json::to_string(&vec![v]).expect("text");
        let back: Vec<TestSpec> = parse(&text).expect("upgraded");
        assert_eq!(back[0].local.payload, Payload::File("/srv/x.bin".into()));
        assert_eq!(back[0].remote.payload, Payload::Pattern);
        let now = serde_json::to_string(&TestSpec::default()).expect("text");
        assert_eq!(parse::<TestSpec>(&now).expect("current"), TestSpec::default());
    }
}
