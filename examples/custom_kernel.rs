//! Kernels written once with `kernel!`. An elementwise custom activation:
//! used in a `#[model]`, trained on the digits shipped in `data/digits-8x8`,
//! its generated derivative checked against finite differences. And a
//! general kernel with workgroup memory and barriers (a fused bias +
//! softmax over rows) launched on the CPU and checked against the composed
//! ops. Both print the WGSL a GPU backend runs (the wgpu backend is still
//! to come; until then kernels run on the CPU).
//!
//! ```text
//! cargo run --release --example custom_kernel                  # CPU
//! cargo run --release --example custom_kernel --features wgpu  # and a GPU
//! ```

use anyhow::Result;
use blaze::data::DataLoader;
use blaze::data::mnist::read_mnist;
use blaze::optim::Sgd;
use blaze::prelude::*;
use blaze::train::{EarlyStopping, FitConfig, evaluate, fit};

kernel! {
    /// Swish / SiLU, `x * sigmoid(x)`: smooth, non-monotonic below zero.
    pub fn swish(x: f32) -> f32 {
        x / (1.0 + exp(-x))
    }
}

kernel! {
    /// A Swish with a learnable-looking slope, to show kernels of several
    /// arguments: any of them may be a tensor or a number.
    pub fn swish_beta(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

kernel! {
    /// `softmax(x + bias)` over each row of `x`, in place: one workgroup per
    /// row; the row's max and then its sum of exponentials are reduced in
    /// workgroup memory, with barriers between the passes.
    #[workgroup(64)]
    pub fn bias_softmax(x: &mut [f32], bias: &[f32], cols: u32) {
        let base = workgroup_id() * cols;
        let lane = local_id();
        #[shared]
        let red: [f32; 64];
        let mut m = -3.0e38;
        let mut c = lane;
        while c < cols {
            m = max(m, x[base + c] + bias[c]);
            c += 64;
        }
        red[lane] = m;
        barrier();
        let mut stride = 32;
        while stride > 0 {
            if lane < stride {
                red[lane] = max(red[lane], red[lane + stride]);
            }
            barrier();
            stride = stride / 2;
        }
        let row_max = red[0];
        barrier();
        let mut total = 0.0;
        c = lane;
        while c < cols {
            let e = exp(x[base + c] + bias[c] - row_max);
            x[base + c] = e;
            total += e;
            c += 64;
        }
        red[lane] = total;
        barrier();
        stride = 32;
        while stride > 0 {
            if lane < stride {
                red[lane] += red[lane + stride];
            }
            barrier();
            stride = stride / 2;
        }
        let inv = 1.0 / red[0];
        c = lane;
        while c < cols {
            x[base + c] *= inv;
            c += 64;
        }
    }
}

/// The digits MLP of the main example, with the custom activation.
#[model(input = [1, 8, 8])]
pub struct SwishMlp {
    flat: Flatten,
    fc1: Linear<64, 128>,
    act: Map<swish::Kernel>,
    fc2: Linear<128, 10>,
}

fn main() -> Result<()> {
    // The generated derivative against central differences of the kernel.
    let xs: Vec<f64> = (-40..=40).map(|i| f64::from(i) * 0.1 + 0.005).collect();
    let x = Tensor::<Cpu, 1>::from_vec(xs.clone(), [xs.len()], &CpuDevice);
    let d = blaze::runtime::kernel::partial::<swish::Kernel, Cpu, 1>(0, &[(&x).into()]).to_vec::<f64>();
    let h = 1e-6;
    let worst = xs
        .iter()
        .zip(&d)
        .map(|(&v, &g)| {
            let f = |t: f64| t / (1.0 + (-t).exp());
            (g - (f(v + h) - f(v - h)) / (2.0 * h)).abs()
        })
        .fold(0.0f64, f64::max);
    println!("swish' vs finite differences over [-4, 4]: largest difference {worst:.2e}");
    let b = swish_beta(&x, 2.0).to_vec::<f64>();
    println!("swish_beta(x, 2.0) at x = 1.005: {:.6}", b[50]);

    // Train the MLP with it, choosing the epoch on a tenth of the
    // training images; the test images are read once, at the end.
    let data = read_mnist(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits-8x8"))?;
    let (mut train, mut val) = data.train.into_dataset().split_validation(0.1, 0)?;
    let mut test = data.test.into_dataset();
    let stats = train.stats();
    for split in [&mut train, &mut val, &mut test] {
        split.normalize(stats);
    }
    let mut model = SwishMlp::new_seeded(0, &CpuDevice);
    println!("\n{}", model.summary());
    let mut train = DataLoader::new(train, 32).shuffle(0);
    let mut val = DataLoader::new(val, 256);
    // Early stopping puts the best epoch's weights back into the model.
    let config = FitConfig { epochs: 10, early_stopping: Some(EarlyStopping::patience(3)), ..FitConfig::default() };
    let mut sgd = Sgd::new(0.05).momentum(0.9);
    let history = fit(&mut model, &mut sgd, &mut train, &mut val, &config)?;
    if let Some(best) = history.best() {
        let test = evaluate(&model, &mut DataLoader::new(test, 256), &config)?;
        println!(
            "test accuracy with the swish kernel: {:.4} (the weights of epoch {}, chosen on the validation split)",
            test["accuracy"], best.epoch
        );
    }

    println!("\nthe WGSL of the kernel and its derivative (checked by naga at compile time):\n{}", swish::WGSL);

    // The general kernel on the CPU against the composed ops.
    let (rows, cols) = (8, 300);
    let x = Tensor::<Cpu, 2>::rand_normal([rows, cols], &CpuDevice);
    let bias = Tensor::<Cpu, 1>::rand_normal([cols], &CpuDevice);
    let want = (x.clone() + &bias.unsqueeze::<2>(0)).softmax(1);
    let mut y = x.clone();
    bias_softmax::launch(rows as u32, &mut y, &bias, cols as u32);
    let diff = (y.clone() - &want).abs().max().item();
    println!("bias_softmax on {rows}x{cols}, CPU: largest difference from softmax(x + bias) {diff:.2e}");
    on_the_gpu(&x, &bias, &y.to_vec::<f32>());
    println!("its compute shader:\n{}", bias_softmax::WGSL);
    Ok(())
}

/// The same launch on a wgpu device, where one is available.
#[cfg(feature = "wgpu")]
fn on_the_gpu(x: &Tensor<Cpu, 2>, bias: &Tensor<Cpu, 1>, cpu: &[f32]) {
    use blaze::runtime::kernel::ScalarArg;
    use blaze::wgpu::{HostBuffer, WgpuDevice, launch};
    let device = match WgpuDevice::new() {
        Ok(d) => d,
        Err(e) => return println!("no wgpu run: {e}"),
    };
    let [rows, cols] = x.shape();
    let mut gpu = x.to_vec::<f32>();
    let b = bias.to_vec::<f32>();
    let mut buffers = [HostBuffer::Output(&mut gpu), HostBuffer::Input(&b)];
    match launch::<bias_softmax::Kernel>(&device, rows as u32, &mut buffers, &[ScalarArg::U32(cols as u32)]) {
        Ok(()) => {
            let diff = gpu.iter().zip(cpu).map(|(g, c)| (g - c).abs()).fold(0.0f32, f32::max);
            println!("bias_softmax on {}: largest difference from the CPU run {diff:.2e}", device.adapter_name());
        }
        Err(e) => println!("the wgpu run failed: {e}"),
    }
}

/// Without the `wgpu` feature the kernel runs on the CPU only.
#[cfg(not(feature = "wgpu"))]
fn on_the_gpu(_: &Tensor<Cpu, 2>, _: &Tensor<Cpu, 1>, _: &[f32]) {
    println!("(run with `--features wgpu` to launch it on a GPU as well)");
}
