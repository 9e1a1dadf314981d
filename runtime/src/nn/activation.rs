//! Elementwise activations. Each keeps the tensor its derivative is cheapest
//! from: the output for ReLU, sigmoid and tanh (so a layer before them can
//! fuse them into its bias pass), the input for leaky ReLU and GELU.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use super::{Ctx, Layer, stateless_module};
use crate::kernel::{self, Arg, Elementwise, KernelFloat};
use crate::{Backend, Tensor};

/// `max(x, 0)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Relu;

/// `x` for positive `x`, `negative_slope * x` otherwise.
#[derive(Clone, Copy, Debug)]
pub struct LeakyRelu {
    /// The slope for negative inputs.
    pub negative_slope: f64,
}

/// Options of [`LeakyRelu`].
#[derive(Clone, Copy, Debug)]
pub struct LeakyReluConfig {
    /// PyTorch's default is 0.01.
    pub negative_slope: f64,
}

impl Default for LeakyReluConfig {
    fn default() -> Self {
        (&blaze_spec::Options::DEFAULT).into()
    }
}

impl LeakyRelu {
    /// A leaky ReLU with the given options.
    pub fn new(config: LeakyReluConfig) -> Self {
        LeakyRelu { negative_slope: config.negative_slope }
    }
}

impl Default for LeakyRelu {
    fn default() -> Self {
        Self::new(LeakyReluConfig::default())
    }
}

/// Exact (erf) GELU.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gelu;

/// Logistic sigmoid.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sigmoid;

/// Hyperbolic tangent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tanh;

/// A `kernel!` kernel of one argument applied elementwise: a custom
/// activation. In a `#[model]`: `act: Map<swish::Kernel>`.
pub struct Map<K>(PhantomData<fn() -> K>);

impl<K> Map<K> {
    /// The layer.
    pub fn new() -> Self {
        Map(PhantomData)
    }
}

impl<K> Default for Map<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Clone for Map<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Map<K> {}

impl<K: Elementwise> fmt::Debug for Map<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Map<{}>", K::NAME)
    }
}

stateless_module!(Relu, LeakyRelu, Gelu, Sigmoid, Tanh);
stateless_module!(generics [K: Elementwise] Map<K>);

impl<B: Backend, const D: usize> Layer<B, D, D> for Relu {
    /// The output: `y > 0` exactly where `x > 0`.
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.relu()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        let y = x.relu();
        (y.clone(), y)
    }
    fn backward(&self, y: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        // relu'(x) = 1 for x > 0, else 0 (0 at the kink, as PyTorch).
        let zero = Tensor::full_dtype([1; D], 0.0, g.dtype(), &g.device());
        (Tensor::where_cond(&y.gt_scalar(0.0), g, &zero), ())
    }
}

impl<B: Backend, K: Elementwise, const D: usize> Layer<B, D, D> for Map<K> {
    /// The input: the kernel's derivative is taken there.
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        const { assert!(K::ARGS.len() == 1, "Map applies a kernel of one argument") };
        kernel::call::<K, B, D>(&[Arg::Tensor(x)])
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        (Layer::<B, D, D>::forward(self, x), x.clone())
    }
    fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (g.mul(&kernel::partial::<K, B, D>(0, &[Arg::Tensor(x)])), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for LeakyRelu {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.leaky_relu(self.negative_slope)
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        (x.leaky_relu(self.negative_slope), x.clone())
    }
    fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (Tensor::where_cond(&x.gt_scalar(0.0), g, &g.mul_scalar(self.negative_slope)), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for Gelu {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.gelu()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        (x.gelu(), x.clone())
    }
    fn backward(&self, x: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        (kernel::call::<GeluGrad, B, D>(&[Arg::Tensor(x), Arg::Tensor(g)]), ())
    }
}

/// `g * gelu'(x)` in one pass, as an elementwise kernel so every backend
/// runs it fused: `gelu'(x) = Φ(x) + x φ(x)`, with `Φ(x) = (1 + erf(x /
/// √2)) / 2` and `φ(x) = exp(-x² / 2) / √(2π)`.
#[derive(Clone, Copy, Debug)]
struct GeluGrad;

impl GeluGrad {
    #[inline(always)]
    fn parts<T: KernelFloat>(x: T) -> (T, T) {
        let cdf = T::lit(0.5) * (T::lit(1.0) + (x * T::lit(std::f64::consts::FRAC_1_SQRT_2)).erf());
        let pdf = (T::lit(-0.5) * x * x).exp() * T::lit(0.398_942_280_401_432_7);
        (cdf, pdf)
    }
}

impl Elementwise for GeluGrad {
    const NAME: &'static str = "gelu_grad";
    const ARGS: &'static [&'static str] = &["x", "g"];
    const WGSL: &'static str = "
fn gelu_grad_erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.3275911 * abs(x));
    let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-x * x);
    return select(-y, y, x >= 0.0);
}
fn gelu_grad_parts(x: f32) -> vec2<f32> {
    return vec2<f32>(0.5 * (1.0 + gelu_grad_erf(x * 0.70710678)), exp(-0.5 * x * x) * 0.39894228);
}
fn gelu_grad(x: f32, g: f32) -> f32 {
    let p = gelu_grad_parts(x);
    return g * (p.x + x * p.y);
}
fn gelu_grad_d_x(x: f32, g: f32) -> f32 {
    return g * gelu_grad_parts(x).y * (2.0 - x * x);
}
fn gelu_grad_d_g(x: f32, g: f32) -> f32 {
    let p = gelu_grad_parts(x);
    return p.x + x * p.y;
}
";

    fn map<T: KernelFloat>(args: &[&[T]], out: &mut [MaybeUninit<T>]) {
        for ((o, &x), &g) in out.iter_mut().zip(args[0]).zip(args[1]) {
            let (cdf, pdf) = Self::parts(x);
            o.write(g * (cdf + x * pdf));
        }
    }

    fn map_partial<T: KernelFloat>(arg: usize, args: &[&[T]], out: &mut [MaybeUninit<T>]) {
        for ((o, &x), &g) in out.iter_mut().zip(args[0]).zip(args[1]) {
            let (cdf, pdf) = Self::parts(x);
            // d/dx: g (2 φ(x) - x² φ(x)), since φ'(x) = -x φ(x); d/dg: gelu'(x).
            o.write(if arg == 0 { g * pdf * (T::lit(2.0) - x * x) } else { cdf + x * pdf });
        }
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for Sigmoid {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.sigmoid()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        let y = x.sigmoid();
        (y.clone(), y)
    }
    fn backward(&self, y: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        // σ' = σ (1 - σ).
        (g.mul(&y.mul(&y.rsub_scalar(1.0))), ())
    }
}

impl<B: Backend, const D: usize> Layer<B, D, D> for Tanh {
    type Cache = Tensor<B, D>;
    fn forward(&self, x: &Tensor<B, D>) -> Tensor<B, D> {
        x.tanh()
    }
    fn forward_train(&mut self, x: &Tensor<B, D>, _: &mut Ctx) -> (Tensor<B, D>, Tensor<B, D>) {
        let y = x.tanh();
        (y.clone(), y)
    }
    fn backward(&self, y: &Tensor<B, D>, g: &Tensor<B, D>) -> (Tensor<B, D>, ()) {
        // tanh' = 1 - tanh².
        (g.mul(&y.square().rsub_scalar(1.0)), ())
    }
}

#[cfg(test)]
mod tests {
    use super::{Elementwise, GeluGrad};
    use std::mem::MaybeUninit;

    fn run(partial: Option<usize>, x: f64, g: f64) -> f64 {
        let mut out = [MaybeUninit::uninit()];
        let args: [&[f64]; 2] = [&[x], &[g]];
        match partial {
            None => GeluGrad::map(&args, &mut out),
            Some(a) => GeluGrad::map_partial(a, &args, &mut out),
        }
        // SAFETY: `map` and `map_partial` write every slot.
        unsafe { out[0].assume_init() }
    }

    #[test]
    fn gelu_grad_and_its_partials_match_finite_differences() {
        let gelu = |x: f64| 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2));
        let h = 1e-6;
        for &x in &[-3.1, -1.2, -0.3, 0.0, 0.4, 1.7, 2.9] {
            let g = 0.7;
            let want = g * (gelu(x + h) - gelu(x - h)) / (2.0 * h);
            assert!((run(None, x, g) - want).abs() < 1e-8, "gelu_grad({x})");
            let dx = (run(None, x + h, g) - run(None, x - h, g)) / (2.0 * h);
            assert!((run(Some(0), x, g) - dx).abs() < 1e-7, "d/dx at {x}");
            let dg = (run(None, x, g + h) - run(None, x, g - h)) / (2.0 * h);
            assert!((run(Some(1), x, g) - dg).abs() < 1e-7, "d/dg at {x}");
        }
    }
}
