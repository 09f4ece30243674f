//! A file's name as every layer compares it: the checker's shared budgets
//! (DP107), the runtime's budget ledgers and the policy files. One function
//! each, so that `dpplan check` and `dpplan run` agree on which source a
//! plan reads.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute (against the current directory) and lexically
/// normalised (`.` and `..` folded), without touching the file system.
pub fn normalise(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` resolved by the file system where it exists
/// (`std::fs::canonicalize`: symbolic links followed, `..` after a link
/// taken as the operating system takes it when the file is opened), else
/// [`normalise`]d: two names of one file are one path.
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalise(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_and_its_target_are_one_path_and_a_missing_file_is_lexical() {
        let dir = std::env::temp_dir().join(format!("dpplan-paths-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("data.csv");
        std::fs::write(&file, "x\n").unwrap();
        #[cfg(unix)]
        {
            let alias = dir.join("alias.csv");
            let _ = std::fs::remove_file(&alias);
            std::os::unix::fs::symlink(&file, &alias).unwrap();
            assert_eq!(canonical(&alias), canonical(&file));
            // the negative control: lexically they differ
            assert_ne!(normalise(&alias), normalise(&file));
        }
        let missing = dir.join("sub/../missing.csv");
        assert_eq!(canonical(&missing), normalise(&dir.join("missing.csv")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
