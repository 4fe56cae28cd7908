//! A snapshot of the report's structure and tables over a synthetic store, so a change to the
//! report code cannot change what the page says unnoticed. Not pixels: the outline (headings,
//! notes, figure ids and captions, warning lists) and every table cell, as text. What depends
//! on the machine or the moment is masked; the latency statistics are not: synthetic samples
//! come from a seed, so every one of them is the same on every machine and every run.
//!
//! After an intended change to the report: `INSTA_UPDATE=always cargo test --test cli snapshot`
//! (or `cargo insta review`), then read the diff of the .snap file before committing it.

use crate::helpers::*;

/// Two labels, each with a run drawn from its envelope and one drawn sample by sample, and one
/// run the report must leave out.
fn store(lab: &Lab) {
    // k-a: 2 × 5000 samples (more than the store keeps raw: drawn from the envelope), then
    // 2 × 1500 (drawn sample by sample), the newest of k-a.
    lab.ok(&["synthetic", "-t", "2", "-l", "5000", "--seed", "1", "-q", "--label", "k-a"]);
    lab.ok(&["synthetic", "-t", "2", "-l", "1500", "--seed", "5", "-q", "--label", "k-a"]);
    // k-b: a run of the same probe and load that the newer one below replaces in the report,
    // then 2 × 50000 samples with a slower body, drawn from the envelope.
    lab.ok(&["synthetic", "-t", "1", "-l", "3000", "--seed", "2", "-q", "--label", "k-b"]);
    lab.ok(&["synthetic", "-t", "2", "-l", "50000", "--seed", "4", "--median", "6500", "-q", "--label", "k-b"]);
}

#[test]
fn report_structure_and_tables() {
    let lab = Lab::new();
    store(&lab);
    let out = lab.path("rep");
    // Both labels' newest runs (2 and 4) plus run 1 by id; run 3 is replaced by run 4.
    lab.ok(&["report", "--label", "k-a", "--label", "k-b", "--run", "1", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let mut masks = vec![(lab.dir.path().display().to_string(), "[LAB]".to_string())];
    for id in 1..=4 {
        masks.extend(machine_strings(&lab.export_json(id)["run"]));
    }
    let page = mask(&outline(&html), &masks);
    insta::assert_snapshot!(page);
}

/// What a run's stored header says about the machine and the moment, with its placeholder.
fn machine_strings(run: &serde_json::Value) -> Vec<(String, String)> {
    let sys = &run["system"];
    let mut out = Vec::new();
    for (value, name) in [
        (&run["command_line"], "COMMAND LINE"),
        (&sys["cmdline"], "KERNEL CMDLINE"),
        (&sys["kernel_version"], "KERNEL VERSION"),
        (&sys["kernel_release"], "KERNEL RELEASE"),
        (&sys["cpu_model"], "CPU MODEL"),
        (&sys["cpu_mhz"], "CPU MHZ"),
        (&sys["hostname"], "HOSTNAME"),
    ] {
        let text = match value {
            serde_json::Value::String(s) => s.trim().to_string(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => continue,
        };
        // Too short to tell from ordinary words or numbers of the page.
        if text.chars().count() >= 2 {
            out.push((text, format!("[{name}]")));
        }
    }
    // Where the collector ran depends on the machine's CPUs.
    if let Ok(c) = serde_json::from_value::<rtbench::model::CollectorRecord>(run["params"]["collector"].clone()) {
        out.push((c.describe(), "[COLLECTOR]".into()));
    }
    out
}

/// Replaces the masked strings (whole words only, longest first), RFC 3339 timestamps and the
/// tool version.
pub(crate) fn mask(text: &str, masks: &[(String, String)]) -> String {
    let mut masks = masks.to_vec();
    masks.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    masks.dedup();
    let mut out = text.replace(&format!("rtbench {}", env!("CARGO_PKG_VERSION")), "rtbench [VERSION]");
    for (from, to) in &masks {
        out = replace_words(&out, from, to);
    }
    mask_timestamps(&out)
}

fn replace_words(text: &str, word: &str, with: &str) -> String {
    let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    let mut out = String::new();
    let mut from = 0;
    for (at, _) in text.match_indices(word) {
        let end = at + word.len();
        if at < from || !edge(text[..at].chars().next_back()) || !edge(text[end..].chars().next()) {
            continue;
        }
        out.push_str(&text[from..at]);
        out.push_str(with);
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

/// `2026-01-02T03:04:05.678Z` (fraction, zone optional) → `[TIMESTAMP]`.
fn mask_timestamps(text: &str) -> String {
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let b = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut copied = 0;
    while i + shape.len() <= b.len() {
        let hit = shape.iter().zip(&b[i..]).all(|(s, c)| if *s == b'd' { c.is_ascii_digit() } else { s == c });
        if !hit {
            i += 1;
            continue;
        }
        let mut end = i + shape.len();
        if b.get(end) == Some(&b'.') {
            end += 1;
            while b.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
        }
        if b.get(end) == Some(&b'Z') {
            end += 1;
        } else if matches!(b.get(end), Some(b'+') | Some(b'-')) && b.len() >= end + 6 && b[end + 3] == b':' {
            end += 6;
        }
        out.push_str(&text[copied..i]);
        out.push_str("[TIMESTAMP]");
        copied = end;
        i = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// One piece of the page: a tag opening (name, attributes), a tag closing, or text.
#[derive(Debug)]
enum Tok<'a> {
    Open(&'a str, &'a str),
    Close(&'a str),
    Text(&'a str),
}

/// Splits rtbench's own, regular HTML into tags and text. SVG, style and script bodies are
/// dropped whole: the figures are checked elsewhere, and only their ids and captions matter here.
fn tokens(html: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut rest = html;
    while !rest.is_empty() {
        if let Some(comment) = rest.strip_prefix("<!--") {
            rest = &comment[comment.find("-->").expect("comment closes") + 3..];
        } else if let Some(after) = rest.strip_prefix('<') {
            let end = after.find('>').expect("tag closes");
            let tag = after[..end].trim_end_matches('/').trim();
            rest = &after[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                out.push(Tok::Close(name.trim()));
            } else if !tag.starts_with('!') {
                let (name, attrs) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
                if matches!(name, "svg" | "style" | "script") {
                    let close = format!("</{name}>");
                    rest = &rest[rest.find(&close).unwrap_or_else(|| panic!("{close} missing")) + close.len()..];
                } else {
                    out.push(Tok::Open(name, attrs));
                }
            }
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            out.push(Tok::Text(&rest[..end]));
            rest = &rest[end..];
        }
    }
    out
}

fn attr<'a>(attrs: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let at = attrs.find(&key)? + key.len();
    attrs[at..].split('"').next()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// Collapses ASCII white space only: the narrow no-break space that groups thousands ("1 000")
/// is part of the output.
fn squash(s: &str) -> String {
    s.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
}

const VOID: [&str; 6] = ["br", "hr", "img", "meta", "link", "input"];

/// The text inside the element just opened, up to its `</close>`; an element with a title (a
/// run's ⚠ caveats) is followed by its title in braces, one note per "; ".
fn inline(toks: &[Tok], i: &mut usize, close: &str) -> String {
    let mut text = String::new();
    let mut open: Vec<Option<String>> = Vec::new();
    while *i < toks.len() {
        let t = &toks[*i];
        *i += 1;
        match t {
            Tok::Text(s) => text.push_str(&unescape(s)),
            Tok::Open(name, _) if VOID.contains(name) => {}
            Tok::Open(_, attrs) => {
                open.push(attr(attrs, "title").map(|t| unescape(t).lines().collect::<Vec<_>>().join("; ")))
            }
            Tok::Close(name) if open.is_empty() => {
                assert_eq!(*name, close, "unbalanced HTML near {text:?}");
                return squash(&text);
            }
            Tok::Close(_) => {
                if let Some(Some(title)) = open.pop() {
                    text.push_str(&format!(" {{{title}}}"));
                }
            }
        }
    }
    panic!("</{close}> missing after {text:?}")
}

/// Columns whose values follow from the CPU clock of the machine the run was stored on.
const BY_CPU_CLOCK: [&str; 2] = ["10⁵ cycles", "verdict"];

/// A table's rows, cells joined by " | ". Tables about the machine keep their row names only;
/// columns that follow from the CPU clock keep their place but not their values.
fn table(toks: &[Tok], i: &mut usize, attrs: &str, lines: &mut Vec<String>) {
    let machine = attr(attrs, "class") == Some("sys");
    lines.push(if machine { "table (machine: row names only)".into() } else { "table".into() });
    let mut header: Vec<String> = Vec::new();
    let mut row: Vec<(bool, String)> = Vec::new();
    while *i < toks.len() {
        let t = &toks[*i];
        *i += 1;
        match t {
            Tok::Open("tr", _) => row.clear(),
            Tok::Open(cell @ ("th" | "td"), _) => {
                let is_head = *cell == "th";
                row.push((is_head, inline(toks, i, cell)));
            }
            Tok::Close("tr") => {
                let cells: Vec<String> = if machine {
                    row.iter().filter(|(h, _)| *h).map(|(_, c)| c.clone()).collect()
                } else if row.iter().all(|(h, _)| *h) {
                    header = row.iter().map(|(_, c)| c.clone()).collect();
                    lines.push(format!("  header: {}", header.join(" | ")));
                    continue;
                } else {
                    row.iter()
                        .enumerate()
                        .map(|(n, (_, c))| {
                            if header.get(n).is_some_and(|h| BY_CPU_CLOCK.contains(&h.as_str())) {
                                "[by CPU clock]".to_string()
                            } else {
                                c.clone()
                            }
                        })
                        .collect()
                };
                lines.push(format!("  row: {}", cells.join(" | ")));
            }
            Tok::Close("table") => return,
            Tok::Text(s) if s.trim().is_empty() => {}
            other => panic!("unexpected in a table: {other:?}"),
        }
    }
    panic!("</table> missing")
}

/// The page as lines of text: title, headings, notes, figures by id and caption, tables, lists.
pub(crate) fn outline(html: &str) -> String {
    let toks = tokens(html);
    let mut lines: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        i += 1;
        match *t {
            Tok::Open("title", _) => lines.push(format!("title: {}", inline(&toks, &mut i, "title"))),
            Tok::Open(h @ ("h1" | "h2" | "h3"), _) => {
                let depth = h[1..].parse().unwrap();
                let text = inline(&toks, &mut i, h);
                if depth < 3 {
                    lines.push(String::new());
                }
                lines.push(format!("{} {text}", "#".repeat(depth)));
            }
            Tok::Open("p", attrs) => {
                let class = attr(attrs, "class").unwrap_or("");
                lines.push(format!("p.{class}: {}", inline(&toks, &mut i, "p")));
            }
            Tok::Open("figure", attrs) => {
                let id = attr(attrs, "id").unwrap_or("?");
                while !matches!(toks[i], Tok::Open("figcaption", _)) {
                    assert!(!matches!(toks[i], Tok::Close("figure")), "figure {id} has no caption");
                    i += 1;
                }
                i += 1;
                lines.push(format!("figure #{id}: {}", inline(&toks, &mut i, "figcaption")));
                while !matches!(toks[i], Tok::Close("figure")) {
                    i += 1;
                }
                i += 1;
            }
            Tok::Open("table", attrs) => table(&toks, &mut i, attrs, &mut lines),
            Tok::Open(list @ ("ul" | "ol"), attrs) => {
                lines.push(format!("list.{}", attr(attrs, "class").unwrap_or("")));
                loop {
                    match toks[i] {
                        Tok::Open("li", _) => {
                            i += 1;
                            let item = inline(&toks, &mut i, "li");
                            // Follows from the CPU clock, and is there only when the clock is known:
                            // a run's verdict, and the findings' rule-of-thumb sentences.
                            if !item.starts_with("rule of thumb:") && !item.starts_with("Rule of thumb, ") {
                                lines.push(format!("  - {item}"));
                            }
                        }
                        Tok::Close(name) if name == list => break,
                        Tok::Text(s) if s.trim().is_empty() => i += 1,
                        ref other => panic!("unexpected in a list: {other:?}"),
                    }
                }
                i += 1;
            }
            // Text outside the blocks above is still part of the page.
            Tok::Text(s) if !s.trim().is_empty() => lines.push(format!("text: {}", squash(&unescape(s)))),
            _ => {}
        }
    }
    lines.join("\n") + "\n"
}
