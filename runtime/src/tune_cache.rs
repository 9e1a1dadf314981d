//! Choices measured on this machine and kept between processes: a
//! tab-separated file with one line per owner (a CPU or a device), key (a
//! shape class) and choice, under the user's cache folder. The CPU
//! backend's GEMM plans and the CubeCL backend's kernels keep what their
//! tuning measured this way, so a later process starts tuned.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The cache file: `$<var>` when set, else `$XDG_CACHE_HOME/blaze/<file>`,
/// else `$HOME/.cache/blaze/<file>`; `None` without any of them.
pub fn cache_path(var: &str, file: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|p| !p.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("blaze").join(file))
}

/// Whether the switch `$<var>` turns tuning off (`0` or `off`).
pub fn switched_off(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "0" || v.eq_ignore_ascii_case("off"))
}

/// `owner`'s choices in the cache file, by key (none without a file).
pub fn load(path: Option<&Path>, owner: &str) -> HashMap<String, String> {
    let Some(path) = path else { return HashMap::new() };
    let Ok(text) = std::fs::read_to_string(path) else { return HashMap::new() };
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let (o, k, v) = (parts.next()?, parts.next()?, parts.next()?);
            (o == owner).then(|| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// Appends one choice to the cache file, as one write of a whole line (so
/// processes appending at once do not mix their lines). A cache that
/// cannot be written costs a tuning in the next process, nothing more:
/// each `who` says so once on standard error.
pub fn store(path: &Path, owner: &str, key: &str, choice: &str, who: &'static str) {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        f.write_all(format!("{owner}\t{key}\t{choice}\n").as_bytes())
    };
    if let Err(e) = write() {
        static SAID: std::sync::Mutex<Vec<&str>> = std::sync::Mutex::new(Vec::new());
        let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
        if !said.contains(&who) {
            said.push(who);
            eprintln!("{who}: cannot write the tuning cache {}: {e}", path.display());
        }
    }
}

/// Removes `owner`'s lines from the cache file (a line another process
/// appends meanwhile may be lost: it costs that process's class a
/// tuning in the next process).
pub fn forget(path: &Path, owner: &str) -> std::io::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let kept: String = text.lines().filter(|l| l.split('\t').next() != Some(owner)).map(|l| format!("{l}\n")).collect();
    std::fs::write(path, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_round_trip_per_owner_and_are_forgotten() {
        let dir = std::env::temp_dir().join(format!("blaze-tune-cache-{}", std::process::id()));
        let path = dir.join("nested").join("cache.tsv");
        store(&path, "cpu-a", "m64n64k64", "plan 1", "test");
        store(&path, "cpu-b", "m64n64k64", "plan 2", "test");
        store(&path, "cpu-a", "m8n8k8", "plan 3", "test");
        let a = load(Some(&path), "cpu-a");
        assert_eq!(a.len(), 2);
        assert_eq!(a["m64n64k64"], "plan 1");
        assert_eq!(load(Some(&path), "cpu-b")["m64n64k64"], "plan 2");
        forget(&path, "cpu-a").unwrap();
        assert!(load(Some(&path), "cpu-a").is_empty());
        assert_eq!(load(Some(&path), "cpu-b").len(), 1);
        assert!(load(None, "cpu-b").is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
