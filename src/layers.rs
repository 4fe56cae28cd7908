//! The layering the crate promises, checked on its source: `unsafe` only in `sys`, every forked
//! child's code in `sys` behind an `unsafe fn`, `sys` at the bottom, the model on `stats` and
//! `units` alone, no test hooks, one module style, no two top-level modules importing each
//! other, directly or through others, and every top-level module in one of a few wings
//! ([`WINGS`]: base, host, data, analysis, then measuring and presentation side by side, and
//! the face on top) importing only its own wing and those below it.
//! The compiler's `deny(unsafe_code)` can be lifted by one `allow`; these cannot.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Spelled in two halves, so this file does not match its own scans.
const UNSAFE: &str = concat!("un", "safe");
const FORK_CHILD_CALL: &str = concat!("fork", "_child(");

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every .rs file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

/// The code of `text`: each line up to its `//` comment (doc comments included).
fn code(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The identifiers of `text`, in order.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

/// The top-level modules `text` names as `crate::x` or `crate::{x, y::z}`.
fn crate_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            out.extend(group.split(',').filter_map(|p| words(p).next()).map(str::to_string));
        } else {
            out.extend(words(rest).next().map(str::to_string));
        }
    }
    out
}

#[test]
fn unsafe_code_appears_only_in_sys() {
    let sys = src().join("sys");
    let found: Vec<String> = sources(&src())
        .into_iter()
        .filter(|(path, _)| !path.starts_with(&sys))
        .filter(|(_, text)| words(&code(text)).any(|w| w == UNSAFE))
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(found.is_empty(), "`{UNSAFE}` outside src/sys: {found:?}");
}

#[test]
fn forking_is_an_unsafe_fn_called_only_by_the_child_tasks_of_sys() {
    let proc = std::fs::read_to_string(src().join("sys/proc.rs")).unwrap();
    let declared = format!("{UNSAFE} fn {FORK_CHILD_CALL}");
    assert!(code(&proc).contains(&declared), "fork_child is declared `{UNSAFE} fn`");
    let mut callers: Vec<String> = sources(&src())
        .into_iter()
        .filter(|(_, text)| code(text).contains(FORK_CHILD_CALL))
        .map(|(path, _)| path.strip_prefix(src()).unwrap().display().to_string())
        .collect();
    callers.sort();
    assert_eq!(callers, ["sys/child.rs", "sys/proc.rs"], "where fork_child is declared and called");
}

/// Which files under `dir` name which other top-level modules than `allowed`.
fn imports_beyond(dir: &str, allowed: &[&str]) -> Vec<String> {
    sources(&src().join(dir))
        .into_iter()
        .flat_map(|(path, text)| {
            let name = path.strip_prefix(src()).unwrap().display().to_string();
            crate_modules(&code(&text))
                .into_iter()
                .filter(|m| !allowed.contains(&m.as_str()))
                .map(move |m| format!("{name}: crate::{m}"))
        })
        .collect()
}

#[test]
fn the_model_depends_on_stats_and_units_only() {
    let found = imports_beyond("model", &["model", "stats", "units"]);
    assert!(found.is_empty(), "the model imports {found:?}");
}

#[test]
fn sys_depends_on_nothing_else_of_the_crate() {
    let found = imports_beyond("sys", &["sys"]);
    assert!(found.is_empty(), "sys imports {found:?}");
}

#[test]
fn production_code_has_no_test_hooks() {
    // A hook such as a variable that makes `rtbench load` panic is a way to break a user's run;
    // tests provoke what they need through real inputs.
    let hook = concat!("RTBENCH", "_TEST");
    let found: Vec<String> = sources(&src())
        .into_iter()
        .filter(|(_, text)| code(text).contains(hook))
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(found.is_empty(), "{hook}_* read in {found:?}");
}

/// One module style: a module with submodules is a folder with its `mod.rs`, never `foo.rs`
/// beside a `foo/`.
#[test]
fn a_module_with_submodules_is_a_folder_with_its_mod_rs() {
    let pairs: Vec<String> = sources(&src())
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| path.file_name().is_some_and(|n| n != "mod.rs") && path.with_extension("").is_dir())
        .map(|path| path.strip_prefix(src()).unwrap().display().to_string())
        .collect();
    assert!(pairs.is_empty(), "beside a folder of the same name: {pairs:?}");
    assert!(src().join("config/mod.rs").is_file() && src().join("runner/mod.rs").is_file(), "the walk sees modules");
}

#[test]
fn crate_paths_are_read_in_both_forms() {
    let text = "use crate::model::Run;\nuse crate::{stats::Stats, units};\nlet x = crate::sysinfo::read(p);";
    assert_eq!(crate_modules(text), ["model", "stats", "units", "sysinfo"]);
    let commented = format!("let a = 1; // {UNSAFE}");
    assert_eq!(words(&code(&commented)).filter(|w| *w == UNSAFE).count(), 0);
    assert_eq!(words(&format!("{UNSAFE} {{ f() }}")).filter(|w| *w == UNSAFE).count(), 1);
}

/// Which top-level module imports which, from the source under `src`.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut g = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib" || name == "main" || name == "layers" {
            continue;
        }
        let texts =
            if path.is_dir() { sources(&path) } else { vec![(path.clone(), std::fs::read_to_string(&path).unwrap())] };
        let mut deps: BTreeSet<String> = texts.iter().flat_map(|(_, t)| crate_modules(&code(t))).collect();
        deps.remove(&name);
        g.insert(name, deps);
    }
    g
}

/// A cycle through `from`, if any: the modules on it, in order.
fn cycle_through(g: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in g.get(&at).into_iter().flatten() {
            if next == from {
                return Some(path.iter().cloned().chain([from.to_string()]).collect());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), path.iter().cloned().chain([next.clone()]).collect()));
            }
        }
    }
    None
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let g = graph(&src());
    assert!(g.contains_key("runner") && g["runner"].contains("restore"), "the graph is read: {g:?}");
    let cycles: Vec<String> = g.keys().filter_map(|m| cycle_through(&g, m)).map(|c| c.join(" -> ")).collect();
    assert!(cycles.is_empty(), "import cycles among top-level modules:\n{}", cycles.join("\n"));
}

#[test]
fn a_cycle_is_found_where_there_is_one() {
    let g: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
            .collect();
    assert_eq!(cycle_through(&g, "a").unwrap(), ["a", "b", "c", "a"]);
    assert_eq!(cycle_through(&g, "d"), None, "d leads into a cycle but is not on one");
}

/// The wings the top-level modules stand in, lowest first: each with its modules and the wings
/// it may import besides its own. Measuring and presentation stand side by side: neither imports
/// the other, and the face (the command line and what runs its commands) joins them. `config`
/// (the validated plan of a run) stands with the measuring side that executes it; the settings
/// of the other commands are the face's (`app::task`).
const WINGS: &[(&str, &[&str], &[&str])] = &[
    // The vocabulary every wing speaks: stored types, statistics, units, errors.
    ("base", &["model", "stats", "units", "error", "rng", "fasthash", "par", "timefmt"], &[]),
    // This machine: system calls, what it is, what rtbench changes on it and puts back, tracing.
    ("host", &["sys", "sysinfo", "restore", "session", "shield", "trace", "audit", "vm"], &["base"]),
    // Where runs are kept and how outside data comes in: the store, the sample log, imports,
    // the parsers of what a user types.
    ("data", &["store", "import", "parse"], &["host", "base"]),
    // What is computed from stored runs and sample logs: extreme values, a log's statistics.
    ("analysis", &["evt", "analyze"], &["data", "host", "base"]),
    (
        "measuring",
        &["probe", "instrument", "recorder", "runner", "config", "load", "net", "sysbench", "watch"],
        &["analysis", "data", "host", "base"],
    ),
    // The report reads stored runs and what `app` tells it of the probes and operations.
    ("presentation", &["report"], &["analysis", "data", "base"]),
    ("face", &["cli", "app"], &["presentation", "measuring", "analysis", "data", "host", "base"]),
];

/// Each import of `g` a wing does not allow, and each module in no wing or in two.
fn wing_violations(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let wing_of = |m: &str| -> Vec<&str> { WINGS.iter().filter(|(_, ms, _)| ms.contains(&m)).map(|w| w.0).collect() };
    let mut found = Vec::new();
    for (module, deps) in g {
        let [wing] = wing_of(module)[..] else {
            found.push(format!("{module} stands in {:?}: one wing each", wing_of(module)));
            continue;
        };
        let allowed = WINGS.iter().find(|w| w.0 == wing).unwrap().2;
        // A name that is no module (`crate::invalid!`, a macro) is no arrow between wings.
        for dep in deps.iter().filter(|d| g.contains_key(*d)) {
            let [to] = wing_of(dep)[..] else { continue };
            if to != wing && !allowed.contains(&to) {
                found.push(format!("{module} ({wing}) imports {dep} ({to})"));
            }
        }
    }
    found
}

#[test]
fn every_module_stands_in_one_wing_and_imports_only_the_wings_below_it() {
    let g = graph(&src());
    assert!(g.len() >= 30 && g["report"].contains("store"), "the graph is read: {g:?}");
    let found = wing_violations(&g);
    assert!(found.is_empty(), "against the wings (layers.rs WINGS):\n{}", found.join("\n"));
}

#[test]
fn an_arrow_up_and_a_module_in_no_wing_are_found() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("report", vec!["sysbench", "store", "invalid"]),
        ("store", vec!["sys"]),
        ("sys", vec![]),
        ("sysbench", vec![]),
        ("newcomer", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        wing_violations(&g),
        ["newcomer stands in []: one wing each", "report (presentation) imports sysbench (measuring)"]
    );
}

/// Source files stay short enough to read whole.
#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = sources(&src())
        .into_iter()
        .map(|(path, text)| (path.strip_prefix(src()).unwrap().display().to_string(), text.lines().count()))
        .filter(|(_, lines)| *lines > 600)
        .map(|(path, lines)| format!("{path}: {lines} lines"))
        .collect();
    assert!(long.is_empty(), "{long:?}");
}

/// Functions that only list rows (sysbench's operations of one file): a table, not logic.
const TABLES: &[(&str, &str)] = &[("sysbench/memfile.rs", "ops")];

/// Each function of `text` with a body: its name, first line (1-based) and length in lines, from
/// its signature to the brace that closes it at the signature's indentation (rustfmt's layout).
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let after = ["pub(crate) ", "pub(super) ", "pub ", "const ", concat!("un", "safe "), "async "]
            .iter()
            .fold(body, |rest, word| rest.strip_prefix(word).unwrap_or(rest));
        let Some(name) = after.strip_prefix("fn ") else { continue };
        let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // The signature ends at `{` (a body), `;` (none) or `{}` (an empty one).
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || l.ends_with('}')
        }) else {
            continue;
        };
        if !lines[open].trim_end().ends_with('{') {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&j| lines[j] == close) {
            found.push((name, i + 1, end - i + 1));
        }
    }
    found
}

#[test]
fn no_function_is_over_80_lines_tables_aside() {
    let (mut long, mut tables) = (Vec::new(), 0);
    for (path, text) in sources(&src()) {
        let file = path.strip_prefix(src()).unwrap().display().to_string();
        for (name, line, length) in functions(&text) {
            match (length > 80, TABLES.contains(&(file.as_str(), name.as_str()))) {
                (true, true) => tables += 1,
                (true, false) => long.push(format!("{file}:{line} {name}: {length} lines")),
                _ => {}
            }
        }
    }
    assert!(long.is_empty(), "{long:?}");
    assert_eq!(tables, TABLES.len(), "each table listed is still one, and over 80 lines");
}

#[test]
fn functions_are_measured_from_signature_to_closing_brace() {
    let text = "pub fn a(\n    x: u8,\n) -> u8 {\n    x\n}\n\nimpl T {\n    fn b(&self) {}\n    pub(crate) fn c(&self) {\n        if true {\n        }\n    }\n}\ntrait U {\n    fn d(&self);\n}\n";
    assert_eq!(functions(text), [("a".to_string(), 1, 5), ("c".to_string(), 9, 4)]);
}
