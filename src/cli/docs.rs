//! Shell completions and man pages, rendered from the same clap definitions as `--help`, so
//! they cannot drift from the flags.

use std::io;

use crate::app::task::{ManConfig, ManPage};

/// `rtbench completions SHELL`: the completion script of `shell` for the whole command line.
pub fn completions(shell: clap_complete::Shell) -> String {
    // clap_complete offers hidden subcommands too; the internal ones are no word to complete.
    let cmd = super::command();
    let visible: Vec<clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
    let mut cmd = clap::Command::new("rtbench").version(env!("CARGO_PKG_VERSION")).subcommands(visible);
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rtbench", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// `rtbench __man DIR`: one page for rtbench and one for every subcommand a user can type
/// (`rtbench-study.1`, `rtbench-timer.1`, …); the hidden internal commands get none.
pub fn man_pages(dir: std::path::PathBuf) -> io::Result<ManConfig> {
    // Built once at the top so every subcommand knows its full name ("rtbench study").
    let mut cmd = super::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    render(&cmd, &mut pages)?;
    Ok(ManConfig { dir, pages })
}

fn render(cmd: &clap::Command, pages: &mut Vec<ManPage>) -> io::Result<()> {
    // Subcommands carry no version of their own: without this their footer would say "timer ".
    let source = format!("rtbench {}", env!("CARGO_PKG_VERSION"));
    let man = clap_mangen::Man::new(cmd.clone()).manual("rtbench manual").source(source);
    let mut roff = Vec::new();
    man.render(&mut roff)?;
    pages.push(ManPage { file: man.get_filename(), roff });
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        render(sub, pages)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_subcommand_has_a_page_and_no_hidden_one_does() {
        let pages = man_pages("unused".into()).unwrap().pages;
        let files: Vec<&str> = pages.iter().map(|p| p.file.as_str()).collect();
        for name in ["rtbench.1", "rtbench-study.1", "rtbench-compare.1", "rtbench-timer.1", "rtbench-completions.1"] {
            assert!(files.contains(&name), "{name} missing from {files:?}");
        }
        assert!(!files.iter().any(|f| f.contains("__") || f.contains("help")), "{files:?}");
        assert!(!files.contains(&"rtbench-synthetic.1"), "the test probe is hidden: {files:?}");
    }

    #[test]
    fn completions_name_the_probes_too() {
        let bash = completions(clap_complete::Shell::Bash);
        assert!(bash.contains("study") && bash.contains("pingpong"), "{bash}");
        assert!(!bash.contains("__man") && !bash.contains("synthetic"), "internal commands are not offered");
    }
}
