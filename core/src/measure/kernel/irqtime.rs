//! Whether this kernel splits hardirq and softirq time out exactly (IRQ time accounting).
//! Without it, /proc/stat's irq and softirq columns are tick samples: time spent in an
//! interrupt or a softirq that the tick did not land in is charged to whatever the CPU was
//! running (often the system time of the task it interrupted), so those columns understate.
//! CONFIG_IRQ_TIME_ACCOUNTING or CONFIG_VIRT_CPU_ACCOUNTING_GEN (full dynticks) give it;
//! the kernel offers no runtime switch to read, so the build configuration is asked
//! (/proc/config.gz, then /boot/config-RELEASE), and `tsc=noirqtime` on the command
//! line, which turns IRQ time accounting off on x86, is looked for.

use std::io::Read;

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Availability {
    Yes,
    No,
    #[default]
    Unknown,
}

/// The answer and where it came from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqTimeAccounting {
    pub available: Availability,
    /// How it was told ("CONFIG_IRQ_TIME_ACCOUNTING=y in /proc/config.gz"), or why not.
    pub source: String,
}

/// What a kernel configuration says: `Some(true)` when it has either option.
pub fn from_config(config: &str) -> Option<bool> {
    let mut seen = false;
    for line in config.lines().map(str::trim) {
        for opt in ["CONFIG_IRQ_TIME_ACCOUNTING", "CONFIG_VIRT_CPU_ACCOUNTING_GEN"] {
            if line == format!("{opt}=y") {
                return Some(true);
            }
            if line == format!("# {opt} is not set") {
                seen = true;
            }
        }
        // A config always states the tick accounting choice: it is one at all.
        if line.starts_with("CONFIG_TICK_CPU_ACCOUNTING=") || line.starts_with("CONFIG_LOCALVERSION") {
            seen = true;
        }
    }
    seen.then_some(false)
}

fn gunzip(path: &str) -> std::io::Result<String> {
    let f = std::fs::File::open(path)?;
    let mut s = String::new();
    // A kernel config is ~200 KiB; a bound keeps a strange file from costing more.
    flate2::read::GzDecoder::new(f).take(16 << 20).read_to_string(&mut s)?;
    Ok(s)
}

/// Asks the running kernel's configuration.
pub fn detect() -> IrqTimeAccounting {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let release = release.trim();
    let candidates: [(String, bool); 2] =
        [("/proc/config.gz".into(), true), (format!("/boot/config-{release}"), false)];
    let mut tried = Vec::new();
    for (path, gz) in candidates {
        let text = if gz { gunzip(&path) } else { std::fs::read_to_string(&path) };
        let text = match text {
            Ok(t) => t,
            Err(e) => {
                tried.push(format!("{path}: {e}"));
                continue;
            }
        };
        match from_config(&text) {
            Some(true) => {
                let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
                if cmdline.split_whitespace().any(|w| w == "tsc=noirqtime") {
                    return IrqTimeAccounting {
                        available: Availability::No,
                        source: format!(
                            "built in ({path}) but turned off by tsc=noirqtime on the kernel command line"
                        ),
                    };
                }
                return IrqTimeAccounting {
                    available: Availability::Yes,
                    source: format!("enabled in {path}"),
                };
            }
            Some(false) => {
                return IrqTimeAccounting {
                    available: Availability::No,
                    source: format!(
                        "CONFIG_IRQ_TIME_ACCOUNTING and CONFIG_VIRT_CPU_ACCOUNTING_GEN are off in {path}"
                    ),
                }
            }
            None => tried.push(format!("{path}: not a kernel configuration")),
        }
    }
    IrqTimeAccounting {
        available: Availability::Unknown,
        source: format!("the kernel configuration is not readable ({})", tried.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_say_yes_no_or_nothing() {
        let this_machine = "CONFIG_TICK_CPU_ACCOUNTING=y\n# CONFIG_VIRT_CPU_ACCOUNTING_GEN is not set\n# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_HAVE_IRQ_TIME_ACCOUNTING=y\n";
        assert_eq!(from_config(this_machine), Some(false));
        assert_eq!(from_config("CONFIG_IRQ_TIME_ACCOUNTING=y\n"), Some(true));
        assert_eq!(from_config("CONFIG_VIRT_CPU_ACCOUNTING_GEN=y\n"), Some(true));
        assert_eq!(from_config("CONFIG_HAVE_IRQ_TIME_ACCOUNTING=y\n"), None);
        assert_eq!(from_config("\u{0}\u{1}garbage"), None);
        assert_eq!(from_config(""), None);
    }

    #[test]
    fn this_kernel_gives_an_answer_with_its_source() {
        let a = detect();
        assert!(!a.source.is_empty());
    }
}
