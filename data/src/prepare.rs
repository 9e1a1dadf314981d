//! Preparing a dataset for training: seeded train/validation splits, k-fold
//! cross-validation indices, and per-feature scaling fitted on the training
//! split alone and applied to every split (scikit-learn's `StandardScaler`
//! and `MinMaxScaler`), saved beside the model so inference scales its
//! inputs the same way.

use std::path::Path;

use super::{Batch, DataError, Dataset, InMemoryDataset};
use blaze_record::{RecordError, load_tensors, save_tensors};
use blaze_runtime::rng::Rng;
use blaze_runtime::{DataVec, TensorData};

/// The sample indices `0..n` shuffled from `seed` and cut in two: `round(n
/// * val_fraction)` for validation, the rest for training (each part in
/// shuffled order). Panics unless `val_fraction` is in `[0, 1]`.
pub fn train_val_split(n: usize, val_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    assert!(
        (0.0..=1.0).contains(&val_fraction),
        "train_val_split: the validation fraction {val_fraction} is not in [0, 1]"
    );
    let mut order: Vec<usize> = (0..n).collect();
    Rng::seed_from_u64(seed).shuffle(&mut order);
    let val = ((n as f64) * val_fraction).round() as usize;
    let train = order.split_off(val);
    (train, order)
}

/// One fold of [`k_fold`]: the samples to train on and the ones to
/// validate on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// Every sample outside this fold's validation part, ascending.
    pub train: Vec<usize>,
    /// This fold's validation samples, ascending.
    pub val: Vec<usize>,
}

/// `k` folds of the samples `0..n`, shuffled from `seed`: each sample is in
/// exactly one fold's validation part, whose sizes differ by at most one
/// (the first `n % k` folds take one more), as scikit-learn's
/// `KFold(k, shuffle=True)`. Panics unless `2 <= k <= n`.
pub fn k_fold(n: usize, k: usize, seed: u64) -> Vec<Fold> {
    assert!(k >= 2 && k <= n, "k_fold: {k} folds of {n} samples (need 2 <= k <= samples)");
    let mut order: Vec<usize> = (0..n).collect();
    Rng::seed_from_u64(seed).shuffle(&mut order);
    let mut start = 0;
    (0..k)
        .map(|f| {
            let len = n / k + usize::from(f < n % k);
            let mut val = order[start..start + len].to_vec();
            let mut train: Vec<usize> = order[..start].iter().chain(&order[start + len..]).copied().collect();
            start += len;
            val.sort_unstable();
            train.sort_unstable();
            Fold { train, val }
        })
        .collect()
}

impl InMemoryDataset {
    /// The samples at `indices`, in that order, as a dataset of their own
    /// (a split of this one). Panics on an index out of range.
    pub fn subset(&self, indices: &[usize]) -> InMemoryDataset {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.len()) {
            panic!("subset: index {bad} is out of range for {} samples", self.len());
        }
        let batch = self.batch(indices);
        let DataVec::F32(inputs) = batch.inputs.values else { unreachable!("an InMemoryDataset holds f32 inputs") };
        InMemoryDataset::with_targets(inputs, &self.sample_shape, batch.targets.values, &self.target_shape)
            .expect("whole samples of a consistent dataset")
    }

    /// The dataset cut at random into a training part and a validation
    /// part of `val_fraction` of the samples (the ones [`train_val_split`]
    /// picks from `seed`): what to choose epochs and settings on, so that
    /// a test set is read once, at the end (Keras's `validation_split`,
    /// shuffled). An error unless each part gets a sample.
    pub fn split_validation(
        &self,
        val_fraction: f64,
        seed: u64,
    ) -> Result<(InMemoryDataset, InMemoryDataset), DataError> {
        let (train, val) = checked_train_val_split(self.len(), val_fraction, seed)?;
        Ok((self.subset(&train), self.subset(&val)))
    }
}

/// [`train_val_split`], or an error where a part would have no sample:
/// what the datasets' `split_validation` share.
pub(crate) fn checked_train_val_split(
    n: usize,
    val_fraction: f64,
    seed: u64,
) -> Result<(Vec<usize>, Vec<usize>), DataError> {
    let empty = DataError::EmptySplit { fraction: val_fraction, samples: n };
    if !(val_fraction > 0.0 && val_fraction < 1.0) {
        return Err(empty);
    }
    let (train, val) = train_val_split(n, val_fraction, seed);
    if train.is_empty() || val.is_empty() {
        return Err(empty);
    }
    Ok((train, val))
}

/// How a [`Scaler`] was fitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalerKind {
    /// To mean 0 and standard deviation 1 per feature.
    Standardize,
    /// To `[0, 1]` per feature over the fitted data's range.
    MinMax,
}

impl ScalerKind {
    fn name(self) -> &'static str {
        match self {
            ScalerKind::Standardize => "standardize",
            ScalerKind::MinMax => "min_max",
        }
    }
}

/// `(x - shift[f]) / scale[f]` for every input value of feature `f`, where
/// a sample's features are the indices of its first dim: the columns of a
/// table (`[features]`), the channels of an image (`[channels, h, w]`).
/// Fit it on the training split and apply it to every split, so that no
/// statistic comes from the data a model is judged on.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaler {
    /// How it was fitted.
    pub kind: ScalerKind,
    /// Subtracted from each feature.
    pub shift: Vec<f32>,
    /// Then divided by, per feature (never zero).
    pub scale: Vec<f32>,
}

impl Scaler {
    /// Per-feature mean and standard deviation of `train` (the population
    /// deviation, as scikit-learn's `StandardScaler`; a constant feature
    /// keeps scale 1). An error for a dataset without samples, or with an
    /// input that is NaN or infinite (naming its sample and its index in
    /// the flattened sample), which would make the statistics NaN.
    pub fn standardize(train: &InMemoryDataset) -> Result<Scaler, DataError> {
        let (features, runs) = Self::layout(train, "Scaler::standardize")?;
        let mut sum = vec![0f64; features];
        let mut sq = vec![0f64; features];
        let mut count = vec![0usize; features];
        for (f, run) in runs.clone() {
            sum[f] += run.iter().map(|&x| f64::from(x)).sum::<f64>();
            count[f] += run.len();
        }
        let mean: Vec<f64> = sum.iter().zip(&count).map(|(s, &c)| s / c.max(1) as f64).collect();
        for (f, run) in runs {
            sq[f] += run.iter().map(|&x| (f64::from(x) - mean[f]).powi(2)).sum::<f64>();
        }
        let scale = sq.iter().zip(&count).map(|(s, &c)| nonzero((s / c.max(1) as f64).sqrt()));
        Ok(Scaler {
            kind: ScalerKind::Standardize,
            shift: mean.iter().map(|&m| m as f32).collect(),
            scale: scale.collect(),
        })
    }

    /// Per-feature minimum and range of `train`, mapping it onto `[0, 1]`
    /// (scikit-learn's `MinMaxScaler`; a constant feature keeps scale 1).
    /// Errors as [`Scaler::standardize`].
    pub fn min_max(train: &InMemoryDataset) -> Result<Scaler, DataError> {
        let (features, runs) = Self::layout(train, "Scaler::min_max")?;
        let mut low = vec![f32::INFINITY; features];
        let mut high = vec![f32::NEG_INFINITY; features];
        for (f, run) in runs {
            for &x in run {
                low[f] = low[f].min(x);
                high[f] = high[f].max(x);
            }
        }
        let scale = low.iter().zip(&high).map(|(&l, &h)| nonzero(f64::from(h - l))).collect();
        Ok(Scaler { kind: ScalerKind::MinMax, shift: low, scale })
    }

    /// Each sample's runs of values per feature: `(feature, values)`; an
    /// error unless there are samples and all their inputs are finite.
    fn layout<'a>(
        data: &'a InMemoryDataset,
        what: &'static str,
    ) -> Result<(usize, impl Iterator<Item = (usize, &'a [f32])> + Clone + 'a), DataError> {
        if data.is_empty() {
            return Err(DataError::NoSamples { what });
        }
        data.check_finite(None, false)?;
        let features = data.sample_shape.first().copied().unwrap_or(1);
        let run = data.sample_shape.iter().skip(1).product::<usize>().max(1);
        Ok((features, data.inputs.chunks_exact(run).enumerate().map(move |(i, r)| (i % features, r))))
    }

    /// Scales `values`, samples of `sample_shape` one after another.
    fn apply_values(&self, values: &mut [f32], sample_shape: &[usize], what: &str) {
        let features = sample_shape.first().copied().unwrap_or(1);
        assert_eq!(
            features,
            self.shift.len(),
            "{what}: samples of shape {sample_shape:?} have {features} features, the scaler was fitted on {}",
            self.shift.len()
        );
        let run = sample_shape.iter().skip(1).product::<usize>().max(1);
        for (i, run) in values.chunks_exact_mut(run).enumerate() {
            let (shift, scale) = (self.shift[i % features], self.scale[i % features]);
            for x in run {
                *x = (*x - shift) / scale;
            }
        }
    }

    /// Scales every input of `data` in place (a split the scaler was
    /// fitted on or not). Panics when its features are not the fitted
    /// ones.
    pub fn apply(&self, data: &mut InMemoryDataset) {
        let shape = data.sample_shape.clone();
        self.apply_values(&mut data.inputs, &shape, "Scaler::apply");
    }

    /// Scales a batch's inputs in place (as inference reads them).
    pub fn apply_batch(&self, batch: &mut Batch) {
        let shape = batch.inputs.shape.get(1..).unwrap_or_default().to_vec();
        match &mut batch.inputs.values {
            DataVec::F32(v) => self.apply_values(v, &shape, "Scaler::apply_batch"),
            other => panic!("Scaler::apply_batch: inputs of dtype {:?}, not f32", other.dtype()),
        }
    }

    /// Writes the scaler to `path` (safetensors: `shift`, `scale`, and the
    /// kind in the metadata), to load beside the model for inference.
    pub fn save(&self, path: &Path) -> Result<(), RecordError> {
        let tensor = |v: &[f32]| TensorData { shape: vec![v.len()], values: DataVec::F32(v.to_vec()) };
        let tensors = [("scale".to_owned(), tensor(&self.scale)), ("shift".to_owned(), tensor(&self.shift))];
        save_tensors(path, &tensors, &[("blaze_scaler", self.kind.name().to_owned())])
    }

    /// Reads a scaler [`Scaler::save`] wrote; an error names the file and
    /// what is wrong with it.
    pub fn load(path: &Path) -> Result<Scaler, RecordError> {
        let bad = |message: String| RecordError::Format { path: path.to_owned(), message };
        let (tensors, metadata) = load_tensors(path)?;
        let kind = match metadata.get("blaze_scaler").map(String::as_str) {
            Some("standardize") => ScalerKind::Standardize,
            Some("min_max") => ScalerKind::MinMax,
            Some(other) => return Err(bad(format!("unknown scaler kind `{other}`"))),
            None => return Err(bad("no `blaze_scaler` entry in the metadata: not a scaler".into())),
        };
        let get = |name: &str| -> Result<Vec<f32>, RecordError> {
            let at = tensors.iter().position(|(n, _)| n == name).ok_or_else(|| RecordError::Missing {
                path: path.to_owned(),
                name: name.to_owned(),
                expected: vec![],
            })?;
            match &tensors[at].1.values {
                DataVec::F32(v) if tensors[at].1.shape.len() == 1 => Ok(v.clone()),
                _ => Err(bad(format!("`{name}` is not a vector of f32"))),
            }
        };
        let (shift, scale) = (get("shift")?, get("scale")?);
        if shift.len() != scale.len() {
            return Err(bad(format!("`shift` has {} features and `scale` {}", shift.len(), scale.len())));
        }
        if let Some(f) = scale.iter().position(|&s| s == 0.0 || !s.is_finite()) {
            return Err(bad(format!("feature {f} has scale {}", scale[f])));
        }
        Ok(Scaler { kind, shift, scale })
    }
}

/// A scale to divide by: 1 where the data gave zero (a constant feature).
fn nonzero(scale: f64) -> f32 {
    if scale > 0.0 && scale.is_finite() { scale as f32 } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> InMemoryDataset {
        // Three features: x, 100 + 10x, and a constant 7.
        let x: Vec<f32> = (0..6).flat_map(|i| [i as f32, 100.0 + 10.0 * i as f32, 7.0]).collect();
        InMemoryDataset::new(x, &[3], (0..6).collect()).expect("a consistent table")
    }

    #[test]
    fn a_validation_split_takes_its_share_and_refuses_an_empty_part() {
        let data = table();
        let (train, val) = data.split_validation(0.34, 5).expect("two parts");
        assert_eq!((train.len(), val.len()), (4, 2));
        // Every sample lands in one part, as train_val_split picks them.
        let (t, v) = train_val_split(6, 0.34, 5);
        assert_eq!(val.batch(&[0, 1]).targets, data.batch(&v).targets);
        assert_eq!(train.batch(&[0, 1, 2, 3]).targets, data.batch(&t).targets);
        for fraction in [0.0, 0.05, 0.95, 1.0, f64::NAN, -0.5] {
            let err = data.split_validation(fraction, 5).expect_err("an empty part");
            assert!(err.to_string().contains("leaves no training or no validation sample"), "{err}");
        }
    }

    #[test]
    fn splits_are_seeded_disjoint_and_cover_the_samples() {
        let (train, val) = train_val_split(10, 0.3, 4);
        assert_eq!((train.len(), val.len()), (7, 3));
        let mut all: Vec<usize> = train.iter().chain(&val).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(train_val_split(10, 0.3, 4), (train.clone(), val.clone()), "the same seed, the same split");
        assert_ne!(train_val_split(10, 0.3, 5).1, val, "another seed, another split");
        assert_eq!(train_val_split(4, 0.0, 1).1, Vec::<usize>::new());
    }

    #[test]
    fn k_folds_partition_the_samples() {
        let folds = k_fold(11, 3, 9);
        assert_eq!(folds.iter().map(|f| f.val.len()).collect::<Vec<_>>(), [4, 4, 3]);
        let mut vals: Vec<usize> = folds.iter().flat_map(|f| f.val.clone()).collect();
        vals.sort_unstable();
        assert_eq!(vals, (0..11).collect::<Vec<_>>(), "each sample validates once");
        for f in &folds {
            assert_eq!(f.train.len() + f.val.len(), 11);
            assert!(f.train.iter().all(|i| !f.val.contains(i)));
        }
        assert_eq!(k_fold(11, 3, 9), folds);
    }

    #[test]
    #[should_panic(expected = "k_fold: 1 folds of 5 samples")]
    fn one_fold_is_refused() {
        k_fold(5, 1, 0);
    }

    #[test]
    fn standardizing_uses_each_feature_alone() {
        let data = table();
        let s = Scaler::standardize(&data).expect("fits");
        // x = 0..6: mean 2.5, population std sqrt(35/12).
        let std = (35.0f64 / 12.0).sqrt() as f32;
        assert_eq!(s.shift, [2.5, 125.0, 7.0]);
        assert!((s.scale[0] - std).abs() < 1e-6 && (s.scale[1] - 10.0 * std).abs() < 1e-5);
        assert_eq!(s.scale[2], 1.0, "a constant feature keeps scale 1");
        let mut scaled = data.clone();
        s.apply(&mut scaled);
        for f in 0..3 {
            let col: Vec<f32> = scaled.inputs.iter().skip(f).step_by(3).copied().collect();
            let mean = col.iter().sum::<f32>() / 6.0;
            assert!(mean.abs() < 1e-6, "feature {f} has mean {mean}");
        }
        // Features 0 and 1 are the same column up to an affine map.
        assert!(scaled.inputs.chunks(3).all(|r| (r[0] - r[1]).abs() < 1e-5 && r[2] == 0.0));
    }

    #[test]
    fn min_max_maps_the_training_range_and_applies_it_elsewhere() {
        let data = table();
        let train = data.subset(&[0, 1, 2]);
        let s = Scaler::min_max(&train).expect("fits");
        assert_eq!((s.shift.clone(), s.scale.clone()), (vec![0.0, 100.0, 7.0], vec![2.0, 20.0, 1.0]));
        // The validation rows lie past the training range: fitted on train alone.
        let mut val = data.subset(&[5]);
        s.apply(&mut val);
        assert_eq!(val.inputs, [2.5, 2.5, 0.0]);
        let mut batch = data.batch(&[1]);
        s.apply_batch(&mut batch);
        assert_eq!(batch.inputs.values, DataVec::F32(vec![0.5, 0.5, 0.0]));
    }

    #[test]
    fn channels_are_the_features_of_an_image() {
        // Two samples of [2 channels, 2 pixels].
        let x = vec![0.0, 2.0, 10.0, 10.0, 4.0, 6.0, 30.0, 30.0];
        let data = InMemoryDataset::new(x, &[2, 2], vec![0, 1]).expect("consistent");
        let s = Scaler::standardize(&data).expect("fits");
        assert_eq!(s.shift, [3.0, 20.0]);
        assert!((s.scale[0] - 5f32.sqrt()).abs() < 1e-6 && (s.scale[1] - 10.0).abs() < 1e-6);
    }

    #[test]
    fn fitting_on_no_samples_or_a_non_finite_input_is_an_error() {
        type Fit = fn(&InMemoryDataset) -> Result<Scaler, DataError>;
        let fits: [(&str, Fit); 2] =
            [("Scaler::standardize", Scaler::standardize), ("Scaler::min_max", Scaler::min_max)];
        let empty = InMemoryDataset::new(Vec::new(), &[3], Vec::new()).expect("consistent");
        let mut inputs = table().inputs;
        inputs[2 * 3 + 1] = f32::NAN;
        let nan = InMemoryDataset::new(inputs, &[3], (0..6).collect()).expect("consistent");
        for (name, fit) in fits {
            let err = fit(&empty).expect_err("no samples").to_string();
            assert_eq!(err, format!("{name}: the dataset has no samples to fit on"));
            let err = fit(&nan).expect_err("a NaN").to_string();
            assert_eq!(err, "sample 2, feature 1: NaN is not a finite number", "{name}");
        }
    }

    #[test]
    #[should_panic(expected = "Scaler::apply: samples of shape [2] have 2 features, the scaler was fitted on 3")]
    fn a_scaler_refuses_other_features() {
        let s = Scaler::standardize(&table()).expect("fits");
        let mut other = InMemoryDataset::new(vec![1.0, 2.0], &[2], vec![0]).expect("consistent");
        s.apply(&mut other);
    }

    #[test]
    fn a_saved_scaler_loads_back_and_bad_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("blaze-scaler-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let path = dir.join("scaler.safetensors");
        let s = Scaler::min_max(&table()).expect("fits");
        s.save(&path).expect("saved");
        assert_eq!(Scaler::load(&path).expect("loaded"), s);
        // A safetensors file that is not a scaler.
        let other = dir.join("weights.safetensors");
        let t = TensorData { shape: vec![1], values: DataVec::F32(vec![1.0]) };
        save_tensors(&other, &[("w".to_owned(), t)], &[]).expect("saved");
        let e = Scaler::load(&other).expect_err("not a scaler").to_string();
        assert!(e.contains("weights.safetensors") && e.contains("not a scaler"), "{e}");
        // Truncated bytes.
        std::fs::write(&other, b"\x08\x00").expect("written");
        let e = Scaler::load(&other).expect_err("truncated").to_string();
        assert!(e.contains("weights.safetensors"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
