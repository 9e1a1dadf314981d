//! Every WGSL shader the wgpu backend builds is valid, checked without a
//! GPU: on wgpu's no-op backend each shader is parsed and validated by
//! naga and its pipeline laid out, as on a real device, but nothing runs.
//! The ops below reach every shader generator of the backend, in every
//! dtype and layout it specialises on; a shader that does not validate is
//! a fault of the device, which `synchronize` reports. Alone in its binary:
//! it points wgpu at the no-op backend through the environment.

#[path = "../../../tests/common/kernels.rs"]
#[allow(dead_code)]
mod kernels;

use blaze::autodiff::{Autodiff, track};
use blaze::nn::Ctx;
use blaze::nn::Graph;
use blaze::prelude::*;
use blaze::runtime::kernel::{KernelFn, ScalarArg};
use blaze::{Composites, Conv2dOptions, DType, Pool2dOptions, UnaryOp, kernel};
use blaze_wgpu::{DeviceOptions, HostBuffer, MapArg, WgpuDevice, launch, map};

/// The backend tensors use: the device's dtypes on the GPU, f64 and i64 on
/// the CPU.
type Wgpu = blaze::runtime::fallback::HostFallback<blaze_wgpu::WgpuNative, blaze::Cpu>;

kernel! {
    /// Every intrinsic, so the helper functions validate in a shader.
    pub fn everything(x: f32, y: f32) -> f32 {
        let a = exp(x) + exp2(y) + log(abs(x) + 1.0) + log2(abs(y) + 1.0) + sqrt(abs(x)) + rsqrt(abs(y) + 1.0);
        let b = tanh(x) + sin(y) + cos(x) + pow(abs(x), y) + sign(y) + floor(x) + ceil(y) + fma(x, y, 1.0);
        let c = min(x, y) + max(x, y) + clamp(x, -1.0, 1.0) + x % y + select(x < y && !(x == y), 1.0, 0.0);
        a + b + c + if x >= y { x } else { y }
    }
}

#[model(input = [1, 8, 8])]
struct Net {
    #[layer(padding = 1)]
    conv: Conv2d<1, 4, 3>,
    act: Relu,
    pool: MaxPool2d<2>,
    avg: AvgPool2d<2>,
    flat: Flatten,
    norm: LayerNorm<16>,
    fc: Linear<16, 3>,
}

fn t<const D: usize>(shape: [usize; D], dev: &WgpuDevice) -> Tensor<Wgpu, D> {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<f32>>(), shape, dev)
}

fn ids<const D: usize>(values: &[i64], shape: [usize; D], dev: &WgpuDevice) -> Tensor<Wgpu, D> {
    Tensor::from_vec(values.to_vec(), shape, dev)
}

/// Calls every op, so that the backend builds every shader it has.
fn exercise(dev: &WgpuDevice) {
    let x = t([4, 6], dev);
    let y = t([4, 6], dev).add_scalar(0.5);
    let xt = t([6, 4], dev).t(); // strided
    let b = x.gt_scalar(0.0);
    // Creation, casts.
    let _ =
        (Tensor::<Wgpu, 2>::zeros([3, 3], dev), Tensor::<Wgpu, 1>::full([5], 2.0, dev), Tensor::<Wgpu, 2>::eye(3, dev));
    let _ = (
        b.to_dtype(DType::F32),
        x.to_dtype(DType::Bool),
        x.to_dtype(DType::I64),
        Tensor::<Wgpu, 1>::arange(0..5, dev).to_dtype(DType::F32),
    );
    // Elementwise, every op, direct, broadcast and strided.
    for u in [x.neg(), x.abs(), x.exp(), x.log(), x.sqrt(), x.recip(), x.tanh(), x.sigmoid(), x.relu(), x.gelu()] {
        let _ = u;
    }
    let _ = (x.leaky_relu(0.1), x.sin(), x.cos(), x.erf(), x.floor(), x.ceil(), x.sign(), b.logical_not());
    let col = t([4, 1], dev);
    for (p, q) in [(&x, &y), (&x, &xt)] {
        let _ = (p.add(q), p.sub(q), p.mul(q), p.div(q), p.pow(q), p.maximum(q), p.minimum(q));
        let _ = (p.eq(q), p.ne(q), p.lt(q), p.le(q), p.gt(q), p.ge(q));
    }
    let _ = (x.add(&col), x.mul(&col.expand([4, 6])), b.logical_and(&y.gt_scalar(1.0)), b.logical_or(&b));
    let _ =
        (x.add_scalar(1.0), x.mul_scalar(2.0), x.powf(2.0), x.clamp(-1.0, 1.0), x.rsub_scalar(1.0), x.rdiv_scalar(1.0));
    let _ = (x.eq_scalar(0.0), x.ne_scalar(0.0), x.lt_scalar(0.0), x.le_scalar(0.0), x.ge_scalar(0.0), b.eq(&b));
    let _ = (Tensor::where_cond(&b, &x, &y), x.masked_fill(&b, -1.0));
    // Reductions over short and long rows, every dim, and softmax.
    for r in [t([3, 5, 2], dev), t([2, 300, 3], dev), t([70, 2, 1], dev)] {
        for d in 0..r.shape().len() {
            let _ =
                (r.sum_dim(d), r.max_dim(d), r.min_dim(d), r.argmax(d), r.argmin(d), r.softmax(d), r.log_softmax(d));
        }
        let _ = (r.sum(), r.max(), r.min(), r.mean());
        let w = t([r.shape()[2]], dev);
        let (y, stats) = r.norm_with_stats(Some(&w), Some(&w), 1e-5, true);
        let _ = (y.norm_backward(&r, &stats, Some(&w), true), r.rms_norm(None, 1e-6));
        let _ = r.scaled_dot_product_attention(&r, &r, true, None);
        let o = SoftmaxOptions::default().scale(0.5).causal();
        for o in [o, o.log()] {
            let y = r.softmax_with(-1, o);
            let _ = Wgpu::softmax_backward(r.storage(), y.storage(), 2, o);
        }
    }
    // Matmul: plain, transposed, batched with a broadcast batch dim.
    let _ = (x.matmul(&t([6, 5], dev)), xt.t().matmul(&xt), t([2, 3, 4, 6], dev).matmul(&t([1, 3, 6, 5], dev)));
    // Movement and indexing.
    let _ = (
        x.reshape([6, 4]),
        t([2, 3, 4], dev).permute([2, 0, 1]),
        col.expand([4, 6]),
        x.narrow(1, 2, 3),
        x.slice(&[1..3, 0..6]),
    );
    let _ = (x.pad([(1, 2), (0, 1)], 0.5), Tensor::cat(&[x.clone(), y.clone()], 1), b.pad([(1, 0), (0, 0)], 0.0));
    let idx = ids(&[0, 3, 1, 2, 0, 1, 2, 3, 3, 2, 1, 0, 0, 0, 1, 1, 2, 2, 3, 3, 0, 1, 2, 3], [4, 6], dev);
    let _ = (x.gather(0, &idx), x.scatter_add(0, &idx, &y), x.index_select(1, &ids(&[5, 0, 2], [3], dev)));
    let _ = x.index_add(0, &ids(&[1, 1, 3, 0], [4], dev), &y);
    // Booleans are u32 on the device: their own copies of those shaders.
    let _ = (Tensor::cat(&[b.clone(), b.clone()], 0), b.gather(1, &idx), b.index_select(0, &ids(&[3, 0], [2], dev)));
    let cube = t([2, 3, 4], dev);
    let _ = cube.gather(2, &ids(&[0; 24], [2, 3, 4], dev)).scatter_add(1, &ids(&[1; 24], [2, 3, 4], dev), &cube);
    // Convolution, pooling and their gradients.
    let img = t([2, 4, 9, 9], dev);
    for o in [
        Conv2dOptions::default(),
        Conv2dOptions::default().stride(2).padding(1).dilation(2),
        Conv2dOptions::default().groups(2),
    ] {
        let w = t([6, 4 / o.groups, 3, 3], dev);
        let out = img.conv2d(&w, Some(&t([6], dev)), o);
        let _ = (out.conv2d_input_grad(&w, [2, 4, 9, 9], o), img.conv2d_weight_grad(&out, [6, 4 / o.groups, 3, 3], o));
    }
    let _ = img.conv2d(&t([3, 4, 1, 1], dev), None, Conv2dOptions::default());
    // Products under a 16-bit precision: rounded as the matmul stages its
    // tiles (f16 tiles where the adapter has SHADER_F16), or in a pass
    // before a convolution.
    for dtype in [DType::BF16, DType::F16] {
        let _ = Wgpu::matmul_rounded(x.storage(), t([6, 5], dev).storage(), dtype);
        let w = t([3, 4, 1, 1], dev);
        let _ = Wgpu::conv2d_rounded(img.storage(), w.storage(), None, &Conv2dOptions::default(), dtype);
    }
    for o in [Pool2dOptions::new(2), Pool2dOptions::new(3).stride(2).padding(1)] {
        let (v, i) = img.max_pool2d_with_indices(o);
        let _ = (v, i, img.max_pool2d(o));
        let a = img.avg_pool2d(o);
        let _ = a.avg_pool2d_input_grad([2, 4, 9, 9], o);
    }
    // Fused paths.
    for act in [None, Some(UnaryOp::Relu), Some(UnaryOp::Sigmoid), Some(UnaryOp::Tanh), Some(UnaryOp::Gelu)] {
        let _ = x.clone().bias_act(Some(&t([6], dev)), 1, act);
    }
    let mut z = x.clone();
    z.axpby_(0.9, &y, 0.1);
    let _ = Tensor::<Wgpu, 0>::from_storage(Wgpu::sum_squares(x.storage()));
    // Kernels: elementwise (value and partials), general.
    let _ = everything(&x, &y);
    let (xa, ya) = (x.detach(), y.detach());
    let _ = blaze::runtime::kernel::partial::<everything::Kernel, Wgpu, 2>(1, &[(&xa).into(), (&ya).into()]);
    let mut sums = Tensor::<Wgpu, 1>::zeros([4], dev);
    kernels::row_sum::launch(4, &x, &mut sums, 6);
    // The same kernels on host data.
    let host = [1.0f32; 6];
    let mut one = [0.0f32; 1];
    let bufs = &mut [HostBuffer::Input(&host), HostBuffer::Output(&mut one)];
    launch::<kernels::row_sum::Kernel>(dev, 1, bufs, &[ScalarArg::U32(6)]).expect("launch");
    for f in [KernelFn::Value, KernelFn::Partial(0), KernelFn::Partial(1)] {
        map::<everything::Kernel>(dev, f, &[MapArg::Array(&host), MapArg::Number(0.5)], &mut [0.0; 6]).expect("map");
    }
    // Layers that run kernels of their own: value and derivative.
    fn layer<L: blaze::nn::Layer<Wgpu, 2, 2>>(mut l: L, x: &Tensor<Wgpu, 2>) {
        let (y, cache) = l.forward_train(x, &mut Ctx::train(0));
        let _ = l.backward(&cache, &y);
    }
    layer(blaze::nn::Softplus::default(), &x);
    layer(blaze::nn::Elu::default(), &x);
    // A model's training forward and backward on the device, and the tape.
    let mut net = Net::<Wgpu>::new_seeded(0, dev);
    let input = t([2, 1, 8, 8], dev);
    let (out, cache) = net.forward_train(&input, &mut Ctx::train(0));
    let _ = net.backward(&cache, &out.ones_like());
    let mut taped: Net<Autodiff<Wgpu>> = Graph::init(&mut blaze::Rng::seed_from_u64(0), dev);
    track(&mut taped);
    let xa = Tensor::<Autodiff<Wgpu>, 4>::from_inner(input);
    let _ = taped.forward(&xa).square().mean().backward();
}

#[test]
fn every_shader_the_backend_builds_validates_without_a_gpu() {
    // SAFETY: this binary's only test; nothing else reads the environment.
    unsafe {
        std::env::set_var("WGPU_BACKEND", "noop");
        std::env::set_var("WGPU_NOOP_BACKEND", "1");
        std::env::remove_var("BLAZE_WGPU_ADAPTER");
    }
    // The no-op device runs nothing, so its self-check sees zeros.
    let dev = WgpuDevice::open(DeviceOptions { allow_divergent: true, ..DeviceOptions::default() })
        .expect("wgpu's no-op backend gives a device without a GPU");
    assert!(dev.adapter_name().contains("noop"), "{}", dev.adapter_name());
    exercise(&dev);
    if let Err(e) = dev.synchronize() {
        panic!("a shader failed to validate: {e}");
    }
}
