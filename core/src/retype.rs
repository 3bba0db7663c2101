//! Moving a generic struct into the same struct with another type parameter.
//!
//! Stable Rust has no type-changing struct update (`..self` needs the same type), so such a
//! move must name every field. This names the list once: the pattern that takes `$value`
//! apart is exhaustive, so a field added to the struct and not listed here fails to compile
//! instead of being dropped.

/// `retype!(value => Struct { kept, fields, ...; changed: pattern => new_value, ... })`:
/// `Struct` again with the kept fields moved over and each changed field bound by its
/// pattern (usable in any new value) and set to its new value.
macro_rules! retype {
    ($value:expr => $ty:ident { $($kept:ident),* $(,)? ; $($changed:ident: $pat:pat => $new:expr),+ $(,)? }) => {{
        let $ty { $($kept,)* $($changed: $pat,)+ } = $value;
        $ty { $($kept,)* $($changed: $new,)+ }
    }};
}

pub(crate) use retype;
