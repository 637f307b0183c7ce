//! The time model's fingerprint: which model made a record of predictions. The chapters print
//! predictions from such records; a test compares the fingerprint each record carries with the
//! model in the tree, so that a change to the model cannot leave the chapters' figures behind.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The folder whose files are the model: ptx_model's sources (the replay, the terms, the GPUs'
/// profiles and their constants).
pub const MODEL_SOURCES: &str = "ptx_model/src";

/// How a record's header names the model that made it: `model <fingerprint>`.
pub const HEADER_WORD: &str = "model ";

/// FNV-1a, 64 bits, over each file under `root`/[`MODEL_SOURCES`] in path order: its path
/// from that folder, a zero byte, its bytes, a zero byte. Sixteen hex digits.
pub fn model_fingerprint(root: &Path) -> Result<String> {
    let dir = root.join(MODEL_SOURCES);
    let mut files = Vec::new();
    collect(&dir, &mut files).with_context(|| format!("reading {}", dir.display()))?;
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in &files {
        let name = file.strip_prefix(&dir).expect("under the folder").to_string_lossy().replace('\\', "/");
        eat(name.as_bytes());
        eat(&[0]);
        eat(&std::fs::read(file).with_context(|| format!("reading {}", file.display()))?);
        eat(&[0]);
    }
    Ok(format!("{hash:016x}"))
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// The fingerprint a record's header names (`model <fingerprint>` in a line that opens with
/// `#`), if any.
pub fn named_in(record: &str) -> Option<&str> {
    record.lines().take_while(|l| l.starts_with('#')).find_map(|l| {
        let at = l.find(HEADER_WORD)?;
        let rest = &l[at + HEADER_WORD.len()..];
        let hex = rest.split(|c: char| !c.is_ascii_hexdigit()).next()?;
        (hex.len() == 16).then_some(hex)
    })
}

#[cfg(test)]
mod tests {
    use super::{model_fingerprint, named_in};

    #[test]
    fn a_change_to_any_file_of_the_model_changes_its_fingerprint() {
        let dir = std::env::temp_dir().join(format!("fingerprint-{}", std::process::id()));
        let src = dir.join(super::MODEL_SOURCES);
        std::fs::create_dir_all(src.join("profile")).unwrap();
        std::fs::write(src.join("lib.rs"), "pub const A: u32 = 1;").unwrap();
        std::fs::write(src.join("profile/h200.rs"), "pub const SMS: u32 = 132;").unwrap();
        let before = model_fingerprint(&dir).unwrap();
        assert_eq!(before, model_fingerprint(&dir).unwrap());
        std::fs::write(src.join("profile/h200.rs"), "pub const SMS: u32 = 114;").unwrap();
        let after = model_fingerprint(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_ne!(before, after);
    }

    #[test]
    fn the_header_names_the_model() {
        let record = "# 2026-11-29, 14 cores, model 0123456789abcdef, commit abc\n== step\n";
        assert_eq!(named_in(record), Some("0123456789abcdef"));
        assert_eq!(named_in("# no model here\n"), None);
        assert_eq!(named_in("== step\n# model 0123456789abcdef\n"), None);
    }
}
