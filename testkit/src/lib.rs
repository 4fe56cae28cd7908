//! `#[needs(...)]`: what a test needs from this machine, and which tier it belongs to.
//!
//! Checked when the test is compiled, as cargo's own `#[cargo_test(requires = …)]` does, so a
//! test that cannot run here is reported by the runner as *ignored, with its reason*, and counted
//! in its summary — never a plain pass. Under CI (`CI=true` when the tests are built, as `.ci/run`
//! sets it) a missing need fails the test instead, unless `tests/cannot-here.txt` lists it as
//! something this kind of machine cannot do.
//!
//! ```ignore
//! #[needs(root, btf, "chromium")]            // named checks and commands on PATH
//! #[needs(full = "boots two TCG guests", root, "qemu-system-x86_64")]
//! #[test]
//! fn …() {}
//! ```
//!
//! `full = "why"` puts the test in the full tier: `cargo test` lists it as ignored with that
//! reason, and its name gains the suffix `_full_tier`, which is how the full tier's command
//! (README: cargo-nextest's `full` profile, `--run-ignored only`) picks exactly these tests. A full
//! test whose need is missing keeps its own name, so the full tier never runs what cannot run here.
//!
//! What was found is fixed when the test binary is built: a tool installed afterwards is seen by
//! the next build that compiles the test again (cargo's attribute has the same limit). A change of
//! `CI` or of the list rebuilds the tests (of the list only once it exists: a build that found
//! none had nothing to read). `tests/skip_rule.rs` shows the whole rule on a crate of its own.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, TokenStream, TokenTree};
use std::path::Path;
use std::process::{Command, Stdio};

mod checks;

/// See the crate's documentation.
#[proc_macro_attribute]
pub fn needs(attr: TokenStream, item: TokenStream) -> TokenStream {
    let asked = match parse(attr) {
        Ok(asked) => asked,
        Err(e) => return error(&e),
    };
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let list_path = Path::new(&manifest).join("tests/cannot-here.txt");
    let list = std::fs::read_to_string(&list_path).unwrap_or_default();
    let on_ci = std::env::var("CI").is_ok_and(|v| v == "true");

    let missing: Vec<(String, String)> =
        asked.needs.iter().filter_map(|n| checks::missing(n, &manifest).map(|why| (n.name(), why))).collect();
    let mut out = TokenStream::new();
    // The expansion reads CI and the list: rustc records both, so cargo rebuilds when they change.
    out.extend(tracked(&list_path));
    if missing.is_empty() {
        out.extend(full_tier(&asked, item));
        return out;
    }
    let said: Vec<String> = missing.iter().map(|(_, why)| why.clone()).collect();
    let said = said.join("; ");
    let unlisted: Vec<&str> = missing.iter().map(|(n, _)| n.as_str()).filter(|n| !listed(&list, n)).collect();
    if on_ci && !unlisted.is_empty() {
        // CI installs everything the tests need (scripts/setup.sh): a missing need is a failure.
        let message = format!(
            "CI lacks what this test needs ({}), and tests/cannot-here.txt does not list it: {said}",
            unlisted.join(", ")
        );
        out.extend(attribute("allow(unreachable_code, unused_variables)"));
        out.extend(full_tier(&asked, prefix_body(item, &message)));
        return out;
    }
    let reason = if on_ci {
        format!("this kind of machine cannot (tests/cannot-here.txt): {said}")
    } else {
        format!("cannot run here: {said}")
    };
    out.extend(attribute(&format!("ignore = {}", Literal::string(&reason))));
    out.extend(item);
    out
}

/// What the attribute asked for.
struct Asked {
    needs: Vec<checks::Need>,
    full: Option<String>,
}

fn parse(attr: TokenStream) -> Result<Asked, String> {
    let mut asked = Asked { needs: Vec::new(), full: None };
    let tokens: Vec<TokenTree> = attr.into_iter().collect();
    for part in tokens.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ',')) {
        match part {
            [] => {}
            [TokenTree::Ident(i)] => asked.needs.push(checks::Need::named(&i.to_string())?),
            [TokenTree::Literal(l)] => asked.needs.push(checks::Need::Command(unquote(l)?)),
            [TokenTree::Ident(i), TokenTree::Punct(p), TokenTree::Literal(l)]
                if i.to_string() == "full" && p.as_char() == '=' =>
            {
                asked.full = Some(unquote(l)?)
            }
            other => {
                return Err(format!(
                    "needs: cannot read `{}`",
                    other.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" ")
                ))
            }
        }
    }
    Ok(asked)
}

fn unquote(l: &Literal) -> Result<String, String> {
    let s = l.to_string();
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .map(str::to_string)
        .ok_or(format!("needs: expected a string, got {s}"))
}

/// Whether `tests/cannot-here.txt` lists the need `name` (a line `name: why`).
fn listed(list: &str, name: &str) -> bool {
    list.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .any(|l| l.split(':').next().map(str::trim) == Some(name))
}

/// The test as it is, or for a full-tier test: ignored with its reason and named `…_full_tier`.
fn full_tier(asked: &Asked, item: TokenStream) -> TokenStream {
    let Some(why) = &asked.full else { return item };
    let mut out = attribute(&format!("ignore = {}", Literal::string(&format!("full tier: {why}"))));
    let mut after_fn = false;
    out.extend(item.into_iter().map(|t| match t {
        TokenTree::Ident(name) if after_fn => {
            after_fn = false;
            TokenTree::Ident(Ident::new(&format!("{name}_full_tier"), name.span()))
        }
        t => {
            after_fn = matches!(&t, TokenTree::Ident(i) if i.to_string() == "fn");
            t
        }
    }));
    out
}

fn attribute(inner: &str) -> TokenStream {
    let body: TokenStream = inner.parse().expect("a well-formed attribute");
    [TokenTree::Punct(Punct::new('#', Spacing::Alone)), TokenTree::Group(Group::new(Delimiter::Bracket, body))]
        .into_iter()
        .collect()
}

/// `const _: () = { option_env!("CI"); option_env!("RTBENCH_QEMU_USER"); include_str!(list) };`
/// — dependencies rustc records.
fn tracked(list: &Path) -> TokenStream {
    let include = if list.exists() {
        format!("let _ = include_str!({});", Literal::string(&list.display().to_string()))
    } else {
        String::new()
    };
    format!("const _: () = {{ let _ = option_env!(\"CI\"); let _ = option_env!(\"RTBENCH_QEMU_USER\"); {include} }};")
        .parse()
        .expect("well-formed")
}

/// The item with `panic!(message);` as its body's first statement.
fn prefix_body(item: TokenStream, message: &str) -> TokenStream {
    let mut tokens: Vec<TokenTree> = item.into_iter().collect();
    let Some(TokenTree::Group(body)) = tokens.last() else { return error("needs: expected a function") };
    let mut inner: TokenStream = format!("panic!({});", Literal::string(message)).parse().expect("well-formed");
    inner.extend(body.stream());
    let last = tokens.len() - 1;
    tokens[last] = TokenTree::Group(Group::new(Delimiter::Brace, inner));
    tokens.into_iter().collect()
}

fn error(message: &str) -> TokenStream {
    format!("compile_error!({});", Literal::string(message)).parse().expect("well-formed")
}

/// Whether `program` runs and exits 0 with `args`, quietly.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// `machine!(shared)` or `machine!(alone)`: a guard (an open, locked file) that keeps tests
/// which take the whole machine — FIFO hogs on every CPU, TCG guests, the host's preemption
/// model switched, system-wide cpusets, the load's cgroup — from running beside any other test
/// that measures. A test that measures holds it shared; one that takes the machine, alone.
///
/// A lock on a file, not a mutex, so it holds between the threads of `cargo test` and between
/// the processes of cargo-nextest alike, and across test binaries and checkouts on one machine.
/// A test takes it once: the same thread asking for it again would wait for itself.
#[proc_macro]
pub fn machine(input: TokenStream) -> TokenStream {
    let how = input.to_string();
    let lock = match how.trim() {
        "shared" => "lock_shared",
        "alone" => "lock",
        other => return error(&format!("machine!: `shared` or `alone`, not `{other}`")),
    };
    format!(
        r#"{{
            let path = ::std::env::temp_dir().join("rtbench-tests-machine.lock");
            let file = ::std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)
                .unwrap_or_else(|e| panic!("the tests' machine lock {{}}: {{e}}", path.display()));
            file.{lock}().unwrap_or_else(|e| panic!("the tests' machine lock {{}}: {{e}}", path.display()));
            file
        }}"#
    )
    .parse()
    .expect("well-formed")
}
