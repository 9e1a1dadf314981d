//! `HostFallback<D, H>`: a device backend `D` that holds only some dtypes
//! (WGSL has no 64-bit types), completed by a host backend `H` for the
//! rest, as `Autodiff<B>` completes a backend with gradients.
//!
//! A tensor lives where its dtype does: on the device when `D` holds the
//! dtype, else on the host, tagged with its device. Ops run where their
//! operands are. Data crosses at documented points only:
//! - an index tensor (i64, always on the host) that a device op reads
//!   (`gather`, `scatter_add`, `index_select`, `index_add`) is uploaded for
//!   that op; the device receives only in-bounds indices (the runtime
//!   checked them), which it may narrow;
//! - an i64 result of a device op (`argmax`, `argmin`, pooling indices)
//!   is read back to the host;
//! - a cast between a device dtype and a host dtype, and a host op whose
//!   result the device holds (a comparison of f64 tensors gives bools),
//!   move the result where its dtype lives;
//! - `where_cond` on host operands reads the (device) condition back.
//!
//! Operands of one op share a dtype (the runtime checks), so they share a
//! placement; anything else is a bug in the caller, and panics naming the
//! op and the placements.
#![deny(missing_docs)]

use std::marker::PhantomData;
use std::ops::Range;

use blaze_runtime::backend::{
    AdamStep, Backend, BinaryOp, CmpOp, Composites, Conv2dOptions, Kernels, Pool2dOptions, Primitives, ReduceOp,
    RowNorm, SoftmaxOptions, UnaryOp,
};
use blaze_runtime::dtype::{DType, TensorData};
use blaze_runtime::kernel::{Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups};

mod composites;

/// A device backend that holds some dtypes natively, for [`HostFallback`].
///
/// Besides the dtypes it holds, the backend takes i64 index tensors from
/// `from_data` (values in bounds of the dims they index, so a backend may
/// narrow them) for the index ops, and may return i64 tensors from
/// `reduce` (argmax, argmin), `max_pool2d` (indices) and `to_data` of
/// those; `HostFallback` moves both across.
pub trait DeviceDtypes: Backend {
    /// Whether tensors of `dtype` live on `device`: a dtype may depend on
    /// the adapter (16-bit floats need `SHADER_F16`), and is then held by
    /// every device the program opens on such an adapter.
    fn holds(dtype: DType, device: &Self::Device) -> bool;

    /// Whether `device` runs products of f32 operands rounded to `dtype`
    /// ([`blaze_runtime::Composites::matmul_rounded`] and the rounded
    /// convolutions) itself, which it may do without holding `dtype`
    /// tensors: the wgpu backend rounds in its kernels. Where it does not,
    /// [`HostFallback`] rounds by casts, which take the values where
    /// `dtype` lives and back.
    fn rounds_to(dtype: DType, device: &Self::Device) -> bool {
        Self::holds(dtype, device)
    }

    /// Reads `x` back inside an op (an i64 result going to the host, an
    /// operand of a cast across): ops cannot fail, so a device that has
    /// faulted may answer zeros here, and reports its fault from
    /// `Device::synchronize`. The default is `to_data`.
    fn read_back(x: &Self::Storage) -> TensorData {
        Self::to_data(x)
    }
}

/// The device backend `D`, with the dtypes it does not hold on host
/// backend `H`. `blaze::wgpu::Wgpu` is `HostFallback<WgpuNative, Cpu>`.
pub struct HostFallback<D, H>(PhantomData<(D, H)>);

impl<D, H> Clone for HostFallback<D, H> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D, H> Copy for HostFallback<D, H> {}

impl<D, H> Default for HostFallback<D, H> {
    fn default() -> Self {
        HostFallback(PhantomData)
    }
}

impl<D: Backend, H: Backend> std::fmt::Debug for HostFallback<D, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostFallback<{}, {}>", D::name(), H::name())
    }
}

/// A tensor of [`HostFallback`]: on the device, or on the host with the
/// device it belongs to.
pub enum Placed<D: Backend, H: Backend> {
    /// A dtype the device holds.
    Device(D::Storage),
    /// A dtype it does not, on the host.
    Host(H::Storage, D::Device),
}

impl<D: Backend, H: Backend> Clone for Placed<D, H> {
    fn clone(&self) -> Self {
        match self {
            Placed::Device(x) => Placed::Device(x.clone()),
            Placed::Host(x, d) => Placed::Host(x.clone(), d.clone()),
        }
    }
}

impl<D: Backend, H: Backend> std::fmt::Debug for Placed<D, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placed::Device(x) => write!(f, "Device({x:?})"),
            Placed::Host(x, d) => write!(f, "Host({x:?}, of {d:?})"),
        }
    }
}

impl<D: Backend, H: Backend> Placed<D, H> {
    fn place(&self) -> &'static str {
        match self {
            Placed::Device(_) => "device",
            Placed::Host(..) => "host",
        }
    }
}

/// The one host device (`H::Device` is a unit for the CPU).
fn host<H: Backend>() -> H::Device {
    H::Device::default()
}

/// Panics for operands that should share a placement and do not.
fn mixed<D: Backend, H: Backend>(op: &str, xs: &[&Placed<D, H>]) -> ! {
    let places: Vec<String> = xs.iter().map(|x| format!("{} {}", x.place(), dtype_of(x))).collect();
    panic!("{op}: operands on the device and on the host ({}); each op runs in one place", places.join(", "))
}

/// Operand `p` of op `op`, which runs on the device because `first` is there.
fn on_device<'a, D: Backend, H: Backend>(op: &str, first: &Placed<D, H>, p: &'a Placed<D, H>) -> &'a D::Storage {
    match p {
        Placed::Device(p) => p,
        other => mixed(op, &[first, other]),
    }
}

/// Operand `p` of op `op`, which runs on the host because `first` is there.
fn on_host<'a, D: Backend, H: Backend>(op: &str, first: &Placed<D, H>, p: &'a Placed<D, H>) -> &'a H::Storage {
    match p {
        Placed::Host(p, _) => p,
        other => mixed(op, &[first, other]),
    }
}

fn dtype_of<D: Backend, H: Backend>(x: &Placed<D, H>) -> DType {
    match x {
        Placed::Device(x) => D::dtype(x),
        Placed::Host(x, _) => H::dtype(x),
    }
}

impl<D: DeviceDtypes, H: Backend> HostFallback<D, H> {
    /// A device result where its dtype lives: an i64 result (argmax,
    /// pooling indices) is read back to the host.
    fn from_device(y: D::Storage) -> Placed<D, H> {
        if D::holds(D::dtype(&y), &D::device(&y)) {
            Placed::Device(y)
        } else {
            let device = D::device(&y);
            Placed::Host(H::from_data(D::read_back(&y), &host::<H>()), device)
        }
    }

    /// A host result where its dtype lives: bools of a comparison, or a
    /// cast to a device dtype, go to `device`.
    fn from_host(y: H::Storage, device: &D::Device) -> Placed<D, H> {
        if D::holds(H::dtype(&y), device) {
            Placed::Device(D::from_data(H::to_data(&y), device))
        } else {
            Placed::Host(y, device.clone())
        }
    }

    /// The values on the host: a host tensor itself, a device one read back.
    fn to_host(x: &Placed<D, H>) -> H::Storage {
        match x {
            Placed::Host(x, _) => x.clone(),
            Placed::Device(x) => H::from_data(D::read_back(x), &host::<H>()),
        }
    }

    /// An index tensor (i64, on the host) uploaded for a device op.
    fn index_on_device(index: &Placed<D, H>, device: &D::Device) -> D::Storage {
        match index {
            Placed::Host(i, _) => D::from_data(H::to_data(i), device),
            Placed::Device(i) => i.clone(),
        }
    }

    fn host_index(index: &Placed<D, H>) -> H::Storage {
        Self::to_host(index)
    }

    /// Runs `on_device` when `x` is on the device, `on_host` (with its
    /// device) otherwise; each result goes where its dtype lives.
    fn one(
        x: &Placed<D, H>,
        on_device: impl FnOnce(&D::Storage) -> D::Storage,
        on_host: impl FnOnce(&H::Storage) -> H::Storage,
    ) -> Placed<D, H> {
        match x {
            Placed::Device(x) => Self::from_device(on_device(x)),
            Placed::Host(x, d) => Self::from_host(on_host(x), d),
        }
    }

    /// As [`HostFallback::one`] for two operands of one dtype.
    fn two(
        op: &str,
        a: &Placed<D, H>,
        b: &Placed<D, H>,
        on_device: impl FnOnce(&D::Storage, &D::Storage) -> D::Storage,
        on_host: impl FnOnce(&H::Storage, &H::Storage) -> H::Storage,
    ) -> Placed<D, H> {
        match (a, b) {
            (Placed::Device(a), Placed::Device(b)) => Self::from_device(on_device(a, b)),
            (Placed::Host(a, d), Placed::Host(b, _)) => Self::from_host(on_host(a, b), d),
            _ => mixed(op, &[a, b]),
        }
    }

    /// A view op (reshape, permute, ...): the result stays where `x` is.
    fn view(
        x: &Placed<D, H>,
        on_device: impl FnOnce(&D::Storage) -> D::Storage,
        on_host: impl FnOnce(&H::Storage) -> H::Storage,
    ) -> Placed<D, H> {
        match x {
            Placed::Device(x) => Placed::Device(on_device(x)),
            Placed::Host(x, d) => Placed::Host(on_host(x), d.clone()),
        }
    }
}

impl<D: DeviceDtypes, H: Backend> Primitives for HostFallback<D, H> {
    type Device = D::Device;
    type Storage = Placed<D, H>;

    fn name() -> &'static str {
        D::name()
    }

    fn from_data(data: TensorData, device: &D::Device) -> Placed<D, H> {
        if D::holds(data.values.dtype(), device) {
            Placed::Device(D::from_data(data, device))
        } else {
            Placed::Host(H::from_data(data, &host::<H>()), device.clone())
        }
    }

    fn to_data(x: &Placed<D, H>) -> TensorData {
        match x {
            Placed::Device(x) => D::to_data(x),
            Placed::Host(x, _) => H::to_data(x),
        }
    }

    fn full(shape: &[usize], value: f64, dtype: DType, device: &D::Device) -> Placed<D, H> {
        if D::holds(dtype, device) {
            Placed::Device(D::full(shape, value, dtype, device))
        } else {
            Placed::Host(H::full(shape, value, dtype, &host::<H>()), device.clone())
        }
    }

    fn shape(x: &Placed<D, H>) -> &[usize] {
        match x {
            Placed::Device(x) => D::shape(x),
            Placed::Host(x, _) => H::shape(x),
        }
    }

    fn dtype(x: &Placed<D, H>) -> DType {
        dtype_of(x)
    }

    fn device(x: &Placed<D, H>) -> D::Device {
        match x {
            Placed::Device(x) => D::device(x),
            Placed::Host(_, d) => d.clone(),
        }
    }

    fn detach(x: &Placed<D, H>) -> Placed<D, H> {
        Self::view(x, D::detach, H::detach)
    }

    fn cast(x: &Placed<D, H>, dtype: DType) -> Placed<D, H> {
        match x {
            Placed::Device(v) if D::holds(dtype, &D::device(v)) => Placed::Device(D::cast(v, dtype)),
            // Across placements the host casts, and the result goes where
            // its dtype lives.
            _ => Self::from_host(H::cast(&Self::to_host(x), dtype), &Self::device(x)),
        }
    }

    fn unary(op: UnaryOp, x: &Placed<D, H>) -> Placed<D, H> {
        Self::one(x, |x| D::unary(op, x), |x| H::unary(op, x))
    }

    fn binary(op: BinaryOp, a: &Placed<D, H>, b: &Placed<D, H>) -> Placed<D, H> {
        Self::two(op.name(), a, b, |a, b| D::binary(op, a, b), |a, b| H::binary(op, a, b))
    }

    fn binary_scalar(op: BinaryOp, x: &Placed<D, H>, scalar: f64) -> Placed<D, H> {
        Self::one(x, |x| D::binary_scalar(op, x, scalar), |x| H::binary_scalar(op, x, scalar))
    }

    fn compare(op: CmpOp, a: &Placed<D, H>, b: &Placed<D, H>) -> Placed<D, H> {
        Self::two(op.name(), a, b, |a, b| D::compare(op, a, b), |a, b| H::compare(op, a, b))
    }

    fn compare_scalar(op: CmpOp, x: &Placed<D, H>, scalar: f64) -> Placed<D, H> {
        Self::one(x, |x| D::compare_scalar(op, x, scalar), |x| H::compare_scalar(op, x, scalar))
    }

    fn where_cond(cond: &Placed<D, H>, a: &Placed<D, H>, b: &Placed<D, H>) -> Placed<D, H> {
        match (cond, a, b) {
            (Placed::Device(c), Placed::Device(a), Placed::Device(b)) => Self::from_device(D::where_cond(c, a, b)),
            // Host operands: the condition is read back (documented above).
            (_, Placed::Host(a, d), Placed::Host(b, _)) => {
                Self::from_host(H::where_cond(&Self::to_host(cond), a, b), d)
            }
            _ => mixed("where_cond", &[cond, a, b]),
        }
    }

    fn reduce(op: ReduceOp, x: &Placed<D, H>, dim: usize) -> Placed<D, H> {
        Self::one(x, |x| D::reduce(op, x, dim), |x| H::reduce(op, x, dim))
    }

    fn matmul(a: &Placed<D, H>, b: &Placed<D, H>) -> Placed<D, H> {
        Self::two("matmul", a, b, D::matmul, H::matmul)
    }

    fn reshape(x: &Placed<D, H>, shape: &[usize]) -> Placed<D, H> {
        Self::view(x, |x| D::reshape(x, shape), |x| H::reshape(x, shape))
    }

    fn permute(x: &Placed<D, H>, axes: &[usize]) -> Placed<D, H> {
        Self::view(x, |x| D::permute(x, axes), |x| H::permute(x, axes))
    }

    fn expand(x: &Placed<D, H>, shape: &[usize]) -> Placed<D, H> {
        Self::view(x, |x| D::expand(x, shape), |x| H::expand(x, shape))
    }

    fn slice(x: &Placed<D, H>, ranges: &[Range<usize>]) -> Placed<D, H> {
        Self::view(x, |x| D::slice(x, ranges), |x| H::slice(x, ranges))
    }

    fn pad(x: &Placed<D, H>, pads: &[(usize, usize)], value: f64) -> Placed<D, H> {
        Self::view(x, |x| D::pad(x, pads, value), |x| H::pad(x, pads, value))
    }

    fn cat(xs: &[Placed<D, H>], dim: usize) -> Placed<D, H> {
        let device: Option<Vec<D::Storage>> = xs
            .iter()
            .map(|x| match x {
                Placed::Device(x) => Some(x.clone()),
                Placed::Host(..) => None,
            })
            .collect();
        if let Some(device) = device {
            return Placed::Device(D::cat(&device, dim));
        }
        let host: Option<Vec<H::Storage>> = xs
            .iter()
            .map(|x| match x {
                Placed::Host(x, _) => Some(x.clone()),
                Placed::Device(_) => None,
            })
            .collect();
        match host {
            Some(host) => Placed::Host(H::cat(&host, dim), Self::device(&xs[0])),
            None => mixed("cat", &xs.iter().collect::<Vec<_>>()),
        }
    }

    fn gather(x: &Placed<D, H>, dim: usize, index: &Placed<D, H>) -> Placed<D, H> {
        match x {
            Placed::Device(v) => Self::from_device(D::gather(v, dim, &Self::index_on_device(index, &D::device(v)))),
            Placed::Host(v, d) => Placed::Host(H::gather(v, dim, &Self::host_index(index)), d.clone()),
        }
    }

    fn scatter_add(x: &Placed<D, H>, dim: usize, index: &Placed<D, H>, src: &Placed<D, H>) -> Placed<D, H> {
        match (x, src) {
            (Placed::Device(v), Placed::Device(s)) => {
                Self::from_device(D::scatter_add(v, dim, &Self::index_on_device(index, &D::device(v)), s))
            }
            (Placed::Host(v, d), Placed::Host(s, _)) => {
                Placed::Host(H::scatter_add(v, dim, &Self::host_index(index), s), d.clone())
            }
            _ => mixed("scatter_add", &[x, src]),
        }
    }

    fn index_select(x: &Placed<D, H>, dim: usize, index: &Placed<D, H>) -> Placed<D, H> {
        match x {
            Placed::Device(v) => {
                Self::from_device(D::index_select(v, dim, &Self::index_on_device(index, &D::device(v))))
            }
            Placed::Host(v, d) => Placed::Host(H::index_select(v, dim, &Self::host_index(index)), d.clone()),
        }
    }

    fn index_add(x: &Placed<D, H>, dim: usize, index: &Placed<D, H>, src: &Placed<D, H>) -> Placed<D, H> {
        match (x, src) {
            (Placed::Device(v), Placed::Device(s)) => {
                Self::from_device(D::index_add(v, dim, &Self::index_on_device(index, &D::device(v)), s))
            }
            (Placed::Host(v, d), Placed::Host(s, _)) => {
                Placed::Host(H::index_add(v, dim, &Self::host_index(index), s), d.clone())
            }
            _ => mixed("index_add", &[x, src]),
        }
    }

    fn conv2d(
        x: &Placed<D, H>,
        weight: &Placed<D, H>,
        bias: Option<&Placed<D, H>>,
        options: &Conv2dOptions,
    ) -> Placed<D, H> {
        match (x, weight, bias) {
            (Placed::Device(x), Placed::Device(w), None) => Self::from_device(D::conv2d(x, w, None, options)),
            (Placed::Device(x), Placed::Device(w), Some(Placed::Device(b))) => {
                Self::from_device(D::conv2d(x, w, Some(b), options))
            }
            (Placed::Host(x, d), Placed::Host(w, _), None) => Placed::Host(H::conv2d(x, w, None, options), d.clone()),
            (Placed::Host(x, d), Placed::Host(w, _), Some(Placed::Host(b, _))) => {
                Placed::Host(H::conv2d(x, w, Some(b), options), d.clone())
            }
            _ => mixed("conv2d", &[x, weight]),
        }
    }

    fn max_pool2d(
        x: &Placed<D, H>,
        options: &Pool2dOptions,
        with_indices: bool,
    ) -> (Placed<D, H>, Option<Placed<D, H>>) {
        match x {
            Placed::Device(x) => {
                let (y, i) = D::max_pool2d(x, options, with_indices);
                (Self::from_device(y), i.map(Self::from_device))
            }
            Placed::Host(x, d) => {
                let (y, i) = H::max_pool2d(x, options, with_indices);
                (Placed::Host(y, d.clone()), i.map(|i| Placed::Host(i, d.clone())))
            }
        }
    }

    fn avg_pool2d(x: &Placed<D, H>, options: &Pool2dOptions) -> Placed<D, H> {
        Self::view(x, |x| D::avg_pool2d(x, options), |x| H::avg_pool2d(x, options))
    }

    fn conv2d_input_grad(
        grad_out: &Placed<D, H>,
        weight: &Placed<D, H>,
        input_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> Placed<D, H> {
        Self::two(
            "conv2d_input_grad",
            grad_out,
            weight,
            |g, w| D::conv2d_input_grad(g, w, input_shape, options),
            |g, w| H::conv2d_input_grad(g, w, input_shape, options),
        )
    }

    fn conv2d_weight_grad(
        x: &Placed<D, H>,
        grad_out: &Placed<D, H>,
        weight_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> Placed<D, H> {
        Self::two(
            "conv2d_weight_grad",
            x,
            grad_out,
            |x, g| D::conv2d_weight_grad(x, g, weight_shape, options),
            |x, g| H::conv2d_weight_grad(x, g, weight_shape, options),
        )
    }

    fn avg_pool2d_input_grad(
        grad_out: &Placed<D, H>,
        input_shape: [usize; 4],
        options: &Pool2dOptions,
    ) -> Placed<D, H> {
        Self::view(
            grad_out,
            |g| D::avg_pool2d_input_grad(g, input_shape, options),
            |g| H::avg_pool2d_input_grad(g, input_shape, options),
        )
    }
}

impl<D: DeviceDtypes, H: Backend> blaze_runtime::Precompiled for HostFallback<D, H> {}

impl<D: DeviceDtypes, H: Backend> HostFallback<D, H> {
    /// A kernel call on the device when it holds `dtype`, else on the host
    /// (`on_host` gets the device the result belongs to).
    fn placed_kernel<K: Elementwise, R>(
        inputs: &[KernelArg<Placed<D, H>>],
        dtype: DType,
        on_device: impl FnOnce(&[KernelArg<D::Storage>]) -> R,
        on_host: impl FnOnce(&[KernelArg<H::Storage>], D::Device) -> R,
    ) -> R {
        let device = inputs.iter().find_map(|a| Some(Self::device(a.tensor()?)));
        let device = device.unwrap_or_default();
        if D::holds(dtype, &device) {
            let on: Vec<KernelArg<D::Storage>> = inputs
                .iter()
                .map(|a| {
                    a.map(|t| match t {
                        Placed::Device(t) => t.clone(),
                        t => mixed(K::NAME, &[t]),
                    })
                })
                .collect();
            on_device(&on)
        } else {
            let on: Vec<KernelArg<H::Storage>> = inputs
                .iter()
                .map(|a| {
                    a.map(|t| match t {
                        Placed::Host(t, _) => t.clone(),
                        t => mixed(K::NAME, &[t]),
                    })
                })
                .collect();
            on_host(&on, device)
        }
    }
}

impl<D: DeviceDtypes, H: Backend> Kernels for HostFallback<D, H> {
    fn elementwise<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Placed<D, H>>],
        shape: &[usize],
        dtype: DType,
    ) -> Placed<D, H> {
        Self::placed_kernel::<K, _>(
            inputs,
            dtype,
            |on| Placed::Device(D::elementwise::<K>(f, on, shape, dtype)),
            |on, d| Placed::Host(H::elementwise::<K>(f, on, shape, dtype), d),
        )
    }

    fn elementwise_sum<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Placed<D, H>>],
        shape: &[usize],
        dtype: DType,
        scale: f64,
    ) -> Placed<D, H> {
        Self::placed_kernel::<K, _>(
            inputs,
            dtype,
            |on| Placed::Device(D::elementwise_sum::<K>(f, on, shape, dtype, scale)),
            |on, d| Placed::Host(H::elementwise_sum::<K>(f, on, shape, dtype, scale), d),
        )
    }

    fn elementwise_softmax<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Placed<D, H>>],
        shape: &[usize],
        dtype: DType,
        log: bool,
    ) -> Placed<D, H> {
        Self::placed_kernel::<K, _>(
            inputs,
            dtype,
            |on| Placed::Device(D::elementwise_softmax::<K>(f, on, shape, dtype, log)),
            |on, d| Placed::Host(H::elementwise_softmax::<K>(f, on, shape, dtype, log), d),
        )
    }

    fn elementwise_norm<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<Placed<D, H>>],
        shape: &[usize],
        dtype: DType,
        norm: RowNorm<'_, Placed<D, H>>,
        keep: bool,
    ) -> (Placed<D, H>, Placed<D, H>, Option<Placed<D, H>>) {
        // The parameters live where the rows do.
        let first = inputs.iter().find_map(KernelArg::tensor).expect("a kernel call reads a tensor");
        Self::placed_kernel::<K, _>(
            inputs,
            dtype,
            |on| {
                let [weight, bias] = [norm.weight, norm.bias].map(|p| p.map(|p| on_device(K::NAME, first, p)));
                let row = RowNorm { weight, bias, eps: norm.eps, centre: norm.centre };
                let (y, stats, x) = D::elementwise_norm::<K>(f, on, shape, dtype, row, keep);
                (Placed::Device(y), Placed::Device(stats), x.map(Placed::Device))
            },
            |on, d| {
                let [weight, bias] = [norm.weight, norm.bias].map(|p| p.map(|p| on_host(K::NAME, first, p)));
                let row = RowNorm { weight, bias, eps: norm.eps, centre: norm.centre };
                let (y, stats, x) = H::elementwise_norm::<K>(f, on, shape, dtype, row, keep);
                let host = |s| Placed::Host(s, d.clone());
                (host(y), host(stats), x.map(host))
            },
        )
    }

    fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, Placed<D, H>>], scalars: &[ScalarArg]) {
        // Kernel buffers are f32: on the device when it holds f32, else
        // all on the host.
        let on_device = buffers.iter().filter(|b| matches!(b.storage(), Placed::Device(_))).count();
        if on_device == buffers.len() {
            let mut inner: Vec<LaunchBuffer<'_, D::Storage>> = buffers
                .iter_mut()
                .filter_map(|b| match b {
                    LaunchBuffer::Input(Placed::Device(t)) => Some(LaunchBuffer::Input(t)),
                    LaunchBuffer::Output(t) => match &mut **t {
                        Placed::Device(t) => Some(LaunchBuffer::Output(t)),
                        Placed::Host(..) => None,
                    },
                    LaunchBuffer::Input(Placed::Host(..)) => None,
                })
                .collect();
            D::launch::<K>(groups, &mut inner, scalars);
        } else if on_device == 0 {
            let mut inner: Vec<LaunchBuffer<'_, H::Storage>> = buffers
                .iter_mut()
                .filter_map(|b| match b {
                    LaunchBuffer::Input(Placed::Host(t, _)) => Some(LaunchBuffer::Input(t)),
                    LaunchBuffer::Output(t) => match &mut **t {
                        Placed::Host(t, _) => Some(LaunchBuffer::Output(t)),
                        Placed::Device(_) => None,
                    },
                    LaunchBuffer::Input(Placed::Device(_)) => None,
                })
                .collect();
            H::launch::<K>(groups, &mut inner, scalars);
        } else {
            let xs: Vec<&Placed<D, H>> = buffers.iter().map(|b| b.storage()).collect();
            mixed(K::NAME, &xs);
        }
    }
}
