//! Batch-1 latency of int8 inference (`blaze::quant::quantize_dynamic`)
//! against the f32 forward, for two MLPs: the MNIST one (784-256-128-10,
//! its weights in the level-2 cache) and a wide one (1024-4096-1024, 8 M
//! weights: 32 MB in f32, 8 MB in int8); and the MNIST CNN of
//! `examples/mnist.rs` at batches of 1 and 64. `bench/torch_quant.py`
//! times PyTorch's eager f32 and `quantize_dynamic` on the same MLPs
//! (`quantize_dynamic` leaves convolutions in f32);
//! `bench/quant_rounds.sh` alternates the two.
//!
//! ```text
//! cargo run --release --example quant_bench -- --threads 1
//! ```
//! Prints per MLP and form the median latency in microseconds.

use blaze::prelude::*;
use blaze::quant::quantize_dynamic;

#[path = "common/timing.rs"]
mod timing;

#[path = "common/digits.rs"]
#[allow(dead_code)]
mod digits;

/// 784-256-128-10 with ReLU.
#[model(input = [784])]
struct MnistMlp {
    fc1: Linear<784, 256>,
    act1: Relu,
    fc2: Linear<256, 128>,
    act2: Relu,
    fc3: Linear<128, 10>,
}

/// 1024-4096-1024 with ReLU.
#[model(input = [1024])]
struct WideMlp {
    fc1: Linear<1024, 4096>,
    act: Relu,
    fc2: Linear<4096, 1024>,
}

/// The median over `rounds` of the mean latency of `calls` calls of `f`,
/// in microseconds, after `calls` calls to warm up.
fn latency(rounds: usize, calls: usize, mut f: impl FnMut()) -> f64 {
    (0..calls).for_each(|_| f());
    timing::median(rounds, || (0..calls).for_each(|_| f())) * 1e6 / calls as f64
}

fn main() {
    let threads = std::env::args()
        .skip_while(|a| a != "--threads")
        .nth(1)
        .map_or(1, |t| t.parse::<usize>().expect("--threads N"));
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().expect("the global pool is built first");
    println!("threads {threads}, int8 kernel for one row: {}", blaze::cpu::Int8Kernel::for_rows(1).name());

    let mnist = MnistMlp::<Cpu>::new_seeded(0, &CpuDevice);
    let mnist8 = quantize_dynamic(&mnist);
    let x = Tensor::<Cpu, 2>::from_vec((0..784).map(|i| (i % 17) as f32 / 17.0).collect(), [1, 784], &CpuDevice);
    let f = latency(31, 2000, || drop(mnist.forward(&x)));
    let q = latency(31, 2000, || drop(mnist8.forward(&x)));
    println!("mnist f32   {f:9.2} us");
    println!("mnist int8  {q:9.2} us");

    let wide = WideMlp::<Cpu>::new_seeded(0, &CpuDevice);
    let wide8 = quantize_dynamic(&wide);
    let x =
        Tensor::<Cpu, 2>::from_vec((0..1024).map(|i| (i % 13) as f32 / 13.0 - 0.5).collect(), [1, 1024], &CpuDevice);
    let f = latency(21, 100, || drop(wide.forward(&x)));
    let q = latency(21, 100, || drop(wide8.forward(&x)));
    println!("wide f32    {f:9.2} us");
    println!("wide int8   {q:9.2} us");

    let cnn = digits::MnistCnn::<Cpu>::new_seeded(0, &CpuDevice);
    let cnn8 = quantize_dynamic(&cnn);
    for n in [1, 64] {
        let x = Tensor::<Cpu, 4>::from_vec(
            (0..n * 784).map(|i| (i % 13) as f32 / 13.0).collect(),
            [n, 1, 28, 28],
            &CpuDevice,
        );
        let calls = 2000 / n;
        let f = latency(21, calls, || drop(cnn.forward(&x)));
        let q = latency(21, calls, || drop(cnn8.forward(&x)));
        println!("cnn{n} f32   {f:9.2} us");
        println!("cnn{n} int8  {q:9.2} us");
    }
}
