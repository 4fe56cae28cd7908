//! Shell completions and man pages, as a shell and `man` read them; the README and docs/ as a
//! reader follows them.

use std::process::Command;

use crate::helpers::*;

/// The subcommands `rtbench --help` lists, `help` aside.
fn listed_commands(lab: &Lab) -> Vec<String> {
    listed_commands_and_help(lab).into_iter().map(|(name, _)| name).collect()
}

/// Each subcommand `rtbench --help` lists, `help` aside, with the line it says of it.
fn listed_commands_and_help(lab: &Lab) -> Vec<(String, String)> {
    let help = lab.ok(&["--help"]);
    let section = help.split("Commands:").nth(1).expect("--help lists commands");
    let section = section.split("\n\n").next().unwrap();
    section
        .lines()
        .filter_map(|l| l.trim().split_once(' ').map(|(name, said)| (name.to_string(), said.trim().to_string())))
        .filter(|(name, _)| name != "help")
        .collect()
}

/// What bash's completion function offers for `words`, the last word being completed, with
/// the script `rtbench completions bash` printed sourced first.
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    // `complete -p` fails unless the script registered a function for rtbench; that function is
    // called as bash calls it: COMP_WORDS/COMP_CWORD set, then (command, word, previous word).
    let program = format!(
        "source '{}' || exit 3; spec=$(complete -p rtbench) || exit 4; fn=${{spec##*-F }}; fn=${{fn%% *}}; \
         COMP_WORDS=({}); COMP_CWORD={cword}; COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
         \"$fn\" rtbench '{}' '{prev}' || exit 5; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words[cword]
    );
    let out = Command::new("bash").args(["--norc", "--noprofile", "-c", &program]).output().expect("bash runs");
    assert_eq!(out.status.code(), Some(0), "bash: {}", text(&out.stderr));
    text(&out.stdout).lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[test]
fn the_bash_script_completes_commands_and_their_flags() {
    let lab = Lab::new();
    let script = lab.path("rtbench.bash");
    std::fs::write(&script, lab.ok(&["completions", "bash"])).unwrap();
    assert_eq!(bash_completes(&script, &["rtbench", "st"]), ["study"]);
    assert_eq!(bash_completes(&script, &["rtbench", "compare", "--fail"]), ["--fail-if"]);
    assert_eq!(bash_completes(&script, &["rtbench", "timer", "--breach-s"]), ["--breach-stop"]);
    // The internal commands are no word a user types.
    assert_eq!(bash_completes(&script, &["rtbench", "__"]), Vec::<String>::new());
    let all = bash_completes(&script, &["rtbench", ""]);
    for name in listed_commands(&lab) {
        assert!(all.contains(&name), "'rtbench <TAB>' lacks {name}: {all:?}");
    }
}

#[test]
fn zsh_and_fish_scripts_name_rtbench_and_an_unknown_shell_is_refused() {
    let lab = Lab::new();
    assert!(lab.ok(&["completions", "zsh"]).starts_with("#compdef rtbench"));
    let fish = lab.ok(&["completions", "fish"]);
    assert!(fish.contains("complete -c rtbench") && fish.contains("study"), "{fish}");
    let out = lab.run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("tcsh"), "{}", text(&out.stderr));
}

#[test]
fn every_command_has_a_man_page_that_man_reads() {
    let lab = Lab::new();
    let dir = lab.path("man");
    lab.ok(&["__man", dir.to_str().unwrap()]);
    let mut pages = vec!["rtbench".to_string()];
    pages.extend(listed_commands(&lab).iter().map(|c| format!("rtbench-{c}")));
    assert!(pages.len() > 15 && pages.contains(&"rtbench-timer".to_string()), "{pages:?}");
    for page in &pages {
        let file = dir.join(format!("{page}.1"));
        let roff = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(roff.contains(&format!(".TH {page} 1")), "{page}: no roff header");
        let out = Command::new("man")
            .arg("-l")
            .arg(&file)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .expect("man runs (scripts/setup.sh installs man-db)");
        assert_eq!(out.status.code(), Some(0), "man -l {page}: {}", text(&out.stderr));
        assert!(text(&out.stderr).is_empty(), "man -l {page} warns: {}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(shown.contains("NAME") && shown.contains("SYNOPSIS"), "{page}:\n{shown}");
        // man justifies lines, so words are compared, not spacing.
        let words: Vec<&str> = shown.split_whitespace().collect();
        let mut want = vec!["SYNOPSIS"];
        want.extend(page.splitn(2, '-'));
        assert!(words.windows(want.len()).any(|w| w == want), "{page}: the synopsis names the command:\n{shown}");
    }
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), pages.len(), "one page per listed command, no other: {names:?}");
}

/// The repository's own file `rel`.
fn repo_file(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn the_readme_lists_every_command_as_its_help_does_each_linked_to_its_man_page() {
    let want = listed_commands_and_help(&Lab::new());
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let listed: Vec<(String, String)> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| [`"))
        .map(|row| {
            let (name, rest) = row.split_once('`').unwrap();
            let link = format!("](docs/man/rtbench-{name}.1) | ");
            let about = rest.strip_prefix(&link).unwrap_or_else(|| panic!("{name}: no link to its man page: {row}"));
            (name.to_string(), about.strip_suffix(" |").unwrap_or(about).to_string())
        })
        .collect();
    assert_eq!(listed, want, "README's command lines, against `rtbench --help`");
    assert!(readme.lines().count() <= 150, "README reads in two minutes: {} lines", readme.lines().count());
}

#[test]
fn the_man_pages_in_docs_are_those_rtbench_writes() {
    let lab = Lab::new();
    let dir = lab.path("man");
    lab.ok(&["__man", dir.to_str().unwrap()]);
    let names = |d: &std::path::Path| {
        let mut n: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        n.sort();
        n
    };
    let committed = repo_file("docs/man");
    assert_eq!(names(&committed), names(&dir), "after a change of commands: rtbench __man docs/man");
    for page in names(&dir) {
        assert_eq!(
            std::fs::read_to_string(committed.join(&page)).unwrap(),
            std::fs::read_to_string(dir.join(&page)).unwrap(),
            "docs/man/{page} is not what rtbench writes now: rtbench __man docs/man"
        );
    }
}

#[test]
fn every_link_of_the_readme_and_docs_to_a_file_of_the_repository_lands_on_one() {
    let mut docs = vec![repo_file("README.md")];
    docs.extend(
        std::fs::read_dir(repo_file("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    let mut checked = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for target in text.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
            let path = target.split('#').next().unwrap();
            if path.is_empty() || path.contains("://") {
                continue;
            }
            let file = doc.parent().unwrap().join(path);
            assert!(file.exists(), "{}: the link to {target} lands nowhere", doc.display());
            checked += 1;
        }
    }
    assert!(checked >= 25, "the README's man pages and docs are links: {checked} checked");
}
