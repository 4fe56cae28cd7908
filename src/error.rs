//! Errors a user can fix: each names what is wrong and what is accepted, and exits with 2.

/// Bad input: a flag value, a file, a database. Everything else is an `anyhow` error (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{0}")]
    Invalid(String),
    #[error("database '{path}': {reason}")]
    Database { path: String, reason: String },
    #[error("cannot write '{path}': {reason}")]
    Unwritable { path: String, reason: String },
    #[error("sample log '{path}' {reason}")]
    SampleLog { path: String, reason: String },
    #[error("no run with id {0} in the store (see `rtbench runs`)")]
    NoSuchRun(i64),
}

/// Shorthand for `InputError::Invalid(format!(...))` as an `anyhow::Error`.
#[macro_export]
macro_rules! invalid {
    ($($arg:tt)*) => { anyhow::Error::from($crate::error::InputError::Invalid(format!($($arg)*))) };
}

/// Exit code for an error chain: 2 for bad input anywhere in the chain, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err.chain().any(|e| e.downcast_ref::<InputError>().is_some()) {
        2
    } else {
        1
    }
}
