//! `fit` beyond classifiers: regression with each built-in loss and a
//! loss of one's own, yes/no labels, a language model over a text, the
//! metrics against values worked out by hand, gradient accumulation, early
//! stopping, and clear errors for targets and settings that do not fit.

use blaze::data::{DataLoader, InMemoryDataset, TextDataset, Vocab};
use blaze::loss::{Loss, l1, mse};
use blaze::nn::ParamMapper;
use blaze::optim::{Adam, Sgd};
use blaze::prelude::*;
use blaze::train::{
    BceWithLogits, CrossEntropy, EarlyStopping, FitConfig, Huber, L1, LossError, LossFn, Mse, Task, TrainError,
    evaluate, fit,
};
use blaze::{DataVec, Rng};

#[model(input = [3])]
pub struct Regressor {
    fc1: Linear<3, 32>,
    act: Tanh,
    fc2: Linear<32, 2>,
}

/// Two targets of three features: `x0 + 2 x1 - x2` and `sin(x0) + x1 x2`.
fn smooth(n: usize, seed: u64) -> InMemoryDataset {
    let mut rng = Rng::seed_from_u64(seed);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let v: Vec<f32> = (0..3).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
        y.push(v[0] + 2.0 * v[1] - v[2]);
        y.push(v[0].sin() + v[1] * v[2]);
        x.extend(v);
    }
    InMemoryDataset::with_targets(x, &[3], DataVec::F32(y), &[2]).expect("consistent")
}

fn quiet<L>(loss: L, epochs: usize) -> FitConfig<L> {
    FitConfig { epochs, verbose: false, ..FitConfig::new(loss) }
}

/// Trains a fresh `Regressor` on `smooth` data with `config`.
fn train_with<L: blaze::train::Criterion<Cpu, 2, 2> + Sync>(config: &FitConfig<L>) -> blaze::train::History {
    let mut model = Regressor::new_seeded(0, &CpuDevice);
    let mut train = DataLoader::new(smooth(512, 1), 32).shuffle(2);
    let mut val = DataLoader::new(smooth(128, 3), 64);
    fit(&mut model, &mut Adam::new(1e-2), &mut train, &mut val, config).expect("trains")
}

#[test]
fn regression_reaches_its_r2_with_every_built_in_loss() {
    let mse_run = train_with(&quiet(Mse, 30));
    let best = mse_run.best().expect("epochs");
    assert_eq!(mse_run.monitor.metric, "loss", "regression keeps the lowest validation loss");
    assert!(best.val["r2"] > 0.95, "{}", best.val);
    assert!(best.val["rmse"] < 0.25 && best.val["mae"] <= best.val["rmse"], "{}", best.val);
    assert_eq!(best.val.names(), ["loss", "mae", "rmse", "r2"]);
    for names in mse_run.epochs.iter().map(|e| e.train.names()) {
        assert_eq!(names, ["loss", "mae", "rmse", "r2"]);
    }
    let l1_run = train_with(&quiet(L1, 30));
    assert!(l1_run.best().expect("epochs").val["r2"] > 0.9, "{:?}", l1_run.best());
    let huber_run = train_with(&quiet(Huber { delta: 0.5 }, 30));
    assert!(huber_run.best().expect("epochs").val["r2"] > 0.9, "{:?}", huber_run.best());
    // A loss of one's own: MSE plus a tenth of L1, monitored on R².
    let own = LossFn::new(Task::Regression, |out: &Tensor<Cpu, 2>, t: &Tensor<Cpu, 2>| {
        let (a, b) = (mse(out, t), l1(out, t));
        Loss { value: a.value.add(&b.value.mul_scalar(0.1)), grad: a.grad.add(&b.grad.mul_scalar(0.1)) }
    });
    let config = FitConfig { monitor: Some("r2".into()), ..quiet(own, 30) };
    let own_run = train_with(&config);
    assert_eq!(own_run.monitor.metric, "r2");
    let best = own_run.best().expect("epochs");
    assert!(best.val["r2"] > 0.95, "{}", best.val);
    assert!(own_run.epochs.iter().all(|e| e.val["r2"] <= best.val["r2"]), "the best epoch has the highest r2");
}

/// Sets a model's tensors by name.
struct Set(Vec<(&'static str, Vec<f32>)>);

impl<B: blaze::Backend> ParamMapper<B> for Set {
    fn map<const D: usize>(&mut self, name: &str, t: Tensor<B, D>) -> Tensor<B, D> {
        match self.0.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => Tensor::from_vec(v.clone(), t.shape(), &t.device()),
            None => t,
        }
    }
}

#[model(input = [1])]
pub struct Line {
    fc: Linear<1, 1>,
}

#[model(input = [2])]
pub struct ThreeWay {
    fc: Linear<2, 3>,
}

#[test]
fn metrics_match_values_worked_out_by_hand() {
    // Regression: predictions 2x for x = 1..4 against 2, 4, 5, 9: errors
    // 0, 0, 1, -1, so MSE 0.5, MAE 0.5, RMSE √0.5, and R² = 1 - 2/26.
    let mut line = Line::new_seeded(0, &CpuDevice);
    line.map_tensors("", &mut Set(vec![("fc.weight", vec![2.0]), ("fc.bias", vec![0.0])]));
    let data =
        InMemoryDataset::with_targets(vec![1.0, 2.0, 3.0, 4.0], &[1], DataVec::F32(vec![2.0, 4.0, 5.0, 9.0]), &[1])
            .expect("consistent");
    let s = evaluate(&line, &mut DataLoader::new(data, 3), &quiet(Mse, 1)).expect("evaluates");
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert!(close(s["loss"], 0.5) && close(s["mae"], 0.5), "{s}");
    assert!(close(s["rmse"], 0.5f64.sqrt()) && close(s["r2"], 1.0 - 2.0 / 26.0), "{s}");

    // Classification: the logits of x are (x0, x1, -x0 - x1). Truth
    // 0 1 0 2 2, predicted 0 1 1 2 0.
    let mut three = ThreeWay::new_seeded(0, &CpuDevice);
    let weight = vec![1.0, 0.0, 0.0, 1.0, -1.0, -1.0];
    three.map_tensors("", &mut Set(vec![("fc.weight", weight), ("fc.bias", vec![0.0; 3])]));
    let x = vec![1.0, 0.0, 0.0, 1.0, 0.0, 1.0, -1.0, -1.0, 1.0, 0.0];
    let truth = vec![0, 1, 0, 2, 2];
    let data = InMemoryDataset::new(x.clone(), &[2], truth.clone()).expect("consistent");
    let config = FitConfig { top_k: 2, ..quiet(CrossEntropy::default(), 1) };
    let s = evaluate(&three, &mut DataLoader::new(data, 2), &config).expect("evaluates");
    let loss = x
        .chunks(2)
        .zip(&truth)
        .map(|(v, &t)| {
            let logits = [v[0] as f64, v[1] as f64, -(v[0] + v[1]) as f64];
            let lse = logits.iter().map(|l| l.exp()).sum::<f64>().ln();
            lse - logits[t as usize]
        })
        .sum::<f64>()
        / 5.0;
    assert!(close(s["loss"], loss), "{s} vs loss {loss}");
    assert!(close(s["accuracy"], 0.6) && close(s["top2_accuracy"], 0.8), "{s}");
    // Per class (precision, recall): (1/2, 1/2), (1/2, 1), (1, 1/2).
    assert!(close(s["precision"], 2.0 / 3.0) && close(s["recall"], 2.0 / 3.0), "{s}");
    assert!(close(s["f1"], (0.5 + 2.0 / 3.0 + 2.0 / 3.0) / 3.0), "{s}");

    // Yes/no labels: logits 2x against 1 0 1 0 for x = 1, -1, -1, 2:
    // predicted 1 0 0 1, so one of each error: accuracy, precision,
    // recall and F1 all 1/2.
    let data =
        InMemoryDataset::with_targets(vec![1.0, -1.0, -1.0, 2.0], &[1], DataVec::F32(vec![1.0, 0.0, 1.0, 0.0]), &[1])
            .expect("consistent");
    let s = evaluate(&line, &mut DataLoader::new(data, 4), &quiet(BceWithLogits, 1)).expect("evaluates");
    let bce = |x: f64, t: f64| x.max(0.0) - x * t + (1.0 + (-x.abs()).exp()).ln();
    let want = (bce(2.0, 1.0) + bce(-2.0, 0.0) + bce(-2.0, 1.0) + bce(4.0, 0.0)) / 4.0;
    assert!(close(s["loss"], want), "{s} vs {want}");
    for metric in ["accuracy", "precision", "recall", "f1"] {
        assert!(close(s[metric], 0.5), "{metric}: {s}");
    }
}

#[model(input = [4])]
pub struct Tagger {
    fc1: Linear<4, 16>,
    act: Relu,
    fc2: Linear<16, 3>,
}

/// Three yes/no labels of four features: x0 > 0, x1 > x2, x3 > 0.5.
fn labels(n: usize, seed: u64) -> InMemoryDataset {
    let mut rng = Rng::seed_from_u64(seed);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let v: Vec<f32> = (0..4).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
        y.extend([v[0] > 0.0, v[1] > v[2], v[3] > 0.5].map(|b| f32::from(u8::from(b))));
        x.extend(v);
    }
    InMemoryDataset::with_targets(x, &[4], DataVec::F32(y), &[3]).expect("consistent")
}

#[test]
fn yes_no_labels_train_with_binary_cross_entropy() {
    let mut model = Tagger::new_seeded(0, &CpuDevice);
    let mut train = DataLoader::new(labels(512, 1), 32).shuffle(2);
    let mut val = DataLoader::new(labels(256, 3), 64);
    let history =
        fit(&mut model, &mut Adam::new(1e-2), &mut train, &mut val, &quiet(BceWithLogits, 20)).expect("trains");
    let best = history.best().expect("epochs");
    assert_eq!(best.val.names(), ["loss", "accuracy", "precision", "recall", "f1"]);
    assert!(best.val["accuracy"] > 0.9 && best.val["f1"] > 0.85, "{}", best.val);
    // Labels outside [0, 1] are refused with the value.
    let bad = InMemoryDataset::with_targets(vec![0.0; 8], &[4], DataVec::F32(vec![0.0, 1.0, 2.0, 0.0, 0.0, 1.0]), &[3])
        .expect("consistent");
    let err = fit(&mut model, &mut Adam::new(1e-2), &mut DataLoader::new(bad, 2), &mut val, &quiet(BceWithLogits, 1))
        .expect_err("2 is no label");
    assert!(matches!(&err, TrainError::Target { source: LossError::Range { value: 2.0, .. }, .. }), "{err}");
}

#[test]
fn targets_of_the_wrong_shape_name_both_shapes() {
    let mut model = Regressor::new_seeded(0, &CpuDevice);
    // One target per sample, but the model has two outputs.
    let one = InMemoryDataset::with_targets(vec![0.0; 12], &[3], DataVec::F32(vec![0.0; 4]), &[1]).expect("consistent");
    let err = fit(
        &mut model,
        &mut Sgd::new(0.1),
        &mut DataLoader::new(one, 2),
        &mut DataLoader::new(smooth(4, 1), 2),
        &quiet(Mse, 1),
    )
    .expect_err("a shape mismatch");
    let msg = err.to_string();
    assert!(
        matches!(
            &err,
            TrainError::Target { epoch: 1, split: "training", batch: 0, source: LossError::Shape { .. }, .. }
        ),
        "{msg}"
    );
    assert!(msg.contains("[2, 2]") && msg.contains("[2, 1]"), "{msg}");
}

#[test]
fn accumulated_batches_step_as_one_batch_that_many_times_larger() {
    // Plain SGD without shuffling: two accumulated batches of 16 must give
    // the weights of one batch of 32, step for step.
    let run = |batch: usize, accumulate: usize| {
        let mut model = Regressor::new_seeded(0, &CpuDevice);
        let mut train = DataLoader::new(smooth(128, 1), batch);
        let mut val = DataLoader::new(smooth(32, 3), 32);
        let config = FitConfig { accumulate_grad_batches: accumulate, ..quiet(Mse, 3) };
        let history = fit(&mut model, &mut Sgd::new(0.05), &mut train, &mut val, &config).expect("trains");
        (blaze::nn::state_dict::<Cpu, _>(&model), history)
    };
    let (big, h1) = run(32, 1);
    let (small, h2) = run(16, 2);
    assert_eq!(h1.epochs.iter().map(|e| e.steps).collect::<Vec<_>>(), [4, 4, 4]);
    assert_eq!(h2.epochs.iter().map(|e| e.steps).collect::<Vec<_>>(), [4, 4, 4]);
    for ((name, a), (_, b)) in big.iter().zip(&small) {
        let (a, b) = (a.values.to_f64_vec(), b.values.to_f64_vec());
        let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-5, "{name}: differs by {worst}");
    }
    // A last window shorter than the others averages over its own batches:
    // 5 batches in windows of 2 give 3 steps.
    let mut model = Regressor::new_seeded(0, &CpuDevice);
    let config = FitConfig { accumulate_grad_batches: 2, ..quiet(Mse, 1) };
    let mut train = DataLoader::new(smooth(80, 1), 16);
    let h = fit(&mut model, &mut Sgd::new(0.05), &mut train, &mut DataLoader::new(smooth(8, 3), 8), &config)
        .expect("trains");
    assert_eq!(h.epochs[0].steps, 3);
}

#[test]
fn early_stopping_ends_training_after_its_patience() {
    // A learning rate of zero never improves on the first epoch.
    let mut model = Regressor::new_seeded(0, &CpuDevice);
    let config = FitConfig { early_stopping: Some(EarlyStopping::patience(2)), ..quiet(Mse, 20) };
    let mut train = DataLoader::new(smooth(64, 1), 16);
    let mut val = DataLoader::new(smooth(32, 3), 32);
    let history = fit(&mut model, &mut Sgd::new(0.0), &mut train, &mut val, &config).expect("trains");
    assert_eq!(history.epochs.len(), 3, "one epoch, then two without improvement");
    let reason = history.stopped_early.as_deref().expect("it stopped early");
    assert!(reason.contains("validation loss has not improved") && reason.contains("2 epochs"), "{reason}");
    // One that keeps learning runs every epoch.
    let mut model = Regressor::new_seeded(0, &CpuDevice);
    let config = FitConfig { early_stopping: Some(EarlyStopping::patience(3)), ..quiet(Mse, 6) };
    let history = fit(&mut model, &mut Adam::new(1e-2), &mut train, &mut val, &config).expect("trains");
    assert_eq!((history.epochs.len(), history.stopped_early.as_deref()), (6, None));
}

/// Plain descent for the first `until` steps, ascent after: every epoch
/// from then on is worse than the one before.
#[derive(Debug)]
struct DescentThenAscent {
    until: u64,
}

impl blaze::optim::LrSchedule for DescentThenAscent {
    fn lr_at(&self, step: u64) -> f64 {
        if step < self.until { 0.05 } else { -0.05 }
    }
}

/// A regressor with a batch norm, so that its buffers must come back too.
#[model(input = [3])]
pub struct NormedRegressor {
    fc1: Linear<3, 32>,
    norm: BatchNorm1d<32>,
    act: Tanh,
    fc2: Linear<32, 2>,
}

/// `NormedRegressor` trained on `smooth` data with three epochs of
/// descent (four steps each), then ascent, and `config`'s early stopping.
fn worse_after_three(config: FitConfig<Mse>) -> (NormedRegressor, blaze::train::History, FitConfig<Mse>) {
    let mut model = NormedRegressor::new_seeded(0, &CpuDevice);
    let mut train = DataLoader::new(smooth(64, 1), 16);
    let config = FitConfig { schedule: Some(Box::new(DescentThenAscent { until: 12 })), ..config };
    let history = fit(&mut model, &mut Sgd::new(0.05), &mut train, &mut DataLoader::new(smooth(32, 3), 32), &config)
        .expect("trains");
    (model, history, config)
}

/// The validation metrics of `model` now.
fn scores_now(model: &NormedRegressor, config: &FitConfig<Mse>) -> blaze::train::Scores {
    evaluate(model, &mut DataLoader::new(smooth(32, 3), 32), config).expect("evaluates")
}

#[test]
fn early_stopping_puts_the_best_epochs_weights_back_into_the_model() {
    // Stopped by its patience: the model holds the best epoch's weights,
    // with no out_dir, and says so.
    let (model, history, config) =
        worse_after_three(FitConfig { early_stopping: Some(EarlyStopping::patience(2)), ..quiet(Mse, 20) });
    let best = history.best().expect("epochs").clone();
    let last = history.epochs.last().expect("epochs").clone();
    assert!(best.epoch < last.epoch && last.val.loss() > best.val.loss(), "{history:?}");
    assert_eq!(history.restored_epoch, Some(best.epoch));
    assert_eq!(scores_now(&model, &config), best.val, "the model scores as its best epoch did");
    let reason = history.stopped_early.as_deref().expect("it stopped early");
    assert!(reason.ends_with(&format!("; restored the weights of epoch {}", best.epoch)), "{reason}");

    // Without restoring, the last epoch's weights stay.
    let rule = EarlyStopping::patience(2).restore_best(false);
    let (model, history, config) = worse_after_three(FitConfig { early_stopping: Some(rule), ..quiet(Mse, 20) });
    assert_eq!(history.restored_epoch, None);
    assert_eq!(scores_now(&model, &config), history.epochs.last().expect("epochs").val);

    // Reaching `epochs` before the patience runs out restores as well
    // (where Keras would not).
    let rule = EarlyStopping::patience(10);
    let (model, history, config) = worse_after_three(FitConfig { early_stopping: Some(rule), ..quiet(Mse, 6) });
    let best = history.best().expect("epochs").clone();
    assert_eq!((history.epochs.len(), history.stopped_early.as_deref()), (6, None));
    assert_eq!(history.restored_epoch, Some(best.epoch));
    assert_eq!(scores_now(&model, &config), best.val);
}

#[test]
fn a_resumed_run_restores_the_best_epoch_of_its_whole_history() {
    let dir = std::env::temp_dir().join(format!("blaze-fit-tasks-restore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = |epochs: usize, resume: bool| FitConfig {
        out_dir: Some(dir.clone()),
        resume,
        early_stopping: Some(EarlyStopping::patience(10)),
        ..quiet(Mse, epochs)
    };
    let (_, first, _) = worse_after_three(config(5, false));
    let best = first.best().expect("epochs").clone();
    assert!(best.epoch < 5, "{first:?}");
    // The checkpoint holds epoch 5; the best epoch's weights come from
    // best.safetensors.
    let (model, resumed, config6) = worse_after_three(config(6, true));
    assert_eq!(resumed.epochs.len(), 6);
    assert_eq!(resumed.best().map(|b| b.epoch), Some(best.epoch));
    assert_eq!(resumed.restored_epoch, Some(best.epoch));
    assert_eq!(scores_now(&model, &config6), best.val);

    // A best.safetensors of another epoch than the history's best is
    // refused, not restored.
    let path = dir.join("best.safetensors");
    let (tensors, _) = blaze::record::load_tensors(&path).expect("reads");
    blaze::record::save_tensors(&path, &tensors, &[("format", "pt".into()), ("epoch", "6".into())]).expect("writes");
    let mut model = NormedRegressor::new_seeded(0, &CpuDevice);
    let mut train = DataLoader::new(smooth(64, 1), 16);
    let err =
        fit(&mut model, &mut Sgd::new(0.05), &mut train, &mut DataLoader::new(smooth(32, 3), 32), &config(7, true))
            .expect_err("the wrong epoch's weights");
    let msg = err.to_string();
    assert!(matches!(err, TrainError::Checkpoint { .. }), "{msg}");
    assert!(msg.contains("holds epoch 6") && msg.contains(&format!("is {}", best.epoch)), "{msg}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn max_steps_ends_training_inside_an_epoch() {
    let mut model = Regressor::new_seeded(0, &CpuDevice);
    let config = FitConfig { max_steps: Some(6), ..quiet(Mse, 10) };
    let mut train = DataLoader::new(smooth(64, 1), 16);
    let mut val = DataLoader::new(smooth(32, 3), 32);
    let history = fit(&mut model, &mut Sgd::new(0.05), &mut train, &mut val, &config).expect("trains");
    assert_eq!(history.epochs.iter().map(|e| e.steps).collect::<Vec<_>>(), [4, 2]);
    assert!(history.epochs.iter().all(|e| e.step_seconds > 0.0 && e.val.loss().is_finite()));
}

#[test]
fn settings_fit_cannot_honour_are_errors_before_training() {
    let mut model = Regressor::new_seeded(0, &CpuDevice);
    let before = blaze::nn::state_dict::<Cpu, _>(&model);
    let mut train = DataLoader::new(smooth(16, 1), 8);
    let mut val = DataLoader::new(smooth(8, 3), 8);
    let wrong_metric = FitConfig { monitor: Some("accuracy".into()), ..quiet(Mse, 1) };
    let err = fit(&mut model, &mut Sgd::new(0.1), &mut train, &mut val, &wrong_metric).expect_err("no accuracy");
    assert_eq!(
        err.to_string(),
        "FitConfig: monitor `accuracy` is not a metric of Regression (there are: loss, mae, rmse, r2)"
    );
    let zero = FitConfig { accumulate_grad_batches: 0, ..quiet(Mse, 1) };
    let err = fit(&mut model, &mut Sgd::new(0.1), &mut train, &mut val, &zero).expect_err("zero batches a step");
    assert!(matches!(err, TrainError::Config(_)), "{err}");
    assert_eq!(blaze::nn::state_dict::<Cpu, _>(&model), before);
    // Top-5 accuracy of three classes says nothing and is not recorded.
    let mut three = ThreeWay::new_seeded(0, &CpuDevice);
    let data = InMemoryDataset::new(vec![0.5; 16], &[2], vec![0, 1, 2, 0, 1, 2, 0, 1]).expect("consistent");
    let top5 = FitConfig { monitor: Some("top5_accuracy".into()), ..quiet(CrossEntropy::default(), 1) };
    let err = fit(
        &mut three,
        &mut Sgd::new(0.1),
        &mut DataLoader::new(data.clone(), 4),
        &mut DataLoader::new(data, 4),
        &top5,
    )
    .expect_err("no top-5 of three classes");
    assert!(err.to_string().contains("monitor `top5_accuracy` was not recorded"), "{err}");
}

/// Next-character prediction from the current character alone.
#[model]
pub struct Bigram {
    emb: Embedding<8, 16>,
    head: Linear<16, 8>,
}

#[model(input = [T])]
impl Bigram {
    fn forward(&self, ids: Tensor) -> Tensor {
        self.head(self.emb(ids))
    }
}

#[test]
fn a_language_model_trains_on_text_windows_with_perplexity() {
    // A text where each character fixes the next: perplexity falls to ~1.
    let text = "abcdefgh".repeat(64);
    let vocab = Vocab::chars(&text);
    let data = TextDataset::new(vocab.encode(&text).expect("its own characters"), 16);
    let (train, held) = data.split(0.75);
    let mut model = Bigram::new_seeded(0, &CpuDevice);
    let mut train = DataLoader::new(train, 4).shuffle(1);
    let mut val = DataLoader::new(held, 4);
    let history = fit(&mut model, &mut Adam::new(5e-2), &mut train, &mut val, &quiet(CrossEntropy::default(), 8))
        .expect("trains");
    let last = history.epochs.last().expect("epochs");
    assert_eq!(last.val.names(), ["loss", "perplexity", "accuracy"]);
    assert!(history.epochs[0].train["perplexity"] > 2.0, "{}", history.epochs[0].train);
    assert!(last.val["perplexity"] < 1.2 && last.val["accuracy"] == 1.0, "{}", last.val);
    assert!((last.val["perplexity"] - last.val.loss().exp()).abs() < 1e-9);
    assert!(history.confusion.is_none(), "no confusion matrix over a vocabulary");
}

#[test]
fn a_classifier_ends_with_its_confusion_matrix() {
    let mut model = ThreeWay::new_seeded(0, &CpuDevice);
    let mut rng = Rng::seed_from_u64(4);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..96 {
        let v = [rng.uniform(-1.0, 1.0) as f32, rng.uniform(-1.0, 1.0) as f32];
        y.push(if v[0] > 0.3 {
            0
        } else if v[1] > 0.0 {
            1
        } else {
            2
        });
        x.extend(v);
    }
    let data = InMemoryDataset::new(x, &[2], y).expect("consistent");
    let (mut train, mut val) = (DataLoader::new(data.clone(), 16).shuffle(1), DataLoader::new(data, 32));
    let history = fit(&mut model, &mut Adam::new(5e-2), &mut train, &mut val, &quiet(CrossEntropy::default(), 10))
        .expect("trains");
    let m = history.confusion.as_ref().expect("a classifier's matrix");
    let total: u64 = (0..3).flat_map(|t| (0..3).map(move |p| (t, p))).map(|(t, p)| m.count(t, p)).sum();
    let right: u64 = (0..3).map(|k| m.count(k, k)).sum();
    assert_eq!(total, 96);
    let acc = history.epochs.last().expect("epochs").val["accuracy"];
    assert!((right as f64 / 96.0 - acc).abs() < 1e-12, "the matrix is the last validation pass");
}

/// A CSV table of one feature and a 0/1 label, in a fresh folder.
fn yes_no_csv(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("blaze-fit-tasks-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let path = dir.join("labels.csv");
    let rows: String = (0..16).map(|i| format!("{},{}\n", i as f32 - 7.5, u8::from(i >= 8))).collect();
    std::fs::write(&path, format!("x,label\n{rows}")).expect("writes");
    path
}

#[test]
fn class_labels_for_binary_cross_entropy_say_to_read_them_as_reals() {
    use blaze::data::{CsvOptions, read_csv};
    let path = yes_no_csv("bce");
    let classes = read_csv(&path, &CsvOptions::classes("label")).expect("reads");
    let mut model = Line::new_seeded(0, &CpuDevice);
    let loader = || DataLoader::new(classes.dataset.clone(), 4);
    let err = fit(&mut model, &mut Sgd::new(0.1), &mut loader(), &mut loader(), &quiet(BceWithLogits, 1))
        .expect_err("class indices for binary cross-entropy");
    let msg = err.to_string();
    assert!(matches!(&err, TrainError::RealTargets { task: Task::Binary, rank: 2, .. }), "{msg}");
    assert!(
        msg.starts_with("binary cross-entropy needs real targets shaped like the logits ([n, 1] for one label)"),
        "{msg}"
    );
    assert!(msg.contains("got class indices of shape [4]") && msg.contains("CsvOptions::real(..)"), "{msg}");
    // evaluate says the same.
    let err = evaluate(&model, &mut loader(), &quiet(BceWithLogits, 1)).expect_err("the same targets");
    assert!(matches!(&err, TrainError::RealTargets { .. }), "{err}");
    // A regression loss gets its own words.
    let err = fit(&mut model, &mut Sgd::new(0.1), &mut loader(), &mut loader(), &quiet(Mse, 1)).expect_err("classes");
    assert!(err.to_string().starts_with("a regression loss needs real targets shaped like the output"), "{err}");
    // Read as the hint says, the same labels train.
    let reals = read_csv(&path, &CsvOptions::real("label")).expect("reads");
    let loader = || DataLoader::new(reals.dataset.clone(), 4);
    fit(&mut model, &mut Sgd::new(0.1), &mut loader(), &mut loader(), &quiet(BceWithLogits, 1)).expect("trains");
    std::fs::remove_dir_all(path.parent().expect("a folder")).ok();
}

#[test]
#[should_panic(expected = "binary_cross_entropy_with_logits: needs real targets (0 or 1) in the logits' dtype f32, \
                           got i64 class indices: convert them with .to_dtype(logits.dtype())")]
fn binary_cross_entropy_of_class_indices_says_to_convert_them() {
    let logits = Tensor::<Cpu, 2>::zeros([2, 1], &CpuDevice);
    let labels = Tensor::<Cpu, 2>::from_vec(vec![0i64, 1], [2, 1], &CpuDevice);
    blaze::loss::binary_cross_entropy_with_logits(&logits, &labels);
}

#[test]
#[should_panic(expected = "Embedding<8, 16>: id 9 at [1, 2] of the ids [2, 4] is outside its vocabulary of 8 \
                           (valid ids: 0 to 7)")]
fn an_embedding_names_an_id_outside_its_vocabulary() {
    let model = Bigram::new_seeded(0, &CpuDevice);
    let ids = Tensor::<Cpu, 2>::from_vec(vec![0i64, 1, 2, 3, 4, 5, 9, 7], [2, 4], &CpuDevice);
    model.forward(&ids);
}

#[test]
#[should_panic(expected = "Embedding<8, 16>: id -1 at [0, 1] of the ids [1, 3] is outside its vocabulary of 8")]
fn an_embedding_refuses_negative_ids_while_training() {
    let mut model = Bigram::new_seeded(0, &CpuDevice);
    let ids = Tensor::<Cpu, 2>::from_vec(vec![3i64, -1, 2], [1, 3], &CpuDevice);
    let _ = model.forward_train(&ids, &mut blaze::nn::Ctx::train(0));
}

#[test]
#[should_panic(
    expected = "Embedding<5, 2>: id 5 at [3] of the ids [4] is outside its vocabulary of 5 (valid ids: 0 to 4)"
)]
fn an_embedding_through_the_tape_names_the_id_too() {
    use blaze::autodiff::Autodiff;
    use blaze::nn::Layer;
    let table = blaze::nn::Embedding::<Autodiff<Cpu>, 5, 2>::new(&mut Rng::seed_from_u64(0), &CpuDevice);
    let ids = Tensor::<Autodiff<Cpu>, 1>::from_vec(vec![0i64, 4, 1, 5], [4], &CpuDevice);
    let _: Tensor<Autodiff<Cpu>, 2> = table.forward(&ids);
}
