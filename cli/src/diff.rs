//! `ringperf diff A.json B.json`: reads two reports, asks the engine to compare them, and
//! exits 1 when a figure named in --fail-on got significantly worse.

use std::path::Path;

use ringperf_core::compare::compare;
use ringperf_core::input;
use ringperf_core::{Error, TestReport};

use crate::args::DiffArgs;
use crate::output::print;
use crate::render;

/// A report from `p` (`-` is stdin), read within the report cap.
fn load(p: &Path) -> Result<TestReport, Error> {
    let text = input::read_text_or_stdin(p, input::REPORT)?;
    let r: TestReport = ringperf_core::report_upgrade::parse(&text).map_err(|e| {
        Error::Usage(format!(
            "'{}' is not a single ringperf --json report ({e}); `engines --json` arrays are compared per element",
            p.display()
        ))
    })?;
    crate::plot::warn_unknown_schema(p, [&r]);
    Ok(r)
}

pub fn run(a: &DiffArgs) -> Result<i32, Error> {
    if !(50.0..100.0).contains(&a.level) {
        return Err(Error::Usage(format!("--level {}: use 50 to 99.99 (percent)", a.level)));
    }
    if a.a.as_os_str() == "-" && a.b.as_os_str() == "-" {
        return Err(Error::Usage("both reports are '-': stdin holds one; give the other as a file".into()));
    }
    let (ra, rb) = (load(&a.a)?, load(&a.b)?);
    if ra.test != rb.test {
        return Err(Error::Usage(format!(
            "'{}' is a {} report and '{}' a {} report: diff compares two runs of the same test; give two {} (or two {}) reports",
            a.a.display(),
            ra.test,
            a.b.display(),
            rb.test,
            ra.test,
            rb.test
        )));
    }
    let c = compare(&ra, &rb, a.level / 100.0);
    let units = render::Units::parse(&a.units);
    let sides = [(&a.a, &ra), (&a.b, &rb)]
        .map(|(p, r)| render::diff::Side { path: p.display().to_string(), report: r });
    print("the comparison", &render::diff::render(&c, &sides, units));
    let failed: Vec<&str> = c
        .figures
        .iter()
        .filter(|f| f.worse && a.fail_on.iter().any(|n| n == f.name))
        .map(|f| f.name)
        .collect();
    if failed.is_empty() {
        return Ok(0);
    }
    eprintln!("ringperf: significantly worse: {}", failed.join(", "));
    Ok(1)
}
