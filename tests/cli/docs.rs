//! Shell completions and man pages, as a shell and `man` read them.

use std::process::Command;

use crate::helpers::*;

/// The subcommands `rtbench --help` lists, `help` aside.
fn listed_commands(lab: &Lab) -> Vec<String> {
    let help = lab.ok(&["--help"]);
    let section = help.split("Commands:").nth(1).expect("--help lists commands");
    let section = section.split("\n\n").next().unwrap();
    section
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
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
