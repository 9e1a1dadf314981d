//! The GPT example's training step with the pool's other threads polling
//! for work between ops (`Device::run`'s default) and sleeping between
//! them (`BLAZE_POLL=0`), alternating in one process: on a loud VM the
//! machine's speed drifts more between two processes than the two ways
//! differ. Needs two or more threads.
//!
//! ```text
//! cargo run --release --example poll_bench [-- ROUNDS]
//! ```
//! Each round times ten steps each way (after three warm-up steps) and
//! prints their medians; the last line is the median of the rounds'
//! ratios, sleeping over polling (above 1: polling is faster).

use blaze::loss::cross_entropy;
use blaze::nn::{Ctx, Graph};
use blaze::optim::{Adam, Optimizer};
use blaze::prelude::*;
use blaze::rng::Rng;

#[path = "common/gpt_model.rs"]
mod gpt_model;
#[path = "common/timing.rs"]
mod timing;

use gpt_model::{CONTEXT, Gpt, VOCAB};

/// The example's batch: 32 windows of the context.
const BATCH: usize = 32;

fn main() {
    let rounds = std::env::args()
        .nth(1)
        .map_or(20, |r| r.parse::<std::num::NonZeroUsize>().expect("ROUNDS: a number of rounds, 1 or more").get());
    assert!(rayon::current_num_threads() > 1, "poll_bench: one thread has nobody to poll");
    blaze::cpu::tune_allocator_for_training();
    let dev = CpuDevice;
    let mut model = <Gpt<Cpu> as Graph<Cpu>>::init(&mut Rng::seed_from_u64(0), &dev);
    let tokens = BATCH * CONTEXT;
    let ids =
        Tensor::<Cpu, 2>::from_vec((0..tokens as i64).map(|i| i * 7 % VOCAB as i64).collect(), [BATCH, CONTEXT], &dev);
    let next = Tensor::<Cpu, 1>::from_vec((0..tokens as i64).map(|i| i * 5 % VOCAB as i64).collect(), [tokens], &dev);
    let mut opt = Adam::adamw(1e-3);
    let mut ctx = Ctx::train(0);
    let mut step = || {
        let (logits, cache) = model.forward_train(&ids, &mut ctx);
        let loss = cross_entropy(&logits.reshape([tokens, VOCAB]), &next, 0.0);
        let grads = model.backward_params(&cache, &loss.grad.reshape([BATCH, CONTEXT, VOCAB]));
        opt.step(&mut model, &grads);
    };
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let mut ms = [0.0; 2];
        for (i, poll) in ["1", "0"].into_iter().enumerate() {
            // SAFETY: no other thread reads the environment between stretches:
            // the pool is idle and its pollers have been told to stop.
            unsafe { std::env::set_var("BLAZE_POLL", poll) };
            ms[i] = CpuDevice.run(|| {
                (0..3).for_each(|_| step());
                1e3 * timing::median(10, &mut step)
            });
        }
        println!("round {round}: polling {:.1} ms, sleeping {:.1} ms a step", ms[0], ms[1]);
        ratios.push(ms[1] / ms[0]);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "sleeping over polling, median of {rounds} rounds: {:.3} ({:.3}-{:.3})",
        ratios[rounds / 2],
        ratios[0],
        ratios[rounds - 1]
    );
}
