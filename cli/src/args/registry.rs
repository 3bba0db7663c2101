//! The `flag_group!` registry: a group of flags is declared once, each flag with its help,
//! its clap definition, what it sets in the TestSpec and its marks (`[sweep]`, `[only]`,
//! `[keyval]`). The parser, the help, the README's table, `sweep` and `--keyval` all read
//! these declarations; the groups themselves are in `test_flags` and `commands`.

use ringperf_engine::{TestReport, TestSpec};

/// Declares a group of flags once: each field's doc comment is its help, its `#[arg]` its
/// clap definition and default, and `=> spec.PATH` (for a flag that is a TestSpec field as
/// it is) or `=> with { |spec, value| ... }` (for one that sets fields its own way: both
/// sides, a negation, a pair) what [`copy_to`](super::TestArgs::copy_to) does with it, in
/// declaration order. The README's table is rendered from the same definitions
/// ([`flags_markdown`](super::flags_markdown)). `[sweep "name", sep]` makes it a list
/// under `sweep` ([`sweep_lists`](super::sweep_lists)): the parameter's name, and what
/// separates its values. `[only "cmd", ... ; "why"]` (or `as "label"`) names the test
/// commands a flag applies to: the others hide it from their help and refuse it, saying
/// where it applies (the listed commands and the why, or the label instead)
/// ([`command`](super::command), [`parse`](super::parse)).
/// `[keyval "NAME" after "PREV" = |report| value]` (repeatable) makes the setting a
/// `--keyval`/`--csv` field ([`keyval_settings`](super::keyval_settings)): its name, the
/// field it follows (without `after`, it goes at the end, so existing CSV columns keep
/// their places) and how its value is read back from a report. The expansion names this
/// file's items by their full paths, so a group compiles in any file of `args`.
macro_rules! flag_group {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty $(=> spec $(. $path:ident)+)? $(=> with { $set:expr })?
                $([sweep $param:literal, $sep:literal])?
                $([only $($cmd:literal),+ $(; $why:literal)? $(as $label:literal)?])?
                $([keyval $kv:literal $(after $prev:literal)? = $value:expr])*
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// Sets every spec field these flags give, in declaration order (a group may
            /// have none, hence the allow).
            #[allow(clippy::clone_on_copy, unused_variables)]
            pub fn copy_to(&self, spec: &mut ringperf_engine::TestSpec) {
                $(
                    $( spec $(. $path)+ = self.$field.clone(); )?
                    $( $crate::args::registry::apply(spec, &self.$field, $set); )?
                )*
            }

            /// The flags `sweep` takes a list of: (clap id, parameter name, separator).
            pub const SWEEP: &'static [(&'static str, &'static str, char)] =
                &[ $( $( (stringify!($field), $param, $sep), )? )* ];

            /// The flags that apply to some test commands only.
            pub const ONLY: &'static [$crate::args::registry::FlagScope] = &[ $( $( $crate::args::registry::FlagScope {
                id: stringify!($field),
                commands: &[$($cmd),+],
                why: $crate::args::registry::first(&[$($why)?]),
                label: $crate::args::registry::first(&[$($label)?]),
            }, )? )* ];

            /// The settings `--keyval` and `--csv` echo, in declaration order.
            pub const KEYVAL: &'static [$crate::args::registry::KeyvalSetting] = &[ $( $( $crate::args::registry::KeyvalSetting {
                name: $kv,
                after: $crate::args::registry::first(&[$($prev)?]),
                value: $value,
            }, )* )* ];
        }
    };
}
pub(super) use flag_group;

/// Runs a flag's `=> with { ... }` setter with its argument types spelled out, so the
/// closure where the flag is declared needs no annotations.
#[inline]
pub(super) fn apply<T>(spec: &mut TestSpec, value: &T, set: impl FnOnce(&mut TestSpec, &T)) {
    set(spec, value)
}

/// A setting echoed as a `--keyval`/`--csv` field, declared on its flag.
pub struct KeyvalSetting {
    pub name: &'static str,
    /// The field it comes right after (it may come later in the list: a kernel or profile
    /// figure); `None`: after the figures and settings, before the kernel counters.
    pub after: Option<&'static str>,
    pub value: fn(&TestReport) -> String,
}

/// A flag that applies to some test commands only, as its `[only ...]` mark says.
pub struct FlagScope {
    /// Its clap id (the field's name).
    pub id: &'static str,
    /// The commands it applies to (and `sweep`'s workloads of the same names).
    pub commands: &'static [&'static str],
    /// Why the others do not take it, said after the list.
    pub why: Option<&'static str>,
    /// What to say instead of the list, when the commands have a shorter name.
    pub label: Option<&'static str>,
}

impl FlagScope {
    /// Where it applies, for the message that refuses it elsewhere.
    pub(super) fn applies_to(&self) -> String {
        if let Some(label) = self.label {
            return label.to_string();
        }
        let list = match self.commands {
            [] => String::new(),
            [one] => one.to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        };
        match self.why {
            Some(why) => format!("{list} ({why})"),
            None => list,
        }
    }
}

/// The optional parts of a mark (`Option::or` is not const).
pub(super) const fn first(names: &[&'static str]) -> Option<&'static str> {
    match names {
        [name, ..] => Some(*name),
        [] => None,
    }
}

/// A size field that only request/response has (empty for a stream).
pub(super) fn rr_only(r: &TestReport, v: u32) -> String {
    if r.spec.workload.is_transactional() {
        v.to_string()
    } else {
        String::new()
    }
}
