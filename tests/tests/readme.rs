//! The README is the front door and the manual is under docs/: the README stays short enough
//! to read in five minutes, and every link from it (and between the manual's pages) leads to
//! a file that exists and, where it names one, to a heading that exists.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The README's budget (issue 33): what a newcomer reads before the manual.
const README_MAX_BYTES: usize = 24 * 1024;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The relative link targets of a Markdown text, outside fenced code blocks and code spans
/// (a flag table's `[[agent]]` or an example's brackets are not links).
fn links(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: every other backquoted piece of the line.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_string());
            }
            rest = &rest[end..];
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a Markdown file's headings make (outside fenced code, where `# ...` is a
/// shell comment).
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every link of `file` that does not resolve, with why.
fn broken_links(file: &Path) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = file.parent().expect("a file has a directory");
    let mut broken = Vec::new();
    for target in links(&text) {
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() { file.to_path_buf() } else { dir.join(path) };
        if !resolved.exists() {
            broken.push(format!("{target}: no file {}", resolved.display()));
            continue;
        }
        if let Some(anchor) = anchor {
            let text = fs::read_to_string(&resolved).unwrap_or_default();
            if !anchors(&text).contains(anchor) {
                broken.push(format!("{target}: no heading makes #{anchor} in {}", resolved.display()));
            }
        }
    }
    broken
}

fn manual_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = fs::read_dir(repo().join("docs"))
        .expect("the manual is under docs/")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages
}

#[test]
fn readme_fits_its_budget() {
    let size = fs::metadata(repo().join("README.md")).expect("README.md").len() as usize;
    assert!(
        size <= README_MAX_BYTES,
        "README.md is {size} bytes, over its {README_MAX_BYTES}: move reference text to a page under docs/"
    );
}

#[test]
fn readme_links_every_manual_page_and_every_link_resolves() {
    let readme = repo().join("README.md");
    let broken = broken_links(&readme);
    assert!(broken.is_empty(), "README.md has broken links:\n{}", broken.join("\n"));
    let linked: BTreeSet<String> = links(&fs::read_to_string(&readme).expect("README.md"))
        .into_iter()
        .map(|t| t.split('#').next().unwrap_or_default().to_string())
        .collect();
    let pages = manual_pages();
    assert!(!pages.is_empty(), "docs/ holds no page");
    for page in pages {
        let name = format!("docs/{}", page.file_name().expect("a name").to_string_lossy());
        assert!(linked.contains(&name), "README.md does not link {name}");
    }
}

#[test]
fn every_link_of_the_manual_resolves() {
    let broken: Vec<String> = manual_pages().iter().flat_map(|p| broken_links(p)).collect();
    assert!(broken.is_empty(), "the manual has broken links:\n{}", broken.join("\n"));
}

/// The checker itself: a missing file and a missing heading are caught, code is not a link.
#[test]
fn the_link_check_catches_a_missing_file_and_a_missing_heading() {
    let dir = std::env::temp_dir().join(format!("ringperf-readme-test-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("a temporary directory");
    let page = dir.join("page.md");
    fs::write(
        &page,
        "# Page\n\n## Some Heading: here\n\n[ok](#some-heading-here) [self](page.md)\n\
         [gone](missing.md) [no anchor](page.md#nowhere) `[code](missing2.md)`\n\
         ```\n[fenced](missing3.md)\n```\n",
    )
    .expect("write the page");
    let broken = broken_links(&page);
    fs::remove_dir_all(&dir).expect("remove the temporary directory");
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].starts_with("missing.md: no file"), "{broken:?}");
    assert!(broken[1].starts_with("page.md#nowhere: no heading"), "{broken:?}");
}
