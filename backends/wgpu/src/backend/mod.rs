//! `impl Backend for WgpuNative`: every primitive as compute shaders over
//! pooled device buffers, recorded into the device's batch.
//!
//! The device holds f32 and bool tensors (bools as `u32` 0 or 1). WGSL
//! has no 64-bit types: f64 and i64 tensors are the host's, through
//! `HostFallback<WgpuNative, H>` (`blaze::wgpu::Wgpu`), which hands this
//! backend i64 index tensors (uploaded as `u32`; the runtime checked they
//! are in bounds) and takes back its i64 results (argmax, pooling indices,
//! `u32` words read back as i64). Any other op on an i64 tensor, or one on
//! f64, panics naming the op. Tensors are always contiguous: reshape is
//! free, permute, expand and slice are one strided copy.
//!
//! This file holds the storage types, the elementwise and reduction ops
//! and the trait impl; the longer ops live beside it: `conv.rs`
//! (convolution, pooling, their gradients), `index.rs` (gather, scatter),
//! `matmul.rs`, `movement.rs` (pad, cat) and `kernels.rs` (`kernel!`
//! kernels).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use blaze_fallback::{DeviceDtypes, HostFallback};
use blaze_gpu_host::GpuBackend;
use blaze_runtime::binary::BinaryVisitor;
use blaze_runtime::kernel::{
    Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups, check_launch, own_outputs,
};
use blaze_runtime::rows;
use blaze_runtime::shape::broadcast_all;
use blaze_runtime::shape::window_output_size;
use blaze_runtime::unary::{UnaryKernel, UnaryVisitor};
use blaze_runtime::{
    AdamStep, Backend, BinaryOp, CmpOp, Composites, Conv2dOptions, DType, Device, Kernels, Pool2dOptions, Primitives,
    ReduceOp, SoftmaxOptions, TensorData, UnaryOp,
};

mod conv;
mod index;
mod kernels;
mod matmul;
mod movement;

pub(crate) use kernels::{elementwise_on, elementwise_program, general_key, read_f32};

use crate::WgpuDevice;
use crate::device::PoolBuffer;
use crate::shaders::{self, EwInput, WG};

/// The wgpu backend for the dtypes WGSL has (f32, bool): a
/// [`DeviceDtypes`] backend. Tensors use it as
/// `HostFallback<WgpuNative, Cpu>`, which the `blaze` facade names
/// `blaze::wgpu::Wgpu`, and which keeps f64 and i64 tensors on the host.
#[derive(Clone, Copy, Debug, Default)]
pub struct WgpuNative;

/// A tensor on a [`WgpuDevice`]: values in a device buffer, row-major, as
/// 4-byte words (`u32` 0 or 1 for bools, `u32` indices for i64).
#[derive(Clone)]
pub struct WgpuStorage {
    buf: Arc<PoolBuffer>,
    shape: Vec<usize>,
    dtype: DType,
    device: WgpuDevice,
}

impl fmt::Debug for WgpuStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WgpuStorage({} {:?} on {:?})", self.dtype, self.shape, self.device)
    }
}

impl DeviceDtypes for WgpuNative {
    fn holds(dtype: DType, _device: &WgpuDevice) -> bool {
        on_device(dtype)
    }

    /// bf16 and f16, which it does not hold: the products round their f32
    /// operands in the kernels (bf16 emulated, as WGSL has none).
    fn rounds_to(dtype: DType, _device: &WgpuDevice) -> bool {
        matches!(dtype, DType::BF16 | DType::F16)
    }

    fn read_back(x: &WgpuStorage) -> TensorData {
        x.data(&x.device.read_or_zeros(x.buffer(), 4 * x.numel() as u64))
    }
}

impl Device for WgpuDevice {
    fn synchronize(&self) -> Result<(), blaze_runtime::DeviceError> {
        WgpuDevice::synchronize(self)
    }
}

impl<H: Backend> blaze_runtime::BackendDevice<HostFallback<WgpuNative, H>> for WgpuDevice {
    fn as_device(&self) -> &WgpuDevice {
        self
    }
}

fn on_device(d: DType) -> bool {
    matches!(d, DType::F32 | DType::Bool)
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn wgsl_ty(d: DType) -> &'static str {
    if d == DType::F32 { "f32" } else { "u32" }
}

/// Row-major strides of `shape`, in elements.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// A grid of `WG`-wide workgroups covering `n` invocations.
fn grid(dev: &WgpuDevice, n: usize, per_group: u32) -> (u32, u32, u32) {
    let groups = (n as u64).div_ceil(per_group as u64) as u32;
    let max = dev.max_groups();
    if groups <= max { (groups, 1, 1) } else { (max, groups.div_ceil(max), 1) }
}

/// A size or index as the 32-bit word shaders take.
fn u(x: usize) -> u32 {
    GpuBackend::Wgpu.index_word(x)
}

impl WgpuStorage {
    fn new(device: &WgpuDevice, shape: &[usize], dtype: DType) -> Self {
        WgpuStorage { buf: device.alloc(4 * numel(shape) as u64), shape: shape.to_vec(), dtype, device: device.clone() }
    }

    fn buffer(&self) -> &wgpu::Buffer {
        self.buf.get()
    }

    fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// The tensor's values from the bytes of its buffer.
    fn data(&self, bytes: &[u8]) -> TensorData {
        TensorData { shape: self.shape.clone(), values: blaze_gpu_host::unpack(bytes, self.dtype, self.numel()) }
    }
}

/// `x`, which op `op` reads as device data: f32 or bool, never an i64
/// (the device holds i64 only as indices for the index ops).
fn native<'a>(op: &str, x: &'a WgpuStorage) -> &'a WgpuStorage {
    if !on_device(x.dtype) {
        GpuBackend::Wgpu.refuse(op, x.dtype);
    }
    x
}

/// How an elementwise input is read: at the output's index (`None`), or
/// from an offset through strides (one per output dim, 0 where broadcast).
type View = Option<(usize, Vec<usize>)>;

/// Runs the elementwise shader `expr` over `inputs` (broadcast to `shape`
/// through `views`: offset and strides per input) into a new tensor.
fn ew(
    key: &str,
    expr: &str,
    inputs: &[(&WgpuStorage, View)],
    shape: &[usize],
    dtype: DType,
    extras: &[u32],
) -> WgpuStorage {
    let device = inputs.first().map_or_else(WgpuDevice::default, |(t, _)| t.device.clone());
    ew_on(&device, "", key, expr, inputs, shape, dtype, extras)
}

/// [`ew`] on `device`, `expr` calling the WGSL functions `funcs`.
#[allow(clippy::too_many_arguments)]
fn ew_on(
    device: &WgpuDevice,
    funcs: &str,
    key: &str,
    expr: &str,
    inputs: &[(&WgpuStorage, View)],
    shape: &[usize],
    dtype: DType,
    extras: &[u32],
) -> WgpuStorage {
    let out = WgpuStorage::new(device, shape, dtype);
    let n = out.numel();
    if n == 0 {
        return out;
    }
    let rank = shape.len();
    let desc: Vec<EwInput> =
        inputs.iter().map(|(t, view)| EwInput { ty: wgsl_ty(t.dtype), direct: view.is_none() }).collect();
    let pkey = format!(
        "ew:{key}:{expr}:{rank}:{}:{}:{}",
        extras.len(),
        wgsl_ty(dtype),
        desc.iter().map(|d| format!("{}{}", d.ty, u8::from(d.direct))).collect::<String>()
    );
    let pipeline = device.compile(
        "elementwise",
        &pkey,
        || shaders::elementwise(&desc, wgsl_ty(dtype), rank, extras.len(), funcs, expr),
        "main",
    );
    let mut params = vec![u(n)];
    params.extend_from_slice(extras);
    let strided = inputs.iter().any(|(_, v)| v.is_some());
    if strided {
        params.extend(shape.iter().map(|&d| u(d)));
        for (_, view) in inputs {
            if let Some((offset, st)) = view {
                params.push(u(*offset));
                params.extend(st.iter().map(|&s| u(s)));
            }
        }
    }
    let mut bufs: Vec<&wgpu::Buffer> = inputs.iter().map(|(t, _)| t.buffer()).collect();
    bufs.push(out.buffer());
    device.dispatch(&pipeline, &bufs, &params, grid(device, n, WG));
    out
}

/// The view of `t` broadcast to `shape` (equal rank): `None` when `t`
/// already has that shape.
fn broadcast_view(t: &WgpuStorage, shape: &[usize]) -> View {
    if t.shape == shape {
        return None;
    }
    let st = strides(&t.shape);
    Some((0, t.shape.iter().zip(&st).map(|(&d, &s)| if d == 1 { 0 } else { s }).collect()))
}

/// `op` applied to the WGSL expression `a`: a call of the op table's
/// function for it, whose WGSL comes third, and the parameters it reads
/// (`pf(1u)`, ..). A bool `not` is `1u - a`.
fn unary_of(op: UnaryOp, a: &str) -> (String, Vec<u32>, &'static str) {
    /// The call of the op's kernel on `a`.
    struct Call<'a>(&'a str);
    impl UnaryVisitor for Call<'_> {
        type Out = (String, Vec<u32>, &'static str);
        fn visit<K: UnaryKernel>(self, params: &[f64]) -> Self::Out {
            let mut args = vec![self.0.to_owned()];
            args.extend((1..=params.len()).map(|k| format!("pf({k}u)")));
            let call = format!("{}({})", K::Value::NAME, args.join(", "));
            (call, params.iter().map(|&p| (p as f32).to_bits()).collect(), K::Value::WGSL)
        }
    }
    op.visit(Call(a)).unwrap_or_else(|| (format!("1u - {a}"), Vec::new(), ""))
}

/// `act(x + bias) (+ residual)` as one elementwise shader: `x` read as
/// `a`, the bias (along `dim`) and the residual as the next inputs.
fn bias_act_add(
    x: &WgpuStorage,
    bias: Option<&WgpuStorage>,
    dim: usize,
    act: Option<UnaryOp>,
    residual: Option<&WgpuStorage>,
) -> WgpuStorage {
    let x = native("bias_act", x);
    let mut inputs: Vec<(&WgpuStorage, View)> = vec![(x, None)];
    let mut v = "a".to_owned();
    if let Some(b) = bias {
        let b = native("bias_act", b);
        let strides = (0..x.shape.len()).map(|d| usize::from(d == dim)).collect();
        inputs.push((b, Some((0, strides))));
        v = "(a + b)".into();
    }
    let (mut expr, extras, funcs) = match act {
        Some(op) => unary_of(op, &v),
        None => (v, Vec::new(), ""),
    };
    if let Some(r) = residual {
        let r = native("bias_act_add", r);
        expr = format!("{expr} + {}", ["b", "c"][inputs.len() - 1]);
        inputs.push((r, broadcast_view(r, &x.shape)));
    }
    ew_on(&x.device, funcs, "bias_act", &expr, &inputs, &x.shape, x.dtype, &extras)
}

/// `a op rhs` in WGSL: a call of the op table's function for a float op,
/// whose WGSL comes second; `&` and `|` for the bool ones.
fn binary_expr(op: BinaryOp, rhs: &str) -> (String, &'static str) {
    /// The call of the op's kernel on `a` and `rhs`.
    struct Call<'a>(&'a str);
    impl BinaryVisitor for Call<'_> {
        type Out = (String, &'static str);
        fn visit<K: Elementwise>(self) -> Self::Out {
            (format!("{}(a, {})", K::NAME, self.0), K::WGSL)
        }
    }
    op.visit(Call(rhs)).unwrap_or_else(|| {
        let o = if op == BinaryOp::And { "&" } else { "|" };
        (format!("a {o} {rhs}"), "")
    })
}

/// `a op rhs` in WGSL, as a `u32` boolean. WGSL lets a compiler assume
/// floats are never NaN (Mesa's Vulkan driver compiles `a != a` to false),
/// so for f32 the NaN cases are decided by the operands' bits: with a NaN
/// operand the comparison is its table entry's `unordered` value (IEEE
/// 754's, which the CPU computes).
fn cmp_expr(op: CmpOp, rhs: &str, float: bool) -> String {
    let o = op.symbol();
    match (float, op.unordered()) {
        (false, _) => format!("b2f(a {o} {rhs})"),
        (true, true) => format!("b2f(a {o} {rhs} || isnan_(a) || isnan_({rhs}))"),
        (true, false) => format!("b2f(a {o} {rhs} && !isnan_(a) && !isnan_({rhs}))"),
    }
}

/// A scalar as the bits of `dtype`'s device type.
fn scalar_bits(v: f64, dtype: DType) -> u32 {
    if dtype == DType::F32 { (v as f32).to_bits() } else { u32::from(v != 0.0) }
}

/// `[outer, dim, inner]` of `shape` around `dim`.
fn split3(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (numel(&shape[..dim]), shape[dim], numel(&shape[dim + 1..]))
}

/// Runs a shader with one invocation per output element, its WGSL
/// `wgsl` (called once per `key`).
fn per_output(
    device: &WgpuDevice,
    key: &str,
    wgsl: impl FnOnce() -> String,
    buffers: &[&wgpu::Buffer],
    params: &[u32],
    n: usize,
) {
    if n == 0 {
        return;
    }
    let pipeline = device.compile("per_output", key, wgsl, "main");
    device.dispatch(&pipeline, buffers, params, grid(device, n, WG));
}

impl WgpuNative {
    fn copy_view(x: &WgpuStorage, offset: usize, st: Vec<usize>, shape: &[usize]) -> WgpuStorage {
        ew("copy", "a", &[(x, Some((offset, st)))], shape, x.dtype, &[])
    }

    fn reshaped(t: &WgpuStorage, shape: &[usize]) -> WgpuStorage {
        WgpuStorage { shape: shape.to_vec(), ..t.clone() }
    }
}

/// `u32` indices a shader wrote (argmax, pooling) as an i64 tensor, which
/// `HostFallback` reads back.
fn indices(t: WgpuStorage) -> WgpuStorage {
    WgpuStorage { dtype: DType::I64, ..t }
}

impl Primitives for WgpuNative {
    type Device = WgpuDevice;
    type Storage = WgpuStorage;

    fn name() -> &'static str {
        "wgpu"
    }

    fn from_data(data: TensorData, device: &WgpuDevice) -> WgpuStorage {
        let shape = data.shape.clone();
        let (bytes, dtype) = GpuBackend::Wgpu.pack(&data.values, false);
        WgpuStorage { buf: device.upload(&bytes), shape, dtype, device: device.clone() }
    }

    fn to_data(x: &WgpuStorage) -> TensorData {
        x.data(&x.device.read(x.buffer(), 4 * x.numel() as u64))
    }

    fn full(shape: &[usize], value: f64, dtype: DType, device: &WgpuDevice) -> WgpuStorage {
        assert!(on_device(dtype), "wgpu full: {dtype} tensors live on the host");
        let expr = if dtype == DType::F32 { "pf(1u)" } else { "pu(1u)" };
        ew_on(device, "", "fill", expr, &[], shape, dtype, &[scalar_bits(value, dtype)])
    }

    fn shape(x: &WgpuStorage) -> &[usize] {
        &x.shape
    }

    fn dtype(x: &WgpuStorage) -> DType {
        x.dtype
    }

    fn device(x: &WgpuStorage) -> WgpuDevice {
        x.device.clone()
    }

    fn cast(x: &WgpuStorage, dtype: DType) -> WgpuStorage {
        let t = native("cast", x);
        if t.dtype == dtype {
            return t.clone();
        }
        assert!(on_device(dtype), "wgpu cast: {dtype} tensors live on the host");
        // NaN is non-zero, so true (decided by its bits, see `cmp_expr`).
        let expr = if dtype == DType::Bool { "b2f(a != 0.0 || isnan_(a))" } else { "f32(a)" };
        ew("cast", expr, &[(t, None)], &t.shape, dtype, &[])
    }

    fn unary(op: UnaryOp, x: &WgpuStorage) -> WgpuStorage {
        let t = native(op.name(), x);
        let (expr, extras, funcs) = unary_of(op, "a");
        ew_on(&t.device, funcs, "unary", &expr, &[(t, None)], &t.shape, t.dtype, &extras)
    }

    fn binary(op: BinaryOp, a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        let (x, y) = (native(op.name(), a), native(op.name(), b));
        let shape = broadcast_all(&[&x.shape, &y.shape]);
        let inputs = [(x, broadcast_view(x, &shape)), (y, broadcast_view(y, &shape))];
        let (expr, funcs) = binary_expr(op, "b");
        ew_on(&x.device, funcs, "binary", &expr, &inputs, &shape, x.dtype, &[])
    }

    fn binary_scalar(op: BinaryOp, x: &WgpuStorage, scalar: f64) -> WgpuStorage {
        let t = native(op.name(), x);
        let s = if t.dtype == DType::F32 { "pf(1u)" } else { "pu(1u)" };
        let (expr, funcs) = binary_expr(op, s);
        let bits = [scalar_bits(scalar, t.dtype)];
        ew_on(&t.device, funcs, "binary_scalar", &expr, &[(t, None)], &t.shape, t.dtype, &bits)
    }

    fn compare(op: CmpOp, a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        let (x, y) = (native(op.name(), a), native(op.name(), b));
        let shape = broadcast_all(&[&x.shape, &y.shape]);
        let inputs = [(x, broadcast_view(x, &shape)), (y, broadcast_view(y, &shape))];
        let expr = cmp_expr(op, "b", x.dtype == DType::F32);
        ew("compare", &expr, &inputs, &shape, DType::Bool, &[])
    }

    fn compare_scalar(op: CmpOp, x: &WgpuStorage, scalar: f64) -> WgpuStorage {
        let t = native(op.name(), x);
        let s = if t.dtype == DType::F32 { "pf(1u)" } else { "pu(1u)" };
        let expr = cmp_expr(op, s, t.dtype == DType::F32);
        ew("compare_scalar", &expr, &[(t, None)], &t.shape, DType::Bool, &[scalar_bits(scalar, t.dtype)])
    }

    fn where_cond(cond: &WgpuStorage, a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        let (c, x, y) = (native("where_cond", cond), native("where_cond", a), native("where_cond", b));
        let shape = broadcast_all(&[&c.shape, &x.shape, &y.shape]);
        let inputs = [(c, broadcast_view(c, &shape)), (x, broadcast_view(x, &shape)), (y, broadcast_view(y, &shape))];
        ew("where", "select(c, b, a != 0u)", &inputs, &shape, x.dtype, &[])
    }

    fn reduce(op: ReduceOp, x: &WgpuStorage, dim: usize) -> WgpuStorage {
        let t = native("reduce", x);
        let (outer, n, inner) = split3(&t.shape, dim);
        let mut shape = t.shape.clone();
        shape[dim] = 1;
        let (name, arg) = (op.name(), op.position());
        let device = &t.device;
        let out = WgpuStorage::new(device, &shape, if arg { DType::Bool } else { DType::F32 });
        let outputs = outer * inner;
        if outputs > 0 {
            // Short rows: one invocation per output; long ones: a workgroup
            // per output with a tree in workgroup memory.
            let short = n <= 256;
            let (key, per_group) =
                if short { (format!("reduce_short:{name}"), WG) } else { (format!("reduce:{name}"), 1) };
            let pipeline = device.compile("reduce", &key, || shaders::reduce(op, short), "main");
            device.dispatch(
                &pipeline,
                &[t.buffer(), out.buffer()],
                &[u(outputs), u(n), u(inner)],
                grid(device, outputs, per_group),
            );
        }
        if arg { indices(out) } else { out }
    }

    fn matmul(a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        matmul::contiguous(native("matmul", a), native("matmul", b))
    }

    fn reshape(x: &WgpuStorage, shape: &[usize]) -> WgpuStorage {
        Self::reshaped(x, shape)
    }

    fn permute(x: &WgpuStorage, axes: &[usize]) -> WgpuStorage {
        let t = native("permute", x);
        let st = strides(&t.shape);
        let shape: Vec<usize> = axes.iter().map(|&a| t.shape[a]).collect();
        Self::copy_view(t, 0, axes.iter().map(|&a| st[a]).collect(), &shape)
    }

    fn expand(x: &WgpuStorage, shape: &[usize]) -> WgpuStorage {
        let t = native("expand", x);
        match broadcast_view(t, shape) {
            None => x.clone(),
            Some((o, st)) => Self::copy_view(t, o, st, shape),
        }
    }

    fn slice(x: &WgpuStorage, ranges: &[Range<usize>]) -> WgpuStorage {
        let t = native("slice", x);
        let st = strides(&t.shape);
        let offset = ranges.iter().zip(&st).map(|(r, s)| r.start * s).sum();
        let shape: Vec<usize> = ranges.iter().map(|r| r.end - r.start).collect();
        Self::copy_view(t, offset, st, &shape)
    }

    fn pad(x: &WgpuStorage, pads: &[(usize, usize)], value: f64) -> WgpuStorage {
        movement::pad(x, pads, value)
    }

    fn cat(xs: &[WgpuStorage], dim: usize) -> WgpuStorage {
        movement::cat(xs, dim)
    }

    fn gather(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
        index::gather(x, dim, index)
    }

    fn scatter_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
        index::scatter_add(x, dim, index, src)
    }

    fn index_select(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
        index::index_select(x, dim, index)
    }

    fn index_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
        index::index_add(x, dim, index, src)
    }

    fn conv2d(x: &WgpuStorage, weight: &WgpuStorage, bias: Option<&WgpuStorage>, o: &Conv2dOptions) -> WgpuStorage {
        conv::conv2d(x, weight, bias, o)
    }

    fn max_pool2d(x: &WgpuStorage, o: &Pool2dOptions, with_indices: bool) -> (WgpuStorage, Option<WgpuStorage>) {
        conv::max_pool2d(x, o, with_indices)
    }

    fn avg_pool2d(x: &WgpuStorage, o: &Pool2dOptions) -> WgpuStorage {
        conv::avg_pool2d(x, o)
    }

    fn conv2d_input_grad(
        grad_out: &WgpuStorage,
        weight: &WgpuStorage,
        input_shape: [usize; 4],
        o: &Conv2dOptions,
    ) -> WgpuStorage {
        conv::conv2d_input_grad(grad_out, weight, input_shape, o)
    }

    fn conv2d_weight_grad(
        x: &WgpuStorage,
        grad_out: &WgpuStorage,
        weight_shape: [usize; 4],
        o: &Conv2dOptions,
    ) -> WgpuStorage {
        conv::conv2d_weight_grad(x, grad_out, weight_shape, o)
    }

    fn avg_pool2d_input_grad(grad_out: &WgpuStorage, input_shape: [usize; 4], o: &Pool2dOptions) -> WgpuStorage {
        conv::avg_pool2d_input_grad(grad_out, input_shape, o)
    }
}

/// The defaults: models train on `HostFallback<WgpuNative, _>`, a generic
/// type whose loop is compiled where it is used, not on this type alone.
impl blaze_runtime::Precompiled for WgpuNative {}

impl Composites for WgpuNative {
    /// On the device, in one elementwise pass (`round16.wgsl`): what a
    /// convolution under a 16-bit precision multiplies.
    fn round_to(x: &WgpuStorage, dtype: DType) -> WgpuStorage {
        let t = native("round_to", x);
        let call = match dtype {
            DType::BF16 => "round_bf16(a)",
            DType::F16 => "round_f16(a)",
            other => panic!("wgpu round_to: f32 values round to bf16 or f16, not {other}"),
        };
        ew_on(&t.device, &shaders::round16(), "round16", call, &[(t, None)], &t.shape, DType::F32, &[])
    }

    /// Rounded as the kernel stages its tiles (in f16 tiles where the
    /// adapter has `SHADER_F16`).
    fn matmul_rounded(a: &WgpuStorage, b: &WgpuStorage, dtype: DType) -> WgpuStorage {
        let (x, y) = (native("matmul_rounded", a), native("matmul_rounded", b));
        assert!(
            matches!(dtype, DType::BF16 | DType::F16),
            "wgpu matmul_rounded: operands round to bf16 or f16, not {dtype}"
        );
        matmul::rounded(x, y, Some(dtype))
    }

    fn bias_act(x: WgpuStorage, bias: Option<&WgpuStorage>, dim: usize, act: Option<UnaryOp>) -> WgpuStorage {
        bias_act_add(&x, bias, dim, act, None)
    }

    fn bias_act_add(
        x: WgpuStorage,
        bias: Option<&WgpuStorage>,
        dim: usize,
        act: Option<UnaryOp>,
        residual: &WgpuStorage,
    ) -> WgpuStorage {
        bias_act_add(&x, bias, dim, act, Some(residual))
    }

    /// The runtime's row kernel (`blaze_runtime::rows::cross_entropy`),
    /// which the CubeCL backend runs too, for targets the device holds: f32
    /// class indices (`HostFallback` converts the host's i64 ones).
    fn cross_entropy(
        logits: &WgpuStorage,
        targets: &WgpuStorage,
        smoothing: f64,
        ignore_index: i64,
        grad_scale: f64,
    ) -> Option<(WgpuStorage, WgpuStorage)> {
        let (z, t) = (native("cross_entropy", logits), native("cross_entropy", targets));
        rows::launch::cross_entropy::<Self>(z, t, smoothing, ignore_index, grad_scale)
    }

    fn attention(q: &WgpuStorage, k: &WgpuStorage, v: &WgpuStorage, o: SoftmaxOptions) -> WgpuStorage {
        let (qn, kn, vn) = (native("attention", q), native("attention", k), native("attention", v));
        let r = qn.shape.len();
        let (t, d, s, e) = (qn.shape[r - 2], qn.shape[r - 1], kn.shape[r - 2], vn.shape[r - 1]);
        if d > shaders::ATTENTION_MAX_WIDTH || e > shaders::ATTENTION_MAX_WIDTH || [t, d, s, e].contains(&0) {
            return blaze_runtime::backend::composed_attention::<Self>(q, k, v, o);
        }
        let mut shape = qn.shape.clone();
        shape[r - 1] = e;
        let device = &qn.device;
        let out = WgpuStorage::new(device, &shape, DType::F32);
        let rows = qn.numel() / d;
        let pipeline = device.compile("attention", "attention", shaders::attention, "main");
        let params = [u(rows), u(t), u(s), u(d), u(e), u32::from(o.causal), (o.scale as f32).to_bits()];
        device.dispatch(
            &pipeline,
            &[qn.buffer(), kn.buffer(), vn.buffer(), out.buffer()],
            &params,
            grid(device, rows, 64),
        );
        out
    }

    fn adam(p: &mut WgpuStorage, m: &mut WgpuStorage, v: &mut WgpuStorage, g: &WgpuStorage, o: AdamStep) {
        let (pn, mn, vn, gn) = (native("adam", p), native("adam", m), native("adam", v), native("adam", g));
        let n = pn.numel();
        let device = pn.device.clone();
        let outs = [&pn.shape, &mn.shape, &vn.shape].map(|s| WgpuStorage::new(&device, s, DType::F32));
        if n > 0 {
            let pipeline = device.compile("adam", "adam", || shaders::ADAM.shader(&[]), "main");
            let (c1, c2) = o.corrections();
            let f = |x: f64| (x as f32).to_bits();
            let coupled = !o.decoupled && o.weight_decay != 0.0;
            let params = [
                u(n),
                f(o.beta1),
                f(o.beta2),
                f(o.eps),
                f(o.weight_decay),
                f(o.keep()),
                f(o.lr / c1),
                f(1.0 / c2),
                u32::from(coupled),
            ];
            let bindings = [
                pn.buffer(),
                mn.buffer(),
                vn.buffer(),
                gn.buffer(),
                outs[0].buffer(),
                outs[1].buffer(),
                outs[2].buffer(),
            ];
            device.dispatch(&pipeline, &bindings, &params, grid(&device, n, 64));
        }
        let [po, mo, vo] = outs;
        (*p, *m, *v) = (po, mo, vo);
    }

    /// The runtime's row kernels (`blaze_runtime::rows::norm`), which the
    /// CubeCL backend runs too.
    fn norm(
        x: &WgpuStorage,
        weight: Option<&WgpuStorage>,
        bias: Option<&WgpuStorage>,
        eps: f64,
        centre: bool,
    ) -> [WgpuStorage; 2] {
        let (weight, bias) = (weight.map(|w| native("norm", w)), bias.map(|b| native("norm", b)));
        rows::launch::norm::<Self>(native("norm", x), weight, bias, eps, centre)
    }

    fn norm_backward(
        g: &WgpuStorage,
        x: &WgpuStorage,
        stats: &WgpuStorage,
        weight: Option<&WgpuStorage>,
        centre: bool,
    ) -> [WgpuStorage; 3] {
        let [g, x, stats] = [g, x, stats].map(|t| native("norm_backward", t));
        rows::launch::norm_backward::<Self>(g, x, stats, weight.map(|w| native("norm_backward", w)), centre)
    }

    /// The runtime's row kernel (`blaze_runtime::rows::softmax`), which
    /// the CubeCL backend runs too.
    fn softmax(x: &WgpuStorage, dim: usize, o: SoftmaxOptions) -> WgpuStorage {
        rows::launch::softmax::<Self>(native("softmax", x), dim, o)
    }

    fn softmax_backward(g: &WgpuStorage, y: &WgpuStorage, dim: usize, o: SoftmaxOptions) -> WgpuStorage {
        rows::launch::softmax_backward::<Self>(native("softmax_backward", g), native("softmax_backward", y), dim, o)
    }
}

impl rows::RowLaunch for WgpuNative {
    fn empty_f32(shape: &[usize], device: &WgpuDevice) -> WgpuStorage {
        WgpuStorage::new(device, shape, DType::F32)
    }

    fn launch_rows<K: Workgroups>(n: usize, buffers: &[&WgpuStorage], scalars: &[ScalarArg]) {
        // A row kernel binds five buffers at the most.
        let mut bound = [buffers[0].buffer(); 5];
        for (b, t) in bound.iter_mut().zip(buffers) {
            *b = t.buffer();
        }
        kernels::rows::<K>(&buffers[0].device, n, &bound[..buffers.len()], scalars);
    }
}

impl Kernels for WgpuNative {
    fn elementwise<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<WgpuStorage>],
        shape: &[usize],
        dtype: DType,
    ) -> WgpuStorage {
        kernels::elementwise::<K>(f, inputs, shape, dtype)
    }

    fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, WgpuStorage>], scalars: &[ScalarArg]) {
        kernels::launch::<K>(groups, buffers, scalars)
    }
}
