//! Reverse-mode automatic differentiation as a backend decorator:
//! `Tensor<Autodiff<B>, D>` records the ops it goes through, and
//! `loss.backward()` walks that graph back once, applying one gradient rule
//! per primitive (`rules.rs`). Every composite op (softmax, losses, layers)
//! differentiates by composition, with any Rust control flow around it.
//!
//! ```
//! use blaze_runtime::autodiff::Autodiff;
//! # fn demo<B: blaze_runtime::Backend>(dev: &B::Device) {
//! use blaze_runtime::Tensor;
//! let x = Tensor::<Autodiff<B>, 2>::rand_normal([8, 16], dev).require_grad();
//! let w = Tensor::<Autodiff<B>, 2>::rand_normal([16, 4], dev).require_grad();
//! let mut h = x.matmul(&w).tanh();
//! for _ in 0..3 {
//!     h = h.clone() * 0.5 + h.sigmoid();
//! }
//! let grads = h.sum().backward();
//! let gw = grads.get(&w).expect("w requires grad");
//! assert_eq!(gw.shape(), [16, 4]);
//! # }
//! ```
//!
//! The graph lives as long as the tensors that reach it: dropping the loss
//! and the intermediates frees it, and `backward` holds no state after it
//! returns. Leaves are tensors marked with `require_grad`; constants
//! (data, labels) take no part.

mod graph;
mod rules;

use std::cell::Cell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

pub use graph::live_nodes;
use graph::{Node, Op};

use crate::backend::{
    Backend, BinaryOp, CmpOp, Composites, Conv2dOptions, Kernels, Pool2dOptions, Primitives, ReduceOp, SoftmaxOptions,
    UnaryOp,
};
use crate::dtype::{DType, TensorData};
use crate::kernel::{Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups};
use crate::tensor::Tensor;

/// The autodiff decorator of backend `B`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Autodiff<B: Backend>(PhantomData<B>);

/// A tensor of `B` and, when it depends on a leaf that requires a gradient,
/// the graph node that produced it.
#[derive(Clone, Debug)]
pub struct AdStorage<B: Backend> {
    pub(crate) primal: B::Storage,
    pub(crate) node: Option<Arc<Node<B>>>,
}

thread_local! {
    static NO_GRAD: Cell<usize> = const { Cell::new(0) };
}

/// Runs `f` without recording: tensors made inside have no graph, as under
/// `torch.no_grad()`.
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            NO_GRAD.with(|c| c.set(c.get() - 1));
        }
    }
    NO_GRAD.with(|c| c.set(c.get() + 1));
    let _reset = Reset;
    f()
}

fn recording() -> bool {
    NO_GRAD.with(|c| c.get() == 0)
}

impl<B: Backend> AdStorage<B> {
    fn constant(primal: B::Storage) -> Self {
        AdStorage { primal, node: None }
    }
}

/// Wraps `primal` as the result of `op` on `inputs`, recording a node when
/// any input is tracked and recording is on.
fn record<B: Backend>(primal: B::Storage, inputs: &[&AdStorage<B>], op: impl FnOnce() -> Op<B>) -> AdStorage<B> {
    if recording() && inputs.iter().any(|i| i.node.is_some()) {
        let parents = inputs.iter().map(|i| i.node.clone()).collect();
        AdStorage { primal, node: Some(Node::new(op(), parents)) }
    } else {
        AdStorage::constant(primal)
    }
}

/// Records a convolution `y` of `x` by `weight` (plus `bias`) that ran in
/// `precision`.
fn record_conv<B: Backend>(
    y: B::Storage,
    x: &AdStorage<B>,
    weight: &AdStorage<B>,
    bias: Option<&AdStorage<B>>,
    options: &Conv2dOptions,
    precision: crate::Precision,
) -> AdStorage<B> {
    let op = || Op::Conv2d(x.primal.clone(), weight.primal.clone(), *options, precision);
    match bias {
        Some(b) => record(y, &[x, weight, b], op),
        None => record(y, &[x, weight], op),
    }
}

/// Gradients of a scalar with respect to every leaf it depends on.
#[derive(Debug)]
pub struct Gradients<B: Backend> {
    by_node: HashMap<u64, B::Storage>,
}

impl<B: Backend> Gradients<B> {
    /// The gradient of `leaf` (shaped like it), or `None` if the loss does
    /// not depend on it or it does not require a gradient.
    pub fn get<const D: usize>(&self, leaf: &Tensor<Autodiff<B>, D>) -> Option<Tensor<B, D>> {
        let id = leaf.storage().node.as_ref()?.id;
        self.by_node.get(&id).map(|g| Tensor::from_storage(g.clone()))
    }

    /// Removes and returns the gradient of `leaf`.
    pub fn remove<const D: usize>(&mut self, leaf: &Tensor<Autodiff<B>, D>) -> Option<Tensor<B, D>> {
        let id = leaf.storage().node.as_ref()?.id;
        self.by_node.remove(&id).map(Tensor::from_storage)
    }

    /// The gradients of `module`'s parameters, shaped as the `Grads` the
    /// optimizers take (zeros for parameters the loss does not depend on):
    /// a hand-written model trains with the same optimizers as a `#[model]`.
    pub fn for_module<M: crate::module::Module<Autodiff<B>>>(&self, module: &M) -> M::Grads {
        struct Source<'a, B: Backend>(&'a Gradients<B>);
        impl<B: Backend> crate::module::GradSource<Autodiff<B>> for Source<'_, B> {
            fn grad<const D: usize>(&mut self, _: &str, p: &Tensor<Autodiff<B>, D>) -> Tensor<Autodiff<B>, D> {
                match self.0.get(p) {
                    Some(g) => Tensor::from_inner(g),
                    None => p.detach().zeros_like(),
                }
            }
        }
        module.make_grads("", &mut Source(self))
    }

    /// One optimizer step on a hand-written model: gathers the gradients
    /// of `module`'s parameters, updates them without recording, and marks
    /// the new values as leaves for the next step.
    pub fn step<M, O>(&self, module: &mut M, optimizer: &mut O)
    where
        M: crate::module::Module<Autodiff<B>>,
        O: crate::module::Optimizer<Autodiff<B>>,
    {
        let grads = self.for_module(module);
        no_grad(|| optimizer.step(module, &grads));
        track(module);
    }

    /// Number of leaves with a gradient.
    pub fn len(&self) -> usize {
        self.by_node.len()
    }

    /// True when no leaf got a gradient.
    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }
}

/// Marks every parameter (and buffer) of `module` as a fresh leaf that
/// requires a gradient: after initialisation, and after each update.
pub fn track<B: Backend, M: crate::module::Module<Autodiff<B>>>(module: &mut M) {
    struct Track;
    impl<B: Backend> crate::module::ParamMapper<Autodiff<B>> for Track {
        fn map<const D: usize>(&mut self, _: &str, t: Tensor<Autodiff<B>, D>) -> Tensor<Autodiff<B>, D> {
            t.require_grad()
        }
    }
    module.map_tensors("", &mut Track);
}

impl<B: Backend, const D: usize> Tensor<Autodiff<B>, D> {
    /// Marks this tensor as a leaf whose gradient `backward` computes (a
    /// fresh leaf: any graph behind it is cut).
    pub fn require_grad(self) -> Self {
        let primal = self.into_storage().primal;
        Tensor::from_storage(AdStorage { primal, node: Some(Node::leaf()) })
    }

    /// True when the tensor is tracked (a leaf or computed from one).
    pub fn is_tracked(&self) -> bool {
        self.storage().node.is_some()
    }

    /// The values on the inner backend, without the graph.
    pub fn inner(&self) -> Tensor<B, D> {
        Tensor::from_storage(self.storage().primal.clone())
    }

    /// Wraps an inner-backend tensor as a constant.
    pub fn from_inner(t: Tensor<B, D>) -> Self {
        Tensor::from_storage(AdStorage::constant(t.into_storage()))
    }

    /// The gradients of this tensor's sum (of the tensor itself when it has
    /// one element) with respect to every leaf it depends on.
    pub fn backward(&self) -> Gradients<B> {
        let seed = B::full(
            B::shape(&self.storage().primal),
            1.0,
            B::dtype(&self.storage().primal),
            &B::device(&self.storage().primal),
        );
        Gradients { by_node: graph::backward(self.storage().node.as_ref(), seed) }
    }
}

impl<B: Backend> Primitives for Autodiff<B> {
    type Device = B::Device;
    type Storage = AdStorage<B>;

    fn name() -> &'static str {
        "autodiff"
    }

    fn from_data(data: TensorData, device: &Self::Device) -> AdStorage<B> {
        AdStorage::constant(B::from_data(data, device))
    }

    fn to_data(x: &AdStorage<B>) -> TensorData {
        B::to_data(&x.primal)
    }

    fn full(shape: &[usize], value: f64, dtype: DType, device: &Self::Device) -> AdStorage<B> {
        AdStorage::constant(B::full(shape, value, dtype, device))
    }

    fn detach(x: &AdStorage<B>) -> AdStorage<B> {
        AdStorage::constant(x.primal.clone())
    }

    fn shape(x: &AdStorage<B>) -> &[usize] {
        B::shape(&x.primal)
    }

    fn dtype(x: &AdStorage<B>) -> DType {
        B::dtype(&x.primal)
    }

    fn device(x: &AdStorage<B>) -> Self::Device {
        B::device(&x.primal)
    }

    fn cast(x: &AdStorage<B>, dtype: DType) -> AdStorage<B> {
        let from = B::dtype(&x.primal);
        let y = B::cast(&x.primal, dtype);
        if dtype.is_float() && from.is_float() { record(y, &[x], || Op::Cast(from)) } else { AdStorage::constant(y) }
    }

    fn unary(op: UnaryOp, x: &AdStorage<B>) -> AdStorage<B> {
        let y = B::unary(op, &x.primal);
        if !B::dtype(&y).is_float() {
            return AdStorage::constant(y);
        }
        let out = y.clone();
        record(y, &[x], || Op::Unary(op, x.primal.clone(), out))
    }

    fn binary(op: BinaryOp, a: &AdStorage<B>, b: &AdStorage<B>) -> AdStorage<B> {
        let y = B::binary(op, &a.primal, &b.primal);
        if !B::dtype(&y).is_float() {
            return AdStorage::constant(y);
        }
        record(y, &[a, b], || Op::Binary(op, a.primal.clone(), b.primal.clone()))
    }

    fn binary_scalar(op: BinaryOp, x: &AdStorage<B>, scalar: f64) -> AdStorage<B> {
        let y = B::binary_scalar(op, &x.primal, scalar);
        if !B::dtype(&y).is_float() {
            return AdStorage::constant(y);
        }
        record(y, &[x], || Op::BinaryScalar(op, x.primal.clone(), scalar))
    }

    fn compare(op: CmpOp, a: &AdStorage<B>, b: &AdStorage<B>) -> AdStorage<B> {
        AdStorage::constant(B::compare(op, &a.primal, &b.primal))
    }

    fn compare_scalar(op: CmpOp, x: &AdStorage<B>, scalar: f64) -> AdStorage<B> {
        AdStorage::constant(B::compare_scalar(op, &x.primal, scalar))
    }

    fn where_cond(cond: &AdStorage<B>, a: &AdStorage<B>, b: &AdStorage<B>) -> AdStorage<B> {
        let y = B::where_cond(&cond.primal, &a.primal, &b.primal);
        let (sa, sb) = (B::shape(&a.primal).to_vec(), B::shape(&b.primal).to_vec());
        record(y, &[a, b], || Op::Where(cond.primal.clone(), sa, sb))
    }

    fn reduce(op: ReduceOp, x: &AdStorage<B>, dim: usize) -> AdStorage<B> {
        let y = B::reduce(op, &x.primal, dim);
        match op {
            // Indices, and integer values, have no gradient.
            ReduceOp::ArgMax | ReduceOp::ArgMin => AdStorage::constant(y),
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min if !B::dtype(&y).is_float() => AdStorage::constant(y),
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min => {
                let out = y.clone();
                record(y, &[x], || Op::Reduce(op, x.primal.clone(), out, dim))
            }
        }
    }

    fn matmul(a: &AdStorage<B>, b: &AdStorage<B>) -> AdStorage<B> {
        let y = B::matmul(&a.primal, &b.primal);
        record(y, &[a, b], || Op::Matmul(a.primal.clone(), b.primal.clone(), crate::Precision::F32))
    }

    fn reshape(x: &AdStorage<B>, shape: &[usize]) -> AdStorage<B> {
        let y = B::reshape(&x.primal, shape);
        record(y, &[x], || Op::Reshape(B::shape(&x.primal).to_vec()))
    }

    fn permute(x: &AdStorage<B>, axes: &[usize]) -> AdStorage<B> {
        let y = B::permute(&x.primal, axes);
        record(y, &[x], || Op::Permute(axes.to_vec()))
    }

    fn expand(x: &AdStorage<B>, shape: &[usize]) -> AdStorage<B> {
        let y = B::expand(&x.primal, shape);
        record(y, &[x], || Op::Expand(B::shape(&x.primal).to_vec()))
    }

    fn slice(x: &AdStorage<B>, ranges: &[Range<usize>]) -> AdStorage<B> {
        let y = B::slice(&x.primal, ranges);
        record(y, &[x], || Op::Slice(B::shape(&x.primal).to_vec(), ranges.to_vec()))
    }

    fn pad(x: &AdStorage<B>, pads: &[(usize, usize)], value: f64) -> AdStorage<B> {
        let y = B::pad(&x.primal, pads, value);
        record(y, &[x], || Op::Pad(B::shape(&x.primal).to_vec(), pads.to_vec()))
    }

    fn cat(xs: &[AdStorage<B>], dim: usize) -> AdStorage<B> {
        let primals: Vec<B::Storage> = xs.iter().map(|x| x.primal.clone()).collect();
        let y = B::cat(&primals, dim);
        let sizes = primals.iter().map(|p| B::shape(p)[dim]).collect();
        let refs: Vec<&AdStorage<B>> = xs.iter().collect();
        record(y, &refs, || Op::Cat(dim, sizes))
    }

    fn gather(x: &AdStorage<B>, dim: usize, index: &AdStorage<B>) -> AdStorage<B> {
        let y = B::gather(&x.primal, dim, &index.primal);
        record(y, &[x], || Op::Gather(B::shape(&x.primal).to_vec(), dim, index.primal.clone()))
    }

    fn scatter_add(x: &AdStorage<B>, dim: usize, index: &AdStorage<B>, src: &AdStorage<B>) -> AdStorage<B> {
        let y = B::scatter_add(&x.primal, dim, &index.primal, &src.primal);
        record(y, &[x, src], || Op::ScatterAdd(dim, index.primal.clone()))
    }

    fn index_select(x: &AdStorage<B>, dim: usize, index: &AdStorage<B>) -> AdStorage<B> {
        let y = B::index_select(&x.primal, dim, &index.primal);
        record(y, &[x], || Op::IndexSelect(B::shape(&x.primal).to_vec(), dim, index.primal.clone()))
    }

    fn index_add(x: &AdStorage<B>, dim: usize, index: &AdStorage<B>, src: &AdStorage<B>) -> AdStorage<B> {
        let y = B::index_add(&x.primal, dim, &index.primal, &src.primal);
        record(y, &[x, src], || Op::IndexAdd(dim, index.primal.clone()))
    }

    fn conv2d(
        x: &AdStorage<B>,
        weight: &AdStorage<B>,
        bias: Option<&AdStorage<B>>,
        options: &Conv2dOptions,
    ) -> AdStorage<B> {
        let y = B::conv2d(&x.primal, &weight.primal, bias.map(|b| &b.primal), options);
        record_conv(y, x, weight, bias, options, crate::Precision::F32)
    }

    fn max_pool2d(
        x: &AdStorage<B>,
        options: &Pool2dOptions,
        with_indices: bool,
    ) -> (AdStorage<B>, Option<AdStorage<B>>) {
        // The indices are what the backward pass routes the gradient by.
        let (y, idx) = B::max_pool2d(&x.primal, options, true);
        let idx = idx.unwrap_or_else(|| panic!("max_pool2d: the {} backend returned no indices", B::name()));
        let shape = B::shape(&x.primal).to_vec();
        let out = record(y, &[x], || Op::MaxPool2d(shape, idx.clone()));
        (out, with_indices.then(|| AdStorage::constant(idx)))
    }

    fn avg_pool2d(x: &AdStorage<B>, options: &Pool2dOptions) -> AdStorage<B> {
        let y = B::avg_pool2d(&x.primal, options);
        record(y, &[x], || Op::AvgPool2d(B::shape(&x.primal).to_vec(), *options))
    }

    /// Recorded: a transposed convolution (`ConvTranspose2d`) is this op
    /// in a forward pass.
    fn conv2d_input_grad(
        grad_out: &AdStorage<B>,
        weight: &AdStorage<B>,
        input_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> AdStorage<B> {
        let y = B::conv2d_input_grad(&grad_out.primal, &weight.primal, input_shape, options);
        let precision = crate::Precision::F32;
        record(y, &[grad_out, weight], || {
            Op::ConvTranspose2d(grad_out.primal.clone(), weight.primal.clone(), *options, precision)
        })
    }

    /// Not recorded: gradients of gradients (double backward) are not supported.
    fn conv2d_weight_grad(
        x: &AdStorage<B>,
        grad_out: &AdStorage<B>,
        weight_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> AdStorage<B> {
        AdStorage::constant(B::conv2d_weight_grad(&x.primal, &grad_out.primal, weight_shape, options))
    }

    /// Not recorded: gradients of gradients (double backward) are not supported.
    fn avg_pool2d_input_grad(
        grad_out: &AdStorage<B>,
        input_shape: [usize; 4],
        options: &Pool2dOptions,
    ) -> AdStorage<B> {
        AdStorage::constant(B::avg_pool2d_input_grad(&grad_out.primal, input_shape, options))
    }
}

impl<B: Backend> crate::Precompiled for Autodiff<B> {}

impl<B: Backend> Composites for Autodiff<B> {
    fn bias_act(x: AdStorage<B>, bias: Option<&AdStorage<B>>, dim: usize, act: Option<UnaryOp>) -> AdStorage<B> {
        // One recorded op (and the inner backend's fused pass) for the
        // activations that differentiate from their output; others compose.
        if !act.is_none_or(UnaryOp::grad_of_output) {
            return crate::backend::composed_bias_act::<Self>(x, bias, dim, act);
        }
        let AdStorage { primal, node } = x;
        let y = B::bias_act(primal, bias.map(|b| &b.primal), dim, act);
        let mut parents = vec![node];
        parents.extend(bias.map(|b| b.node.clone()));
        if recording() && parents.iter().any(Option::is_some) {
            let op = Op::BiasAct(act, y.clone(), dim, bias.is_some());
            AdStorage { primal: y, node: Some(Node::new(op, parents)) }
        } else {
            AdStorage::constant(y)
        }
    }

    fn item(x: &AdStorage<B>) -> f64 {
        B::item(&x.primal)
    }

    /// One recorded product (the inner backend's rounded one) whose
    /// gradients' products round as it did.
    fn matmul_rounded(a: &AdStorage<B>, b: &AdStorage<B>, dtype: DType) -> AdStorage<B> {
        let y = B::matmul_rounded(&a.primal, &b.primal, dtype);
        let precision = crate::Precision::rounding_to(dtype);
        record(y, &[a, b], || Op::Matmul(a.primal.clone(), b.primal.clone(), precision))
    }

    /// Recorded with its precision, which its gradients' products follow.
    fn conv2d_rounded(
        x: &AdStorage<B>,
        weight: &AdStorage<B>,
        bias: Option<&AdStorage<B>>,
        options: &Conv2dOptions,
        dtype: DType,
    ) -> AdStorage<B> {
        let y = B::conv2d_rounded(&x.primal, &weight.primal, bias.map(|b| &b.primal), options, dtype);
        record_conv(y, x, weight, bias, options, crate::Precision::rounding_to(dtype))
    }

    /// As [`Primitives::conv2d_input_grad`] here, with its precision.
    fn conv2d_input_grad_rounded(
        grad_out: &AdStorage<B>,
        weight: &AdStorage<B>,
        input_shape: [usize; 4],
        options: &Conv2dOptions,
        dtype: DType,
    ) -> AdStorage<B> {
        let y = B::conv2d_input_grad_rounded(&grad_out.primal, &weight.primal, input_shape, options, dtype);
        let precision = crate::Precision::rounding_to(dtype);
        record(y, &[grad_out, weight], || {
            Op::ConvTranspose2d(grad_out.primal.clone(), weight.primal.clone(), *options, precision)
        })
    }

    /// Not recorded, as [`Primitives::conv2d_weight_grad`] here.
    fn conv2d_weight_grad_rounded(
        x: &AdStorage<B>,
        grad_out: &AdStorage<B>,
        weight_shape: [usize; 4],
        options: &Conv2dOptions,
        dtype: DType,
    ) -> AdStorage<B> {
        AdStorage::constant(B::conv2d_weight_grad_rounded(&x.primal, &grad_out.primal, weight_shape, options, dtype))
    }

    /// One recorded op (the inner backend's fused softmax) whose gradient
    /// is the adjoint the generated backward uses too.
    fn softmax(x: &AdStorage<B>, dim: usize, o: SoftmaxOptions) -> AdStorage<B> {
        let y = B::softmax(&x.primal, dim, o);
        let out = y.clone();
        record(y, &[x], || Op::Softmax(out, dim, o))
    }

    /// Not recorded: gradients of gradients (double backward) are not supported.
    fn softmax_backward(g: &AdStorage<B>, y: &AdStorage<B>, dim: usize, o: SoftmaxOptions) -> AdStorage<B> {
        AdStorage::constant(B::softmax_backward(&g.primal, &y.primal, dim, o))
    }
}

impl<B: Backend> Kernels for Autodiff<B> {
    fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, AdStorage<B>>], scalars: &[ScalarArg]) {
        // A general kernel has no derivative: it runs on the values, and a
        // buffer it writes leaves the graph.
        let mut inner: Vec<LaunchBuffer<'_, B::Storage>> = buffers
            .iter_mut()
            .map(|b| match b {
                LaunchBuffer::Input(s) => LaunchBuffer::Input(&s.primal),
                LaunchBuffer::Output(s) => {
                    s.node = None;
                    LaunchBuffer::Output(&mut s.primal)
                }
            })
            .collect();
        B::launch::<K>(groups, &mut inner, scalars);
    }

    fn elementwise<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<AdStorage<B>>],
        shape: &[usize],
        dtype: DType,
    ) -> AdStorage<B> {
        let primal: Vec<KernelArg<B::Storage>> = inputs.iter().map(|a| a.map(|t| t.primal.clone())).collect();
        let y = B::elementwise::<K>(f, &primal, shape, dtype);
        // A partial's own derivative is not generated: partials are
        // constants to the tape (first-order gradients only).
        if f != KernelFn::Value {
            return AdStorage::constant(y);
        }
        let tracked: Vec<&AdStorage<B>> = inputs.iter().filter_map(KernelArg::tensor).collect();
        let partial: graph::KernelPartial<B> =
            |i, inputs, shape, dtype| B::elementwise::<K>(KernelFn::Partial(i), inputs, shape, dtype);
        record(y, &tracked, || Op::Kernel(partial, primal, shape.to_vec(), dtype))
    }
}
