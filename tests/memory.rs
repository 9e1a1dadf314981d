//! What training costs in memory, on the CPU backend.
//!
//! - A `#[model]` training step makes no heap allocation once warmed up.
//!   The step (training forward, cross-entropy, generated backward,
//!   optimizer update, loss read back) runs under a global allocator that
//!   counts every allocation on every thread. After a few warm-up steps
//!   (optimizer state, the backend's buffer pool) the count must stay at
//!   zero. On failure the test prints where the first allocations came
//!   from.
//! - A fused training forward keeps only what its backward reads: less
//!   than its unfused twin by the inputs its adjoints recompute, and no
//!   dropout mask. What a forward keeps is the growth of the buffer pool's
//!   bytes in use across it.
//!
//! Both are process-wide counts, so this is its own binary without the
//! libtest harness: no other test (or the harness's own bookkeeping)
//! allocates while it counts.

#[path = "common/fused_models.rs"]
#[allow(dead_code, unused_imports)]
mod fused_models;
#[path = "common/kernels.rs"]
#[allow(dead_code)]
mod kernels;
#[path = "common/transformer.rs"]
mod transformer;

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx};
use blaze::optim::{Adam, Optimizer, Sgd};
use blaze::prelude::*;

/// The system allocator, counting calls while `COUNTING` is set and keeping
/// the backtraces of the first few.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static CALLS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static TRACES: Mutex<Vec<String>> = Mutex::new(Vec::new());
const KEPT_TRACES: usize = 6;

thread_local! {
    /// Set while this thread records a backtrace, whose own allocations
    /// are not counted.
    static TRACING: Cell<bool> = const { Cell::new(false) };
}

fn count(bytes: usize) {
    if !COUNTING.load(Ordering::Relaxed) || TRACING.with(Cell::get) {
        return;
    }
    BYTES.fetch_add(bytes, Ordering::Relaxed);
    if CALLS.fetch_add(1, Ordering::Relaxed) < KEPT_TRACES {
        TRACING.with(|t| t.set(true));
        let trace = Backtrace::force_capture().to_string();
        TRACES.lock().unwrap().push(trace);
        TRACING.with(|t| t.set(false));
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[model(input = [1, 12, 12])]
struct Cnn {
    conv1: Conv2d<1, 8, 3>,
    act1: Relu,
    pool1: MaxPool2d<2>,
    #[layer(padding = 1)]
    conv2: Conv2d<8, 16, 3>,
    act2: Relu,
    pool2: MaxPool2d<2>,
    flat: Flatten,
    fc: Linear<64, 10>,
}

#[model(input = [784])]
struct Mlp {
    fc1: Linear<784, 256>,
    act1: Relu,
    fc2: Linear<256, 128>,
    act2: Relu,
    fc3: Linear<128, 10>,
}

/// A transformer block followed by a classifier over the flattened tokens.
#[model]
struct Classifier {
    block: transformer::TransformerBlock,
    head: Linear<128, 10>,
}

#[model(input = [8, 16])]
impl Classifier {
    fn forward(&self, x: Tensor) -> Tensor {
        self.head(self.block(x).flatten())
    }
}

/// Heap allocations (and their bytes) in 5 calls of `step` after 3
/// warm-up calls, and the backtraces of the first few.
fn counted(mut step: impl FnMut(bool) + Send) -> (usize, usize, Vec<String>) {
    CpuDevice.run(|| {
        for _ in 0..3 {
            step(false);
        }
        TRACES.lock().unwrap().clear();
        CALLS.store(0, Ordering::Relaxed);
        BYTES.store(0, Ordering::Relaxed);
        COUNTING.store(true, Ordering::Relaxed);
        for _ in 0..5 {
            step(true);
        }
        COUNTING.store(false, Ordering::Relaxed);
    });
    (CALLS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed), std::mem::take(&mut *TRACES.lock().unwrap()))
}

/// [`counted`] over training steps of `model`, checking that they train.
fn allocations<M, O, const D: usize>(mut model: M, mut opt: O, x: Tensor<Cpu, D>) -> (usize, usize, Vec<String>)
where
    M: Block<Cpu, Input = Tensor<Cpu, D>, Output = Tensor<Cpu, 2>>,
    O: Optimizer<Cpu>,
{
    let n = x.shape()[0];
    let y = Tensor::<Cpu, 1>::from_vec((0..n as i64).map(|i| i % 10).collect(), [n], &CpuDevice);
    let mut ctx = Ctx::train(0);
    let mut losses = [0.0; 2];
    let result = counted(|measured| {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let loss = cross_entropy(&logits, &y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad);
        opt.step(&mut model, &grads);
        losses[usize::from(measured)] = loss.item();
    });
    assert!(losses[1] < losses[0], "the steps did not train: loss {} then {}", losses[0], losses[1]);
    result
}

/// [`counted`] over launches of a general kernel into outputs that come
/// from the buffer pool: written in place, not copied first.
fn launches() -> (usize, usize, Vec<String>) {
    let x = Tensor::<Cpu, 2>::rand_normal([64, 256], &CpuDevice);
    counted(|_| {
        let mut out = x.sum_dim(1).squeeze::<1>(1).mul_scalar(0.0);
        kernels::row_sum::launch(64, &x, &mut out, 256);
        assert!(out.sum().item().is_finite());
    })
}

/// Bytes of pooled CPU buffers that what `forward` returns holds: its
/// output and the cache it keeps for the backward.
fn kept<T>(forward: impl FnOnce() -> T) -> usize {
    let before = blaze::cpu::bytes_in_use();
    let out = forward();
    let after = blaze::cpu::bytes_in_use();
    drop(out);
    after
        .checked_sub(before)
        .unwrap_or_else(|| panic!("the forward released pooled buffers: {before} bytes in use before, {after} after"))
}

/// Fused training forwards keep less than their unfused twins, by exactly
/// the inputs their adjoints recompute.
fn kept_by_fusion() {
    use fused_models::{Dropped, DroppedUnfused, MlpUnfused, SeqMlp, SeqTwin};
    let dev = CpuDevice;
    let mut rng = blaze::Rng::seed_from_u64(12);
    let f32s = std::mem::size_of::<f32>();

    // The pre-norm MLP block recomputes the inputs of `fc1`, `fc2` and
    // `head` (from its LayerNorm, GELU and RMSNorm caches).
    let x = Tensor::<Cpu, 3>::normal_with([4, 16, 8], 0.0, 1.0, &mut rng, &dev);
    let mut fused = fused_models::Mlp::new_seeded(1, &dev);
    let mut unfused = MlpUnfused::new_seeded(1, &dev);
    let kept_fused = kept(|| fused.forward_train(&x, &mut Ctx::train(0)));
    let kept_unfused = kept(|| unfused.forward_train(&x, &mut Ctx::train(0)));
    let recomputed = 4 * 16 * (8 + 32 + 8) * f32s;
    assert_eq!(
        kept_unfused - kept_fused,
        recomputed,
        "MLP block: kept {kept_fused} bytes fused, {kept_unfused} unfused"
    );
    println!("MLP block: the fused training forward keeps {kept_fused} bytes, {recomputed} fewer than unfused");

    // A sequential model recomputes the same inputs (`fc1`'s, `fc2`'s).
    let x = Tensor::<Cpu, 2>::normal_with([6, 8], 0.0, 1.0, &mut rng, &dev);
    let (mut seq, mut twin) = (SeqMlp::new_seeded(22, &dev), SeqTwin::new_seeded(22, &dev));
    let kept_seq = kept(|| seq.forward_train(&x, &mut Ctx::train(0)));
    let kept_twin = kept(|| twin.forward_train(&x, &mut Ctx::train(0)));
    let recomputed = 6 * (8 + 16) * f32s;
    assert_eq!(kept_twin - kept_seq, recomputed, "sequential MLP: kept {kept_seq} bytes, its unfused twin {kept_twin}");
    println!("sequential MLP: keeps {kept_seq} bytes, {recomputed} fewer than its unfused twin");

    // Neither keeps a dropout mask (a dropout keeps its seed); the fused
    // forward keeps less still, by the intermediates its adjoint kernels
    // recompute.
    let x = Tensor::<Cpu, 3>::normal_with([8, 32, 8], 0.0, 1.0, &mut rng, &dev);
    let (mut fused, mut unfused) = (Dropped::new_seeded(25, &dev), DroppedUnfused::new_seeded(25, &dev));
    let kept_fused = kept(|| fused.forward_train(&x, &mut Ctx::train(0)));
    let kept_unfused = kept(|| unfused.forward_train(&x, &mut Ctx::train(0)));
    assert!(kept_fused < kept_unfused, "dropouts: kept {kept_fused} bytes fused, {kept_unfused} unfused");
    println!("dropouts in groups: keep {kept_fused} bytes fused, {kept_unfused} unfused");
}

fn main() {
    kept_by_fusion();
    let dev = CpuDevice;
    let cases = [
        (
            "MLP 784-256-128-10, SGD with momentum",
            allocations(
                Mlp::new_seeded(0, &dev),
                Sgd::new(0.01).momentum(0.9),
                Tensor::<Cpu, 2>::rand_normal([128, 784], &dev),
            ),
        ),
        (
            "CNN, Adam",
            allocations(
                Cnn::new_seeded(0, &dev),
                Adam::new(1e-3),
                Tensor::<Cpu, 4>::rand_normal([32, 1, 12, 12], &dev),
            ),
        ),
        ("general kernel launches into pooled outputs", launches()),
        (
            "transformer block (forward body), AdamW",
            allocations(
                Classifier::new_seeded(0, &dev),
                Adam::adamw(1e-3),
                Tensor::<Cpu, 3>::rand_normal([16, 8, 16], &dev),
            ),
        ),
    ];
    let mut failed = false;
    for (name, (calls, bytes, traces)) in cases {
        if calls == 0 {
            println!("{name}: no allocation in 5 steps");
            continue;
        }
        failed = true;
        println!("{name}: {calls} heap allocations ({bytes} bytes) in 5 steps; the first ones:");
        for t in traces {
            println!("{t}\n");
        }
    }
    assert!(!failed, "a training step allocated");
}
