//! Data-parallel costs under MPI: the gradient all-reduce against the raw
//! MPI call at 4 MB and 40 MB, and MLP/CNN training throughput with the
//! share of each step spent averaging gradients after the backward, and
//! with the reduction started during the backward, in 25 MB and 256 KB
//! buckets. Run it alone and under `mpirun` with one thread per rank:
//!
//! ```text
//! cargo build --release --features mpi --example distributed_bench
//! target/release/examples/distributed_bench
//! mpirun -np 2 --bind-to none target/release/examples/distributed_bench
//! ```

#[path = "common/cnn.rs"]
mod cnn;
#[path = "common/mlp.rs"]
mod mlp;
#[path = "common/timing.rs"]
mod timing;

use std::time::Instant;

use blaze::distributed::World;
use blaze::distributed::mpi::collective::SystemOperation;
use blaze::distributed::mpi::traits::CommunicatorCollectives;
use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx, Module};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;
use cnn::Cnn;
use mlp::Mlp;
use timing::median;

/// When a step averages its gradients.
#[derive(Clone, Copy)]
enum Reduce {
    /// After the backward, in buckets of this many bytes.
    After(usize),
    /// During the backward, layer by layer, in buckets of this many bytes.
    During(usize),
}

/// Samples per second over all ranks, and the share of a step spent in
/// the gradient average (after the backward; with the reduction during
/// it, the whole backward), for SGD steps of `model` at `batch` per rank.
fn train<M, const DI: usize>(
    world: &World,
    mut model: M,
    x: Tensor<Cpu, DI>,
    steps: usize,
    reduce: Reduce,
) -> (f64, f64)
where
    M: Block<Cpu, Input = Tensor<Cpu, DI>, Output = Tensor<Cpu, 2>> + Module<Cpu>,
{
    world.broadcast_module::<Cpu, M>(&mut model);
    let n = x.shape()[0];
    let y = Tensor::<Cpu, 1>::from_vec((0..n as i64).map(|i| i % 10).collect(), [n], &CpuDevice);
    let (mut opt, mut ctx) = (Sgd::new(0.01), Ctx::train(0));
    let (mut comm, mut total) = (0.0, 0.0);
    let mut step = |comm: &mut f64| {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let loss = cross_entropy(&logits, &y, 0.0);
        let t = Instant::now();
        let grads = match reduce {
            Reduce::After(bytes) => {
                let mut grads = model.backward_params(&cache, &loss.grad);
                let t = Instant::now();
                world.average_grads::<Cpu, M>(&mut grads, bytes);
                *comm += t.elapsed().as_secs_f64();
                grads
            }
            Reduce::During(bytes) => {
                let grads = world.average_grads_during::<Cpu, M>(&model, bytes, |ready| {
                    model.backward_params_each(&cache, &loss.grad, ready)
                });
                *comm += t.elapsed().as_secs_f64();
                grads
            }
        };
        opt.step(&mut model, &grads);
    };
    CpuDevice.run(|| {
        for _ in 0..5 {
            step(&mut 0.0);
        }
        world.barrier();
        let start = Instant::now();
        for _ in 0..steps {
            step(&mut comm);
        }
        total = start.elapsed().as_secs_f64();
    });
    ((n * steps * world.size()) as f64 / total, comm / total)
}

fn main() -> anyhow::Result<()> {
    rayon::ThreadPoolBuilder::new().num_threads(1).build_global()?;
    blaze::cpu::tune_allocator_for_training();
    let world = World::init()?;
    let main = world.is_main();
    if main {
        println!("{} rank(s), one thread each", world.size());
    }
    if let Some(comm) = world.comm() {
        let four = grads_of(Four::new_seeded(0, &CpuDevice), 1024);
        let forty = grads_of(Forty::new_seeded(0, &CpuDevice), 3200);
        for (mb, ours) in
            [(4.0, time_average::<Four<Cpu>>(&world, four)), (41.0, time_average::<Forty<Cpu>>(&world, forty))]
        {
            // Raw MPI: one all-reduce of a buffer of the same size.
            let n = (mb * (1 << 20) as f64 / 4.0) as usize;
            let (send, mut recv) = (vec![1f32; n], vec![0f32; n]);
            let raw = median(7, || comm.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum()));
            if main {
                println!("all-reduce {mb:>2} MB: raw MPI {:.2} ms, average_grads {:.2} ms", raw * 1e3, ours * 1e3);
            }
        }
    }
    let dev = CpuDevice;
    let modes = [
        ("after the backward, 25 MB buckets", Reduce::After(25 << 20)),
        ("after the backward, 256 KB buckets", Reduce::After(256 << 10)),
        ("during the backward, 25 MB buckets", Reduce::During(25 << 20)),
        ("during the backward, 256 KB buckets", Reduce::During(256 << 10)),
    ];
    for (what, reduce) in modes {
        let (mlp, mlp_comm) =
            train(&world, Mlp::new_seeded(0, &dev), Tensor::<Cpu, 2>::rand_normal([128, 784], &dev), 200, reduce);
        let (cnn, cnn_comm) =
            train(&world, Cnn::new_seeded(0, &dev), Tensor::<Cpu, 4>::rand_normal([64, 1, 28, 28], &dev), 60, reduce);
        if main {
            let share = match reduce {
                Reduce::After(_) => "averaging",
                Reduce::During(_) => "in the backward and its reduction",
            };
            println!("{what}:");
            println!(
                "  mlp 784-256-128-10, batch 128 a rank: {mlp:>8.0} samples/s, {:.0}% of a step {share}",
                mlp_comm * 100.0
            );
            println!(
                "  cnn, batch 64 a rank:                  {cnn:>8.0} samples/s, {:.0}% of a step {share}",
                cnn_comm * 100.0
            );
        }
    }
    Ok(())
}

/// About 4 MB of parameters (f32).
#[model(input = [1024])]
pub struct Four {
    fc: Linear<1024, 1024>,
}

/// About 41 MB of parameters (f32).
#[model(input = [3200])]
pub struct Forty {
    fc: Linear<3200, 3200>,
}

/// `model`'s gradients for one sample of `width` features.
fn grads_of<M>(mut model: M, width: usize) -> M::Grads
where
    M: Block<Cpu, Input = Tensor<Cpu, 2>, Output = Tensor<Cpu, 2>> + Module<Cpu>,
{
    let x = Tensor::<Cpu, 2>::rand_normal([1, width], &CpuDevice);
    let (y, cache) = model.forward_train(&x, &mut Ctx::train(0));
    model.backward_params(&cache, &y.ones_like())
}

/// Median seconds of `World::average_grads` over `grads`.
fn time_average<M: Module<Cpu>>(world: &World, mut grads: M::Grads) -> f64 {
    median(7, || world.average_grads::<Cpu, M>(&mut grads, 25 << 20))
}
