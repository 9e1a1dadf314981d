//! `fit` fails loudly, before it trains on or saves anything wrong: targets
//! that are not classes, labels that are not indices, empty splits,
//! non-finite losses and weights (or, on request, skips those steps).

use std::path::{Path, PathBuf};

use blaze::data::{DataLoader, InMemoryDataset};
use blaze::loss::IGNORE_INDEX;
use blaze::nn;
use blaze::optim::{Sgd, StepLr};
use blaze::prelude::*;
use blaze::train::{FitConfig, History, LossError, NonFinite, TrainError, evaluate, fit};
use blaze::{DataVec, Rng};

#[model(input = [4])]
pub struct Tiny {
    fc1: Linear<4, 16>,
    act: Relu,
    fc2: Linear<16, 3>,
}

/// Three separable classes: the class is which of the first three
/// coordinates is largest. `edit` may change inputs and labels.
fn blobs(n: usize, seed: u64, edit: impl Fn(usize, &mut [f32], &mut i64)) -> InMemoryDataset {
    let mut rng = Rng::seed_from_u64(seed);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut v: Vec<f32> = (0..4).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
        let mut c = (0..3).max_by(|&a, &b| v[a].total_cmp(&v[b])).expect("three") as i64;
        edit(i, &mut v, &mut c);
        x.extend(v);
        y.push(c);
    }
    InMemoryDataset::new(x, &[4], y).expect("consistent")
}

fn clean(n: usize, seed: u64) -> InMemoryDataset {
    blobs(n, seed, |_, _, _| {})
}

fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blaze-fail-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn quiet(epochs: usize) -> FitConfig {
    FitConfig { epochs, verbose: false, ..FitConfig::default() }
}

fn train(
    model: &mut Tiny,
    data: InMemoryDataset,
    val: InMemoryDataset,
    batch: usize,
    config: &FitConfig,
) -> Result<History, TrainError> {
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let (mut train, mut val) = (DataLoader::new(data, batch).shuffle(5), DataLoader::new(val, 32));
    fit(model, &mut opt, &mut train, &mut val, config)
}

#[test]
fn a_target_outside_the_classes_stops_fit_with_its_value_position_and_sample() {
    for (bad, at) in [(7, 37), (-1, 5)] {
        let data = blobs(64, 1, |i, _, c| {
            if i == at {
                *c = bad;
            }
        });
        let mut model = Tiny::new_seeded(0, &CpuDevice);
        let before = nn::state_dict::<Cpu, _>(&model);
        let err = train(&mut model, data, clean(32, 2), 16, &quiet(3)).expect_err("a bad target");
        let msg = err.to_string();
        let TrainError::Target {
            epoch: 1,
            split: "training",
            sample: Some(sample),
            source: LossError::Class(source),
            ..
        } = err
        else {
            panic!("{msg}");
        };
        assert_eq!((sample, source.value, source.classes), (at, bad, 3), "{msg}");
        assert!(msg.contains(&format!("dataset index {at}")) && msg.contains(&format!("target {bad} at position")));
        // The step with the bad target changed nothing; earlier ones did.
        assert_ne!(nn::state_dict::<Cpu, _>(&model), before, "batches before the bad one trained");
    }
    // In the validation set, after the first epoch trained.
    let val = blobs(32, 2, |i, _, c| {
        if i == 20 {
            *c = 3;
        }
    });
    let err = train(&mut Tiny::new_seeded(0, &CpuDevice), clean(64, 1), val, 16, &quiet(3)).expect_err("bad");
    assert!(matches!(&err, TrainError::Target { split: "validation", sample: Some(20), .. }), "{err}");
}

#[test]
fn targets_that_are_not_whole_numbers_are_refused() {
    let x = vec![0.0f32; 3 * 4];
    let data = InMemoryDataset::with_targets(x, &[4], DataVec::F32(vec![0.0, 1.5, 2.0]), &[]).expect("consistent");
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    let err = train(&mut model, data, clean(8, 2), 3, &quiet(1)).expect_err("1.5 is no class");
    assert!(matches!(err, TrainError::Label { value: 1.5, .. }), "{err}");
    assert!(err.to_string().contains("target 1.5 at position"), "{err}");
}

#[test]
fn ignored_targets_leave_the_loss_and_the_accuracy() {
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    // Every fourth training target is -100: it trains on the others.
    let data = blobs(128, 1, |i, _, c| {
        if i % 4 == 0 {
            *c = IGNORE_INDEX;
        }
    });
    let history = train(&mut model, data, clean(64, 2), 16, &quiet(4)).expect("trains");
    assert!(history.best().expect("epochs").val["accuracy"] > 0.8, "{history:?}");
    // A validation set with extra ignored samples scores as the plain one.
    let with_ignored = blobs(96, 2, |i, x, c| {
        if i >= 64 {
            x.fill(5.0);
            *c = IGNORE_INDEX;
        }
    });
    let config = FitConfig { top_k: 2, ..quiet(1) };
    let plain = evaluate(&model, &mut DataLoader::new(clean(64, 2), 32), &config).expect("ok");
    let mixed = evaluate(&model, &mut DataLoader::new(with_ignored, 32), &config).expect("ok");
    assert!((plain.loss() - mixed.loss()).abs() < 1e-6, "{plain} vs {mixed}");
    for metric in ["accuracy", "top2_accuracy", "precision", "recall", "f1"] {
        assert_eq!(plain[metric], mixed[metric], "{metric}: {plain} vs {mixed}");
    }
}

#[test]
fn empty_or_too_small_data_is_an_error_before_training() {
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    let before = nn::state_dict::<Cpu, _>(&model);
    let empty = || InMemoryDataset::new(Vec::new(), &[4], Vec::new()).expect("an empty set is consistent");
    let err = train(&mut model, empty(), clean(8, 2), 16, &quiet(2)).expect_err("nothing to train on");
    assert!(matches!(err, TrainError::EmptyData { split: "training", samples: 0, .. }), "{err}");
    let err = train(&mut model, clean(8, 1), empty(), 16, &quiet(2)).expect_err("nothing to validate on");
    assert!(matches!(err, TrainError::EmptyData { split: "validation", .. }), "{err}");
    // drop_last with fewer samples than a batch leaves no batch.
    let mut opt = Sgd::new(0.1);
    let mut small = DataLoader::new(clean(10, 1), 32).drop_last(true);
    let mut val = DataLoader::new(clean(8, 2), 8);
    let err = fit(&mut model, &mut opt, &mut small, &mut val, &quiet(2)).expect_err("no full batch");
    assert_eq!(err.to_string(), "the training set yields no batch: 10 samples with batch_size 32 and drop_last");
    assert_eq!(nn::state_dict::<Cpu, _>(&model), before, "nothing trained");
}

/// Whether every value in a checkpoint (weights and optimizer state) is finite.
fn finite_weights(path: &Path) -> bool {
    let (tensors, _) = blaze::record::load_tensors(path).expect("a written checkpoint loads");
    tensors.iter().all(|(_, t)| t.values.to_f64_vec().iter().all(|v| v.is_finite()))
}

#[test]
fn a_diverging_run_stops_at_the_step_and_keeps_its_checkpoints_finite() {
    let dir = out_dir("diverge");
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    // Epoch 1 at a sane rate; from epoch 2 a rate that blows up.
    let config = FitConfig {
        out_dir: Some(dir.clone()),
        schedule: Some(Box::new(StepLr { base: 0.05, step_size: 8, gamma: 1e7 })),
        ..quiet(20)
    };
    let err = train(&mut model, clean(128, 1), clean(64, 2), 16, &config).expect_err("diverges");
    let msg = err.to_string();
    let TrainError::NonFinite { epoch: 2, step, last_good_epoch: Some(1), checkpoint: Some(last), .. } = &err else {
        panic!("{msg}");
    };
    assert!(*step >= 1 && *last == dir.join("last.safetensors"), "{msg}");
    assert!(msg.starts_with(&format!("epoch 2, step {step}: ")), "{msg}");
    assert!(msg.contains("last.safetensors (after epoch 1)"), "{msg}");
    assert!(finite_weights(&dir.join("last.safetensors")) && finite_weights(&dir.join("best.safetensors")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn nan_inputs_stop_training_or_their_steps_are_skipped() {
    // Samples 40 and 41 hold a NaN: with batches of 16 in order, batch 2.
    let poisoned = || {
        blobs(128, 1, |i, x, _| {
            if i == 40 || i == 41 {
                x[1] = f32::NAN;
            }
        })
    };
    let mut opt = Sgd::new(0.1);
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    let mut data = DataLoader::new(poisoned(), 16);
    let mut val = DataLoader::new(clean(32, 2), 32);
    let err = fit(&mut model, &mut opt, &mut data, &mut val, &quiet(3)).expect_err("NaN loss");
    assert!(err.to_string().starts_with("epoch 1, step 3: the loss is NaN"), "{err}");
    assert!(blaze::train::all_finite(&model), "the NaN step was not applied");

    let skip = FitConfig { on_non_finite: NonFinite::SkipStep, ..quiet(3) };
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    let history = fit(&mut model, &mut opt, &mut data, &mut val, &skip).expect("the poisoned steps are skipped");
    assert!(history.epochs.iter().all(|e| e.skipped_steps == 1 && e.train.loss().is_finite()), "{history:?}");
    assert!(blaze::train::all_finite(&model));
}

#[test]
fn skipping_every_step_is_an_error() {
    let all_nan = blobs(32, 1, |_, x, _| x[0] = f32::INFINITY);
    let skip = FitConfig { on_non_finite: NonFinite::SkipStep, ..quiet(2) };
    let err = train(&mut Tiny::new_seeded(0, &CpuDevice), all_nan, clean(8, 2), 16, &skip).expect_err("no step");
    assert!(err.to_string().contains("every one of the epoch's 2 steps"), "{err}");
}
