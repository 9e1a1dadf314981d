//! `impl Backend for Wgpu`: every primitive as compute shaders over pooled
//! device buffers, recorded into the device's batch.
//!
//! f32 and bool tensors live on the device (bools as `u32` 0 or 1). WGSL
//! has no 64-bit types, so f64 and i64 tensors are held on the host and
//! computed by the CPU backend; an i64 index that a device op reads (a
//! gather's, an embedding's) is uploaded as `u32`. Tensors are always
//! contiguous: reshape is free, permute, expand and slice are one strided
//! copy.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use blaze_cpu::{Cpu, CpuDevice, CpuStorage};
use blaze_runtime::kernel::{Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups, launch_mismatch};
use blaze_runtime::shape::window_output_size;
use blaze_runtime::{
    Backend, BinaryOp, CmpOp, Conv2dOptions, DType, DataVec, Pool2dOptions, ReduceOp, TensorData, UnaryOp,
};

use crate::WgpuDevice;
use crate::device::PoolBuffer;
use crate::shaders::{self, EwInput, WG};

/// The wgpu backend: `Tensor<Wgpu, D>` lives on a [`WgpuDevice`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Wgpu;

/// A tensor on a [`WgpuDevice`].
#[derive(Clone)]
pub enum WgpuStorage {
    /// f32 or bool values in a device buffer.
    Device(DeviceTensor),
    /// f64 or i64 values, kept on the host (WGSL has no 64-bit types).
    Host(CpuStorage, WgpuDevice),
}

/// Values in a device buffer, row-major.
#[derive(Clone, Debug)]
pub struct DeviceTensor {
    buf: Arc<PoolBuffer>,
    shape: Vec<usize>,
    dtype: DType,
    device: WgpuDevice,
}

impl fmt::Debug for WgpuStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WgpuStorage::Device(t) => write!(f, "WgpuStorage::Device({} {:?})", t.dtype, t.shape),
            WgpuStorage::Host(c, _) => write!(f, "WgpuStorage::Host({c:?})"),
        }
    }
}

impl blaze_runtime::nn::BackendDevice for WgpuDevice {
    type Backend = Wgpu;

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

fn u(x: usize) -> u32 {
    u32::try_from(x).unwrap_or_else(|_| panic!("wgpu: size {x} does not fit the device's 32-bit indices"))
}

impl DeviceTensor {
    fn new(device: &WgpuDevice, shape: &[usize], dtype: DType) -> Self {
        DeviceTensor {
            buf: device.alloc(4 * numel(shape) as u64),
            shape: shape.to_vec(),
            dtype,
            device: device.clone(),
        }
    }

    fn buffer(&self) -> &wgpu::Buffer {
        self.buf.get()
    }

    fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// The tensor's values from the bytes of its buffer.
    fn data(&self, bytes: &[u8]) -> TensorData {
        let words = bytes.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]);
        let values = if self.dtype == DType::F32 {
            DataVec::F32(words.map(f32::from_le_bytes).collect())
        } else {
            DataVec::Bool(words.map(|w| u32::from_le_bytes(w) != 0).collect())
        };
        TensorData { shape: self.shape.clone(), values }
    }
}

impl WgpuStorage {
    fn device(&self) -> &WgpuDevice {
        match self {
            WgpuStorage::Device(t) => &t.device,
            WgpuStorage::Host(_, d) => d,
        }
    }

    fn gpu(&self) -> &DeviceTensor {
        match self {
            WgpuStorage::Device(t) => t,
            WgpuStorage::Host(c, _) => panic!("wgpu: expected a device tensor, got {c:?}"),
        }
    }

    /// The values on the host, as a CPU tensor.
    fn host(&self) -> CpuStorage {
        match self {
            WgpuStorage::Host(c, _) => c.clone(),
            // Inside an op, which cannot fail: a faulted device gives zeros.
            WgpuStorage::Device(t) => {
                let bytes = t.device.read_or_zeros(t.buffer(), 4 * t.numel() as u64);
                Cpu::from_data(t.data(&bytes), &CpuDevice)
            }
        }
    }
}

/// A CPU result placed where its dtype lives.
fn place(c: CpuStorage, device: &WgpuDevice) -> WgpuStorage {
    if on_device(Cpu::dtype(&c)) {
        Wgpu::from_data(Cpu::to_data(&c), device)
    } else {
        WgpuStorage::Host(c, device.clone())
    }
}

/// An i64 index tensor as `u32` values on the device.
fn index_buffer(index: &WgpuStorage) -> Arc<PoolBuffer> {
    let values = match Cpu::to_data(&index.host()).values {
        DataVec::I64(v) => v,
        other => panic!("wgpu: indices must be i64, got {}", other.dtype()),
    };
    let bytes: Vec<u8> = values.iter().flat_map(|&v| u(v as usize).to_le_bytes()).collect();
    index.device().upload(&bytes)
}

/// How an elementwise input is read: at the output's index (`None`), or
/// from an offset through strides (one per output dim, 0 where broadcast).
type View = Option<(usize, Vec<usize>)>;

/// Runs the elementwise shader `expr` over `inputs` (broadcast to `shape`
/// through `views`: offset and strides per input) into a new tensor.
fn ew(
    key: &str,
    expr: &str,
    inputs: &[(&DeviceTensor, View)],
    shape: &[usize],
    dtype: DType,
    extras: &[u32],
) -> DeviceTensor {
    let device = inputs.first().map_or_else(WgpuDevice::default, |(t, _)| t.device.clone());
    ew_on(&device, key, expr, inputs, shape, dtype, extras)
}

fn ew_on(
    device: &WgpuDevice,
    key: &str,
    expr: &str,
    inputs: &[(&DeviceTensor, View)],
    shape: &[usize],
    dtype: DType,
    extras: &[u32],
) -> DeviceTensor {
    let out = DeviceTensor::new(device, shape, dtype);
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
        || shaders::elementwise(&desc, wgsl_ty(dtype), rank, extras.len(), expr),
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
fn broadcast_view(t: &DeviceTensor, shape: &[usize]) -> View {
    if t.shape == shape {
        return None;
    }
    let st = strides(&t.shape);
    Some((0, t.shape.iter().zip(&st).map(|(&d, &s)| if d == 1 { 0 } else { s }).collect()))
}

/// The shape `shapes` (of equal rank) broadcast to: per dim, the size
/// that is not 1 (0 included), else 1.
fn broadcast_shape(shapes: &[&[usize]]) -> Vec<usize> {
    let rank = shapes[0].len();
    (0..rank).map(|d| shapes.iter().fold(1, |acc, s| if acc == 1 { s[d] } else { acc })).collect()
}

fn unary_expr(op: UnaryOp) -> (String, Vec<u32>) {
    let e = match op {
        UnaryOp::Neg => "-a",
        UnaryOp::Abs => "abs(a)",
        UnaryOp::Exp => "exp(a)",
        UnaryOp::Log => "log(a)",
        UnaryOp::Sqrt => "sqrt(a)",
        UnaryOp::Recip => "1.0 / a",
        UnaryOp::Tanh => "tanh_(a)",
        UnaryOp::Sigmoid => "1.0 / (1.0 + exp(-a))",
        // NaN passes, tested by its bits: drivers may rewrite `!(a <= 0)` as `a > 0`.
        UnaryOp::Relu => "select(0.0, a, a > 0.0 || isnan_(a))",
        UnaryOp::Gelu => "0.5 * a * (1.0 + erf_(a * 0.70710678118654752))",
        UnaryOp::LeakyRelu(s) => return ("select(a * pf(1u), a, a > 0.0)".into(), vec![(s as f32).to_bits()]),
        UnaryOp::Sin => "sin(a)",
        UnaryOp::Cos => "cos(a)",
        UnaryOp::Erf => "erf_(a)",
        UnaryOp::Floor => "floor(a)",
        UnaryOp::Ceil => "ceil(a)",
        UnaryOp::Sign => "select(sign(a), a, isnan_(a))",
        UnaryOp::Not => "1u - a",
    };
    (e.into(), Vec::new())
}

/// `a op rhs` in WGSL.
fn binary_expr(op: BinaryOp, rhs: &str) -> String {
    match op {
        BinaryOp::Add => format!("a + {rhs}"),
        BinaryOp::Sub => format!("a - {rhs}"),
        BinaryOp::Mul => format!("a * {rhs}"),
        BinaryOp::Div => format!("a / {rhs}"),
        BinaryOp::Pow => format!("pow_(a, {rhs})"),
        BinaryOp::Maximum => format!("max_(a, {rhs})"),
        BinaryOp::Minimum => format!("min_(a, {rhs})"),
        BinaryOp::And => format!("a & {rhs}"),
        BinaryOp::Or => format!("a | {rhs}"),
    }
}

/// `a op rhs` in WGSL, as a `u32` boolean. WGSL lets a compiler assume
/// floats are never NaN (Mesa's Vulkan driver compiles `a != a` to false),
/// so for f32 the NaN cases are decided by the operands' bits: every
/// comparison with NaN is false but `!=`, as IEEE 754 and the CPU say.
fn cmp_expr(op: CmpOp, rhs: &str, float: bool) -> String {
    let o = match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    };
    match (float, op) {
        (false, _) => format!("b2f(a {o} {rhs})"),
        (true, CmpOp::Ne) => format!("b2f(a != {rhs} || isnan_(a) || isnan_({rhs}))"),
        (true, _) => format!("b2f(a {o} {rhs} && !isnan_(a) && !isnan_({rhs}))"),
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

/// Runs a shader with one invocation per output element.
fn per_output(
    device: &WgpuDevice,
    key: &str,
    bufs: &[(&str, &str, bool)],
    body: &str,
    buffers: &[&wgpu::Buffer],
    params: &[u32],
    n: usize,
) {
    if n == 0 {
        return;
    }
    let pipeline = device.compile("per_output", key, || shaders::per_output(bufs, body), "main");
    device.dispatch(&pipeline, buffers, params, grid(device, n, WG));
}

impl Wgpu {
    fn copy_view(x: &DeviceTensor, offset: usize, st: Vec<usize>, shape: &[usize]) -> DeviceTensor {
        ew("copy", "a", &[(x, Some((offset, st)))], shape, x.dtype, &[])
    }

    fn contiguous_matmul(a: &DeviceTensor, b: &DeviceTensor) -> DeviceTensor {
        let (ra, rb) = (a.shape.len(), b.shape.len());
        let (m, k, n) = (a.shape[ra - 2], a.shape[ra - 1], b.shape[rb - 1]);
        let batch_a = &a.shape[..ra - 2];
        let batch_b = &b.shape[..rb - 2];
        let batch = broadcast_shape(&[batch_a, batch_b]);
        assert!(batch.len() <= 6, "wgpu matmul: at most 6 batch dims, got {}", batch.len());
        let mut shape = batch.clone();
        shape.extend([m, n]);
        let device = a.device.clone();
        let out = DeviceTensor::new(&device, &shape, DType::F32);
        let count = numel(&batch);
        if out.numel() == 0 {
            return out;
        }
        if k == 0 {
            return ew_on(&device, "fill", "pf(1u)", &[], &shape, DType::F32, &[0f32.to_bits()]);
        }
        let bstrides = |dims: &[usize]| -> Vec<u32> {
            let st = strides(dims);
            dims.iter().zip(&st).map(|(&d, &s)| if d == 1 { 0 } else { u(s) }).collect()
        };
        let mut params = vec![u(m), u(n), u(k), u(batch.len())];
        let pad6 = |mut v: Vec<u32>| {
            v.resize(6, 0);
            v
        };
        params.extend(pad6(batch.iter().map(|&d| u(d)).collect()));
        params.extend(pad6(bstrides(batch_a)));
        params.extend(pad6(bstrides(batch_b)));
        let pipeline = device.compile("matmul", "matmul", shaders::matmul, "main");
        assert!(count as u32 <= device.max_groups(), "wgpu matmul: {count} matrices in one batch");
        device.dispatch(
            &pipeline,
            &[a.buffer(), b.buffer(), out.buffer()],
            &params,
            (u(n).div_ceil(64), u(m).div_ceil(64), u(count)),
        );
        out
    }

    /// `x` as columns for a convolution: `[n, groups, cin/groups * kh * kw, oh * ow]`.
    fn im2col(x: &DeviceTensor, kh: usize, kw: usize, oh: usize, ow: usize, o: &Conv2dOptions) -> DeviceTensor {
        let [n, c, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
        let g = o.groups;
        let cg = c / g;
        let shape = [n, g, cg * kh * kw, oh * ow];
        let out = DeviceTensor::new(&x.device, &shape, DType::F32);
        let body = "    let l = i % pu(1u); let q = (i / pu(1u)) % pu(2u); let gi = (i / (pu(1u) * pu(2u))) % pu(3u); let b = i / (pu(1u) * pu(2u) * pu(3u));\n\
            let ow = pu(4u); let kh = pu(5u); let kw = pu(6u); let cg = pu(7u); let h = pu(8u); let w = pu(9u);\n\
            let oy = l / ow; let ox = l % ow;\n\
            let ci = q / (kh * kw); let ky = (q / kw) % kh; let kx = q % kw;\n\
            let y = i32(oy * pu(10u) + ky * pu(12u)) - i32(pu(14u));\n\
            let xx = i32(ox * pu(11u) + kx * pu(13u)) - i32(pu(15u));\n\
            var v = 0.0;\n\
            if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) { v = x[((b * pu(3u) * cg + gi * cg + ci) * h + u32(y)) * w + u32(xx)]; }\n\
            out[i] = v;";
        let params = [
            u(out.numel()),
            u(oh * ow),
            u(cg * kh * kw),
            u(g),
            u(ow),
            u(kh),
            u(kw),
            u(cg),
            u(h),
            u(w),
            u(o.stride[0]),
            u(o.stride[1]),
            u(o.dilation[0]),
            u(o.dilation[1]),
            u(o.padding[0]),
            u(o.padding[1]),
        ];
        let _ = (n, c);
        per_output(
            &x.device,
            "im2col",
            &[("x", "f32", false), ("out", "f32", true)],
            body,
            &[x.buffer(), out.buffer()],
            &params,
            out.numel(),
        );
        out
    }

    fn reshaped(t: &DeviceTensor, shape: &[usize]) -> DeviceTensor {
        DeviceTensor { shape: shape.to_vec(), ..t.clone() }
    }

    fn dev(t: DeviceTensor) -> WgpuStorage {
        WgpuStorage::Device(t)
    }
}

/// `u32` indices on the device (argmax, pooling) as an i64 host tensor.
fn indices_to_host(t: &DeviceTensor) -> WgpuStorage {
    let bytes = t.device.read_or_zeros(t.buffer(), 4 * t.numel() as u64);
    let v: Vec<i64> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect();
    let data = TensorData { shape: t.shape.clone(), values: DataVec::I64(v) };
    WgpuStorage::Host(Cpu::from_data(data, &CpuDevice), t.device.clone())
}

/// The output plane `[oh, ow]` of pooling an `[h, w]` plane.
fn pool_plane(h: usize, w: usize, o: &Pool2dOptions) -> [usize; 2] {
    [window(h, o.kernel[0], o.stride[0], o.padding[0], 1), window(w, o.kernel[1], o.stride[1], o.padding[1], 1)]
}

/// The parameters the pooling shaders read: `[invocations, ow, oh, h, w,
/// kh, kw, sh, sw, ph, pw]`.
fn pool_params(invocations: usize, [oh, ow]: [usize; 2], [h, w]: [usize; 2], o: &Pool2dOptions) -> [u32; 11] {
    [
        u(invocations),
        u(ow),
        u(oh),
        u(h),
        u(w),
        u(o.kernel[0]),
        u(o.kernel[1]),
        u(o.stride[0]),
        u(o.stride[1]),
        u(o.padding[0]),
        u(o.padding[1]),
    ]
}

/// Output size of a window along one dim, which the runtime has checked.
fn window(size: usize, k: usize, stride: usize, pad: usize, dil: usize) -> usize {
    window_output_size(size, k, stride, pad, dil).expect("the runtime checked the window")
}

impl Backend for Wgpu {
    type Device = WgpuDevice;
    type Storage = WgpuStorage;

    fn name() -> &'static str {
        "wgpu"
    }

    fn synchronize(device: &WgpuDevice) -> Result<(), blaze_runtime::DeviceError> {
        device.synchronize()
    }

    fn from_data(data: TensorData, device: &WgpuDevice) -> WgpuStorage {
        let shape = data.shape.clone();
        match data.values {
            DataVec::F32(v) => {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                WgpuStorage::Device(DeviceTensor {
                    buf: device.upload(&bytes),
                    shape,
                    dtype: DType::F32,
                    device: device.clone(),
                })
            }
            DataVec::Bool(v) => {
                let bytes: Vec<u8> = v.iter().flat_map(|&x| u32::from(x).to_le_bytes()).collect();
                WgpuStorage::Device(DeviceTensor {
                    buf: device.upload(&bytes),
                    shape,
                    dtype: DType::Bool,
                    device: device.clone(),
                })
            }
            values => WgpuStorage::Host(Cpu::from_data(TensorData { shape, values }, &CpuDevice), device.clone()),
        }
    }

    fn to_data(x: &WgpuStorage) -> TensorData {
        match x {
            WgpuStorage::Host(c, _) => Cpu::to_data(c),
            WgpuStorage::Device(t) => t.data(&t.device.read(t.buffer(), 4 * t.numel() as u64)),
        }
    }

    fn full(shape: &[usize], value: f64, dtype: DType, device: &WgpuDevice) -> WgpuStorage {
        if !on_device(dtype) {
            return WgpuStorage::Host(Cpu::full(shape, value, dtype, &CpuDevice), device.clone());
        }
        let expr = if dtype == DType::F32 { "pf(1u)" } else { "pu(1u)" };
        Self::dev(ew_on(device, "fill", expr, &[], shape, dtype, &[scalar_bits(value, dtype)]))
    }

    fn shape(x: &WgpuStorage) -> &[usize] {
        match x {
            WgpuStorage::Device(t) => &t.shape,
            WgpuStorage::Host(c, _) => Cpu::shape(c),
        }
    }

    fn dtype(x: &WgpuStorage) -> DType {
        match x {
            WgpuStorage::Device(t) => t.dtype,
            WgpuStorage::Host(c, _) => Cpu::dtype(c),
        }
    }

    fn device(x: &WgpuStorage) -> WgpuDevice {
        x.device().clone()
    }

    fn cast(x: &WgpuStorage, dtype: DType) -> WgpuStorage {
        let from = Self::dtype(x);
        if from == dtype {
            return x.clone();
        }
        match (x, on_device(dtype)) {
            (WgpuStorage::Device(t), true) => {
                // NaN is non-zero, so true (decided by its bits, see `cmp_expr`).
                let expr = if dtype == DType::Bool { "b2f(a != 0.0 || isnan_(a))" } else { "f32(a)" };
                Self::dev(ew("cast", expr, &[(t, None)], &t.shape, dtype, &[]))
            }
            _ => place(Cpu::cast(&x.host(), dtype), x.device()),
        }
    }

    fn unary(op: UnaryOp, x: &WgpuStorage) -> WgpuStorage {
        match x {
            WgpuStorage::Device(t) => {
                let (expr, extras) = unary_expr(op);
                Self::dev(ew("unary", &expr, &[(t, None)], &t.shape, t.dtype, &extras))
            }
            WgpuStorage::Host(c, d) => place(Cpu::unary(op, c), d),
        }
    }

    fn binary(op: BinaryOp, a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        match (a, b) {
            (WgpuStorage::Device(x), WgpuStorage::Device(y)) => {
                let shape = broadcast_shape(&[&x.shape, &y.shape]);
                let inputs = [(x, broadcast_view(x, &shape)), (y, broadcast_view(y, &shape))];
                Self::dev(ew("binary", &binary_expr(op, "b"), &inputs, &shape, x.dtype, &[]))
            }
            _ => place(Cpu::binary(op, &a.host(), &b.host()), a.device()),
        }
    }

    fn binary_scalar(op: BinaryOp, x: &WgpuStorage, scalar: f64) -> WgpuStorage {
        match x {
            WgpuStorage::Device(t) => {
                let s = if t.dtype == DType::F32 { "pf(1u)" } else { "pu(1u)" };
                let expr = binary_expr(op, s);
                Self::dev(ew("binary_scalar", &expr, &[(t, None)], &t.shape, t.dtype, &[scalar_bits(scalar, t.dtype)]))
            }
            WgpuStorage::Host(c, d) => place(Cpu::binary_scalar(op, c, scalar), d),
        }
    }

    fn compare(op: CmpOp, a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        match (a, b) {
            (WgpuStorage::Device(x), WgpuStorage::Device(y)) => {
                let shape = broadcast_shape(&[&x.shape, &y.shape]);
                let inputs = [(x, broadcast_view(x, &shape)), (y, broadcast_view(y, &shape))];
                let expr = cmp_expr(op, "b", x.dtype == DType::F32);
                Self::dev(ew("compare", &expr, &inputs, &shape, DType::Bool, &[]))
            }
            _ => place(Cpu::compare(op, &a.host(), &b.host()), a.device()),
        }
    }

    fn compare_scalar(op: CmpOp, x: &WgpuStorage, scalar: f64) -> WgpuStorage {
        match x {
            WgpuStorage::Device(t) => {
                let s = if t.dtype == DType::F32 { "pf(1u)" } else { "pu(1u)" };
                let expr = cmp_expr(op, s, t.dtype == DType::F32);
                Self::dev(ew(
                    "compare_scalar",
                    &expr,
                    &[(t, None)],
                    &t.shape,
                    DType::Bool,
                    &[scalar_bits(scalar, t.dtype)],
                ))
            }
            WgpuStorage::Host(c, d) => place(Cpu::compare_scalar(op, c, scalar), d),
        }
    }

    fn where_cond(cond: &WgpuStorage, a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        match (cond, a, b) {
            (WgpuStorage::Device(c), WgpuStorage::Device(x), WgpuStorage::Device(y)) => {
                let shape = broadcast_shape(&[&c.shape, &x.shape, &y.shape]);
                let inputs =
                    [(c, broadcast_view(c, &shape)), (x, broadcast_view(x, &shape)), (y, broadcast_view(y, &shape))];
                Self::dev(ew("where", "select(c, b, a != 0u)", &inputs, &shape, x.dtype, &[]))
            }
            _ => place(Cpu::where_cond(&cond.host(), &a.host(), &b.host()), a.device()),
        }
    }

    fn reduce(op: ReduceOp, x: &WgpuStorage, dim: usize) -> WgpuStorage {
        let WgpuStorage::Device(t) = x else {
            return place(Cpu::reduce(op, &x.host(), dim), x.device());
        };
        let (outer, n, inner) = split3(&t.shape, dim);
        let mut shape = t.shape.clone();
        shape[dim] = 1;
        let name = match op {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
        };
        let arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
        let device = &t.device;
        let out = DeviceTensor::new(device, &shape, if arg { DType::Bool } else { DType::F32 });
        let outputs = outer * inner;
        if outputs > 0 {
            // Short rows: one invocation per output; long ones: a workgroup
            // per output with a tree in workgroup memory.
            let (key, wgsl, per_group): (String, fn(&str) -> String, u32) = if n <= 256 {
                (format!("reduce_short:{name}"), shaders::reduce_short, WG)
            } else {
                (format!("reduce:{name}"), shaders::reduce, 1)
            };
            let pipeline = device.compile("reduce", &key, || wgsl(name), "main");
            device.dispatch(
                &pipeline,
                &[t.buffer(), out.buffer()],
                &[u(outputs), u(n), u(inner)],
                grid(device, outputs, per_group),
            );
        }
        if !arg {
            return Self::dev(out);
        }
        indices_to_host(&out)
    }

    fn matmul(a: &WgpuStorage, b: &WgpuStorage) -> WgpuStorage {
        match (a, b) {
            (WgpuStorage::Device(x), WgpuStorage::Device(y)) => Self::dev(Self::contiguous_matmul(x, y)),
            _ => place(Cpu::matmul(&a.host(), &b.host()), a.device()),
        }
    }

    fn reshape(x: &WgpuStorage, shape: &[usize]) -> WgpuStorage {
        match x {
            WgpuStorage::Device(t) => Self::dev(Self::reshaped(t, shape)),
            WgpuStorage::Host(c, d) => WgpuStorage::Host(Cpu::reshape(c, shape), d.clone()),
        }
    }

    fn permute(x: &WgpuStorage, axes: &[usize]) -> WgpuStorage {
        match x {
            WgpuStorage::Device(t) => {
                let st = strides(&t.shape);
                let shape: Vec<usize> = axes.iter().map(|&a| t.shape[a]).collect();
                Self::dev(Self::copy_view(t, 0, axes.iter().map(|&a| st[a]).collect(), &shape))
            }
            WgpuStorage::Host(c, d) => WgpuStorage::Host(Cpu::permute(c, axes), d.clone()),
        }
    }

    fn expand(x: &WgpuStorage, shape: &[usize]) -> WgpuStorage {
        match x {
            WgpuStorage::Device(t) => match broadcast_view(t, shape) {
                None => x.clone(),
                Some((o, st)) => Self::dev(Self::copy_view(t, o, st, shape)),
            },
            WgpuStorage::Host(c, d) => WgpuStorage::Host(Cpu::expand(c, shape), d.clone()),
        }
    }

    fn slice(x: &WgpuStorage, ranges: &[Range<usize>]) -> WgpuStorage {
        match x {
            WgpuStorage::Device(t) => {
                let st = strides(&t.shape);
                let offset = ranges.iter().zip(&st).map(|(r, s)| r.start * s).sum();
                let shape: Vec<usize> = ranges.iter().map(|r| r.end - r.start).collect();
                Self::dev(Self::copy_view(t, offset, st, &shape))
            }
            WgpuStorage::Host(c, d) => WgpuStorage::Host(Cpu::slice(c, ranges), d.clone()),
        }
    }

    fn pad(x: &WgpuStorage, pads: &[(usize, usize)], value: f64) -> WgpuStorage {
        let WgpuStorage::Device(t) = x else {
            return place(Cpu::pad(&x.host(), pads, value), x.device());
        };
        // One dim at a time, each a copy into a larger buffer.
        let mut cur = t.clone();
        for (dim, &(before, after)) in pads.iter().enumerate() {
            if before == 0 && after == 0 {
                continue;
            }
            let (_, in_n, inner) = split3(&cur.shape, dim);
            let mut shape = cur.shape.clone();
            shape[dim] += before + after;
            let out = DeviceTensor::new(&cur.device, &shape, cur.dtype);
            let ty = wgsl_ty(cur.dtype);
            let device = cur.device.clone();
            let pipeline = device.compile("pad", &format!("pad:{ty}"), || shaders::pad_dim(ty), "main");
            let params = [u(out.numel()), u(in_n), u(shape[dim]), u(inner), u(before), scalar_bits(value, cur.dtype)];
            device.dispatch(&pipeline, &[cur.buffer(), out.buffer()], &params, grid(&device, out.numel(), WG));
            cur = out;
        }
        Self::dev(cur)
    }

    fn cat(xs: &[WgpuStorage], dim: usize) -> WgpuStorage {
        if !matches!(xs[0], WgpuStorage::Device(_)) {
            let host: Vec<CpuStorage> = xs.iter().map(WgpuStorage::host).collect();
            return place(Cpu::cat(&host, dim), xs[0].device());
        }
        let parts: Vec<&DeviceTensor> = xs.iter().map(WgpuStorage::gpu).collect();
        let mut shape = parts[0].shape.clone();
        shape[dim] = parts.iter().map(|p| p.shape[dim]).sum();
        let out = DeviceTensor::new(&parts[0].device, &shape, parts[0].dtype);
        let (_, total, inner) = split3(&shape, dim);
        let ty = wgsl_ty(out.dtype);
        let body = "    let inner = pu(2u); let n = pu(1u);\n    let r = i % inner; let k = (i / inner) % n; let o = i / (inner * n);\n    out[(o * pu(3u) + pu(4u) + k) * inner + r] = x[i];";
        let mut at = 0;
        for part in &parts {
            let n = part.shape[dim];
            per_output(
                &out.device,
                &format!("cat:{ty}"),
                &[("x", ty, false), ("out", ty, true)],
                body,
                &[part.buffer(), out.buffer()],
                &[u(part.numel()), u(n), u(inner), u(total), u(at)],
                part.numel(),
            );
            at += n;
        }
        Self::dev(out)
    }

    fn gather(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
        let WgpuStorage::Device(t) = x else {
            return place(Cpu::gather(&x.host(), dim, &index.host()), x.device());
        };
        let shape = Self::shape(index);
        let idx = index_buffer(index);
        let out = DeviceTensor::new(&t.device, shape, t.dtype);
        let rank = shape.len();
        let xs = strides(&t.shape);
        let mut body = shaders::coords(rank, 1);
        body += "    var at = 0u;\n";
        for d in 0..rank {
            let c = if d == dim { "ix[i]".to_owned() } else { format!("c{d}") };
            body += &format!("    at = at + {c} * pu({}u);\n", 1 + rank + d);
        }
        body += "    out[i] = x[at];";
        let mut params = vec![u(out.numel())];
        params.extend(shape.iter().map(|&d| u(d)));
        params.extend(xs.iter().map(|&s| u(s)));
        let ty = wgsl_ty(t.dtype);
        per_output(
            &t.device,
            &format!("gather:{ty}:{rank}:{dim}"),
            &[("x", ty, false), ("ix", "u32", false), ("out", ty, true)],
            &body,
            &[t.buffer(), idx.get(), out.buffer()],
            &params,
            out.numel(),
        );
        Self::dev(out)
    }

    fn scatter_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
        let (WgpuStorage::Device(t), WgpuStorage::Device(s)) = (x, src) else {
            return place(Cpu::scatter_add(&x.host(), dim, &index.host(), &src.host()), x.device());
        };
        // Each output element sums the sources whose index points at it.
        let ishape = Self::shape(index);
        let idx = index_buffer(index);
        let out = DeviceTensor::new(&t.device, &t.shape, t.dtype);
        let rank = t.shape.len();
        let is = strides(ishape);
        let mut body = shaders::coords(rank, 1);
        body += "    var acc = x[i];\n    var inside = true;\n";
        for d in 0..rank {
            if d != dim {
                body += &format!("    inside = inside && c{d} < pu({}u);\n", 1 + rank + d);
            }
        }
        body += "    if (inside) {\n        var base = 0u;\n";
        for d in 0..rank {
            if d != dim {
                body += &format!("        base = base + c{d} * pu({}u);\n", 1 + 2 * rank + d);
            }
        }
        body += &format!(
            "        for (var t = 0u; t < pu({}u); t = t + 1u) {{\n            let at = base + t * pu({}u);\n            if (ix[at] == c{dim}) {{ acc = acc + src[at]; }}\n        }}\n    }}\n    out[i] = acc;",
            1 + rank + dim,
            1 + 2 * rank + dim
        );
        let mut params = vec![u(out.numel())];
        params.extend(t.shape.iter().map(|&d| u(d)));
        params.extend(ishape.iter().map(|&d| u(d)));
        params.extend(is.iter().map(|&d| u(d)));
        per_output(
            &t.device,
            &format!("scatter_add:{rank}:{dim}"),
            &[("x", "f32", false), ("ix", "u32", false), ("src", "f32", false), ("out", "f32", true)],
            &body,
            &[t.buffer(), idx.get(), s.buffer(), out.buffer()],
            &params,
            out.numel(),
        );
        Self::dev(out)
    }

    fn index_select(x: &WgpuStorage, dim: usize, index: &WgpuStorage) -> WgpuStorage {
        let WgpuStorage::Device(t) = x else {
            return place(Cpu::index_select(&x.host(), dim, &index.host()), x.device());
        };
        let (outer, n, inner) = split3(&t.shape, dim);
        let k = Self::shape(index)[0];
        let idx = index_buffer(index);
        let mut shape = t.shape.clone();
        shape[dim] = k;
        let out = DeviceTensor::new(&t.device, &shape, t.dtype);
        let body = "    let inner = pu(2u); let k = pu(1u);\n    let r = i % inner; let j = (i / inner) % k; let o = i / (inner * k);\n    out[i] = x[(o * pu(3u) + ix[j]) * inner + r];";
        let ty = wgsl_ty(t.dtype);
        let _ = outer;
        per_output(
            &t.device,
            &format!("index_select:{ty}"),
            &[("x", ty, false), ("ix", "u32", false), ("out", ty, true)],
            body,
            &[t.buffer(), idx.get(), out.buffer()],
            &[u(out.numel()), u(k), u(inner), u(n)],
            out.numel(),
        );
        Self::dev(out)
    }

    fn index_add(x: &WgpuStorage, dim: usize, index: &WgpuStorage, src: &WgpuStorage) -> WgpuStorage {
        let (WgpuStorage::Device(t), WgpuStorage::Device(s)) = (x, src) else {
            return place(Cpu::index_add(&x.host(), dim, &index.host(), &src.host()), x.device());
        };
        let (_, n, inner) = split3(&t.shape, dim);
        let k = Self::shape(index)[0];
        let idx = index_buffer(index);
        let out = DeviceTensor::new(&t.device, &t.shape, t.dtype);
        let body = "    let inner = pu(2u); let n = pu(3u); let k = pu(1u);\n    let r = i % inner; let j = (i / inner) % n; let o = i / (inner * n);\n    var acc = x[i];\n    for (var t = 0u; t < k; t = t + 1u) {\n        if (ix[t] == j) { acc = acc + src[(o * k + t) * inner + r]; }\n    }\n    out[i] = acc;";
        per_output(
            &t.device,
            "index_add",
            &[("x", "f32", false), ("ix", "u32", false), ("src", "f32", false), ("out", "f32", true)],
            body,
            &[t.buffer(), idx.get(), s.buffer(), out.buffer()],
            &[u(out.numel()), u(k), u(inner), u(n)],
            out.numel(),
        );
        Self::dev(out)
    }

    fn conv2d(x: &WgpuStorage, weight: &WgpuStorage, bias: Option<&WgpuStorage>, o: &Conv2dOptions) -> WgpuStorage {
        let (WgpuStorage::Device(xt), WgpuStorage::Device(wt)) = (x, weight) else {
            let b = bias.map(WgpuStorage::host);
            return place(Cpu::conv2d(&x.host(), &weight.host(), b.as_ref(), o), x.device());
        };
        let [n, _, h, w] = [xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3]];
        let [oc, cg, kh, kw] = [wt.shape[0], wt.shape[1], wt.shape[2], wt.shape[3]];
        let g = o.groups;
        let oh = window(h, kh, o.stride[0], o.padding[0], o.dilation[0]);
        let ow = window(w, kw, o.stride[1], o.padding[1], o.dilation[1]);
        let cols = Self::im2col(xt, kh, kw, oh, ow, o);
        let wm = Self::reshaped(wt, &[1, g, oc / g, cg * kh * kw]);
        let y = Self::contiguous_matmul(&wm, &cols); // [n, g, oc/g, oh*ow]
        let y = Self::reshaped(&y, &[n, oc, oh, ow]);
        let out = Self::dev(y);
        match bias {
            Some(b) => Self::binary(BinaryOp::Add, &out, &Self::reshape(b, &[1, oc, 1, 1])),
            None => out,
        }
    }

    fn max_pool2d(x: &WgpuStorage, o: &Pool2dOptions, with_indices: bool) -> (WgpuStorage, Option<WgpuStorage>) {
        let WgpuStorage::Device(t) = x else {
            let (y, i) = Cpu::max_pool2d(&x.host(), o, with_indices);
            return (place(y, x.device()), i.map(|i| place(i, x.device())));
        };
        let [n, c, h, w] = [t.shape[0], t.shape[1], t.shape[2], t.shape[3]];
        let [oh, ow] = pool_plane(h, w, o);
        let shape = [n, c, oh, ow];
        let out = DeviceTensor::new(&t.device, &shape, DType::F32);
        let idx = DeviceTensor::new(&t.device, &shape, DType::Bool);
        let body = "    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);\n\
            let ox = i % ow; let oy = (i / ow) % oh; let plane = i / (ow * oh);\n\
            var best = bitcast<f32>(0xff800000u); var at = 0xffffffffu;\n\
            for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {\n\
                for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {\n\
                    let y = i32(oy * pu(7u) + ky) - i32(pu(9u)); let xx = i32(ox * pu(8u) + kx) - i32(pu(10u));\n\
                    if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) {\n\
                        let q = u32(y) * w + u32(xx); let v = x[plane * h * w + q];\n\
                        if (at == 0xffffffffu || (!isnan_(best) && (v > best || isnan_(v)))) { best = v; at = q; }\n\
                    }\n\
                }\n\
            }\n\
            out[i] = best; idx[i] = at;";
        per_output(
            &t.device,
            "max_pool2d",
            &[("x", "f32", false), ("out", "f32", true), ("idx", "u32", true)],
            body,
            &[t.buffer(), out.buffer(), idx.buffer()],
            &pool_params(out.numel(), [oh, ow], [h, w], o),
            out.numel(),
        );
        (Self::dev(out), with_indices.then(|| indices_to_host(&idx)))
    }

    fn avg_pool2d(x: &WgpuStorage, o: &Pool2dOptions) -> WgpuStorage {
        let WgpuStorage::Device(t) = x else {
            return place(Cpu::avg_pool2d(&x.host(), o), x.device());
        };
        let [n, c, h, w] = [t.shape[0], t.shape[1], t.shape[2], t.shape[3]];
        let [oh, ow] = pool_plane(h, w, o);
        let out = DeviceTensor::new(&t.device, &[n, c, oh, ow], DType::F32);
        let body = "    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);\n\
            let ox = i % ow; let oy = (i / ow) % oh; let plane = i / (ow * oh);\n\
            var acc = 0.0;\n\
            for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {\n\
                for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {\n\
                    let y = i32(oy * pu(7u) + ky) - i32(pu(9u)); let xx = i32(ox * pu(8u) + kx) - i32(pu(10u));\n\
                    if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) { acc = acc + x[plane * h * w + u32(y) * w + u32(xx)]; }\n\
                }\n\
            }\n\
            out[i] = acc / f32(pu(5u) * pu(6u));";
        per_output(
            &t.device,
            "avg_pool2d",
            &[("x", "f32", false), ("out", "f32", true)],
            body,
            &[t.buffer(), out.buffer()],
            &pool_params(out.numel(), [oh, ow], [h, w], o),
            out.numel(),
        );
        Self::dev(out)
    }

    fn conv2d_input_grad(
        grad_out: &WgpuStorage,
        weight: &WgpuStorage,
        input_shape: [usize; 4],
        o: &Conv2dOptions,
    ) -> WgpuStorage {
        let (WgpuStorage::Device(gt), WgpuStorage::Device(wt)) = (grad_out, weight) else {
            return place(Cpu::conv2d_input_grad(&grad_out.host(), &weight.host(), input_shape, o), grad_out.device());
        };
        let [n, c, h, w] = input_shape;
        let [oc, cg, kh, kw] = [wt.shape[0], wt.shape[1], wt.shape[2], wt.shape[3]];
        let [oh, ow] = [gt.shape[2], gt.shape[3]];
        let g = o.groups;
        // Columns of the input gradient: W^T g, then summed back onto pixels.
        let wm = Self::reshaped(wt, &[1, g, oc / g, cg * kh * kw]);
        let wtm = Self::permute(&Self::dev(wm), &[0, 1, 3, 2]);
        let gm = Self::reshaped(gt, &[n, g, oc / g, oh * ow]);
        let cols = Self::contiguous_matmul(wtm.gpu(), &gm); // [n, g, cg*kh*kw, oh*ow]
        let out = DeviceTensor::new(&gt.device, &input_shape, DType::F32);
        let body = "    let w = pu(1u); let h = pu(2u); let cg = pu(3u); let kh = pu(4u); let kw = pu(5u); let oh = pu(6u); let ow = pu(7u);\n\
            let xx = i % w; let y = (i / w) % h; let ch = (i / (w * h)) % pu(14u); let b = i / (w * h * pu(14u));\n\
            let gi = ch / cg; let ci = ch % cg; let groups = pu(14u) / cg;\n\
            var acc = 0.0;\n\
            for (var ky = 0u; ky < kh; ky = ky + 1u) {\n\
                for (var kx = 0u; kx < kw; kx = kx + 1u) {\n\
                    let ty = i32(y) + i32(pu(12u)) - i32(ky * pu(10u)); let tx = i32(xx) + i32(pu(13u)) - i32(kx * pu(11u));\n\
                    if (ty >= 0 && tx >= 0 && u32(ty) % pu(8u) == 0u && u32(tx) % pu(9u) == 0u) {\n\
                        let oy = u32(ty) / pu(8u); let ox = u32(tx) / pu(9u);\n\
                        if (oy < oh && ox < ow) {\n\
                            let q = (ci * kh + ky) * kw + kx;\n\
                            acc = acc + cols[(((b * groups + gi) * cg * kh * kw) + q) * oh * ow + oy * ow + ox];\n\
                        }\n\
                    }\n\
                }\n\
            }\n\
            out[i] = acc;";
        per_output(
            &gt.device,
            "col2im",
            &[("cols", "f32", false), ("out", "f32", true)],
            body,
            &[cols.buffer(), out.buffer()],
            &[
                u(out.numel()),
                u(w),
                u(h),
                u(cg),
                u(kh),
                u(kw),
                u(oh),
                u(ow),
                u(o.stride[0]),
                u(o.stride[1]),
                u(o.dilation[0]),
                u(o.dilation[1]),
                u(o.padding[0]),
                u(o.padding[1]),
                u(c),
            ],
            out.numel(),
        );
        Self::dev(out)
    }

    fn conv2d_weight_grad(
        x: &WgpuStorage,
        grad_out: &WgpuStorage,
        weight_shape: [usize; 4],
        o: &Conv2dOptions,
    ) -> WgpuStorage {
        let (WgpuStorage::Device(xt), WgpuStorage::Device(gt)) = (x, grad_out) else {
            return place(Cpu::conv2d_weight_grad(&x.host(), &grad_out.host(), weight_shape, o), x.device());
        };
        let [oc, _, kh, kw] = weight_shape;
        let n = xt.shape[0];
        let [oh, ow] = [gt.shape[2], gt.shape[3]];
        let g = o.groups;
        let cols = Self::im2col(xt, kh, kw, oh, ow, o); // [n, g, cg*kh*kw, oh*ow]
        let cols_t = Self::permute(&Self::dev(cols), &[0, 1, 3, 2]);
        let gm = Self::reshaped(gt, &[n, g, oc / g, oh * ow]);
        let per_sample = Self::contiguous_matmul(&gm, cols_t.gpu()); // [n, g, oc/g, cg*kh*kw]
        let summed = Self::reduce(ReduceOp::Sum, &Self::dev(per_sample), 0);
        Self::reshape(&summed, &weight_shape)
    }

    fn avg_pool2d_input_grad(grad_out: &WgpuStorage, input_shape: [usize; 4], o: &Pool2dOptions) -> WgpuStorage {
        let WgpuStorage::Device(gt) = grad_out else {
            return place(Cpu::avg_pool2d_input_grad(&grad_out.host(), input_shape, o), grad_out.device());
        };
        let [_, _, h, w] = input_shape;
        let [oh, ow] = [gt.shape[2], gt.shape[3]];
        let out = DeviceTensor::new(&gt.device, &input_shape, DType::F32);
        let body = "    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);\n\
            let xx = i % w; let y = (i / w) % h; let plane = i / (w * h);\n\
            var acc = 0.0;\n\
            for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {\n\
                for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {\n\
                    let ty = i32(y) + i32(pu(9u)) - i32(ky); let tx = i32(xx) + i32(pu(10u)) - i32(kx);\n\
                    if (ty >= 0 && tx >= 0 && u32(ty) % pu(7u) == 0u && u32(tx) % pu(8u) == 0u) {\n\
                        let oy = u32(ty) / pu(7u); let ox = u32(tx) / pu(8u);\n\
                        if (oy < oh && ox < ow) { acc = acc + g[(plane * oh + oy) * ow + ox]; }\n\
                    }\n\
                }\n\
            }\n\
            out[i] = acc / f32(pu(5u) * pu(6u));";
        per_output(
            &gt.device,
            "avg_pool2d_input_grad",
            &[("g", "f32", false), ("out", "f32", true)],
            body,
            &[gt.buffer(), out.buffer()],
            &pool_params(out.numel(), [oh, ow], [h, w], o),
            out.numel(),
        );
        Self::dev(out)
    }

    fn elementwise<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<WgpuStorage>],
        shape: &[usize],
        dtype: DType,
    ) -> WgpuStorage {
        let device = inputs
            .iter()
            .find_map(|a| match a {
                KernelArg::Tensor(t) => Some(t.device().clone()),
                KernelArg::Number(_) => None,
            })
            .unwrap_or_default();
        if dtype != DType::F32 {
            let host: Vec<KernelArg<CpuStorage>> = inputs
                .iter()
                .map(|a| match a {
                    KernelArg::Tensor(t) => KernelArg::Tensor(t.host()),
                    KernelArg::Number(v) => KernelArg::Number(*v),
                })
                .collect();
            return place(Cpu::elementwise::<K>(f, &host, shape, dtype), &device);
        }
        Self::dev(elementwise_on::<K>(&device, f, inputs, shape))
    }

    fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, WgpuStorage>], scalars: &[ScalarArg]) {
        let outputs: Vec<bool> = buffers.iter().map(|b| matches!(b, LaunchBuffer::Output(_))).collect();
        if let Some(problem) = launch_mismatch::<K>(outputs.iter().copied(), scalars.len()) {
            panic!("{}: {problem}", K::NAME);
        }
        let Some(device) = buffers.first().map(|b| match b {
            LaunchBuffer::Input(t) => t.device().clone(),
            LaunchBuffer::Output(t) => t.device().clone(),
        }) else {
            return;
        };
        // Outputs are written in place: each gets a buffer of its own first.
        for b in buffers.iter_mut() {
            if let LaunchBuffer::Output(t) = b {
                let own = match &**t {
                    WgpuStorage::Device(d) => {
                        let fresh = DeviceTensor::new(&d.device, &d.shape, d.dtype);
                        device.copy(d.buffer(), fresh.buffer(), 4 * d.numel() as u64);
                        fresh
                    }
                    WgpuStorage::Host(..) => panic!("{}: kernel buffers are f32 tensors", K::NAME),
                };
                **t = WgpuStorage::Device(own);
            }
        }
        let bound: Vec<&wgpu::Buffer> = buffers
            .iter()
            .map(|b| match b {
                LaunchBuffer::Input(t) => t.gpu().buffer(),
                LaunchBuffer::Output(t) => t.gpu().buffer(),
            })
            .collect();
        let words: Vec<u32> = scalars
            .iter()
            .map(|s| match s {
                ScalarArg::F32(v) => v.to_bits(),
                ScalarArg::U32(v) => *v,
                ScalarArg::I32(v) => *v as u32,
            })
            .collect();
        let max = device.max_groups();
        assert!(groups <= max, "{}: {groups} workgroups; this device dispatches at most {max} at once", K::NAME);
        let pipeline = device.compile(K::NAME, K::NAME, || K::WGSL.to_owned(), K::NAME);
        device.dispatch_with(&pipeline, &bound, (!words.is_empty()).then_some(&words), (groups, 1, 1));
    }

    fn softmax(x: &WgpuStorage, dim: usize, log: bool) -> WgpuStorage {
        let WgpuStorage::Device(t) = x else {
            return place(Cpu::softmax(&x.host(), dim, log), x.device());
        };
        let (outer, n, inner) = split3(&t.shape, dim);
        let out = DeviceTensor::new(&t.device, &t.shape, DType::F32);
        let rows = outer * inner;
        if rows > 0 && n > 0 {
            let device = &t.device;
            let pipeline = device.compile("softmax", &format!("softmax:{log}"), || shaders::softmax(log), "main");
            device.dispatch(&pipeline, &[t.buffer(), out.buffer()], &[u(rows), u(n), u(inner)], grid(device, rows, 1));
        }
        Self::dev(out)
    }
}

/// Whether argument `k` of an elementwise kernel is a tensor (bound in
/// order) or a number (passed as a parameter): the shader differs.
fn tensor_args(inputs: &[KernelArg<WgpuStorage>]) -> Vec<bool> {
    inputs.iter().map(|a| matches!(a, KernelArg::Tensor(_))).collect()
}

/// Elementwise kernel `K`'s function `f` as a per-output shader over
/// arguments laid out as `tensors` says: the key its pipeline is cached
/// under, and its WGSL.
pub(crate) fn elementwise_program<K: Elementwise>(
    f: KernelFn,
    tensors: &[bool],
) -> (String, impl FnOnce() -> String + use<K>) {
    let name = match f {
        KernelFn::Value => K::NAME.to_owned(),
        KernelFn::Partial(i) => format!("{}_d_{}", K::NAME, K::ARGS[i]),
    };
    let layout: String = tensors.iter().map(|&t| if t { 't' } else { 'n' }).collect();
    let key = format!("kernel:{name}:{layout}");
    // Parameter 0 is the element count; numbers follow in order.
    let mut params = 1;
    let args: Vec<String> = tensors
        .iter()
        .enumerate()
        .map(|(k, &tensor)| {
            if tensor {
                format!("in{k}[i]")
            } else {
                params += 1;
                format!("pf({}u)", params - 1)
            }
        })
        .collect();
    let inputs: Vec<String> = tensors.iter().enumerate().filter(|(_, t)| **t).map(|(k, _)| format!("in{k}")).collect();
    let wgsl = move || {
        let decl: Vec<(&str, &str, bool)> =
            inputs.iter().map(|n| (n.as_str(), "f32", false)).chain([("out", "f32", true)]).collect();
        let body = format!("    out[i] = {name}({});", args.join(", "));
        format!("{}\n{}", K::WGSL, shaders::per_output(&decl, &body))
    };
    (key, wgsl)
}

/// Elementwise kernel `K` (or a partial) over f32 `inputs` on `device`.
pub(crate) fn elementwise_on<K: Elementwise>(
    device: &WgpuDevice,
    f: KernelFn,
    inputs: &[KernelArg<WgpuStorage>],
    shape: &[usize],
) -> DeviceTensor {
    let out = DeviceTensor::new(device, shape, DType::F32);
    let n = out.numel();
    if n == 0 {
        return out;
    }
    let mut params = vec![u(n)];
    let mut buffers: Vec<&wgpu::Buffer> = Vec::new();
    for a in inputs {
        match a {
            KernelArg::Tensor(t) => buffers.push(t.gpu().buffer()),
            KernelArg::Number(v) => params.push((*v as f32).to_bits()),
        }
    }
    buffers.push(out.buffer());
    let (key, wgsl) = elementwise_program::<K>(f, &tensor_args(inputs));
    let pipeline = device.compile(K::NAME, &key, wgsl, "main");
    device.dispatch(&pipeline, &buffers, &params, grid(device, n, WG));
    out
}

/// The values of an f32 tensor, or the fault that makes them invalid.
pub(crate) fn read_f32(t: &WgpuStorage, out: &mut [f32]) -> Result<(), blaze_runtime::DeviceError> {
    let t = t.gpu();
    match t.device.try_read(t.buffer(), 4 * t.numel() as u64) {
        Some(bytes) => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            Ok(())
        }
        None => t.device.synchronize(),
    }
}
