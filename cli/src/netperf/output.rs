//! What `netperf` prints at the end: the names `-k`/`-o`/`-O` select, each the figures'
//! registry's or a `--keyval` field, or netperf's classic tables.

use ringperf_core::figures::{self, Run};
use ringperf_core::TestReport;

use super::call::{Output, Style};
use super::titles;
use crate::render::{self, Units};

/// The value of netperf omni output `name` for `r`: the registry's figure of that netperf
/// name, else the `--keyval` field of that name (a setting, or a figure of ringperf's own);
/// `None` for a name ringperf cannot fill (netperf prints nothing for such a name under
/// -k, and an empty field under -o/-O).
pub fn value(r: &TestReport, name: &str, units: Units) -> Option<String> {
    match figures::by_netperf(name) {
        Some(f) => f.netperf_text(&Run::whole(r, units)),
        None => render::keyval::value(r, name, units),
    }
}

/// netperf's default -k/-o/-O set when no names are given, as its omni code picks it by
/// the test's direction: sizes for a send, a receive or a request/response, then the
/// throughput, then (with -c or -C) the CPU figures.
fn default_selection(test: &str, cpu: bool) -> Vec<String> {
    const STREAM: &[&str] = &["LSS_SIZE_END", "RSR_SIZE_END", "LOCAL_SEND_SIZE"];
    const MAERTS: &[&str] = &["RSS_SIZE_END", "LSR_SIZE_END", "REMOTE_SEND_SIZE"];
    const RR: &[&str] =
        &["LSS_SIZE_END", "LSR_SIZE_END", "RSR_SIZE_END", "RSS_SIZE_END", "REQUEST_SIZE", "RESPONSE_SIZE"];
    const TPUT: &[&str] = &["ELAPSED_TIME", "THROUGHPUT", "THROUGHPUT_UNITS"];
    const CPU: &[&str] = &[
        "LOCAL_CPU_UTIL",
        "LOCAL_CPU_PERCENT_USER",
        "LOCAL_CPU_PERCENT_SYSTEM",
        "LOCAL_CPU_PERCENT_IOWAIT",
        "LOCAL_CPU_PERCENT_IRQ",
        "LOCAL_CPU_PERCENT_SWINTR",
        "LOCAL_CPU_METHOD",
        "REMOTE_CPU_UTIL",
        "REMOTE_CPU_PERCENT_USER",
        "REMOTE_CPU_PERCENT_SYSTEM",
        "REMOTE_CPU_PERCENT_IOWAIT",
        "REMOTE_CPU_PERCENT_IRQ",
        "REMOTE_CPU_PERCENT_SWINTR",
        "REMOTE_CPU_METHOD",
        "LOCAL_SD",
        "REMOTE_SD",
        "SD_UNITS",
    ];
    let sizes = match test {
        "TCP_MAERTS" => MAERTS,
        "TCP_RR" | "TCP_CRR" | "UDP_RR" => RR,
        _ => STREAM,
    };
    let cpu: &[&str] = if cpu { CPU } else { &[] };
    [sizes, TPUT, cpu].concat().into_iter().map(String::from).collect()
}

/// The final output for `out`: the selected names in their style, or the classic table.
pub fn render(r: &TestReport, out: &Output, units: Units) -> String {
    let Some((style, names)) = &out.select else { return classic(r, out, units) };
    let names: Vec<String> =
        if names.is_empty() { default_selection(out.test, out.cpu) } else { names.clone() };
    let values: Vec<Option<String>> = names.iter().map(|n| value(r, n, units)).collect();
    match style {
        Style::Keyval => {
            names.iter().zip(&values).filter_map(|(n, v)| v.as_ref().map(|v| format!("{n}={v}\n"))).collect()
        }
        Style::Csv => {
            let mut s = String::new();
            if out.banner {
                // netperf's titles, one line each; a name of ringperf's own is its title.
                let titles: Vec<String> =
                    names.iter().map(|n| titles::joined(n).unwrap_or_else(|| n.clone())).collect();
                s.push_str(&titles.join(","));
                s.push('\n');
            }
            let row: Vec<String> = values.into_iter().map(Option::unwrap_or_default).collect();
            s.push_str(&row.join(","));
            s.push('\n');
            s
        }
        Style::Columns => {
            let row: Vec<String> = values.into_iter().map(Option::unwrap_or_default).collect();
            columns(&names, &row, out.banner)
        }
    }
}

/// `-O`'s table as netperf lays it out: four title lines (a name of ringperf's own is its
/// own one-line title) over the values, each column as wide as its longest title line or
/// its value and one more, then a space; lines keep their trailing blanks, as netperf's do.
fn columns(names: &[String], row: &[String], banner: bool) -> String {
    let titles: Vec<[&str; 4]> =
        names.iter().map(|n| titles::lines(n).copied().unwrap_or([n.as_str(), "", "", ""])).collect();
    let widths: Vec<usize> = titles
        .iter()
        .zip(row)
        .map(|(t, v)| t.iter().map(|l| l.len()).max().unwrap_or(0).max(v.len() + 1))
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut l: String = cells.zip(&widths).map(|(c, w)| format!("{c:<w$} ")).collect();
        l.push('\n');
        l
    };
    let mut s = String::new();
    if banner {
        for k in 0..4 {
            s.push_str(&line(&mut titles.iter().map(|t| t[k])));
        }
    }
    s.push_str(&line(&mut row.iter().map(String::as_str)));
    s
}

/// netperf's classic tables: -v 0 the figure alone, -v 1 the table (a header with -P 1),
/// -v 2 and more the latency and retransmission lines after it.
fn classic(r: &TestReport, out: &Output, units: Units) -> String {
    let get = |n: &str| value(r, n, units).unwrap_or_default();
    if out.verbosity == 0 {
        return format!("{}\n", get("THROUGHPUT"));
    }
    let mut s = match out.test {
        "TCP_RR" | "TCP_CRR" | "UDP_RR" => rr_table(r, out, &get),
        "UDP_STREAM" => udp_stream_table(r, out, units, &get),
        _ => stream_table(r, out, units, &get),
    };
    if out.verbosity >= 2 {
        if r.spec.workload.is_transactional() {
            s.push_str(&format!(
                "\nRound trip (usec): mean {} min {} p50 {} p90 {} p99 {} max {}\n",
                get("MEAN_LATENCY"),
                get("MIN_LATENCY"),
                get("P50_LATENCY"),
                get("P90_LATENCY"),
                get("P99_LATENCY"),
                get("MAX_LATENCY")
            ));
        }
        s.push_str(&format!(
            "\nBytes sent {} received {} (remote sent {} received {}); retransmissions local {} remote {}\n",
            get("LOCAL_BYTES_SENT"),
            get("LOCAL_BYTES_RECVD"),
            get("REMOTE_BYTES_SENT"),
            get("REMOTE_BYTES_RECVD"),
            get("LOCAL_TRANSPORT_RETRANS"),
            get("REMOTE_TRANSPORT_RETRANS")
        ));
    }
    s
}

/// The elapsed time as the classic tables print it.
fn elapsed(r: &TestReport) -> String {
    format!("{:.2}", r.local.elapsed_ns as f64 / 1e9)
}

/// Each side's final socket buffer sizes: (send, receive), the remote's 0 when it never reported.
fn buffers(r: &TestReport) -> ((u32, u32), (u32, u32)) {
    let local = (r.local.socket.send_buffer, r.local.socket.recv_buffer);
    (local, r.remote.as_ref().map_or((0, 0), |s| (s.socket.send_buffer, s.socket.recv_buffer)))
}

fn left(title: [&'static str; 4], min: usize) -> Column {
    Column { title, min, right: false }
}

fn right(title: [&'static str; 4], min: usize) -> Column {
    Column { title, min, right: true }
}

/// TCP_RR, TCP_CRR and UDP_RR: the local side's row, then the remote's buffers.
fn rr_table(r: &TestReport, out: &Output, get: &dyn Fn(&str) -> String) -> String {
    let ((lss, lsr), (rss, rsr)) = buffers(r);
    let mut s = String::new();
    if out.banner {
        s.push_str("Local /Remote\n");
    }
    let columns = [
        left(["Socket", "Send", "bytes", ""], 6),
        left(["Size", "Recv", "Bytes", ""], 6),
        left(["Request", "Size", "bytes", ""], 8),
        left(["Resp.", "Size", "bytes", ""], 7),
        left(["Elapsed", "Time", "secs.", ""], 8),
        left(["Trans.", "Rate", "per sec", ""], 0),
    ];
    let rows = [
        vec![
            lss.to_string(),
            lsr.to_string(),
            r.spec.request_size.to_string(),
            r.spec.response_size.to_string(),
            elapsed(r),
            get("THROUGHPUT"),
        ],
        vec![rss.to_string(), rsr.to_string()],
    ];
    s.push_str(&table(&columns, 3, &rows, out.banner));
    s
}

/// UDP_STREAM: the sender's row, then the receiver's with its own count and rate.
fn udp_stream_table(r: &TestReport, out: &Output, units: Units, get: &dyn Fn(&str) -> String) -> String {
    let ((lss, _), (_, rsr)) = buffers(r);
    let columns = [
        left(["Socket", "Size", "bytes", ""], 7),
        left(["Message", "Size", "bytes", ""], 8),
        left(["Elapsed", "Time", "secs", ""], 10),
        // "Messages" heads both counts: it may run into the next column's blank.
        right(["Messages", "Okay", "#", ""], 7),
        right(["", "Errors", "#", ""], 6),
        left(["", "Throughput", units.label(), ""], 0),
    ];
    let rows = [
        vec![
            lss.to_string(),
            r.spec.send_size.to_string(),
            elapsed(r),
            get("DATAGRAMS_SENT"),
            get("LOST_DATAGRAMS"),
            get("THROUGHPUT"),
        ],
        vec![
            rsr.to_string(),
            r.spec.recv_size.to_string(),
            elapsed(r),
            get("DATAGRAMS_RECEIVED"),
            String::new(),
            get("REMOTE_THROUGHPUT"),
        ],
    ];
    table(&columns, 3, &rows, out.banner)
}

/// TCP_STREAM, TCP_MAERTS and TCP_SENDFILE: the receiver's and the sender's buffers.
fn stream_table(r: &TestReport, out: &Output, units: Units, get: &dyn Fn(&str) -> String) -> String {
    let ((lss, lsr), (rss, rsr)) = buffers(r);
    let (recv_buf, send_buf) = if out.test == "TCP_MAERTS" { (lsr, rss) } else { (rsr, lss) };
    let columns = [
        left(["Recv", "Socket", "Size", "bytes"], 6),
        left(["Send", "Socket", "Size", "bytes"], 7),
        left(["Send", "Message", "Size", "bytes"], 8),
        left(["", "Elapsed", "Time", "secs."], 8),
        left(["", "", "Throughput", units.label()], 0),
    ];
    let rows = [vec![
        recv_buf.to_string(),
        send_buf.to_string(),
        r.spec.send_size.to_string(),
        elapsed(r),
        get("THROUGHPUT"),
    ]];
    table(&columns, 4, &rows, out.banner)
}

/// A column of a classic table: its title lines, the width it keeps at least (netperf's
/// own layout), and whether its values stand right-aligned.
struct Column {
    title: [&'static str; 4],
    min: usize,
    right: bool,
}

/// A classic table: `title_lines` lines of titles (with `banner`), a blank line, the rows.
/// Each column is as wide as its widest title or value (at least its `min`), so a large
/// figure (a 4 MiB socket buffer) widens its column instead of pushing the rest out of
/// line. A title may run into the next column where that column's title line is blank.
fn table(columns: &[Column], title_lines: usize, rows: &[Vec<String>], banner: bool) -> String {
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let spills = |k: usize| columns.get(i + 1).is_some_and(|n| n.title[k].is_empty());
            let titles = (0..title_lines).filter(|&k| !spills(k)).map(|k| c.title[k].len());
            let values = rows.iter().filter_map(|r| r.get(i)).map(String::len);
            titles.chain(values).fold(c.min, usize::max)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = (&Column, &str)>| -> String {
        let mut l = String::new();
        for ((c, cell), w) in cells.zip(&widths) {
            if c.right {
                l.push_str(&format!("{cell:>w$} "));
            } else {
                l.push_str(&format!("{cell:<w$} "));
            }
        }
        format!("{}\n", l.trim_end())
    };
    let mut s = String::new();
    if banner {
        for k in 0..title_lines {
            s.push_str(&line(&mut columns.iter().map(|c| (c, c.title[k]))));
        }
        s.push('\n');
    }
    for row in rows {
        s.push_str(&line(&mut columns.iter().zip(row).map(|(c, v)| (c, v.as_str()))));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netperf::lines::{call, v};

    /// -O's layout, as the real netperf (afc51ff) printed `-O THROUGHPUT,PROTOCOL` and
    /// `-k` with no names selects what netperf's omni code selects for the test's direction,
    /// and its CPU names only with -c or -C.
    #[test]
    fn an_empty_selection_is_netperfs_default_for_the_test() {
        let stream = default_selection("TCP_STREAM", false);
        assert_eq!(
            stream,
            v("LSS_SIZE_END RSR_SIZE_END LOCAL_SEND_SIZE ELAPSED_TIME THROUGHPUT THROUGHPUT_UNITS")
        );
        assert_eq!(default_selection("UDP_STREAM", false), stream);
        let maerts = default_selection("TCP_MAERTS", false);
        assert_eq!(&maerts[..3], v("RSS_SIZE_END LSR_SIZE_END REMOTE_SEND_SIZE").as_slice());
        for rr in ["TCP_RR", "TCP_CRR", "UDP_RR"] {
            let names = default_selection(rr, false);
            assert_eq!(&names[4..6], v("REQUEST_SIZE RESPONSE_SIZE").as_slice(), "{rr}");
            assert_eq!(names.len(), 9, "{rr}");
        }
        let cpu = default_selection("TCP_RR", true);
        assert_eq!(cpu.len(), 9 + 17);
        assert_eq!(cpu.last().map(String::as_str), Some("SD_UNITS"));
        let out = call("netperf -c -t TCP_RR -- -k").output;
        assert!(out.cpu && out.select == Some((Style::Keyval, Vec::new())), "{out:?}");
        assert!(!call("netperf -t TCP_RR -- -k").output.cpu);
    }

    /// `-O LSS_SIZE_END,THROUGHPUT_UNITS,ELAPSED_TIME` on loopback: four title lines, each
    /// column its widest title line or value plus one, then a space.
    #[test]
    fn columns_carry_netperfs_titles_in_its_layout() {
        let names = v("THROUGHPUT PROTOCOL");
        let row = v("14861.20 TCP");
        let blank = " ".repeat(20);
        assert_eq!(
            columns(&names, &row, true),
            format!("Throughput Protocol \n{blank}\n{blank}\n{blank}\n14861.20   TCP      \n")
        );
        assert_eq!(columns(&names, &row, false), "14861.20   TCP      \n");
        let names = v("LSS_SIZE_END THROUGHPUT_UNITS ELAPSED_TIME");
        let out = columns(&names, &v("4194304 10^6bits/s 1.00"), true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "Local       Throughput  Elapsed ",
                "Send Socket Units       Time    ",
                "Size                    (sec)   ",
                "Final                           ",
                "4194304     10^6bits/s  1.00    ",
            ]
        );
        // A value wider than its title widens its column instead of running into the next.
        let out = columns(&v("PROTOCOL THROUGHPUT"), &v("A-VERY-LONG-VALUE 1.00"), false);
        assert_eq!(out, "A-VERY-LONG-VALUE  1.00       \n");
    }

    /// Where each word of a line starts.
    fn word_starts(line: &str) -> Vec<usize> {
        let b = line.as_bytes();
        (0..b.len()).filter(|&i| b[i] != b' ' && (i == 0 || b[i - 1] == b' ')).collect()
    }

    /// With -s 4M -S 4M the kernel reports 8 MiB buffers: seven-digit figures that ran past
    /// netperf's six-wide columns. Each column now starts where its title does, with one
    /// space at least between values; small figures keep netperf's widths.
    #[test]
    fn classic_columns_fit_large_socket_sizes() {
        let columns = [
            left(["Recv", "Socket", "Size", "bytes"], 6),
            left(["Send", "Socket", "Size", "bytes"], 7),
            left(["Send", "Message", "Size", "bytes"], 8),
            left(["", "Elapsed", "Time", "secs."], 8),
            left(["", "", "Throughput", "10^6bits/s"], 0),
        ];
        let big = vec![v("8388608 8388608 1400 1.00 3962.97")];
        let out = table(&columns, 4, &big, true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 6, "{out}");
        assert_eq!(lines[4], "", "a blank line under the titles: {out}");
        assert_eq!(word_starts(lines[5]), word_starts(lines[2]), "values under their titles:\n{out}");
        assert_eq!(lines[5].split_whitespace().count(), 5, "{out}");
        let small = table(&columns, 4, &[v("87380 16384 16384 10.00 941.12")], true);
        assert_eq!(
            small,
            "Recv   Send    Send\nSocket Socket  Message  Elapsed\nSize   Size    Size     Time     Throughput\nbytes  bytes   bytes    secs.    10^6bits/s\n\n87380  16384   16384    10.00    941.12\n"
        );
        // A right-aligned count column and a title that runs into the next blank one.
        let counts = [right(["Messages", "Okay", "#", ""], 7), right(["", "Errors", "#", ""], 6)];
        let out = table(&counts, 3, &[v("123456789 0")], true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0].trim_start(), "Messages", "{out}");
        let end = |l: &str, word: &str| l.find(word).map(|i| i + word.len());
        assert_eq!(
            end(lines[1], "Okay"),
            end(lines[4], "123456789"),
            "right-aligned under its title:\n{out}"
        );
        assert_eq!(end(lines[1], "Errors"), Some(lines[4].len()), "{out}");
    }

    /// A figure's keyval name that is also one of netperf's outputs (it has netperf's
    /// title) is the figure's netperf name too, so the registry says which figures
    /// netperf's selectors know by netperf's own name.
    #[test]
    fn keyval_names_netperf_has_are_the_figures_netperf_names() {
        for f in figures::keyval_fields() {
            let name = f.keyval.expect("a keyval field");
            if titles::lines(name).is_some() {
                assert_eq!(f.netperf, Some(name), "{name} is one of netperf's outputs");
            }
        }
        for f in figures::all().iter().filter(|f| f.keyval.is_none()) {
            if let Some(n) = f.netperf {
                assert!(titles::lines(n).is_some(), "{n}: a netperf-only name netperf has no title for");
            }
        }
    }
}
