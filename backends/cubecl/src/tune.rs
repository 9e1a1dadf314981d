//! Autotuning, as Burn's tuner does it: an op with several kernels (the
//! cubek matmul strategies, the reductions, the convolution and its
//! gradients, average pooling) runs each candidate on its
//! first call for a shape class, timed on the device, and keeps the
//! fastest for that class on that device. Shape classes round every size
//! up to a power of two, so one tuning serves the shapes around it.
//!
//! Choices are cached in memory and in a file, one line per device and
//! shape class, so a later process starts tuned:
//! `$BLAZE_CUBECL_TUNE_CACHE`, else `$XDG_CACHE_HOME/blaze/cubecl-autotune.tsv`,
//! else `$HOME/.cache/blaze/cubecl-autotune.tsv` ([`cache_path`]). Delete
//! the file, or call [`CubeDevice::clear_autotune_cache`](crate::CubeDevice::clear_autotune_cache),
//! to tune again. `BLAZE_CUBECL_AUTOTUNE=0` (or `CubeOptions::autotune`)
//! turns tuning off: each op then takes its fixed choice (checked against
//! its reference kernel), a rule per op.

//!
//! This file keeps the choices (`Tuner`, one per device); running and
//! timing the candidates is the backend's (`backend/tune.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use blaze_runtime::tune_cache;

/// The choices made on one device, by shape class.
pub(crate) struct Tuner {
    /// Whether new shape classes are measured, or take the first
    /// candidate that runs.
    measure: bool,
    /// The cache file, if any.
    path: Option<PathBuf>,
    /// Shape class to the chosen candidate's name; `None` until the cache
    /// file has been read for this device.
    choices: Mutex<Option<HashMap<String, String>>>,
}

/// Where the tuning choices of every device are kept.
pub fn cache_path() -> Option<PathBuf> {
    tune_cache::cache_path("BLAZE_CUBECL_TUNE_CACHE", "cubecl-autotune.tsv")
}

/// `n` rounded up to a power of two: the shape class of a size.
pub(crate) fn class(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// Whether tuning is on unless the options say (`BLAZE_CUBECL_AUTOTUNE`).
pub(crate) fn tuning_on() -> bool {
    !tune_cache::switched_off("BLAZE_CUBECL_AUTOTUNE")
}

impl Tuner {
    pub(crate) fn new(measure: bool, path: Option<PathBuf>) -> Self {
        Tuner { measure, path, choices: Mutex::new(None) }
    }

    /// Whether new shape classes are measured.
    pub(crate) fn measures(&self) -> bool {
        self.measure
    }

    /// The choices a device has made or loaded, by shape class; `device`
    /// gives its identity, asked for only when the cache file is read or
    /// written.
    pub(crate) fn choices(&self, device: &dyn Fn() -> String) -> Vec<(String, String)> {
        let mut slot = self.choices.lock().unwrap_or_else(|p| p.into_inner());
        let map = slot.get_or_insert_with(|| tune_cache::load(self.path.as_deref(), &device()));
        let mut all: Vec<(String, String)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        all.sort();
        all
    }

    pub(crate) fn choice(&self, device: &dyn Fn() -> String, key: &str) -> Option<String> {
        let mut slot = self.choices.lock().unwrap_or_else(|p| p.into_inner());
        let map = slot.get_or_insert_with(|| tune_cache::load(self.path.as_deref(), &device()));
        map.get(key).cloned()
    }

    /// Keeps `name` for `key` on `device`, and in the cache file when it
    /// was measured.
    pub(crate) fn remember(&self, device: &dyn Fn() -> String, key: &str, name: &str, measured: bool) {
        let mut slot = self.choices.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert_with(HashMap::new).insert(key.to_owned(), name.to_owned());
        drop(slot);
        if measured && let Some(path) = &self.path {
            tune_cache::store(path, &device(), key, name, "blaze-cubecl");
        }
    }

    /// Forgets every choice made on `device`, in memory and in the cache
    /// file.
    pub(crate) fn clear(&self, device: &dyn Fn() -> String) -> std::io::Result<()> {
        *self.choices.lock().unwrap_or_else(|p| p.into_inner()) = Some(HashMap::new());
        match &self.path {
            Some(path) => tune_cache::forget(path, &device()),
            None => Ok(()),
        }
    }
}
