//! One model source on both backends: a transformer block written as
//! `#[model]` forward bodies, LeNet and the newer layers, their outputs and generated
//! gradients on the wgpu device against the CPU's, and a few steps of
//! training through the tape on the device. Without an adapter these
//! tests print a notice and pass, unless `BLAZE_REQUIRE_WGPU=1`.

#[path = "../../../../tests/common/mod.rs"]
#[allow(dead_code)]
mod common;
#[path = "../../../../tests/common/concurrency.rs"]
mod concurrency;
#[path = "../../../../tests/common/transformer.rs"]
mod transformer;

use blaze::autodiff::{Autodiff, track};
use blaze::nn::{Ctx, Graph, grads_dict};
use blaze::optim::Adam;
use blaze::prelude::*;
use blaze_wgpu::WgpuDevice;
use common::LeNet;
use transformer::TransformerBlock;

/// The backend tensors use: the device's dtypes on the GPU, f64 and i64 on
/// the CPU.
type Wgpu = blaze::runtime::fallback::HostFallback<blaze_wgpu::WgpuNative, blaze::Cpu>;

fn close(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: length");
    let scale = cpu.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-6);
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        assert!((g - c).abs() <= 1e-4 * scale, "{what}[{i}]: wgpu {g}, cpu {c} (scale {scale})");
    }
}

fn on<const D: usize>(t: &Tensor<Cpu, D>, device: &WgpuDevice) -> Tensor<Wgpu, D> {
    Tensor::from_data(t.to_data(), device).expect("upload")
}

fn host<const D: usize>(t: &Tensor<Wgpu, D>) -> Tensor<Cpu, D> {
    Tensor::from_data(t.to_data(), &CpuDevice).expect("download")
}

/// The layers added on the one-definition path, in one sequence model.
#[model(input = [4, 12])]
pub struct NewLayers {
    #[layer(padding = 1)]
    conv: Conv1d<4, 6, 3>,
    groups: GroupNorm<2, 6>,
    act: Silu,
    norm: BatchNorm1d<6>,
    #[layer(beta = 2.0, threshold = 1.0)]
    soft: Softplus,
    #[layer(alpha = 0.5)]
    elu: Elu,
    same: Identity,
    #[layer(dim = 1)]
    probs: Softmax,
    rms: RMSNorm<12>,
}

/// Recurrent layers: an LSTM both ways, then a two-layer GRU with dropout
/// between its layers.
#[model(input = [5, 4])]
pub struct Recurrence {
    #[layer(bidirectional = true)]
    lstm: Lstm<4, 3>,
    #[layer(num_layers = 2, dropout = 0.25)]
    gru: Gru<6, 5>,
}

/// A grouped transposed convolution, upsampling both ways and adaptive
/// pooling, in an image model.
#[model(input = [2, 6, 6])]
pub struct Resampling {
    #[layer(padding = 1)]
    conv: Conv2d<2, 3, 3>,
    #[layer(stride = 2, padding = 1, output_padding = 1, groups = 3)]
    deconv: ConvTranspose2d<3, 6, 3>,
    #[layer(mode = "bilinear", scale_factor = 1.5)]
    up1: Upsample,
    up2: Upsample,
    pool: AdaptiveAvgPool2d<5, 7>,
}

/// Runs a model's training step on the CPU and the device from the same
/// seed and input: outputs, input gradients and every parameter gradient
/// agree. Returns both models after the step.
macro_rules! agree_in_training {
    ($model:ident, $device:expr, $input:expr, $params:expr) => {{
        let device = $device;
        let mut cpu = $model::<Cpu>::new_seeded(4, &CpuDevice);
        let mut gpu = $model::<Wgpu>::new_seeded(4, device);
        let x = $input;
        let (yc, cc) = cpu.forward_train(&x, &mut Ctx::train(1));
        let (yg, cg) = gpu.forward_train(&on(&x, device), &mut Ctx::train(1));
        close("output", &yg.to_vec::<f32>(), &yc.to_vec::<f32>());
        let g = Tensor::<Cpu, _>::rand_normal(yc.shape(), &CpuDevice);
        let (dxc, gc) = cpu.backward(&cc, &g);
        let (dxg, gg) = gpu.backward(&cg, &on(&g, device));
        close("input gradient", &dxg.to_vec::<f32>(), &dxc.to_vec::<f32>());
        let (gc, gg) = (grads_dict::<Cpu, $model<Cpu>>(&gc), grads_dict::<Wgpu, $model<Wgpu>>(&gg));
        assert_eq!(gc.len(), $params);
        for ((name, c), (_, w)) in gc.iter().zip(&gg) {
            close(
                name,
                &w.values.to_f64_vec().iter().map(|&v| v as f32).collect::<Vec<_>>(),
                &c.values.to_f64_vec().iter().map(|&v| v as f32).collect::<Vec<_>>(),
            );
        }
        (cpu, gpu)
    }};
}

/// Elementwise chains, which `#[model]` fuses into kernels: their WGSL
/// and adjoint kernels on the device, broadcasting and the op table's ops
/// of two tensors included.
#[model]
pub struct Chains {
    fc: Linear<4, 4>,
    pos: Embedding<8, 4>,
}

#[model(input = [T, 4])]
impl Chains {
    fn forward(&self, x: Tensor) -> Tensor {
        let a = self.fc(x);
        let h = (a + self.pos(positions(T))) * sigmoid(x) - x * 0.5;
        let m = maximum(h, x * 0.5) - h.minimum(a) * 0.5 + (abs(a) + 0.5).pow(sigmoid(h)) + h.powf(3.0);
        relu(h) + tanh(h / 2.0) - (exp(a * 0.1) + 1.0).log() + gelu(h * 1.5) + m
    }
}

#[test]
fn fused_groups_agree_with_the_cpu_in_training() {
    assert!(Chains::<Cpu>::FUSION.groups.len() >= 2, "{}", Chains::<Cpu>::FUSION);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    agree_in_training!(Chains, &device, x, 3);
}

/// A pre-norm block: the residual add in `fc2`'s bias pass (one shader
/// with the bias), and the backward recomputing `fc1`'s and `fc2`'s inputs
/// from the LayerNorm's and the GELU's caches.
#[model]
pub struct Residual {
    ln: LayerNorm<4>,
    fc1: Linear<4, 8>,
    fc2: Linear<8, 4>,
}

#[model(input = [T, 4])]
impl Residual {
    fn forward(&self, x: Tensor) -> Tensor {
        x + self.fc2(gelu(self.fc1(self.ln(x))))
    }
}

/// Reductions in the pass of the group before them: one shader per row.
#[model]
pub struct Reduced {
    fc: Linear<4, 4>,
}

#[model(input = [T, 4])]
impl Reduced {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        h * (h * h + 1.0).log().mean_dim(-1) + (h * x).sum_dim(-1)
    }
}

blaze::kernel! {
    /// SiLU with a slope.
    pub fn swish(x: f32, beta: f32) -> f32 {
        x / (1.0 + exp(-beta * x))
    }
}

/// A `kernel!` function inside a group: its WGSL compiled before the
/// group's, its partials in the adjoints.
#[model]
pub struct Kerneled {
    fc: Linear<4, 4>,
}

#[model(input = [T, 4])]
impl Kerneled {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        swish(h * 2.0, 1.5) + swish(x, h) - h
    }
}

#[test]
fn kernel_functions_in_groups_agree_with_the_cpu_in_training() {
    assert!(Kerneled::<Cpu>::FUSION.groups[0].ops.contains(&"swish"), "{}", Kerneled::<Cpu>::FUSION);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    agree_in_training!(Kerneled, &device, x, 2);
}

/// A causal fill inside a group: the mask as one more kernel argument.
#[model]
pub struct Masked {
    fc: Linear<4, 4>,
}

#[model(input = [T, 4])]
impl Masked {
    fn forward(&self, x: Tensor) -> Tensor {
        let s = self.fc(x).matmul(x.transpose(-2, -1));
        (tanh((s * 0.5).masked_fill(causal_mask(T), 0.25)) + 1.0).matmul(x)
    }
}

#[test]
fn masked_fills_in_groups_agree_with_the_cpu_in_training() {
    assert!(Masked::<Cpu>::FUSION.groups[0].ops.contains(&"masked_fill"), "{}", Masked::<Cpu>::FUSION);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    agree_in_training!(Masked, &device, x, 2);
}

/// Dropouts inside a group: the mask drawn in the shader by the same
/// counter-based generator as on the CPU, so both drop the same elements.
#[model]
pub struct Dropped {
    fc: Linear<4, 4>,
    drop: Dropout,
}

#[model(input = [T, 4])]
impl Dropped {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        self.drop(gelu(h) * 2.0) + x
    }
}

#[test]
fn dropouts_in_groups_agree_with_the_cpu_in_training() {
    assert!(Dropped::<Cpu>::FUSION.groups[0].ops.contains(&"dropout"), "{}", Dropped::<Cpu>::FUSION);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 16, 4], &CpuDevice);
    let (_, mut gpu) = agree_in_training!(Dropped, &device, x.clone(), 2);
    // Where the mask drops, the output is the residual `x` alone.
    let (y, _) = gpu.forward_train(&on(&x, &device), &mut Ctx::train(1));
    let dropped = y.to_vec::<f32>().iter().zip(x.to_vec::<f32>()).filter(|(a, b)| **a == *b).count();
    assert!(dropped > 16 && dropped < 112, "{dropped} of 128 dropped");
}

/// Softmaxes after groups: one invocation per row evaluates the group,
/// its max, its sum of exponentials and the output.
#[model]
pub struct Softmaxed {
    fc: Linear<4, 4>,
}

#[model(input = [T, 4])]
impl Softmaxed {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        (h * 0.5 + x).softmax(-1) * h + (tanh(h) - x).log_softmax(-1)
    }
}

#[test]
fn softmaxes_after_groups_agree_with_the_cpu_in_training() {
    let plan = Softmaxed::<Cpu>::FUSION;
    assert!(plan.groups.iter().any(|g| g.ops.ends_with(&["log_softmax"])), "{plan}");
    assert!(plan.groups.iter().any(|g| g.ops.ends_with(&["softmax"])), "{plan}");
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    agree_in_training!(Softmaxed, &device, x, 2);
}

/// A softmax after a group whose row has no finite entry (the log of
/// zeros): the row weighs nothing, 0 and not NaN, as on the CPU.
#[model]
pub struct EmptyRows {
    fc: Linear<4, 4>,
}

#[model(input = [T, 4])]
impl EmptyRows {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        relu(h * 0.0 - 1.0).log().softmax(-1) + h.softmax(-1)
    }
}

#[test]
fn softmaxes_of_rows_with_no_finite_entry_agree_with_the_cpu() {
    let plan = EmptyRows::<Cpu>::FUSION;
    assert!(plan.groups.iter().any(|g| g.ops.ends_with(&["log", "softmax"])), "{plan}");
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    let cpu = EmptyRows::<Cpu>::new_seeded(2, &CpuDevice).forward(&x);
    let gpu = EmptyRows::<Wgpu>::new_seeded(2, &device).forward(&on(&x, &device));
    assert!(cpu.to_vec::<f32>().iter().all(|v| v.is_finite()), "{cpu:?}");
    close("output", &gpu.to_vec::<f32>(), &cpu.to_vec::<f32>());
}

/// Norms after groups: a LayerNorm after a residual chain, an RMSNorm
/// after an activation, their caches made by the group's call.
#[model]
pub struct Normed {
    fc: Linear<4, 4>,
    ln: LayerNorm<4>,
    rms: RMSNorm<4>,
}

#[model(input = [T, 4])]
impl Normed {
    fn forward(&self, x: Tensor) -> Tensor {
        let h = self.fc(x);
        let a = self.ln(x * 0.5 + tanh(h));
        self.rms(gelu(h) - a) * h
    }
}

#[test]
fn norms_after_groups_agree_with_the_cpu_in_training() {
    let plan = Normed::<Cpu>::FUSION;
    assert!(plan.groups.iter().any(|g| g.ops.ends_with(&["layer_norm"])), "{plan}");
    assert!(plan.groups.iter().any(|g| g.ops.ends_with(&["rms_norm"])), "{plan}");
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    let (cpu, gpu) = agree_in_training!(Normed, &device, x.clone(), 5);
    close("inference", &gpu.forward(&on(&x, &device)).to_vec::<f32>(), &cpu.forward(&x).to_vec::<f32>());
    // Long rows, with and without the parameters and the kept values.
    let (x, y) =
        (Tensor::<Cpu, 2>::rand_normal([37, 300], &CpuDevice), Tensor::<Cpu, 2>::rand_normal([1, 300], &CpuDevice));
    let (w, b) = (Tensor::<Cpu, 1>::rand_normal([300], &CpuDevice), Tensor::<Cpu, 1>::rand_normal([300], &CpuDevice));
    let (wg, bg) = (on(&w, &device), on(&b, &device));
    let (xg, yg) = (on(&x, &device), on(&y, &device));
    for (centre, params) in [(true, true), (false, true), (true, false), (false, false)] {
        for keep in [false, true] {
            use blaze::runtime::kernel::{Norm, call_norm};
            let c = call_norm::<shifted::Kernel, Cpu, 2>(
                &[(&x).into(), (&y).into()],
                Norm { weight: params.then_some(&w), bias: params.then_some(&b), eps: 1e-5, centre },
                keep,
            );
            let g = call_norm::<shifted::Kernel, Wgpu, 2>(
                &[(&xg).into(), (&yg).into()],
                Norm { weight: params.then_some(&wg), bias: params.then_some(&bg), eps: 1e-5, centre },
                keep,
            );
            let what = format!("norm (centre {centre}, parameters {params}, keep {keep})");
            close(&what, &g.0.to_vec::<f32>(), &c.0.to_vec::<f32>());
            close(&format!("{what} statistics"), &g.1.to_vec::<f32>(), &c.1.to_vec::<f32>());
            assert_eq!(g.2.is_some(), keep, "{what}");
            if let (Some(gk), Some(ck)) = (g.2, c.2) {
                close(&format!("{what} kept values"), &gk.to_vec::<f32>(), &ck.to_vec::<f32>());
            }
        }
    }
}

blaze::kernel! {
    /// `x * 2 + tanh(y) - 1`, rows to normalise.
    pub fn shifted(x: f32, y: f32) -> f32 {
        x * 2.0 + tanh(y) - 1.0
    }
}

/// A sequential model's run of elementwise fields: one shader forward,
/// one adjoint shader backward, the dropout mask drawn in both.
#[model(input = [6])]
pub struct SeqRun {
    fc: Linear<6, 8>,
    act: Gelu,
    drop: Dropout,
    squash: Sigmoid,
    head: Linear<8, 3>,
}

#[test]
fn sequential_runs_agree_with_the_cpu_in_training() {
    assert_eq!(SeqRun::<Cpu>::FUSION.groups[0].ops, ["gelu", "dropout", "sigmoid"]);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 2>::rand_normal([7, 6], &CpuDevice);
    agree_in_training!(SeqRun, &device, x, 4);
}

/// A residual block of convolutions: the add in `conv2`'s bias pass.
#[model]
pub struct ResConv {
    conv1: Conv2d<2, 3, 1>,
    conv2: Conv2d<3, 2, 1>,
}

#[model(input = [2, 4, 4])]
impl ResConv {
    fn forward(&self, x: Tensor) -> Tensor {
        x + self.conv2(relu(self.conv1(x)))
    }
}

#[test]
fn convolution_residuals_agree_with_the_cpu_in_training() {
    assert_eq!(ResConv::<Cpu>::FUSION.epilogues, &["conv1 + relu", "conv2 + add"]);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 4>::rand_normal([2, 2, 4, 4], &CpuDevice);
    agree_in_training!(ResConv, &device, x, 4);
}

#[test]
fn reductions_after_groups_agree_with_the_cpu_in_training() {
    assert!(Reduced::<Cpu>::FUSION.groups.iter().any(|g| g.ops.ends_with(&["mean"])), "{}", Reduced::<Cpu>::FUSION);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    agree_in_training!(Reduced, &device, x, 2);
}

#[test]
fn epilogues_and_recomputed_inputs_agree_with_the_cpu_in_training() {
    assert_eq!(Residual::<Cpu>::FUSION.epilogues, &["fc2 + add"]);
    assert_eq!(Residual::<Cpu>::FUSION.recomputed, &["fc1 <- ln", "fc2 <- gelu"]);
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    let (cpu, gpu) = agree_in_training!(Residual, &device, x, 6);
    // Inference runs fc1's GELU in its bias pass too.
    let x = Tensor::<Cpu, 3>::rand_normal([3, 2, 4], &CpuDevice);
    close("inference", &gpu.forward(&on(&x, &device)).to_vec::<f32>(), &cpu.forward(&x).to_vec::<f32>());
    // The bias pass, its activation and the residual: one dispatch, counted
    // on a device of its own (the other tests dispatch on the shared one).
    let own = WgpuDevice::new().expect("the adapter the probe found");
    let y = on(&Tensor::<Cpu, 2>::rand_normal([3, 4], &CpuDevice), &own);
    let b = on(&Tensor::<Cpu, 1>::rand_normal([4], &CpuDevice), &own);
    let r = on(&Tensor::<Cpu, 2>::rand_normal([3, 4], &CpuDevice), &own);
    let before = own.dispatches();
    let z = y.clone().bias_act_add(Some(&b), 1, Some(blaze::UnaryOp::Gelu), &r);
    assert_eq!(own.dispatches() - before, 1);
    let want = (host(&y) + host(&b).reshape([1, 4])).gelu() + host(&r);
    close("bias_act_add", &z.to_vec::<f32>(), &want.to_vec::<f32>());
}

#[test]
fn cross_entropy_is_one_shader_on_the_device() {
    let Some(_) = WgpuDevice::probe() else { return };
    let own = WgpuDevice::new().expect("the adapter the probe found");
    let z = Tensor::<Cpu, 2>::rand_normal([37, 11], &CpuDevice).mul_scalar(3.0);
    let ids: Vec<i64> = (0..37).map(|i| if i % 5 == 3 { -100 } else { (i * 7) % 11 }).collect();
    let t = Tensor::<Cpu, 1>::from_vec(ids.clone(), [37], &CpuDevice);
    let want = blaze::loss::cross_entropy(&z, &t, 0.1);
    let (zg, tg) = (on(&z, &own), Tensor::<Wgpu, 1>::from_vec(ids, [37], &own));
    let before = own.dispatches();
    let got = blaze::loss::cross_entropy(&zg, &tg, 0.1);
    // The loss and gradient rows in one shader; the mean over rows in two.
    assert_eq!(own.dispatches() - before, 3);
    close("loss", &[got.item() as f32], &[want.item() as f32]);
    close("gradient", &got.grad.to_vec::<f32>(), &want.grad.to_vec::<f32>());
}

#[test]
fn new_layers_agree_with_the_cpu_in_training() {
    let Some(device) = WgpuDevice::probe() else { return };
    let x = Tensor::<Cpu, 3>::rand_normal([3, 4, 12], &CpuDevice);
    let (cpu, gpu) = agree_in_training!(NewLayers, &device, x, 7);
    close("running_mean", &gpu.norm.running_mean.to_vec::<f32>(), &cpu.norm.running_mean.to_vec::<f32>());
    let x = Tensor::<Cpu, 4>::rand_normal([2, 2, 6, 6], &CpuDevice);
    agree_in_training!(Resampling, &device, x, 4);
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 4], &CpuDevice);
    agree_in_training!(Recurrence, &device, x, 16);
}

/// Causal self-attention with dropout, and cross-attention with a
/// key-padding mask that may hide every key.
#[model]
pub struct Attending {
    #[layer(causal = true, dropout = 0.2)]
    attn: MultiHeadAttention<8, 2>,
    cross: MultiHeadAttention<8, 4>,
}

#[model(input = ([T, 8], [S, 8], [S]))]
impl Attending {
    fn forward(&self, x: Tensor, memory: Tensor, padding: Tensor) -> Tensor {
        self.cross(self.attn(x), memory, memory, padding)
    }
}

#[test]
fn attention_agrees_with_the_cpu_in_training() {
    let Some(device) = WgpuDevice::probe() else { return };
    let mut cpu = Attending::<Cpu>::new_seeded(4, &CpuDevice);
    let mut gpu = Attending::<Wgpu>::new_seeded(4, &device);
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 8], &CpuDevice);
    let memory = Tensor::<Cpu, 3>::rand_normal([2, 6, 8], &CpuDevice);
    // The second sample's memory is all padding: its queries see no key
    // and get zero attention (finite, equal gradients on both devices).
    let padding =
        Tensor::<Cpu, 2>::from_vec(vec![0f32, 0., 0., 0., 1., 1., 1., 1., 1., 1., 1., 1.], [2, 6], &CpuDevice);
    let (yc, cc) = cpu.forward_train(&x, &memory, &padding, &mut Ctx::train(1));
    let (yg, cg) =
        gpu.forward_train(&on(&x, &device), &on(&memory, &device), &on(&padding, &device), &mut Ctx::train(1));
    close("output", &yg.to_vec::<f32>(), &yc.to_vec::<f32>());
    let g = Tensor::<Cpu, 3>::rand_normal(yc.shape(), &CpuDevice);
    let ((dxc, dmc, _), gc) = cpu.backward(&cc, &g);
    let ((dxg, dmg, _), gg) = gpu.backward(&cg, &on(&g, &device));
    close("input gradient", &dxg.to_vec::<f32>(), &dxc.to_vec::<f32>());
    close("memory gradient", &dmg.to_vec::<f32>(), &dmc.to_vec::<f32>());
    let (gc, gg) = (grads_dict::<Cpu, Attending<Cpu>>(&gc), grads_dict::<Wgpu, Attending<Wgpu>>(&gg));
    assert_eq!(gc.len(), 8);
    for ((name, c), (_, w)) in gc.iter().zip(&gg) {
        close(
            name,
            &w.values.to_f64_vec().iter().map(|&v| v as f32).collect::<Vec<_>>(),
            &c.values.to_f64_vec().iter().map(|&v| v as f32).collect::<Vec<_>>(),
        );
    }
}

#[test]
fn transformer_block_agrees_with_the_cpu() {
    let Some(device) = WgpuDevice::probe() else { return };
    let cpu = TransformerBlock::<Cpu>::new_seeded(3, &CpuDevice);
    let gpu = TransformerBlock::<Wgpu>::new_seeded(3, &device);
    let x = Tensor::<Cpu, 3>::rand_normal([2, 5, 16], &CpuDevice);
    let g = Tensor::<Cpu, 3>::rand_normal([2, 5, 16], &CpuDevice);
    let (yc, cc) = cpu.clone().forward_train(&x, &mut Ctx::eval());
    let (yg, cg) = gpu.clone().forward_train(&on(&x, &device), &mut Ctx::eval());
    close("output", &yg.to_vec::<f32>(), &yc.to_vec::<f32>());
    let (dxc, gc) = cpu.backward(&cc, &g);
    let (dxg, gg) = gpu.backward(&cg, &on(&g, &device));
    close("input gradient", &dxg.to_vec::<f32>(), &dxc.to_vec::<f32>());
    let (gc, gg) = (grads_dict::<Cpu, TransformerBlock<Cpu>>(&gc), grads_dict::<Wgpu, TransformerBlock<Wgpu>>(&gg));
    for ((name, c), (_, w)) in gc.iter().zip(&gg) {
        close(
            name,
            &w.values.to_f64_vec().iter().map(|&v| v as f32).collect::<Vec<_>>(),
            &c.values.to_f64_vec().iter().map(|&v| v as f32).collect::<Vec<_>>(),
        );
    }
}

#[test]
fn lenet_agrees_with_the_cpu() {
    let Some(device) = WgpuDevice::probe() else { return };
    let cpu = LeNet::<Cpu>::new_seeded(4, &CpuDevice);
    let gpu = LeNet::<Wgpu>::new_seeded(4, &device);
    let x = Tensor::<Cpu, 4>::rand_normal([2, 1, 28, 28], &CpuDevice);
    let (yc, cc) = cpu.clone().forward_train(&x, &mut Ctx::eval());
    let (yg, cg) = gpu.clone().forward_train(&on(&x, &device), &mut Ctx::eval());
    close("output", &yg.to_vec::<f32>(), &yc.to_vec::<f32>());
    let g = yc.ones_like();
    let gc = grads_dict::<Cpu, LeNet<Cpu>>(&cpu.backward(&cc, &g).1);
    let gg = grads_dict::<Wgpu, LeNet<Wgpu>>(&gpu.backward(&cg, &on(&g, &device)).1);
    for ((name, c), (_, w)) in gc.iter().zip(&gg) {
        let (c, w): (Vec<f32>, Vec<f32>) = (
            c.values.to_f64_vec().iter().map(|&v| v as f32).collect(),
            w.values.to_f64_vec().iter().map(|&v| v as f32).collect(),
        );
        close(name, &w, &c);
    }
}

#[test]
fn the_tape_trains_a_model_on_the_device() {
    let Some(device) = WgpuDevice::probe() else { return };
    let mut model: TransformerBlock<Autodiff<Wgpu>> = Graph::init(&mut blaze::Rng::seed_from_u64(5), &device);
    track(&mut model);
    let x =
        Tensor::<Autodiff<Wgpu>, 3>::from_inner(on(&Tensor::<Cpu, 3>::rand_normal([2, 4, 16], &CpuDevice), &device));
    let mut opt = Adam::new(1e-2);
    let mut losses = Vec::new();
    for _ in 0..20 {
        let loss = model.forward(&x).square().mean();
        losses.push(loss.item());
        loss.backward().step(&mut model, &mut opt);
    }
    assert!(losses[19] < 0.5 * losses[0], "loss {} -> {}", losses[0], losses[19]);
}

#[test]
fn one_model_serves_eight_threads_as_it_serves_one() {
    let Some(device) = WgpuDevice::probe() else { return };
    let mut rng = blaze::Rng::seed_from_u64(7);
    let mut model = LeNet::<Wgpu>::new_seeded(0, &device);
    let batches: Vec<(Tensor<Wgpu, 4>, Tensor<Wgpu, 1>)> = (0..2)
        .map(|_| {
            let x = Tensor::<Cpu, 4>::normal_with([8, 1, 28, 28], 0.0, 1.0, &mut rng, &CpuDevice);
            let y = Tensor::from_vec((0..8).map(|i| i % 10).collect::<Vec<i64>>(), [8], &device);
            (on(&x, &device), y)
        })
        .collect();
    concurrency::train_a_little(&mut model, &batches);
    let inputs: Vec<Tensor<Wgpu, 4>> = [1, 5, 16]
        .into_iter()
        .map(|n| on(&Tensor::<Cpu, 4>::normal_with([n, 1, 28, 28], 0.0, 1.0, &mut rng, &CpuDevice), &device))
        .collect();
    concurrency::serve_from_threads(&model, &inputs, 8, 4);
}
