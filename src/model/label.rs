//! What a label may be. A label names what is compared (a kernel, a configuration): every run
//! is stored under one, and a report, a comparison and a gate select runs by it. A label the
//! report cannot select or show is a run lost, so every label that is stored is checked here,
//! whichever command takes it, derives it or brings it from another store (issue 40: `timer
//! --label ''` stored a run no `report --label` could select).

/// The longest label, in characters: a kernel release (`uname -r`, the default label) is at
/// most 64 (the kernel's `__NEW_UTS_LEN`), and a label this long beside its load ("· load
/// paper") still fits inside the legend of the report's percentile figures.
pub const LABEL_MAX_CHARS: usize = 64;

/// Why a label cannot be stored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelFault {
    #[error("a label cannot be empty: it names the runs a report selects")]
    Empty,
    #[error("a label cannot be only whitespace: it names the runs a report selects")]
    Blank,
    #[error("a label cannot hold a control character (it holds {0:?})")]
    Control(char),
    #[error("a label is at most {LABEL_MAX_CHARS} characters, what the report's figures can show (this one has {0})")]
    TooLong(usize),
}

/// Whether `label` can be stored: not empty, not only whitespace, no control character, at
/// most [`LABEL_MAX_CHARS`] characters.
pub fn check_label(label: &str) -> Result<(), LabelFault> {
    check_label_filter(label)?;
    if let Some(c) = label.chars().find(|c| c.is_control()) {
        return Err(LabelFault::Control(c));
    }
    match label.chars().count() {
        n if n > LABEL_MAX_CHARS => Err(LabelFault::TooLong(n)),
        _ => Ok(()),
    }
}

/// Whether `label` can select stored runs (`report --label`, `compare`, a `--baseline`): not
/// empty and not only whitespace, the slip of an unset shell variable. The other rules are not
/// applied, so runs stored before them stay selectable by their label.
pub fn check_label_filter(label: &str) -> Result<(), LabelFault> {
    if label.is_empty() {
        return Err(LabelFault::Empty);
    }
    if label.trim().is_empty() {
        return Err(LabelFault::Blank);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_refused_when_empty_blank_controlled_or_too_long() {
        assert_eq!(check_label(""), Err(LabelFault::Empty));
        assert_eq!(check_label(" \t "), Err(LabelFault::Blank));
        assert_eq!(check_label("\u{3000}"), Err(LabelFault::Blank), "an ideographic space is whitespace too");
        assert_eq!(check_label("6.1\n"), Err(LabelFault::Control('\n')));
        assert_eq!(check_label("a\u{1b}[31mb"), Err(LabelFault::Control('\u{1b}')));
        assert_eq!(check_label("a\u{85}b"), Err(LabelFault::Control('\u{85}')), "a C1 control");
        let long = "x".repeat(LABEL_MAX_CHARS + 1);
        assert_eq!(check_label(&long), Err(LabelFault::TooLong(LABEL_MAX_CHARS + 1)));
    }

    #[test]
    fn lab_labels_and_the_longest_kernel_release_are_kept() {
        for ok in ["rack1-host07/6.1.0-56-rt-amd64", "host/kernel/2026-11-26", "6.1 preempt=full", "Ядро·RT", "a"]
        {
            assert_eq!(check_label(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_label(&"x".repeat(LABEL_MAX_CHARS)), Ok(()));
        assert_eq!(check_label(&"é".repeat(LABEL_MAX_CHARS)), Ok(()), "characters are counted, not bytes");
    }

    #[test]
    fn a_filter_is_refused_only_when_it_could_select_nothing_typed() {
        assert_eq!(check_label_filter(""), Err(LabelFault::Empty));
        assert_eq!(check_label_filter("  "), Err(LabelFault::Blank));
        assert_eq!(check_label_filter(&"x".repeat(LABEL_MAX_CHARS + 5)), Ok(()), "an older, longer label");
    }
}
