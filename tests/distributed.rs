//! Data-parallel training over MPI: two ranks under `mpirun` against one
//! process. Each test launches this test binary under `mpirun -np 2`,
//! running one of the `rank_*` functions (ignored in a plain run) in every
//! rank, and checks what they wrote or how the job ended.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use blaze::distributed::World;
use blaze::loss::cross_entropy;
use blaze::nn::{Ctx, ParamVisitor};
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
/// The epochs `rank_fits` trains to; set by the launching test.
const EPOCHS: &str = "BLAZE_DIST_TEST_EPOCHS";

fn batch(rows: std::ops::Range<usize>) -> (Tensor<Cpu, 2>, Tensor<Cpu, 1>) {
    let x: Vec<f32> =
        rows.clone().flat_map(|r| (0..6).map(move |c| ((r * 7 + c * 3) % 11) as f32 / 5.0 - 1.0)).collect();
    let y: Vec<i64> = rows.clone().map(|r| (r % 4) as i64).collect();
    let n = rows.len();
    (Tensor::from_vec(x, [n, 6], &CpuDevice), Tensor::from_vec(y, [n], &CpuDevice))
}

/// Every parameter's values, in visiting order.
fn weights(model: &Net<Cpu>) -> Vec<f32> {
    struct All(Vec<f32>);
    impl ParamVisitor<Cpu> for All {
        fn visit<const D: usize>(&mut self, _: &str, t: &Tensor<Cpu, D>) {
            self.0.extend(t.to_vec::<f32>());
        }
    }
    let mut all = All(Vec::new());
    model.visit_params("", &mut all);
    all.0
}

/// `STEPS` SGD steps on rows `rows` of every global batch, gradients
/// averaged over `world`.
fn train(model: &mut Net<Cpu>, world: &World, rows: std::ops::Range<usize>) {
    let mut opt = Sgd::new(0.1);
    let mut ctx = Ctx::train(0);
    let (x, y) = batch(rows);
    for _ in 0..STEPS {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let loss = cross_entropy(&logits, &y, 0.0);
        let mut grads = model.backward_params(&cache, &loss.grad);
        world.average_grads::<Cpu, Net<Cpu>>(&mut grads, 256);
        opt.step(model, &grads);
    }
}

/// Runs `rank_fn` in two ranks under `mpirun`, with `out` as the results
/// folder and `epochs` in the environment, killing the job after `limit`.
fn launch(rank_fn: &str, out: &Path, epochs: usize, limit: Duration) -> (Output, Duration) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let start = Instant::now();
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(exe)
        .args(["--exact", rank_fn, "--ignored", "--nocapture", "--test-threads", "1"])
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

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blaze-dist-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

fn read(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect()
}

/// The results folder when this process is a rank a test launched.
fn launched() -> Option<PathBuf> {
    std::env::var_os(OUT).map(PathBuf::from)
}

#[test]
#[ignore = "a rank of `two_ranks_train_as_one_process_with_the_global_batch`"]
fn rank_trains_its_half() {
    let Some(out) = launched() else { return };
    let world = World::init().expect("MPI starts");
    assert_eq!(world.size(), 2, "launched with two ranks");
    // Different starting weights per rank: the broadcast makes them rank 0's.
    let mut model = Net::<Cpu>::new_seeded(world.rank() as u64, &CpuDevice);
    world.broadcast_module::<Cpu, _>(&mut model);
    let half = GLOBAL / world.size();
    train(&mut model, &world, world.rank() * half..(world.rank() + 1) * half);
    let bytes: Vec<u8> = weights(&model).iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(out.join(format!("rank{}.bin", world.rank())), bytes).expect("writing the weights");
}

#[test]
fn two_ranks_train_as_one_process_with_the_global_batch() {
    let out = folder("train");
    let (run, _) = launch("rank_trains_its_half", &out, 0, Duration::from_secs(120));
    assert!(run.status.success(), "the job failed:\n{}", String::from_utf8_lossy(&run.stderr));
    let mut alone = Net::<Cpu>::new_seeded(0, &CpuDevice);
    let before = weights(&alone);
    train(&mut alone, &World::single(), 0..GLOBAL);
    let want = weights(&alone);
    assert!(want.iter().zip(&before).any(|(a, b)| a != b), "the steps changed the weights");
    for rank in 0..2 {
        let got = read(&out.join(format!("rank{rank}.bin")));
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1e-2), "rank {rank}, weight {i}: {g} against {w} alone");
        }
    }
    std::fs::remove_dir_all(&out).ok();
}

#[test]
#[ignore = "a rank of `a_panicking_rank_ends_the_job_promptly`"]
fn rank_one_panics() {
    let Some(_) = launched() else { return };
    let world = World::init().expect("MPI starts");
    if world.rank() == 1 {
        panic!("rank 1 gives up");
    }
    // Rank 0 waits in a collective that rank 1 never joins.
    let mut v = [1.0];
    world.all_reduce_sum(&mut v);
}

#[test]
fn a_panicking_rank_ends_the_job_promptly() {
    let out = folder("panic");
    let (run, took) = launch("rank_one_panics", &out, 0, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the job succeeded:\n{stderr}");
    assert!(took < Duration::from_secs(30), "the job took {took:?} to end");
    assert!(stderr.contains("rank 1 gives up") && stderr.contains("rank 1 panicked"), "stderr:\n{stderr}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
#[ignore = "a rank of `a_killed_rank_ends_the_job_promptly`"]
fn rank_one_is_killed() {
    let Some(_) = launched() else { return };
    let world = World::init().expect("MPI starts");
    if world.rank() == 1 {
        let pid = std::process::id().to_string();
        Command::new("kill").args(["-9", &pid]).status().expect("kill runs");
        std::thread::sleep(Duration::from_secs(60));
    }
    let mut v = [1.0];
    world.all_reduce_sum(&mut v);
}

#[test]
fn a_killed_rank_ends_the_job_promptly() {
    let out = folder("kill");
    let (run, took) = launch("rank_one_is_killed", &out, 0, Duration::from_secs(60));
    assert!(!run.status.success(), "the job succeeded:\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(took < Duration::from_secs(30), "the job took {took:?} to end");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
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
fn fit_toy(
    model: &mut Net<Cpu>,
    batch: usize,
    epochs: usize,
    dir: Option<PathBuf>,
    data_parallel: Option<blaze::distributed::DataParallel>,
) -> blaze::train::History {
    use blaze::data::DataLoader;
    use blaze::train::{FitConfig, fit};
    let mut train = DataLoader::new(toy(), batch).shuffle(5);
    let mut val = DataLoader::new(toy(), 8);
    let resume = dir.is_some();
    let config = FitConfig { epochs, out_dir: dir, resume, data_parallel, ..FitConfig::default() };
    let mut opt = Sgd::new(0.1);
    fit(model, &mut opt, &mut train, &mut val, &config, &CpuDevice).expect("fit trains")
}

#[test]
#[ignore = "a rank of `fit_on_two_ranks_trains_as_one_process_and_resumes`"]
fn rank_fits() {
    let Some(out) = launched() else { return };
    let epochs: usize = std::env::var(EPOCHS).expect("epochs").parse().expect("a number");
    let world = std::sync::Arc::new(World::init().expect("MPI starts"));
    let rank = world.rank();
    let mut model = Net::<Cpu>::new_seeded(rank as u64, &CpuDevice);
    let dp = blaze::distributed::DataParallel::new(world);
    let history = fit_toy(&mut model, 4, epochs, Some(out.join("run")), Some(dp));
    assert_eq!(history.epochs.len(), epochs);
    let bytes: Vec<u8> = weights(&model).iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(out.join(format!("fit{rank}.bin")), bytes).expect("writing the weights");
}

#[test]
fn fit_on_two_ranks_trains_as_one_process_and_resumes() {
    let out = folder("fit");
    for epochs in [2, 3] {
        let (run, _) = launch("rank_fits", &out, epochs, Duration::from_secs(120));
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "the job failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
        // Rank 0 alone prints: one line for the last epoch; the second run
        // resumed after epoch 2.
        let last = format!("epoch {epochs:>3}:");
        assert_eq!(stdout.matches(&last).count(), 1, "stdout:\n{stdout}");
        assert_eq!(stdout.contains("resumed from"), epochs == 3, "stdout:\n{stdout}");
        assert!(out.join("run/last.safetensors").exists() && out.join("run/best.safetensors").exists());
        // One process with the global batch (twice the per-rank one).
        let mut alone = Net::<Cpu>::new_seeded(0, &CpuDevice);
        fit_toy(&mut alone, 8, epochs, None, None);
        let want = weights(&alone);
        for rank in 0..2 {
            let got = read(&out.join(format!("fit{rank}.bin")));
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let close = (g - w).abs() <= 1e-5 * w.abs().max(1e-2);
                assert!(close, "{epochs} epochs, rank {rank}, weight {i}: {g} against {w} alone");
            }
        }
    }
    std::fs::remove_dir_all(&out).ok();
}
