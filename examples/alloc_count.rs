//! Heap allocations of a training step, phase by phase, after warm-up: all
//! zero, since op outputs come from the CPU backend's buffer pool, GEMM
//! packs into thread-local buffers and shapes and parameter names stay
//! inline (`tests/memory.rs` holds every `#[model]` step to it). Counts
//! with a global allocator that wraps the system one, over the MLP
//! 784-256-128-10 at batch 128.
//!
//! ```text
//! cargo run --release --example alloc_count
//! ```

#[path = "common/mlp.rs"]
mod mlp;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;
use mlp::Mlp;

/// The system allocator, counting calls and bytes.
struct Counting;

static CALLS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and bytes since the last call.
fn take() -> (usize, usize) {
    (CALLS.swap(0, Ordering::Relaxed), BYTES.swap(0, Ordering::Relaxed))
}

fn main() {
    let device = CpuDevice;
    let mut model = <Mlp as Block<Cpu>>::init(&mut blaze::Rng::seed_from_u64(0), &device);
    let x = Tensor::<Cpu, 2>::rand_normal([128, 784], &device);
    let y = Tensor::<Cpu, 1>::from_vec((0..128).map(|i| i % 10).collect::<Vec<i64>>(), [128], &device);
    let mut sgd = Sgd::new(0.01).momentum(0.9);
    let steps = 10;
    let mut phases = [(0usize, 0usize); 4];
    CpuDevice.run(|| {
        for step in 0..steps + 5 {
            take();
            let (out, cache) = model.forward_train(&x, &mut Ctx::train(0));
            let forward = take();
            let loss = cross_entropy(&out, &y, 0.0);
            let loss_phase = take();
            let grads = model.backward_params(&cache, &loss.grad);
            let backward = take();
            sgd.step(&mut model, &grads);
            let optimizer = take();
            // The first five steps warm up (optimizer state, pools).
            if step >= 5 {
                for (p, (c, b)) in phases.iter_mut().zip([forward, loss_phase, backward, optimizer]) {
                    p.0 += c;
                    p.1 += b;
                }
            }
        }
    });
    println!("heap allocations per training step (MLP 784-256-128-10, batch 128, SGD with momentum)");
    println!("{:<10} {:>12} {:>14}", "phase", "allocations", "bytes");
    let names = ["forward", "loss", "backward", "optimizer"];
    let (mut calls, mut bytes) = (0, 0);
    for (name, (c, b)) in names.iter().zip(phases) {
        println!("{name:<10} {:>12} {:>14}", c / steps, b / steps);
        calls += c;
        bytes += b;
    }
    println!("{:<10} {:>12} {:>14}", "total", calls / steps, bytes / steps);
}
