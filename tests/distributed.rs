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
/// folder, killing the job after `limit`.
fn launch(rank_fn: &str, out: &Path, limit: Duration) -> (Output, Duration) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let start = Instant::now();
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(exe)
        .args(["--exact", rank_fn, "--ignored", "--nocapture", "--test-threads", "1"])
        .env(OUT, out)
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
    let (run, _) = launch("rank_trains_its_half", &out, Duration::from_secs(120));
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
    let (run, took) = launch("rank_one_panics", &out, Duration::from_secs(60));
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
    let (run, took) = launch("rank_one_is_killed", &out, Duration::from_secs(60));
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
