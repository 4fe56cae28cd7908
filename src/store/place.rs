//! Where the store lives.

use std::path::{Path, PathBuf};

/// Where the store lives: `--db`, else `$RTBENCH_DB`, else `$XDG_DATA_HOME/rtbench/rtbench.db`.
pub fn default_path(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os("RTBENCH_DB").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into())).join(".local/share"));
    data.join("rtbench").join("rtbench.db")
}
