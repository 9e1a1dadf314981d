//! Data-parallel training over MPI: two ranks under `mpirun` against one
//! process. Each test launches this binary under `mpirun -np 2`, which
//! runs one of the `rank_*` functions in every rank (the environment names
//! it), and checks what they wrote or how the job ended. A binary of its
//! own (`harness = false`, feature `mpi`): a launched rank runs its
//! function and nothing else.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use blaze::autodiff::Autodiff;
use blaze::distributed::World;
use blaze::loss::cross_entropy;
use blaze::nn::{Ctx, ParamMapper, ParamVisitor};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;

#[model(input = [6])]
pub struct Net {
    fc1: Linear<6, 16>,
    act: Relu,
    fc2: Linear<16, 4>,
}

/// The global batch: `GLOBAL` samples, split evenly between the ranks.
const GLOBAL: usize = 8;
const STEPS: usize = 5;
/// Where a rank writes its results; set by the launching test.
const OUT: &str = "BLAZE_DIST_TEST_OUT";
/// The rank function a launched process runs; set by the launching test.
const RANK: &str = "BLAZE_DIST_TEST_RANK";
/// The epochs `rank_fits` trains to; set by the launching test.
const EPOCHS: &str = "BLAZE_DIST_TEST_EPOCHS";

/// Inputs and class targets.
type Samples<B> = (Tensor<B, 2>, Tensor<B, 1>);

fn batch(rows: std::ops::Range<usize>) -> Samples<Cpu> {
    let x: Vec<f32> =
        rows.clone().flat_map(|r| (0..6).map(move |c| ((r * 7 + c * 3) % 11) as f32 / 5.0 - 1.0)).collect();
    let y: Vec<i64> = rows.clone().map(|r| (r % 4) as i64).collect();
    let n = rows.len();
    (Tensor::from_vec(x, [n, 6], &CpuDevice), Tensor::from_vec(y, [n], &CpuDevice))
}

/// Every parameter's values, in visiting order.
fn weights<B: blaze::Backend, M: Module<B>>(model: &M) -> Vec<f32> {
    struct All(Vec<f32>);
    impl<B: blaze::Backend> ParamVisitor<B> for All {
        fn visit<const D: usize>(&mut self, _: &str, t: &Tensor<B, D>) {
            self.0.extend(t.to_vec::<f32>());
        }
    }
    let mut all = All(Vec::new());
    model.visit_params("", &mut all);
    all.0
}

/// Writes `values` where the launching test reads them.
fn write(path: PathBuf, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).expect("writing the weights");
}

/// Asserts that every rank's weights in `out/{stem}{rank}.bin` are `want`'s.
fn assert_ranks_have(out: &Path, stem: &str, want: &[f32], what: &str) {
    for rank in 0..2 {
        let got = read(&out.join(format!("{stem}{rank}.bin")));
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let close = (g - w).abs() <= 1e-5 * w.abs().max(1e-2);
            assert!(close, "{what}, rank {rank}, weight {i}: {g} against {w} alone");
        }
    }
}

/// `STEPS` SGD steps on `(x, y)`, gradients averaged over `world`.
fn train<B: blaze::Backend>(model: &mut Net<B>, world: &World, (x, y): Samples<B>) {
    let mut opt = Sgd::new(0.1);
    let mut ctx = Ctx::train(0);
    for _ in 0..STEPS {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let loss = cross_entropy(&logits, &y, 0.0);
        let mut grads = model.backward_params(&cache, &loss.grad);
        world.average_grads::<B, Net<B>>(&mut grads, 256);
        opt.step(model, &grads);
    }
}

/// [`train`] with each layer's gradients reduced while the backward goes
/// on, in buckets of ten values (so buckets straddle layers).
fn train_overlapped<B: blaze::Backend>(model: &mut Net<B>, world: &World, (x, y): Samples<B>) {
    let mut opt = Sgd::new(0.1);
    let mut ctx = Ctx::train(0);
    for _ in 0..STEPS {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let loss = cross_entropy(&logits, &y, 0.0);
        let grads = world.average_grads_during::<B, Net<B>>(model, 40, |ready| {
            model.backward_params_each(&cache, &loss.grad, ready)
        });
        opt.step(model, &grads);
    }
}

/// A rank of `overlapped_buckets_train_as_one_process`.
fn rank_overlaps_its_half(out: &Path) {
    train_half(out, "overlap", train_overlapped::<Cpu>);
}

fn overlapped_buckets_train_as_one_process() {
    let out = folder("overlap");
    launch_ok("rank_overlaps_its_half", &out, 0, 120);
    let mut alone = Net::<Cpu>::new_seeded(0, &CpuDevice);
    train(&mut alone, &World::single(), batch(0..GLOBAL));
    assert_ranks_have(&out, "overlap", &weights(&alone), "MLP steps, reduced during the backward");
    // A world of one runs the backward and leaves the gradients alone.
    let mut single = Net::<Cpu>::new_seeded(0, &CpuDevice);
    train_overlapped(&mut single, &World::single(), batch(0..GLOBAL));
    assert_eq!(weights(&single), weights(&alone));
    std::fs::remove_dir_all(&out).ok();
}

/// A rank of `half_precision_parameters_and_gradients_cross_ranks`: an f16
/// weight and a bf16 bias, different on each rank, broadcast from rank 0,
/// and per-rank gradients averaged (summed in f32, rounded once).
fn rank_averages_half_gradients(out: &Path) {
    use blaze::nn::{Linear, LinearConfig, LinearGrads};
    let world = World::init().expect("MPI starts");
    let r = world.rank() as f64;
    let mut layer =
        Linear::<Cpu, 2, 3>::new(LinearConfig { bias: true }, &mut blaze::Rng::seed_from_u64(7), &CpuDevice);
    let f16s = |v: Vec<f64>| Tensor::<Cpu, 2>::from_vec(v, [3, 2], &CpuDevice).to_dtype(DType::F16);
    let bf16s = |v: Vec<f64>| Tensor::<Cpu, 1>::from_vec(v, [3], &CpuDevice).to_dtype(DType::BF16);
    layer.weight = f16s((0..6).map(|i| r * 10.0 + i as f64 / 3.0).collect());
    layer.bias = Some(bf16s((0..3).map(|i| -r - i as f64 / 7.0).collect()));
    world.broadcast_module::<Cpu, _>(&mut layer);
    let mut grads = LinearGrads::<Cpu> {
        weight: f16s((0..6).map(|i| (r + 1.0) * 0.1 * i as f64).collect()),
        bias: Some(bf16s((0..3).map(|i| (r + 1.0) / 3.0 + i as f64).collect())),
    };
    world.average_grads::<Cpu, Linear<Cpu, 2, 3>>(&mut grads, 256);
    let bias = layer.bias.as_ref().expect("a bias");
    let grad_bias = grads.bias.as_ref().expect("a bias gradient");
    for (what, t) in [("weight", &layer.weight), ("gradient", &grads.weight)] {
        assert_eq!(t.dtype(), DType::F16, "the {what} stays f16");
    }
    assert_eq!((bias.dtype(), grad_bias.dtype()), (DType::BF16, DType::BF16), "the bias stays bf16");
    let mut all = Vec::new();
    for t in [layer.weight.reshape([6]), bias.clone(), grads.weight.reshape([6]), grad_bias.clone()] {
        all.extend(t.to_dtype(DType::F32).to_vec::<f32>());
    }
    write(out.join(format!("half{}.bin", world.rank())), &all);
}

fn half_precision_parameters_and_gradients_cross_ranks() {
    let out = folder("half");
    launch_ok("rank_averages_half_gradients", &out, 0, 60);
    let f16 = |x: f64| <blaze::f16 as blaze::Element>::from_f64(x).to_f32();
    let bf16 = |x: f64| <blaze::bf16 as blaze::Element>::from_f64(x).to_f32();
    let mut want: Vec<f32> = (0..6).map(|i| f16(i as f64 / 3.0)).collect();
    want.extend((0..3).map(|i| bf16(-(i as f64) / 7.0)));
    // The mean of the two ranks' rounded gradients, rounded once.
    want.extend((0..6).map(|i| f16((f16(0.1 * i as f64) as f64 + f16(0.2 * i as f64) as f64) / 2.0)));
    want.extend((0..3).map(|i| bf16((bf16(1.0 / 3.0 + i as f64) as f64 + bf16(2.0 / 3.0 + i as f64) as f64) / 2.0)));
    for rank in 0..2 {
        assert_eq!(read(&out.join(format!("half{rank}.bin"))), want, "rank {rank}");
    }
    std::fs::remove_dir_all(&out).ok();
}

/// Runs `rank_fn` in two ranks under `mpirun`, with `out` as the results
/// folder and `epochs` in the environment, killing the job after `limit`.
fn launch(rank_fn: &str, out: &Path, epochs: usize, limit: Duration) -> (Output, Duration) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let start = Instant::now();
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(exe)
        .env(RANK, rank_fn)
        .env(OUT, out)
        .env(EPOCHS, epochs.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun runs (Open MPI: apt-get install openmpi-bin)");
    while child.try_wait().expect("waiting for mpirun").is_none() {
        if start.elapsed() > limit {
            child.kill().expect("killing mpirun");
            let out = child.wait_with_output().expect("mpirun's output");
            panic!(
                "{rank_fn}: the job still ran after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (child.wait_with_output().expect("mpirun's output"), start.elapsed())
}

/// [`launch`] for a job that must succeed within `secs` seconds; its stdout.
fn launch_ok(rank_fn: &str, out: &Path, epochs: usize, secs: u64) -> String {
    let (run, _) = launch(rank_fn, out, epochs, Duration::from_secs(secs));
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{rank_fn}: the job failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    stdout
}

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blaze-dist-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

fn read(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect()
}

/// A rank of `two_ranks_train_as_one_process_with_the_global_batch`.
fn rank_trains_its_half(out: &Path) {
    train_half(out, "rank", train::<Cpu>);
}

/// A rank's part of a two-rank job: rank 0's weights trained by `steps`
/// on this rank's half of the global batch, written to
/// `out/{stem}{rank}.bin`.
fn train_half(out: &Path, stem: &str, steps: fn(&mut Net<Cpu>, &World, Samples<Cpu>)) {
    let world = World::init().expect("MPI starts");
    assert_eq!(world.size(), 2, "launched with two ranks");
    // Different starting weights per rank: the broadcast makes them rank 0's.
    let mut model = Net::<Cpu>::new_seeded(world.rank() as u64, &CpuDevice);
    world.broadcast_module::<Cpu, _>(&mut model);
    let half = GLOBAL / world.size();
    steps(&mut model, &world, batch(world.rank() * half..(world.rank() + 1) * half));
    write(out.join(format!("{stem}{}.bin", world.rank())), &weights(&model));
}

fn two_ranks_train_as_one_process_with_the_global_batch() {
    let out = folder("train");
    launch_ok("rank_trains_its_half", &out, 0, 120);
    let mut alone = Net::<Cpu>::new_seeded(0, &CpuDevice);
    let before = weights(&alone);
    train(&mut alone, &World::single(), batch(0..GLOBAL));
    let want = weights(&alone);
    assert!(want.iter().zip(&before).any(|(a, b)| a != b), "the steps changed the weights");
    assert_ranks_have(&out, "rank", &want, "MLP steps");
    std::fs::remove_dir_all(&out).ok();
}

/// A rank of `a_panicking_rank_ends_the_job_promptly`.
fn rank_one_panics(_out: &Path) {
    let world = World::init().expect("MPI starts");
    if world.rank() == 1 {
        panic!("rank 1 gives up");
    }
    // Rank 0 waits in a collective that rank 1 never joins.
    let mut v = [1.0];
    world.all_reduce_sum(&mut v);
}

fn a_panicking_rank_ends_the_job_promptly() {
    let out = folder("panic");
    let (run, took) = launch("rank_one_panics", &out, 0, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the job succeeded:\n{stderr}");
    assert!(took < Duration::from_secs(30), "the job took {took:?} to end");
    assert!(stderr.contains("rank 1 gives up") && stderr.contains("rank 1 panicked"), "stderr:\n{stderr}");
    std::fs::remove_dir_all(&out).ok();
}

/// A rank of `a_killed_rank_ends_the_job_promptly`.
fn rank_one_is_killed(_out: &Path) {
    let world = World::init().expect("MPI starts");
    if world.rank() == 1 {
        let pid = std::process::id().to_string();
        Command::new("kill").args(["-9", &pid]).status().expect("kill runs");
        std::thread::sleep(Duration::from_secs(60));
    }
    let mut v = [1.0];
    world.all_reduce_sum(&mut v);
}

fn a_killed_rank_ends_the_job_promptly() {
    let out = folder("kill");
    let (run, took) = launch("rank_one_is_killed", &out, 0, Duration::from_secs(60));
    assert!(!run.status.success(), "the job succeeded:\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(took < Duration::from_secs(30), "the job took {took:?} to end");
    std::fs::remove_dir_all(&out).ok();
}

fn a_world_of_one_without_mpirun() {
    // This test process was not launched by mpirun (unless a launcher's
    // variables leaked into the test environment, which the check names).
    let world = World::init().expect("a world of one");
    assert_eq!((world.rank(), world.size(), world.is_main()), (0, 1, true), "{world:?}");
    let mut v = [2.0, 3.0];
    world.all_reduce_sum(&mut v);
    assert_eq!(v, [2.0, 3.0]);
}

/// The toy classification data `fit` trains on: 32 samples, 6 features, 4 classes.
fn toy() -> blaze::data::InMemoryDataset {
    let x: Vec<f32> = (0..32 * 6).map(|i| ((i * 7 % 13) as f32 / 6.0) - 1.0).collect();
    let y: Vec<i64> = (0..32).map(|i| (i * 5 % 4) as i64).collect();
    blaze::data::InMemoryDataset::new(x, &[6], y).expect("consistent toy data")
}

/// `epochs` of `fit` with `batch` samples a batch (per rank when
/// data-parallel), checkpoints in `dir`.
fn fit_toy<B, M>(
    model: &mut M,
    batch: usize,
    epochs: usize,
    dir: Option<PathBuf>,
    data_parallel: Option<blaze::distributed::DataParallel>,
) -> blaze::train::History
where
    B: blaze::Backend<Device = CpuDevice>,
    M: blaze::train::Trainable<B, 2, 2>,
{
    use blaze::data::DataLoader;
    use blaze::train::{FitConfig, fit};
    let mut train = DataLoader::new(toy(), batch).shuffle(5);
    let mut val = DataLoader::new(toy(), 8);
    let resume = dir.is_some();
    // The ranks print (the test reads rank 0's lines); a reference run does not.
    let verbose = data_parallel.is_some();
    let config = FitConfig { epochs, out_dir: dir, resume, verbose, data_parallel, ..FitConfig::default() };
    let mut opt = Sgd::new(0.1);
    fit(model, &mut opt, &mut train, &mut val, &config).expect("fit trains")
}

/// A rank of `fit_on_two_ranks_trains_as_one_process_and_resumes`.
fn rank_fits(out: &Path) {
    let epochs: usize = std::env::var(EPOCHS).expect("epochs").parse().expect("a number");
    let world = std::sync::Arc::new(World::init().expect("MPI starts"));
    let rank = world.rank();
    let mut model = Net::<Cpu>::new_seeded(rank as u64, &CpuDevice);
    let dp = blaze::distributed::DataParallel::new(world);
    let history = fit_toy(&mut model, 4, epochs, Some(out.join("run")), Some(dp));
    assert_eq!(history.epochs.len(), epochs);
    write(out.join(format!("fit{rank}.bin")), &weights(&model));
}

fn fit_on_two_ranks_trains_as_one_process_and_resumes() {
    let out = folder("fit");
    for epochs in [2, 3] {
        let stdout = launch_ok("rank_fits", &out, epochs, 120);
        // Rank 0 alone prints: one line for the last epoch; the second run
        // resumed after epoch 2.
        let last = format!("epoch {epochs:>3}:");
        assert_eq!(stdout.matches(&last).count(), 1, "stdout:\n{stdout}");
        assert_eq!(stdout.contains("resumed from"), epochs == 3, "stdout:\n{stdout}");
        assert!(out.join("run/last.safetensors").exists() && out.join("run/best.safetensors").exists());
        // One process with the global batch (twice the per-rank one).
        let mut alone = Net::<Cpu>::new_seeded(0, &CpuDevice);
        fit_toy(&mut alone, 8, epochs, None, None);
        assert_ranks_have(&out, "fit", &weights(&alone), &format!("fit, {epochs} epochs"));
    }
    // The two ranks' checkpoint resumes in one process at the global batch.
    let mut resumed = Net::<Cpu>::new_seeded(7, &CpuDevice);
    fit_toy(&mut resumed, 8, 4, Some(out.join("run")), None);
    let mut alone = Net::<Cpu>::new_seeded(0, &CpuDevice);
    fit_toy(&mut alone, 8, 4, None, None);
    let (got, want) = (weights(&resumed), weights(&alone));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1e-2), "resumed alone, weight {i}: {g} against {w}");
    }
    std::fs::remove_dir_all(&out).ok();
}

/// A hand-written model, trained through the tape.
#[derive(blaze::Module, Clone, Debug)]
pub struct Hand<B: blaze::Backend> {
    fc1: blaze::nn::Linear<B, 6, 16>,
    fc2: blaze::nn::Linear<B, 16, 4>,
}

impl<B: blaze::Backend> blaze::train::TapedForward<B, 2, 2> for Hand<Autodiff<B>> {
    fn forward(&self, x: &Tensor<Autodiff<B>, 2>, _train: bool) -> Tensor<Autodiff<B>, 2> {
        self.fc2.forward(&self.fc1.forward(x).tanh())
    }
}

fn hand(seed: u64) -> blaze::train::Taped<Hand<Autodiff<Cpu>>> {
    let (c, rng) = (blaze::nn::LinearConfig::default(), &mut blaze::Rng::seed_from_u64(seed));
    blaze::train::Taped(Hand {
        fc1: blaze::nn::Linear::new(c, rng, &CpuDevice),
        fc2: blaze::nn::Linear::new(c, rng, &CpuDevice),
    })
}

/// A rank of `a_tape_trained_model_on_two_ranks_trains_as_one_process`.
fn rank_fits_by_tape(out: &Path) {
    let world = std::sync::Arc::new(World::init().expect("MPI starts"));
    let rank = world.rank();
    let mut model = hand(rank as u64);
    fit_toy(&mut model, 4, 2, None, Some(blaze::distributed::DataParallel::new(world)));
    write(out.join(format!("tape{rank}.bin")), &weights(&model.0));
}

fn a_tape_trained_model_on_two_ranks_trains_as_one_process() {
    let out = folder("tape");
    launch_ok("rank_fits_by_tape", &out, 0, 120);
    let mut alone = hand(0);
    fit_toy(&mut alone, 8, 2, None, None);
    assert_ranks_have(&out, "tape", &weights(&alone.0), "tape-trained");
    std::fs::remove_dir_all(&out).ok();
}

/// A CNN with batch normalisation: each rank normalises with its own
/// batch's statistics and keeps its own running statistics, as PyTorch's
/// DistributedDataParallel does without SyncBatchNorm; the parameters
/// stay equal because the gradients are averaged.
#[model(input = [1, 6, 6])]
pub struct BnNet {
    conv: Conv2d<1, 4, 3>,
    bn: BatchNorm2d<4>,
    act: Relu,
    flat: Flatten,
    fc: Linear<64, 4>,
}

fn images(rows: std::ops::Range<usize>) -> (Tensor<Cpu, 4>, Tensor<Cpu, 1>) {
    let x: Vec<f32> =
        rows.clone().flat_map(|r| (0..36).map(move |c| ((r * 5 + c * 7) % 13) as f32 / 6.0 - 1.0)).collect();
    let y: Vec<i64> = rows.clone().map(|r| (r % 4) as i64).collect();
    let n = rows.len();
    (Tensor::from_vec(x, [n, 1, 6, 6], &CpuDevice), Tensor::from_vec(y, [n], &CpuDevice))
}

/// The gradients of `model` on rows `rows` of the global image batch.
fn bn_grads(model: &mut BnNet<Cpu>, rows: std::ops::Range<usize>) -> <BnNet<Cpu> as blaze::nn::Module<Cpu>>::Grads {
    let (x, y) = images(rows);
    let (logits, cache) = model.forward_train(&x, &mut Ctx::train(0));
    model.backward_params(&cache, &cross_entropy(&logits, &y, 0.0).grad)
}

/// A rank of `a_batchnorm_cnn_on_two_ranks_averages_per_rank_gradients`.
fn rank_trains_a_batchnorm_cnn(out: &Path) {
    let world = World::init().expect("MPI starts");
    let rank = world.rank();
    let mut model = BnNet::<Cpu>::new_seeded(rank as u64, &CpuDevice);
    world.broadcast_module::<Cpu, _>(&mut model);
    let mut opt = Sgd::new(0.1);
    let half = GLOBAL / 2;
    for _ in 0..STEPS {
        let mut grads = bn_grads(&mut model, rank * half..(rank + 1) * half);
        world.average_grads::<Cpu, BnNet<Cpu>>(&mut grads, 256);
        opt.step(&mut model, &grads);
    }
    write(out.join(format!("bn{rank}.bin")), &weights(&model));
}

fn a_batchnorm_cnn_on_two_ranks_averages_per_rank_gradients() {
    let out = folder("bn");
    launch_ok("rank_trains_a_batchnorm_cnn", &out, 0, 120);
    // One process: each half's gradients (with that half's statistics),
    // averaged.
    let mut alone = BnNet::<Cpu>::new_seeded(0, &CpuDevice);
    let mut opt = Sgd::new(0.1);
    let half = GLOBAL / 2;
    for _ in 0..STEPS {
        let (a, b) = (bn_grads(&mut alone, 0..half), bn_grads(&mut alone, half..GLOBAL));
        opt.step(&mut alone, &mean_of::<BnNet<Cpu>>(a, &b));
    }
    assert_ranks_have(&out, "bn", &weights(&alone), "BatchNorm CNN");
    std::fs::remove_dir_all(&out).ok();
}

/// The elementwise mean of two models' gradients.
fn mean_of<M: blaze::nn::Module<Cpu>>(mut a: M::Grads, b: &M::Grads) -> M::Grads {
    struct Flat(Vec<Vec<f32>>);
    impl ParamVisitor<Cpu> for Flat {
        fn visit<const D: usize>(&mut self, _: &str, t: &Tensor<Cpu, D>) {
            self.0.push(t.to_vec::<f32>());
        }
    }
    struct Mean(std::vec::IntoIter<Vec<f32>>);
    impl ParamMapper<Cpu> for Mean {
        fn map<const D: usize>(&mut self, _: &str, t: Tensor<Cpu, D>) -> Tensor<Cpu, D> {
            let other = self.0.next().expect("as many gradients");
            let mean = t.to_vec::<f32>().iter().zip(&other).map(|(x, y)| (x + y) / 2.0).collect();
            Tensor::from_vec(mean, t.shape(), &CpuDevice)
        }
    }
    let mut flat = Flat(Vec::new());
    M::visit_grad_tensors(b, "", &mut flat);
    M::map_grad_tensors(&mut a, "", &mut Mean(flat.0.into_iter()));
    a
}

/// A rank of `two_ranks_on_wgpu_train_as_one_process_on_the_cpu`.
#[cfg(feature = "wgpu")]
fn rank_trains_its_half_on_wgpu(out: &Path) {
    use blaze::wgpu::{Wgpu, WgpuDevice};
    let world = World::init().expect("MPI starts");
    let dev = WgpuDevice::new().expect("a wgpu adapter (Mesa's lavapipe under CI)");
    let mut model = Net::<Wgpu>::new_seeded(world.rank() as u64, &dev);
    world.broadcast_module::<Wgpu, _>(&mut model);
    let half = GLOBAL / 2;
    let (x, y) = batch(world.rank() * half..(world.rank() + 1) * half);
    let x = Tensor::<Wgpu, 2>::from_data(x.to_data(), &dev).expect("inputs on the device");
    let y = Tensor::<Wgpu, 1>::from_data(y.to_data(), &dev).expect("targets on the device");
    // Averaged after the backward, and during it.
    let mut during = model.clone();
    train(&mut model, &world, (x.clone(), y.clone()));
    write(out.join(format!("wgpu{}.bin", world.rank())), &weights(&model));
    train_overlapped(&mut during, &world, (x, y));
    write(out.join(format!("wgpu-during{}.bin", world.rank())), &weights(&during));
}

#[cfg(feature = "wgpu")]
fn two_ranks_on_wgpu_train_as_one_process_on_the_cpu() {
    // Skips without an adapter, unless BLAZE_REQUIRE_WGPU=1 makes that a failure.
    if blaze::wgpu::WgpuDevice::probe().is_none() {
        return;
    }
    let out = folder("wgpu");
    launch_ok("rank_trains_its_half_on_wgpu", &out, 0, 180);
    let mut alone = Net::<Cpu>::new_seeded(0, &CpuDevice);
    train(&mut alone, &World::single(), batch(0..GLOBAL));
    let want = weights(&alone);
    for (rank, stem) in [(0, "wgpu"), (1, "wgpu"), (0, "wgpu-during"), (1, "wgpu-during")] {
        let got = read(&out.join(format!("{stem}{rank}.bin")));
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-4 * w.abs().max(1e-1), "{stem}, rank {rank}, weight {i}: {g} against {w}");
        }
    }
    std::fs::remove_dir_all(&out).ok();
}

type Case = (&'static str, fn());
type Rank = (&'static str, fn(&Path));

/// The tests, and the rank functions they launch.
fn cases() -> (Vec<Case>, Vec<Rank>) {
    #[cfg_attr(not(feature = "wgpu"), allow(unused_mut, reason = "the wgpu case joins with feature wgpu"))]
    let mut tests: Vec<Case> = vec![
        ("two_ranks_train_as_one_process_with_the_global_batch", two_ranks_train_as_one_process_with_the_global_batch),
        ("overlapped_buckets_train_as_one_process", overlapped_buckets_train_as_one_process),
        ("a_panicking_rank_ends_the_job_promptly", a_panicking_rank_ends_the_job_promptly),
        ("a_killed_rank_ends_the_job_promptly", a_killed_rank_ends_the_job_promptly),
        ("a_world_of_one_without_mpirun", a_world_of_one_without_mpirun),
        ("half_precision_parameters_and_gradients_cross_ranks", half_precision_parameters_and_gradients_cross_ranks),
        ("fit_on_two_ranks_trains_as_one_process_and_resumes", fit_on_two_ranks_trains_as_one_process_and_resumes),
        (
            "a_tape_trained_model_on_two_ranks_trains_as_one_process",
            a_tape_trained_model_on_two_ranks_trains_as_one_process,
        ),
        (
            "a_batchnorm_cnn_on_two_ranks_averages_per_rank_gradients",
            a_batchnorm_cnn_on_two_ranks_averages_per_rank_gradients,
        ),
    ];
    #[cfg_attr(not(feature = "wgpu"), allow(unused_mut, reason = "the wgpu rank joins with feature wgpu"))]
    let mut ranks: Vec<Rank> = vec![
        ("rank_trains_its_half", rank_trains_its_half),
        ("rank_overlaps_its_half", rank_overlaps_its_half),
        ("rank_one_panics", rank_one_panics),
        ("rank_one_is_killed", rank_one_is_killed),
        ("rank_fits", rank_fits),
        ("rank_averages_half_gradients", rank_averages_half_gradients),
        ("rank_fits_by_tape", rank_fits_by_tape),
        ("rank_trains_a_batchnorm_cnn", rank_trains_a_batchnorm_cnn),
    ];
    #[cfg(feature = "wgpu")]
    {
        tests.push((
            "two_ranks_on_wgpu_train_as_one_process_on_the_cpu",
            two_ranks_on_wgpu_train_as_one_process_on_the_cpu,
        ));
        ranks.push(("rank_trains_its_half_on_wgpu", rank_trains_its_half_on_wgpu));
    }
    (tests, ranks)
}

/// A launched rank runs its function; otherwise every test whose name
/// contains the first argument that is not a flag runs, one after another,
/// with a summary in libtest's words.
fn main() {
    let (tests, ranks) = cases();
    if let (Some(out), Ok(name)) = (std::env::var_os(OUT), std::env::var(RANK)) {
        let (_, rank) = ranks.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no rank function `{name}`"));
        rank(Path::new(&out));
        return;
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let chosen: Vec<&Case> = tests.iter().filter(|(name, _)| name.contains(&filter)).collect();
    println!("\nrunning {} tests", chosen.len());
    let mut failed = Vec::new();
    for (name, test) in chosen.iter().copied() {
        let passed = std::panic::catch_unwind(test).is_ok();
        println!("test {name} ... {}", if passed { "ok" } else { "FAILED" });
        if !passed {
            failed.push(*name);
        }
    }
    let verdict = if failed.is_empty() { "ok" } else { "FAILED" };
    println!("\ntest result: {verdict}. {} passed; {} failed\n", chosen.len() - failed.len(), failed.len());
    if !failed.is_empty() {
        println!("failures: {}", failed.join(", "));
        std::process::exit(1);
    }
}
