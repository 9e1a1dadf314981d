//! Datasets and batching: the [`Dataset`] trait, an in-memory dataset, a
//! [`DataLoader`] with seeded shuffling, drop-last and background
//! prefetching, normalisation, splits and per-feature scaling fitted on
//! the training split ([`prepare`]), and readers: CSV tables ([`csv`]),
//! NumPy arrays ([`npy`]), image folders (`images`, with the `images`
//! feature), text for language models ([`text`]) and MNIST IDX files
//! ([`mnist`]).
#![deny(missing_docs)]

pub mod csv;
#[cfg(feature = "images")]
pub mod images;
mod loader;
pub mod mnist;
pub mod npy;
pub mod prepare;
pub mod text;

pub use csv::{Column, CsvOptions, CsvTable, Schema, read_csv};
#[cfg(feature = "images")]
pub use images::{Augment, ColorMode, ImageFolder};
pub use loader::{Batches, DataLoader, Loader, ShardTail};
pub use npy::{read_npy, read_npz};
pub use prepare::{Fold, Scaler, ScalerKind, k_fold, train_val_split};
pub use text::{TextDataset, Vocab, read_text};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use blaze_runtime::error::Error;
use blaze_runtime::rng::Rng;
use blaze_runtime::{DataVec, TensorData};

/// The most a deflate stream expands (about 1032:1 at best compression):
/// what a compressed file can claim to hold before the claim is refused.
pub(crate) const MAX_DEFLATE_RATIO: u64 = 1032;

/// What can go wrong reading a dataset: the file and the problem.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be opened or read (or is not valid gzip).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The contents are not what the reader takes (with the row, column,
    /// array or image where it can tell).
    #[error("{path}: {problem}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A value is NaN or infinite: one such input turns every loss,
    /// gradient and scaler statistic it reaches into NaN, so readers and
    /// [`Scaler`] refuse it where it is, not many steps later.
    #[error("{}sample {sample}, {part} {index}: {value} is not a finite number", in_file(.path.as_deref()))]
    NonFinite {
        /// The file the dataset was read from (`None` for one built in
        /// memory).
        path: Option<PathBuf>,
        /// The sample (0-based).
        sample: usize,
        /// Whether the value is an input or a target.
        part: Part,
        /// The value's place among the sample's inputs or targets,
        /// flattened in row-major order (0-based): the column of a table.
        index: usize,
        /// The value.
        value: f32,
    },
    /// A dataset without samples was given to what needs some.
    #[error("{what}: the dataset has no samples to fit on")]
    NoSamples {
        /// What needed them, such as `Scaler::standardize`.
        what: &'static str,
    },
    /// A train/validation split that would leave a part without samples
    /// (or a fraction outside `(0, 1)`).
    #[error(
        "a validation fraction of {fraction} of {samples} samples leaves no training or no validation sample \
         (it must be in (0, 1) and leave each part one)"
    )]
    EmptySplit {
        /// The validation fraction asked for.
        fraction: f64,
        /// The samples there were to split.
        samples: usize,
    },
}

/// Where in a sample a value is: among its inputs or its targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// An input value (printed "feature").
    Feature,
    /// A target value.
    Target,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Part::Feature => "feature",
            Part::Target => "target",
        })
    }
}

/// `"path: "` for an error about a file, nothing for one about memory.
fn in_file(path: Option<&Path>) -> String {
    path.map(|p| format!("{}: ", p.display())).unwrap_or_default()
}

impl DataError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        DataError::Io { path: path.to_owned(), source }
    }

    /// A format problem in `path`.
    pub fn format(path: &Path, problem: impl Into<String>) -> Self {
        DataError::Format { path: path.to_owned(), problem: problem.into() }
    }
}

/// What a dataset's targets hold, as a model's loss reads them (see
/// `train::Task`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Targets {
    /// Class indices (i64); float targets must hold whole numbers.
    Classes,
    /// Real values, in the model's output dtype.
    Real,
}

/// A batch on the host: inputs `[n, ...sample shape]` and targets `[n]`
/// (class indices, i64) or `[n, ...]` (f32).
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// The inputs.
    pub inputs: TensorData,
    /// The targets.
    pub targets: TensorData,
}

impl Batch {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.inputs.shape.first().copied().unwrap_or(0)
    }

    /// True for a batch without samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Samples addressable by index that can be gathered into batches. It is
/// `Send + Sync` so a loader can batch on a background thread.
pub trait Dataset: Send + Sync + 'static {
    /// Number of samples.
    fn len(&self) -> usize;
    /// True when there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The samples at `indices`, in that order.
    fn batch(&self, indices: &[usize]) -> Batch;
}

/// Fixed-shape f32 samples with targets, all in memory.
#[derive(Clone, Debug)]
pub struct InMemoryDataset {
    inputs: Vec<f32>,
    sample_shape: Vec<usize>,
    targets: DataVec,
    target_shape: Vec<usize>,
}

impl InMemoryDataset {
    /// Samples of `sample_shape` (row-major, one after another) with one
    /// class index each; an error if the lengths disagree.
    pub fn new(inputs: Vec<f32>, sample_shape: &[usize], targets: Vec<i64>) -> Result<Self, Error> {
        Self::with_targets(inputs, sample_shape, DataVec::I64(targets), &[])
    }

    /// Samples with targets of any dtype and per-sample `target_shape`.
    pub fn with_targets(
        inputs: Vec<f32>,
        sample_shape: &[usize],
        targets: DataVec,
        target_shape: &[usize],
    ) -> Result<Self, Error> {
        let per: usize = sample_shape.iter().product();
        let per_target: usize = target_shape.iter().product();
        let n = targets.len() / per_target.max(1);
        let mut shape = vec![n];
        shape.extend_from_slice(sample_shape);
        if inputs.len() != n * per || targets.len() != n * per_target {
            return Err(Error::DataLength { shape, expected: n * per, actual: inputs.len() });
        }
        Ok(InMemoryDataset {
            inputs,
            sample_shape: sample_shape.to_vec(),
            targets,
            target_shape: target_shape.to_vec(),
        })
    }

    /// Samples read from `path`, as [`InMemoryDataset::with_targets`]
    /// builds them, refused unless every input and float target is
    /// finite: what every reader of a file calls last, so a NaN is an
    /// error naming the file, the sample and the feature whatever the
    /// format.
    pub(crate) fn read_from(
        path: &Path,
        inputs: Vec<f32>,
        sample_shape: &[usize],
        targets: DataVec,
        target_shape: &[usize],
    ) -> Result<Self, DataError> {
        let data = Self::with_targets(inputs, sample_shape, targets, target_shape)
            .map_err(|e| DataError::format(path, e.to_string()))?;
        data.check_finite(Some(path), true)?;
        Ok(data)
    }

    /// The first value that is NaN or infinite, as an error naming `path`
    /// if given: among the inputs, and among float targets too with
    /// `targets`.
    pub(crate) fn check_finite(&self, path: Option<&Path>, targets: bool) -> Result<(), DataError> {
        fn first<T: Copy + Into<f64>>(values: &[T]) -> Option<(usize, f64)> {
            values.iter().position(|&v| !v.into().is_finite()).map(|at| (at, values[at].into()))
        }
        let per = self.sample_shape.iter().product::<usize>().max(1);
        let per_target = self.target_shape.iter().product::<usize>().max(1);
        let in_targets = match &self.targets {
            _ if !targets => None,
            DataVec::F32(t) => first(t),
            DataVec::F64(t) => first(t),
            DataVec::F16(t) => first(t),
            DataVec::BF16(t) => first(t),
            DataVec::I64(_) | DataVec::Bool(_) => None,
        };
        let found = first(&self.inputs)
            .map(|(at, v)| (at / per, Part::Feature, at % per, v))
            .or_else(|| in_targets.map(|(at, v)| (at / per_target, Part::Target, at % per_target, v)));
        match found {
            Some((sample, part, index, value)) => {
                Err(DataError::NonFinite { path: path.map(Path::to_owned), sample, part, index, value: value as f32 })
            }
            None => Ok(()),
        }
    }

    /// The per-sample input shape.
    pub fn sample_shape(&self) -> &[usize] {
        &self.sample_shape
    }

    /// Applies `(x - mean) / std` to every input value, in place.
    pub fn normalize(&mut self, n: Normalize) {
        n.apply_slice(&mut self.inputs);
    }

    /// The mean and standard deviation of all input values, for
    /// [`Normalize`]: one pair for the whole dataset, as for grey images.
    /// Features of different units (a table's columns, an image's
    /// channels) each need their own: see [`Scaler`].
    pub fn stats(&self) -> Normalize {
        let n = self.inputs.len().max(1) as f64;
        let mean = self.inputs.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = self.inputs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        Normalize { mean, std: var.sqrt().max(1e-12) }
    }
}

impl Dataset for InMemoryDataset {
    fn len(&self) -> usize {
        self.targets.len() / self.target_shape.iter().product::<usize>().max(1)
    }

    fn batch(&self, indices: &[usize]) -> Batch {
        let per: usize = self.sample_shape.iter().product();
        let per_t: usize = self.target_shape.iter().product();
        let mut x = Vec::with_capacity(indices.len() * per);
        for &i in indices {
            x.extend_from_slice(&self.inputs[i * per..(i + 1) * per]);
        }
        let targets = match &self.targets {
            DataVec::I64(t) => {
                DataVec::I64(indices.iter().flat_map(|&i| t[i * per_t..(i + 1) * per_t].to_vec()).collect())
            }
            DataVec::F32(t) => {
                DataVec::F32(indices.iter().flat_map(|&i| t[i * per_t..(i + 1) * per_t].to_vec()).collect())
            }
            DataVec::F64(t) => {
                DataVec::F64(indices.iter().flat_map(|&i| t[i * per_t..(i + 1) * per_t].to_vec()).collect())
            }
            DataVec::F16(t) => {
                DataVec::F16(indices.iter().flat_map(|&i| t[i * per_t..(i + 1) * per_t].to_vec()).collect())
            }
            DataVec::BF16(t) => {
                DataVec::BF16(indices.iter().flat_map(|&i| t[i * per_t..(i + 1) * per_t].to_vec()).collect())
            }
            DataVec::Bool(t) => {
                DataVec::Bool(indices.iter().flat_map(|&i| t[i * per_t..(i + 1) * per_t].to_vec()).collect())
            }
        };
        let mut xs = vec![indices.len()];
        xs.extend_from_slice(&self.sample_shape);
        let mut ts = vec![indices.len()];
        ts.extend_from_slice(&self.target_shape);
        Batch {
            inputs: TensorData::from_values(DataVec::F32(x), xs).expect("gathered whole samples"),
            targets: TensorData::from_values(targets, ts).expect("gathered whole targets"),
        }
    }
}

/// `(x - mean) / std`, as `torchvision.transforms.Normalize` with one channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalize {
    /// Subtracted first.
    pub mean: f64,
    /// Divided by second.
    pub std: f64,
}

impl Normalize {
    fn apply_slice(&self, v: &mut [f32]) {
        let (m, s) = (self.mean as f32, self.std as f32);
        for x in v {
            *x = (*x - m) / s;
        }
    }

    /// Normalises a batch's inputs in place.
    pub fn apply(&self, batch: &mut Batch) {
        if let DataVec::F32(v) = &mut batch.inputs.values {
            self.apply_slice(v);
        }
    }
}

impl mnist::MnistSplit {
    /// The split as a dataset of `[1, rows, cols]` images with class targets.
    pub fn into_dataset(self) -> InMemoryDataset {
        let shape = [1, self.rows, self.cols];
        InMemoryDataset::new(self.images, &shape, self.labels).expect("the IDX reader checked the lengths")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy(n: usize) -> InMemoryDataset {
        let x: Vec<f32> = (0..n * 2).map(|v| v as f32).collect();
        InMemoryDataset::new(x, &[2], (0..n as i64).collect()).expect("consistent")
    }

    fn ids(b: &Batch) -> Vec<i64> {
        b.targets.to_vec::<i64>().expect("i64")
    }

    #[test]
    fn batches_cover_every_sample_once_in_order() {
        let mut dl = DataLoader::new(toy(10), 4);
        let batches: Vec<Batch> = dl.epoch().collect();
        assert_eq!(batches.iter().map(Batch::len).collect::<Vec<_>>(), [4, 4, 2]);
        assert_eq!(batches.iter().flat_map(ids).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
        assert_eq!(batches[1].inputs.shape, [4, 2]);
        assert_eq!(batches[1].inputs.to_vec::<f32>().expect("f32"), [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]);
    }

    #[test]
    fn drop_last_and_len_agree() {
        let mut dl = DataLoader::new(toy(10), 4).drop_last(true);
        assert_eq!(dl.len(), 2);
        assert_eq!(dl.epoch().count(), 2);
        assert_eq!(DataLoader::new(toy(10), 4).len(), 3);
    }

    #[test]
    fn shuffling_is_seeded_per_epoch() {
        let mut a = DataLoader::new(toy(50), 50).shuffle(7);
        let mut b = DataLoader::new(toy(50), 50).shuffle(7).prefetch(0);
        let (a1, a2) = (ids(&a.epoch().next().expect("batch")), ids(&a.epoch().next().expect("batch")));
        let (b1, b2) = (ids(&b.epoch().next().expect("batch")), ids(&b.epoch().next().expect("batch")));
        assert_eq!((a1.clone(), a2.clone()), (b1, b2), "same seed, same orders, prefetched or not");
        assert_ne!(a1, a2, "each epoch has its own order");
        assert_ne!(a1, (0..50).collect::<Vec<i64>>());
        let mut sorted = a1;
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<i64>>(), "a permutation");
        // Resuming at epoch 1 reproduces epoch 1.
        let mut c = DataLoader::new(toy(50), 50).shuffle(7);
        c.set_epoch(1);
        assert_eq!(ids(&c.epoch().next().expect("batch")), a2);
    }

    /// Every rank's share of one epoch, as sample ids.
    fn shares(n: usize, ranks: usize, tail: ShardTail, epoch: u64) -> Vec<Vec<i64>> {
        (0..ranks)
            .map(|r| {
                let mut dl = DataLoader::new(toy(n), 3).shuffle(11).shard(r, ranks, tail);
                dl.set_epoch(epoch);
                assert_eq!(dl.len(), dl.samples().div_ceil(3), "rank {r}: batches for its share");
                dl.epoch().flat_map(|b| ids(&b)).collect()
            })
            .collect()
    }

    #[test]
    fn shards_are_disjoint_cover_the_data_and_share_each_epochs_order() {
        for (n, ranks) in [(10, 2), (10, 3), (7, 4), (2, 3), (12, 1)] {
            for epoch in [0, 1] {
                let unsharded: Vec<i64> = {
                    let mut dl = DataLoader::new(toy(n), 3).shuffle(11);
                    dl.set_epoch(epoch);
                    dl.epoch().flat_map(|b| ids(&b)).collect()
                };
                for tail in [ShardTail::Pad, ShardTail::Drop] {
                    let shares = shares(n, ranks, tail, epoch);
                    let per = shares[0].len();
                    assert!(shares.iter().all(|s| s.len() == per), "{n} over {ranks} ({tail:?}): equal shares");
                    // Position i of rank r is position i * ranks + r of the
                    // shared order: the ranks agree on the epoch's shuffle.
                    for (r, share) in shares.iter().enumerate() {
                        for (i, &id) in share.iter().enumerate() {
                            assert_eq!(id, unsharded[(i * ranks + r) % n], "{n} over {ranks} ({tail:?}), rank {r}");
                        }
                    }
                    let mut all: Vec<i64> = shares.concat();
                    all.sort();
                    match tail {
                        ShardTail::Drop => {
                            assert_eq!(per, n / ranks);
                            all.dedup();
                            assert_eq!(all.len(), per * ranks, "{n} over {ranks}: disjoint");
                        }
                        ShardTail::Pad => {
                            assert_eq!(per, n.div_ceil(ranks));
                            all.dedup();
                            assert_eq!(all, (0..n as i64).collect::<Vec<_>>(), "{n} over {ranks}: every sample");
                        }
                    }
                }
            }
        }
        let (e0, e1) = (shares(10, 2, ShardTail::Pad, 0), shares(10, 2, ShardTail::Pad, 1));
        assert_ne!(e0, e1, "each epoch reshuffles");
    }

    #[test]
    #[should_panic(expected = "rank 2 of 2 ranks")]
    fn a_rank_outside_the_world_is_refused() {
        let _ = DataLoader::new(toy(4), 2).shard(2, 2, ShardTail::Pad);
    }

    #[test]
    fn abandoning_an_epoch_stops_the_worker() {
        let mut dl = DataLoader::new(toy(1000), 1).prefetch(1);
        let mut it = dl.epoch();
        assert!(it.next().is_some());
        drop(it); // the worker sees the hang-up and exits instead of blocking forever
        assert_eq!(dl.epoch().count(), 1000);
    }

    #[test]
    fn normalization_uses_the_given_statistics() {
        let mut ds = toy(2); // inputs 0, 1, 2, 3
        let s = ds.stats();
        assert!((s.mean - 1.5).abs() < 1e-12 && (s.std - 1.25f64.sqrt()).abs() < 1e-12);
        ds.normalize(s);
        let after = ds.stats();
        assert!(after.mean.abs() < 1e-6 && (after.std - 1.0).abs() < 1e-6);
        let mut b = toy(1).batch(&[0]);
        Normalize { mean: 1.0, std: 2.0 }.apply(&mut b);
        assert_eq!(b.inputs.to_vec::<f32>().expect("f32"), [-0.5, 0.0]);
    }

    #[test]
    fn mismatched_lengths_are_an_error() {
        assert!(InMemoryDataset::new(vec![0.0; 5], &[2], vec![0, 1]).is_err());
    }
}
