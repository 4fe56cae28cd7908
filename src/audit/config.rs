//! The running kernel's build configuration, from /proc/config.gz or /boot/config-RELEASE.

use std::io::Read;

pub struct KernelConfig {
    /// Where it was read; `None` when neither source exists here.
    pub source: Option<String>,
    text: String,
}

impl KernelConfig {
    pub fn read() -> KernelConfig {
        let mut text = String::new();
        if let Ok(f) = std::fs::File::open("/proc/config.gz") {
            if flate2::read::GzDecoder::new(f).read_to_string(&mut text).is_ok() {
                return KernelConfig { source: Some("/proc/config.gz".into()), text };
            }
        }
        let boot = format!("/boot/config-{}", crate::sysinfo::kernel_release());
        match std::fs::read_to_string(&boot) {
            Ok(text) => KernelConfig { source: Some(boot), text },
            Err(_) => KernelConfig { source: None, text: String::new() },
        }
    }

    #[cfg(test)]
    pub fn from_text(text: &str) -> KernelConfig {
        KernelConfig { source: Some("test".into()), text: text.into() }
    }

    /// `y`, `m`, a number or a string for a set option; `None` when unset or unknown.
    pub fn get(&self, option: &str) -> Option<&str> {
        self.text.lines().find_map(|l| l.strip_prefix(option)?.strip_prefix('=')).map(|v| v.trim_matches('"'))
    }

    pub fn enabled(&self, option: &str) -> bool {
        matches!(self.get(option), Some("y") | Some("m"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_as_set_unset_or_valued() {
        let c = KernelConfig::from_text(
            "CONFIG_HZ=1000\nCONFIG_HZ_1000=y\n# CONFIG_KASAN is not set\nCONFIG_LOCALVERSION=\"-rt\"\n",
        );
        assert_eq!(c.get("CONFIG_HZ"), Some("1000"));
        assert!(c.enabled("CONFIG_HZ_1000"));
        assert!(!c.enabled("CONFIG_KASAN"));
        assert_eq!(c.get("CONFIG_LOCALVERSION"), Some("-rt"));
        assert_eq!(c.get("CONFIG_H"), None, "a prefix of another option is not it");
    }
}
