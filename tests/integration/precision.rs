//! Mixed precision: `#[model(precision = ..)]` runs its passes' products
//! as `autocast` does around the same model without it, lists which
//! round in `FUSION`, and `fit` trains in bf16, and in f16 with loss
//! scaling, keeping f32 weights.

use blaze::data::{DataLoader, InMemoryDataset};
use blaze::optim::Adam;
use blaze::prelude::*;
use blaze::runtime::DataVec;
use blaze::train::{FitConfig, History, Mse, fit};
use blaze::{Cpu, Rng};

#[model(input = [64], precision = bf16)]
pub struct Mlp16 {
    fc1: Linear<64, 96>,
    act: Relu,
    fc2: Linear<96, 10>,
}

#[model(input = [64])]
pub struct Mlp32 {
    fc1: Linear<64, 96>,
    act: Relu,
    fc2: Linear<96, 10>,
}

#[model]
pub struct Mixer16 {
    ln: LayerNorm<64>,
    #[layer(causal = true)]
    attn: MultiHeadAttention<64, 4>,
    fc: Linear<64, 64>,
}

#[model(input = [T, 64], precision = bf16)]
impl Mixer16 {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = x + self.attn(self.ln(x));
        let mixed = softmax(h.matmul(h.transpose(0, 1)) / 8.0, -1).matmul(h);
        self.fc(mixed)
    }
}

#[model]
pub struct Mixer32 {
    ln: LayerNorm<64>,
    #[layer(causal = true)]
    attn: MultiHeadAttention<64, 4>,
    fc: Linear<64, 64>,
}

#[model(input = [T, 64])]
impl Mixer32 {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = x + self.attn(self.ln(x));
        let mixed = softmax(h.matmul(h.transpose(0, 1)) / 8.0, -1).matmul(h);
        self.fc(mixed)
    }
}

fn bits<const D: usize>(t: &Tensor<Cpu, D>) -> Vec<u32> {
    t.to_vec::<f32>().iter().map(|v| v.to_bits()).collect()
}

fn randn<const D: usize>(shape: [usize; D], seed: u64) -> Tensor<Cpu, D> {
    Tensor::normal_with(shape, 0.0, 1.0, &mut Rng::seed_from_u64(seed), &CpuDevice)
}

#[test]
fn a_sequential_model_with_a_precision_computes_as_autocast_does() {
    let (m16, mut m32) = (Mlp16::<Cpu>::new_seeded(1, &CpuDevice), Mlp32::<Cpu>::new_seeded(1, &CpuDevice));
    let mut m16 = m16;
    let x = randn([48, 64], 2);
    let rounded = autocast(Precision::Bf16, || m32.forward(&x));
    assert_eq!(bits(&m16.forward(&x)), bits(&rounded), "forward");
    // Its own precision wins over the caller's scope.
    assert_eq!(bits(&autocast(Precision::F32, || m16.forward(&x))), bits(&rounded), "forward inside f32");
    assert_ne!(bits(&m32.forward(&x)), bits(&rounded), "f32 and bf16 products give the same bits");

    let g = randn([48, 10], 3);
    let (y16, c16) = m16.forward_train(&x, &mut Ctx::train(0));
    let (_, c32) = autocast(Precision::Bf16, || m32.forward_train(&x, &mut Ctx::train(0)));
    let (dx16, g16) = m16.backward(&c16, &g);
    let (dx32, g32) = autocast(Precision::Bf16, || m32.backward(&c32, &g));
    assert_eq!(bits(&y16), bits(&rounded));
    assert_eq!(bits(&dx16), bits(&dx32), "input gradient");
    assert_eq!(bits(&g16.fc1.weight), bits(&g32.fc1.weight), "fc1's weight gradient");
    assert_eq!(bits(&g16.fc2.weight), bits(&g32.fc2.weight), "fc2's weight gradient");
    assert_eq!(m16.fc1.weight.dtype(), DType::F32, "master weights stay f32");

    assert_eq!(Mlp16::<Cpu>::FUSION.precision, Some(Precision::Bf16));
    assert_eq!(Mlp32::<Cpu>::FUSION.precision, None);
    assert_eq!(Mlp16::<Cpu>::FUSION.products, ["fc1: bf16", "fc2: bf16, but g W f32 (depth 10 < 32)"]);
    let summary = m16.summary();
    assert!(summary.contains("Products in bf16 (operands rounded, f32 sums; the rest f32):"), "{summary}");
    assert!(summary.contains("  fc2: bf16, but g W f32 (depth 10 < 32)"), "{summary}");
}

#[test]
fn a_graph_model_with_a_precision_computes_as_autocast_does() {
    let (m16, m32) = (Mixer16::<Cpu>::new_seeded(4, &CpuDevice), Mixer32::<Cpu>::new_seeded(4, &CpuDevice));
    let (mut m16, mut m32) = (m16, m32);
    let x = randn([2, 40, 64], 5);
    let rounded = autocast(Precision::Bf16, || m32.forward(&x));
    assert_eq!(bits(&m16.forward(&x)), bits(&rounded), "forward");
    assert_ne!(bits(&m32.forward(&x)), bits(&rounded), "f32 and bf16 products give the same bits");
    let g = randn([2, 40, 64], 6);
    let (_, c16) = m16.forward_train(&x, &mut Ctx::train(0));
    let (_, c32) = autocast(Precision::Bf16, || m32.forward_train(&x, &mut Ctx::train(0)));
    let (dx16, g16) = m16.backward(&c16, &g);
    let (dx32, g32) = autocast(Precision::Bf16, || m32.backward(&c32, &g));
    assert_eq!(bits(&dx16), bits(&dx32), "input gradient");
    assert_eq!(bits(&g16.attn.in_proj_weight), bits(&g32.attn.in_proj_weight), "attention's weight gradient");
    assert_eq!(
        Mixer16::<Cpu>::FUSION.products,
        [
            "attn: bf16, but per-head scores f32 (depth 16 < 32)",
            "matmul [T, 64] x [64, T]: bf16",
            "matmul [T, T] x [T, 64]: bf16",
            "fc: bf16",
        ]
    );
}

#[model(input = [4, 12, 12], precision = bf16)]
pub struct Cnn16 {
    conv: Conv2d<4, 48, 3>,
    act: Relu,
    pool: MaxPool2d<2>,
    flat: Flatten,
    fc: Linear<1200, 10>,
}

#[model(input = [4, 12, 12])]
pub struct Cnn32 {
    conv: Conv2d<4, 48, 3>,
    act: Relu,
    pool: MaxPool2d<2>,
    flat: Flatten,
    fc: Linear<1200, 10>,
}

#[test]
fn a_convolution_under_a_precision_computes_as_autocast_does() {
    let (mut m16, mut m32) = (Cnn16::<Cpu>::new_seeded(3, &CpuDevice), Cnn32::<Cpu>::new_seeded(3, &CpuDevice));
    let x = randn([6, 4, 12, 12], 4);
    let rounded = autocast(Precision::Bf16, || m32.forward(&x));
    assert_eq!(bits(&m16.forward(&x)), bits(&rounded), "forward");
    assert_ne!(bits(&m32.forward(&x)), bits(&rounded), "f32 and bf16 convolutions give the same bits");
    let g = randn([6, 10], 5);
    let (_, c16) = m16.forward_train(&x, &mut Ctx::train(0));
    let (_, c32) = autocast(Precision::Bf16, || m32.forward_train(&x, &mut Ctx::train(0)));
    let (dx16, g16) = m16.backward(&c16, &g);
    let (dx32, g32) = autocast(Precision::Bf16, || m32.backward(&c32, &g));
    assert_eq!(bits(&dx16), bits(&dx32), "input gradient");
    assert_eq!(bits(&g16.conv.weight), bits(&g32.conv.weight), "the convolution's weight gradient");
    assert_eq!(Cnn16::<Cpu>::FUSION.products, ["conv: bf16", "fc: bf16, but g W f32 (depth 10 < 32)"]);
}

/// Three classes told apart by which of the first three of 64 inputs is
/// largest.
fn blobs(n: usize, seed: u64) -> InMemoryDataset {
    let mut rng = Rng::seed_from_u64(seed);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let v: Vec<f32> = (0..64).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
        y.push((0..3).max_by(|&a, &b| v[a].total_cmp(&v[b])).expect("three") as i64);
        x.extend(v);
    }
    InMemoryDataset::new(x, &[64], y).expect("consistent")
}

fn train(precision: Precision) -> (Mlp32<Cpu>, History) {
    let mut model = Mlp32::<Cpu>::new_seeded(7, &CpuDevice);
    let mut train = DataLoader::new(blobs(2048, 8), 32).shuffle(9);
    let mut val = DataLoader::new(blobs(256, 10), 64);
    let config = FitConfig { epochs: 5, precision, verbose: false, ..FitConfig::default() };
    let history = fit(&mut model, &mut Adam::new(3e-3), &mut train, &mut val, &config).expect("trains");
    (model, history)
}

#[test]
fn fit_trains_in_each_precision_with_f32_weights() {
    let accuracy = |h: &History| h.epochs.last().expect("epochs").val.get("accuracy").expect("accuracy");
    let (m32, h32) = train(Precision::F32);
    for precision in [Precision::Bf16, Precision::F16] {
        let (m, h) = train(precision);
        assert!(accuracy(&h) > 0.85, "{precision}: validation accuracy {}", accuracy(&h));
        assert!(
            (accuracy(&h) - accuracy(&h32)).abs() < 0.05,
            "{precision}: {} against f32's {}",
            accuracy(&h),
            accuracy(&h32)
        );
        assert_eq!(m.fc1.weight.dtype(), DType::F32, "{precision}: master weights");
        assert_ne!(bits(&m.fc1.weight), bits(&m32.fc1.weight), "{precision} trained the same bits as f32");
    }
}

#[model(input = [64])]
pub struct Regression {
    fc: Linear<64, 32>,
    act: Relu,
    out: Linear<32, 1>,
}

/// `n` samples of 64 inputs whose target, `100 (x0 - x1)`, gives gradients
/// that the first loss scale (2^16) lifts past f16's largest value.
fn regression(n: usize, seed: u64) -> InMemoryDataset {
    let mut rng = Rng::seed_from_u64(seed);
    let x: Vec<f32> = (0..n * 64).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    let y: Vec<f32> = x.chunks(64).map(|s| 100.0 * (s[0] - s[1])).collect();
    InMemoryDataset::with_targets(x, &[64], DataVec::F32(y), &[1]).expect("consistent")
}

/// f16 products with gradients that the first loss scale (2^16) lifts
/// past f16's largest value: the scale backs off, the overflowing steps
/// are skipped (not stopped at, as a non-finite gradient would be), and
/// the model still learns.
#[test]
fn f16_loss_scaling_backs_off_on_overflow_and_trains() {
    use blaze::train::tensorboard::{EventValue, read_events};
    let dir = std::env::temp_dir().join(format!("blaze-f16-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut model = Regression::<Cpu>::new_seeded(11, &CpuDevice);
    let (mut train, mut val) =
        (DataLoader::new(regression(1024, 12), 32).shuffle(13), DataLoader::new(regression(256, 14), 64));
    let config = FitConfig {
        epochs: 4,
        precision: Precision::F16,
        tensorboard: Some(dir.clone()),
        verbose: false,
        ..FitConfig::new(Mse)
    };
    let history = fit(&mut model, &mut Adam::new(3e-2), &mut train, &mut val, &config).expect("trains");
    let files: Vec<_> = std::fs::read_dir(&dir).expect("the log folder").map(|e| e.expect("entry").path()).collect();
    let events = read_events(&files[0]).expect("the events read back");
    let scales: Vec<f64> = events
        .iter()
        .filter_map(|e| match &e.value {
            EventValue::Scalar { tag, value } if tag == "step/loss_scale" => Some(f64::from(*value)),
            _ => None,
        })
        .collect();
    let taken = scales.len();
    assert!(taken < 4 * 32 && taken > 3 * 32, "{taken} of 128 steps taken");
    assert!(scales.iter().all(|&s| s < 65536.0 && s.log2().fract() == 0.0), "scales {scales:?}");
    let losses: Vec<f64> = history.epochs.iter().map(|e| e.val.loss()).collect();
    assert!(losses[3] < losses[0] / 4.0, "validation losses {losses:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A checkpoint holds f32 weights whatever the precision: a bf16 run
/// resumes in f32 (and back) from it, and the weights it saves load into
/// a model of either.
#[test]
fn checkpoints_resume_across_precisions() {
    let dir = std::env::temp_dir().join(format!("blaze-precision-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |epochs: usize, precision: Precision, resume: bool| {
        let mut model = Mlp32::<Cpu>::new_seeded(7, &CpuDevice);
        let mut train = DataLoader::new(blobs(512, 8), 32).shuffle(9);
        let mut val = DataLoader::new(blobs(128, 10), 64);
        let config =
            FitConfig { epochs, precision, out_dir: Some(dir.clone()), resume, verbose: false, ..FitConfig::default() };
        let history = fit(&mut model, &mut Adam::new(3e-3), &mut train, &mut val, &config).expect("trains");
        (model, history)
    };
    run(2, Precision::Bf16, false);
    let (model, history) = run(3, Precision::F32, true);
    assert_eq!(history.epochs.len(), 3, "the resumed run continues the bf16 one");
    let (_, history) = run(4, Precision::Bf16, true);
    assert_eq!(history.epochs.len(), 4);
    let mut loaded = Mlp16::<Cpu>::new_seeded(0, &CpuDevice);
    blaze::record::load_model(&mut loaded, &dir.join("best.safetensors")).expect("loads into the bf16 model");
    assert_eq!(loaded.fc1.weight.dtype(), DType::F32);
    assert_eq!(model.fc1.weight.dtype(), DType::F32);
    std::fs::remove_dir_all(&dir).ok();
}

/// An f16 run's loss scale is kept in its checkpoint: a resumed run goes
/// on at the scale the interrupted one had reached, not at 2^16.
#[test]
fn a_resumed_f16_run_keeps_its_loss_scale() {
    use blaze::train::GradScaler;
    use blaze::train::tensorboard::{EventValue, read_events};
    let root = std::env::temp_dir().join(format!("blaze-f16-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let run = |epochs: usize, board: &str| {
        let mut model = Regression::<Cpu>::new_seeded(11, &CpuDevice);
        let (mut train, mut val) =
            (DataLoader::new(regression(512, 12), 32).shuffle(13), DataLoader::new(regression(128, 14), 64));
        let config = FitConfig {
            epochs,
            precision: Precision::F16,
            out_dir: Some(root.join("out")),
            resume: true,
            tensorboard: Some(root.join(board)),
            verbose: false,
            ..FitConfig::new(Mse)
        };
        fit(&mut model, &mut Adam::new(3e-2), &mut train, &mut val, &config).expect("trains");
    };
    let scales = |board: &str| -> Vec<f64> {
        let dir = root.join(board);
        let file = std::fs::read_dir(&dir).expect("the log folder").next().expect("one file").expect("entry").path();
        read_events(&file)
            .expect("the events read back")
            .iter()
            .filter_map(|e| match &e.value {
                EventValue::Scalar { tag, value } if tag == "step/loss_scale" => Some(f64::from(*value)),
                _ => None,
            })
            .collect()
    };
    run(2, "first");
    let (_, meta) = blaze::record::load_tensors(&root.join("out/last.safetensors")).expect("the checkpoint");
    let kept = GradScaler::decode(meta.get("loss_scale").expect("the loss scale in the metadata")).expect("readable");
    let first = scales("first");
    assert_eq!(Some(kept.scale()), first.last().copied(), "the checkpoint keeps the last step's scale");
    assert!(kept.scale() < 65536.0, "the first run backed off: {first:?}");
    run(3, "second");
    let resumed = scales("second");
    // Every step of the resumed epoch (16 batches) is taken at the kept
    // scale: none is spent backing off from 2^16 again (four were).
    assert_eq!(resumed, vec![kept.scale(); 16], "kept {}", kept.scale());
    std::fs::remove_dir_all(&root).ok();
}
