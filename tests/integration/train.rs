//! The training loop: it learns, writes the best weights, a resumable
//! checkpoint and the curves, and a resumed run matches an uninterrupted one.

use std::path::{Path, PathBuf};

use blaze::data::{DataLoader, InMemoryDataset};
use blaze::nn;
use blaze::optim::{CosineWithWarmup, Sgd};
use blaze::prelude::*;
use blaze::train::{FitConfig, History, fit};

#[model(input = [4])]
pub struct Tiny {
    fc1: Linear<4, 16>,
    act: Tanh,
    fc2: Linear<16, 3>,
}

/// Three separable classes: the class is which of the first three
/// coordinates is largest.
fn blobs(n: usize, seed: u64) -> InMemoryDataset {
    let mut rng = blaze::Rng::seed_from_u64(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for _ in 0..n {
        let v: Vec<f32> = (0..4).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
        let c = (0..3).max_by(|&a, &b| v[a].total_cmp(&v[b])).expect("three");
        x.extend(v);
        y.push(c as i64);
    }
    InMemoryDataset::new(x, &[4], y).expect("consistent")
}

fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blaze-train-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(epochs: usize, dir: &Path, resume: bool) -> (Tiny, History) {
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let mut train = DataLoader::new(blobs(256, 1), 32).shuffle(3);
    let mut val = DataLoader::new(blobs(128, 2), 64);
    let config = FitConfig {
        epochs,
        out_dir: Some(dir.to_path_buf()),
        resume,
        clip_grad_norm: Some(5.0),
        schedule: Some(Box::new(CosineWithWarmup { base: 0.1, min: 0.01, warmup: 8, total: 64 })),
        verbose: false,
        ..FitConfig::default()
    };
    let history = fit(&mut model, &mut opt, &mut train, &mut val, &config).expect("training runs");
    (model, history)
}

#[test]
fn fit_learns_and_writes_its_files() {
    let dir = out_dir("files");
    let (_, history) = run(8, &dir, false);
    assert_eq!(history.epochs.len(), 8);
    let first = &history.epochs[0];
    let last = &history.epochs[7];
    assert!(last.train.loss() < 0.5 * first.train.loss(), "{first:?} -> {last:?}");
    assert!(history.best().expect("epochs").val["accuracy"] > 0.9, "{history:?}");
    for f in ["best.safetensors", "last.safetensors", "curve.svg", "curve.png"] {
        assert!(dir.join(f).is_file(), "{f} was not written");
    }
    let svg = std::fs::read_to_string(dir.join("curve.svg")).expect("svg");
    assert!(svg.starts_with("<svg") && svg.matches("<polyline").count() == 4, "{svg}");
    let png = std::fs::read(dir.join("curve.png")).expect("png");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000, "{} bytes", png.len());
    // best.safetensors holds the weights of the best epoch, loadable as is.
    let mut m = Tiny::new_seeded(9, &CpuDevice);
    blaze::record::load_model(&mut m, &dir.join("best.safetensors")).expect("loads");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_resumed_run_matches_an_uninterrupted_one() {
    let (a, b) = (out_dir("straight"), out_dir("resumed"));
    let (straight, h1) = run(6, &a, false);
    run(3, &b, false);
    let (resumed, h2) = run(6, &b, true);
    assert_eq!(h2.epochs.len(), 6, "the resumed history includes the first run's epochs");
    assert_eq!(nn::state_dict::<Cpu, _>(&straight), nn::state_dict::<Cpu, _>(&resumed));
    let losses = |h: &History| h.epochs.iter().map(|e| e.train.loss()).collect::<Vec<_>>();
    assert_eq!(losses(&h1), losses(&h2));
    std::fs::remove_dir_all(&a).ok();
    std::fs::remove_dir_all(&b).ok();
}

/// The same task, written by hand and trained through the tape with the
/// same `fit`, optimizer and checkpoints.
#[derive(blaze::Module, Clone, Debug)]
pub struct HandMlp<B: blaze::Backend> {
    fc1: blaze::nn::Linear<B, 4, 16>,
    fc2: blaze::nn::Linear<B, 16, 3>,
}

impl<B: blaze::Backend> blaze::train::TapedForward<B, 2, 2> for HandMlp<blaze::autodiff::Autodiff<B>> {
    fn forward(
        &self,
        x: &Tensor<blaze::autodiff::Autodiff<B>, 2>,
        _train: bool,
    ) -> Tensor<blaze::autodiff::Autodiff<B>, 2> {
        self.fc2.forward(&self.fc1.forward(x).tanh())
    }
}

#[test]
fn fit_trains_a_hand_written_model_through_the_tape() {
    use blaze::autodiff::Autodiff;
    use blaze::nn::{Linear, LinearConfig};
    use blaze::train::Taped;
    let dir = out_dir("taped");
    let mut rng = blaze::Rng::seed_from_u64(0);
    let c = LinearConfig::default();
    let mut model = Taped(HandMlp::<Autodiff<Cpu>> {
        fc1: Linear::new(c, &mut rng, &CpuDevice),
        fc2: Linear::new(c, &mut rng, &CpuDevice),
    });
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let mut train = DataLoader::new(blobs(256, 1), 32).shuffle(3);
    let mut val = DataLoader::new(blobs(128, 2), 64);
    let config = FitConfig { epochs: 8, out_dir: Some(dir.clone()), verbose: false, ..FitConfig::default() };
    let history = fit(&mut model, &mut opt, &mut train, &mut val, &config).expect("training runs");
    assert!(history.epochs[7].train.loss() < 0.5 * history.epochs[0].train.loss(), "{history:?}");
    assert!(history.best().expect("epochs").val["accuracy"] > 0.9, "{history:?}");
    // Its checkpoint loads into the same struct on the plain CPU backend.
    let mut plain =
        HandMlp::<Cpu> { fc1: Linear::new(c, &mut rng, &CpuDevice), fc2: Linear::new(c, &mut rng, &CpuDevice) };
    blaze::record::load_model(&mut plain, &dir.join("best.safetensors")).expect("loads");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fit_writes_tensorboard_events_of_every_step_and_epoch() {
    use blaze::train::tensorboard::{EventValue, read_events};
    let dir = out_dir("board");
    let mut model = Tiny::new_seeded(0, &CpuDevice);
    let mut train = DataLoader::new(blobs(64, 1), 16);
    let mut val = DataLoader::new(blobs(32, 2), 32);
    let config = FitConfig { epochs: 2, tensorboard: Some(dir.clone()), verbose: false, ..FitConfig::default() };
    fit(&mut model, &mut Sgd::new(0.1), &mut train, &mut val, &config).expect("trains");
    let files: Vec<_> = std::fs::read_dir(&dir).expect("the log folder").map(|e| e.expect("entry").path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let events = read_events(&files[0]).expect("every record checks out");
    let scalars = |tag: &str| {
        events
            .iter()
            .filter_map(|e| match &e.value {
                EventValue::Scalar { tag: t, value } if t == tag => Some((e.step, *value)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(scalars("step/loss").iter().map(|s| s.0).collect::<Vec<_>>(), (1..=8).collect::<Vec<u64>>());
    assert!(scalars("step/lr").iter().all(|&(_, lr)| lr == 0.1));
    assert_eq!(scalars("val/accuracy").iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(scalars("train/loss").len(), 2);
    let summary = events.iter().find_map(|e| match &e.value {
        EventValue::Text { tag, text } if tag == "model/summary" => Some(text.clone()),
        _ => None,
    });
    assert!(summary.is_some_and(|t| t.contains("fc1") && t.contains("Linear<4, 16>")), "{events:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Descent for the first `until` steps, ascent after.
#[derive(Debug)]
struct DescentThenAscent {
    until: u64,
}

impl blaze::optim::LrSchedule for DescentThenAscent {
    fn lr_at(&self, step: u64) -> f64 {
        if step < self.until { 0.1 } else { -0.1 }
    }
}

#[test]
fn early_stopping_restores_a_tape_trained_model_to_its_best_epoch() {
    use blaze::autodiff::Autodiff;
    use blaze::nn::{Linear, LinearConfig};
    use blaze::train::{EarlyStopping, Taped, evaluate};
    let mut rng = blaze::Rng::seed_from_u64(0);
    let c = LinearConfig::default();
    let mut model = Taped(HandMlp::<Autodiff<Cpu>> {
        fc1: Linear::new(c, &mut rng, &CpuDevice),
        fc2: Linear::new(c, &mut rng, &CpuDevice),
    });
    // Eight steps an epoch: three epochs of descent, then ascent.
    let mut train = DataLoader::new(blobs(256, 1), 32);
    let val = || DataLoader::new(blobs(128, 2), 64);
    let config = FitConfig {
        epochs: 12,
        monitor: Some("loss".into()),
        schedule: Some(Box::new(DescentThenAscent { until: 24 })),
        early_stopping: Some(EarlyStopping::patience(2)),
        verbose: false,
        ..FitConfig::default()
    };
    let history = fit(&mut model, &mut Sgd::new(0.1), &mut train, &mut val(), &config).expect("training runs");
    let best = history.best().expect("epochs");
    assert!(best.epoch < history.epochs.len() && history.stopped_early.is_some(), "{history:?}");
    assert_eq!(history.restored_epoch, Some(best.epoch));
    assert_eq!(evaluate(&model, &mut val(), &config).expect("evaluates"), best.val);
}
