//! `impl Backend for CubeNative`: every primitive as CubeCL kernels on
//! the device's client, matmul, reductions, convolution and average
//! pooling tuned among cubek's kernels and this crate's.
//!
//! The device holds f32 and bool tensors (bools as `u32` 0 or 1), as the
//! wgpu backend does, and f16 where the adapter has it (`SHADER_F16`):
//! f16 tensors are stored, moved, selected and multiplied (cubek, f32
//! accumulation) as f16, and every other op runs its f32 kernel on a
//! widened copy and rounds its result once ([`CubeStorage::widen`]).
//! f64, bf16 (which WGSL lacks) and i64 tensors are the host's, through
//! `HostFallback<CubeNative, H>` (`blaze::cubecl::CubeCl`), which hands
//! this backend i64 index tensors (uploaded as `u32`; the runtime checked
//! they are in bounds) and takes back its i64 results (argmax, pooling
//! indices). Tensors are contiguous: reshape is free, permute, expand,
//! slice, pad and cat are strided copies (`kernels::copy_kernel`).
//!
//! Beside this file: `composites.rs` (the fused composites and the f16
//! products), `kernels.rs` (the elementwise and movement kernels),
//! `index.rs` (gather, scatter), `conv.rs` (convolution, pooling, their
//! gradients, tuned), `matmul.rs` and `reduce.rs` (cubek, tuned), `tune.rs`
//! (running and timing an op's candidates), `rows.rs` (the row kernels:
//! softmax, norms, one cube per row), `optim.rs` (the optimizers' updates,
//! in place where the buffer allows) and `ew.rs` (`kernel!` kernels).

use std::fmt;
use std::ops::Range;

use blaze_fallback::{DeviceDtypes, HostFallback};
use blaze_gpu_host::GpuBackend;
use blaze_runtime::backend as composed;
use blaze_runtime::kernel::{Elementwise, KernelArg, KernelFn, LaunchBuffer, ScalarArg, Workgroups};
use blaze_runtime::rows::launch;
use blaze_runtime::shape::broadcast_all;
use blaze_runtime::{
    Backend, BinaryOp, CmpOp, Composites, Conv2dOptions, DType, Device, Kernels, Pool2dOptions, Primitives, ReduceOp,
    TensorData, UnaryOp,
};
use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::CubeDevice;

mod builtin;
mod composites;
mod conv;
pub mod dsl;
pub(crate) mod ew;
mod index;
pub(crate) mod kernels;
mod matmul;
mod optim;
mod reduce;
mod rows;
mod tune;
#[cfg(test)]
mod testing;

/// The CubeCL backend for the dtypes the device holds (f32, bool): a
/// [`DeviceDtypes`] backend. Tensors use it as `HostFallback<CubeNative,
/// Cpu>`, which the `blaze` facade names `blaze::cubecl::CubeCl`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CubeNative;

/// A tensor on a [`CubeDevice`]: a CubeCL buffer, row-major, of 4-byte
/// words (`f32`, `u32` 0 or 1 for bools, `u32` indices for i64) or of
/// 2-byte `f16`.
#[derive(Clone)]
pub struct CubeStorage {
    #[allow(missing_docs)]
    pub handle: Handle,
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    pub(crate) device: CubeDevice,
}

impl fmt::Debug for CubeStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CubeStorage({} {:?} on {:?})", self.dtype, self.shape, self.device)
    }
}

impl DeviceDtypes for CubeNative {
    fn holds(dtype: DType, device: &CubeDevice) -> bool {
        device.holds(dtype)
    }

    fn read_back(x: &CubeStorage) -> TensorData {
        match x.device.client().read_one(x.handle.clone()) {
            Ok(bytes) => x.data(&bytes),
            Err(e) => {
                x.device.record_fault(crate::first_line(&e.to_string()));
                x.data(&vec![0; x.bytes()])
            }
        }
    }
}

impl Device for CubeDevice {
    fn synchronize(&self) -> Result<(), blaze_runtime::DeviceError> {
        CubeDevice::synchronize(self)
    }
}

impl<H: Backend> blaze_runtime::BackendDevice<HostFallback<CubeNative, H>> for CubeDevice {
    fn as_device(&self) -> &CubeDevice {
        self
    }
}

/// The dtypes this backend's ops take (the device decides whether it
/// holds f16: [`CubeDevice::holds`]).
pub(crate) fn on_device(d: DType) -> bool {
    matches!(d, DType::F32 | DType::Bool | DType::F16)
}

/// The dtype an op on `x` rounds its result to when `x` is f16: the op
/// runs on an f32 copy ([`CubeStorage::widen`]).
fn half(x: &CubeStorage) -> Option<DType> {
    (x.dtype == DType::F16).then_some(DType::F16)
}

/// An optional operand widened to f32.
fn wide(x: Option<&CubeStorage>) -> Option<CubeStorage> {
    x.map(CubeStorage::widen)
}

pub(crate) fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major strides of `shape`, in elements.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// Units per cube of the one-unit-per-element kernels.
const BLOCK: u32 = 256;
/// The most cubes along one axis of a launch.
const MAX_CUBES: u32 = 65_535;

/// Cubes of [`BLOCK`] units covering `n` units (`ABSOLUTE_POS` runs over
/// all of them, row by row of the grid).
pub(crate) fn grid(n: usize) -> (CubeCount, CubeDim) {
    let cubes = u32::try_from(n.div_ceil(BLOCK as usize))
        .unwrap_or_else(|_| panic!("cubecl: {n} elements exceed what one launch addresses"));
    let count = if cubes <= MAX_CUBES {
        CubeCount::Static(cubes, 1, 1)
    } else {
        CubeCount::Static(MAX_CUBES, cubes.div_ceil(MAX_CUBES), 1)
    };
    (count, CubeDim::new_1d(BLOCK))
}

impl CubeStorage {
    /// A new tensor whose values the caller writes.
    pub(crate) fn empty(device: &CubeDevice, shape: &[usize], dtype: DType) -> Self {
        // A zero-size buffer is not a buffer: empty tensors hold one word.
        let bytes = elem_bytes(dtype) * numel(shape);
        let handle = device.client().empty(bytes.next_multiple_of(4).max(4));
        CubeStorage { handle, shape: shape.to_vec(), dtype, device: device.clone() }
    }

    pub(crate) fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// The bytes of the values.
    pub(crate) fn bytes(&self) -> usize {
        elem_bytes(self.dtype) * self.numel()
    }

    /// An f16 tensor as f32 (exactly), for an op that computes in f32;
    /// other tensors as they are.
    pub(crate) fn widen(&self) -> CubeStorage {
        if self.dtype != DType::F16 {
            return self.clone();
        }
        self.converted::<blaze_runtime::f16, f32>(DType::F32)
    }

    /// An f32 result rounded to `dtype` when that is f16 (to the nearest);
    /// any other result as it is.
    pub(crate) fn narrow(self, dtype: DType) -> CubeStorage {
        if self.dtype != DType::F32 || dtype != DType::F16 {
            return self;
        }
        self.converted::<f32, blaze_runtime::f16>(DType::F16)
    }

    /// The values converted from float type `A` to `B` (of `dtype`).
    fn converted<A: Float, B: Float>(&self, dtype: DType) -> CubeStorage {
        let out = CubeStorage::empty(&self.device, &self.shape, dtype);
        if out.numel() > 0 {
            let (count, cube) = grid(out.numel());
            kernels::convert_kernel::launch::<A, B>(self.client(), count, cube, self.arg(), out.arg());
        }
        out
    }

    /// The tensor as a contiguous kernel argument.
    pub(crate) fn arg(&self) -> TensorArg {
        self.view(strides(&self.shape), self.shape.clone())
    }

    /// The tensor, contiguous, as cubek's launches take it.
    pub(crate) fn binding(&self) -> TensorBinding {
        // SAFETY: the tensor's own contiguous strides and shape.
        unsafe {
            TensorBinding::from_raw_parts(self.handle.clone(), strides(&self.shape).into(), self.shape.clone().into())
        }
    }

    /// The tensor's buffer seen through `strides` with `shape`: a
    /// broadcast (stride 0), a permutation, a window. The caller keeps
    /// every offset the kernel computes from them inside the buffer.
    pub(crate) fn view(&self, strides: Vec<usize>, shape: Vec<usize>) -> TensorArg {
        // A rank-0 tensor goes as `[1]`: CubeCL 0.11 sizes a launch's
        // metadata one word short for a rank-0 argument, which wgpu rejects.
        let (strides, shape) = if shape.is_empty() { (vec![1], vec![1]) } else { (strides, shape) };
        // SAFETY: the views the backend builds address elements of this
        // buffer only: strides of its own shape, permuted, zeroed where a
        // dim broadcasts, or of a larger tensor with a window inside it.
        unsafe { TensorArg::from_raw_parts(self.handle.clone(), strides.into(), shape.into()) }
    }

    /// The tensor read as broadcast to `shape` (equal rank), and whether
    /// it has that shape already (else a view with stride 0 where it repeats).
    fn broadcast_to(&self, shape: &[usize]) -> (TensorArg, bool) {
        if self.shape == shape {
            return (self.arg(), true);
        }
        let st = strides(&self.shape);
        let st = self.shape.iter().zip(&st).map(|(&d, &s)| if d == 1 { 0 } else { s }).collect();
        (self.view(st, shape.to_vec()), false)
    }

    /// The tensor's values from the bytes of its buffer.
    pub(crate) fn data(&self, bytes: &[u8]) -> TensorData {
        TensorData { shape: self.shape.clone(), values: blaze_gpu_host::unpack(bytes, self.dtype, self.numel()) }
    }

    fn client(&self) -> &Client {
        self.device.client()
    }
}

/// Bytes per element on the device.
fn elem_bytes(dtype: DType) -> usize {
    if dtype == DType::F16 { 2 } else { 4 }
}

/// `x`, which op `op` reads as device data: f32, f16 or bool, never an i64
/// (the device holds i64 only as indices for the index ops).
pub(crate) fn native<'a>(op: &str, x: &'a CubeStorage) -> &'a CubeStorage {
    if !on_device(x.dtype) {
        GpuBackend::CubeCl.refuse(op, x.dtype);
    }
    x
}

/// `x`, which op `op` reads as f32.
pub(crate) fn float<'a>(op: &str, x: &'a CubeStorage) -> &'a CubeStorage {
    assert!(x.dtype == DType::F32, "cubecl {op}: a {} tensor where the op takes f32", x.dtype);
    x
}

/// `x`, which op `op` reads as f32 or f16.
pub(crate) fn floats<'a>(op: &str, x: &'a CubeStorage) -> &'a CubeStorage {
    assert!(matches!(x.dtype, DType::F32 | DType::F16), "cubecl {op}: a {} tensor where the op takes a float", x.dtype);
    x
}

/// A size or index as the 32-bit word kernels take.
pub(crate) fn u32_of(x: usize) -> u32 {
    GpuBackend::CubeCl.index_word(x)
}

/// `op`'s code in the op table and its parameters, as the device kernels
/// take them (`kernels::unary_kernel`'s `p0, p1`).
fn unary_code(op: UnaryOp) -> (u32, [f32; 2]) {
    const { assert!(blaze_runtime::unary::MAX_UNARY_PARAMS == 2, "the unary kernels take two parameters") };
    (op.index() as u32, op.params().map(|p| p as f32))
}

impl CubeNative {
    /// A copy of the view of `x` with `strides` (from element `start`)
    /// and `shape`, contiguous.
    pub(crate) fn copy_view(x: &CubeStorage, start: usize, strides: Vec<usize>, shape: &[usize]) -> CubeStorage {
        let out = CubeStorage::empty(&x.device, shape, x.dtype);
        Self::copy_into(x.view(strides, shape.to_vec()), start, &out, 0, shape);
        out
    }

    /// Copies the view `from` (of `shape`, from element `start`) into the
    /// window of `out` of that shape beginning at element `at`.
    pub(crate) fn copy_into(from: TensorArg, start: usize, out: &CubeStorage, at: usize, shape: &[usize]) {
        let n = numel(shape);
        if n == 0 {
            return;
        }
        let to = out.view(strides(&out.shape), shape.to_vec());
        let (count, dim) = grid(n);
        if out.dtype == DType::F32 {
            kernels::copy_kernel::launch::<f32>(out.client(), count, dim, from, to, start, at, n);
        } else if out.dtype == DType::F16 {
            kernels::copy_kernel::launch::<blaze_runtime::f16>(out.client(), count, dim, from, to, start, at, n);
        } else {
            kernels::copy_kernel::launch::<u32>(out.client(), count, dim, from, to, start, at, n);
        }
    }

    fn reshaped(t: &CubeStorage, shape: &[usize]) -> CubeStorage {
        CubeStorage { shape: shape.to_vec(), ..t.clone() }
    }

    /// `act(x + bias) (+ residual)` in one pass.
    fn fused_bias_act(
        x: &CubeStorage,
        bias: Option<&CubeStorage>,
        dim: usize,
        act: Option<UnaryOp>,
        residual: Option<&CubeStorage>,
    ) -> CubeStorage {
        let x = float("bias_act", x);
        let out = CubeStorage::empty(&x.device, &x.shape, DType::F32);
        let n = out.numel();
        if n == 0 {
            return out;
        }
        let (code, [p0, p1]) = act.map_or((kernels::IDENTITY, [0.0; 2]), unary_code);
        // An absent operand binds `x` in its place; the flags say not to read it.
        let bias_arg = match bias {
            Some(b) => {
                let st = (0..x.shape.len()).map(|d| usize::from(d == dim)).collect();
                float("bias_act", b).view(st, x.shape.clone())
            }
            None => x.arg(),
        };
        let residual_arg = match residual {
            Some(r) => float("bias_act_add", r).broadcast_to(&x.shape).0,
            None => x.arg(),
        };
        let (count, cube) = grid(n);
        kernels::bias_act_kernel::launch(
            x.client(),
            count,
            cube,
            x.arg(),
            bias_arg,
            residual_arg,
            out.arg(),
            p0,
            p1,
            code,
            bias.is_some(),
            residual.is_some(),
        );
        out
    }
}

/// An i64 tensor of device words (argmax, pooling indices), which
/// `HostFallback` reads back.
pub(crate) fn indices(t: CubeStorage) -> CubeStorage {
    CubeStorage { dtype: DType::I64, ..t }
}

impl Primitives for CubeNative {
    type Device = CubeDevice;
    type Storage = CubeStorage;

    fn name() -> &'static str {
        "cubecl"
    }

    fn from_data(data: TensorData, device: &CubeDevice) -> CubeStorage {
        let shape = data.shape.clone();
        let (bytes, dtype) = GpuBackend::CubeCl.pack(&data.values, true);
        if bytes.is_empty() {
            return CubeStorage::empty(device, &shape, dtype);
        }
        let handle = device.client().create_from_slice(&bytes);
        CubeStorage { handle, shape, dtype, device: device.clone() }
    }

    fn to_data(x: &CubeStorage) -> TensorData {
        <Self as DeviceDtypes>::read_back(x)
    }

    fn full(shape: &[usize], value: f64, dtype: DType, device: &CubeDevice) -> CubeStorage {
        assert!(on_device(dtype), "cubecl full: {dtype} tensors live on the host");
        if dtype == DType::F16 {
            return Self::full(shape, value, DType::F32, device).narrow(dtype);
        }
        let out = CubeStorage::empty(device, shape, dtype);
        let n = out.numel();
        if n > 0 {
            let (count, cube) = grid(n);
            if dtype == DType::F32 {
                kernels::fill_f32_kernel::launch(device.client(), count, cube, out.arg(), value as f32);
            } else {
                kernels::fill_u32_kernel::launch(device.client(), count, cube, out.arg(), u32::from(value != 0.0));
            }
        }
        out
    }

    fn shape(x: &CubeStorage) -> &[usize] {
        &x.shape
    }

    fn dtype(x: &CubeStorage) -> DType {
        x.dtype
    }

    fn device(x: &CubeStorage) -> CubeDevice {
        x.device.clone()
    }

    fn cast(x: &CubeStorage, dtype: DType) -> CubeStorage {
        let t = native("cast", x);
        if t.dtype == dtype {
            return t.clone();
        }
        assert!(on_device(dtype), "cubecl cast: {dtype} tensors live on the host");
        if t.dtype == DType::F16 || dtype == DType::F16 {
            // Through f32, which holds every f16 and every bool exactly.
            let wide = Self::cast(&t.widen(), DType::F32);
            return if dtype == DType::F16 { wide.narrow(dtype) } else { Self::cast(&wide, dtype) };
        }
        let out = CubeStorage::empty(&t.device, &t.shape, dtype);
        let n = out.numel();
        if n > 0 {
            let (count, cube) = grid(n);
            if dtype == DType::Bool {
                kernels::to_bool_kernel::launch(t.client(), count, cube, t.arg(), out.arg());
            } else {
                kernels::to_f32_kernel::launch(t.client(), count, cube, t.arg(), out.arg());
            }
        }
        out
    }

    fn unary(op: UnaryOp, x: &CubeStorage) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::unary(op, &x.widen()).narrow(h);
        }
        let t = native(op.name(), x);
        let out = CubeStorage::empty(&t.device, &t.shape, t.dtype);
        let n = out.numel();
        if n == 0 {
            return out;
        }
        let (count, cube) = grid(n);
        if t.dtype == DType::Bool {
            // Bools have `not` alone; `abs` and `neg` are refused by the runtime.
            kernels::not_kernel::launch(t.client(), count, cube, t.arg(), out.arg());
        } else {
            let (code, [p0, p1]) = unary_code(op);
            kernels::unary_kernel::launch(t.client(), count, cube, t.arg(), out.arg(), p0, p1, code);
        }
        out
    }

    fn binary(op: BinaryOp, a: &CubeStorage, b: &CubeStorage) -> CubeStorage {
        if let Some(h) = half(a) {
            return Self::binary(op, &a.widen(), &b.widen()).narrow(h);
        }
        let (x, y) = (native(op.name(), a), native(op.name(), b));
        let shape = broadcast_all(&[&x.shape, &y.shape]);
        let out = CubeStorage::empty(&x.device, &shape, x.dtype);
        let n = out.numel();
        if n == 0 {
            return out;
        }
        let ((xa, xd), (ya, yd)) = (x.broadcast_to(&shape), y.broadcast_to(&shape));
        let (count, cube) = grid(n);
        if x.dtype == DType::F32 {
            kernels::binary_f32_kernel::launch(x.client(), count, cube, xa, ya, out.arg(), op.index(), xd, yd);
        } else {
            let and = op == BinaryOp::And;
            kernels::binary_bool_kernel::launch(x.client(), count, cube, xa, ya, out.arg(), and, xd, yd);
        }
        out
    }

    fn binary_scalar(op: BinaryOp, x: &CubeStorage, scalar: f64) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::binary_scalar(op, &x.widen(), scalar).narrow(h);
        }
        let t = native(op.name(), x);
        let out = CubeStorage::empty(&t.device, &t.shape, t.dtype);
        let n = out.numel();
        if n == 0 {
            return out;
        }
        let (count, cube) = grid(n);
        if t.dtype == DType::F32 {
            let code = op.index();
            kernels::binary_scalar_f32_kernel::launch(t.client(), count, cube, t.arg(), scalar as f32, out.arg(), code);
        } else {
            let (s, and) = (u32::from(scalar != 0.0), op == BinaryOp::And);
            kernels::binary_scalar_bool_kernel::launch(t.client(), count, cube, t.arg(), s, out.arg(), and);
        }
        out
    }

    fn compare(op: CmpOp, a: &CubeStorage, b: &CubeStorage) -> CubeStorage {
        if half(a).is_some() {
            return Self::compare(op, &a.widen(), &b.widen());
        }
        let (x, y) = (native(op.name(), a), native(op.name(), b));
        let shape = broadcast_all(&[&x.shape, &y.shape]);
        let out = CubeStorage::empty(&x.device, &shape, DType::Bool);
        let n = out.numel();
        if n == 0 {
            return out;
        }
        let ((xa, xd), (ya, yd)) = (x.broadcast_to(&shape), y.broadcast_to(&shape));
        let (count, cube) = grid(n);
        let code = op.index();
        if x.dtype == DType::F32 {
            kernels::compare_f32_kernel::launch(x.client(), count, cube, xa, ya, out.arg(), code, xd, yd);
        } else {
            kernels::compare_u32_kernel::launch(x.client(), count, cube, xa, ya, out.arg(), code, xd, yd);
        }
        out
    }

    fn compare_scalar(op: CmpOp, x: &CubeStorage, scalar: f64) -> CubeStorage {
        if half(x).is_some() {
            return Self::compare_scalar(op, &x.widen(), scalar);
        }
        let t = native(op.name(), x);
        let out = CubeStorage::empty(&t.device, &t.shape, DType::Bool);
        let n = out.numel();
        if n == 0 {
            return out;
        }
        let (count, cube) = grid(n);
        let code = op.index();
        if t.dtype == DType::F32 {
            kernels::compare_scalar_f32_kernel::launch(
                t.client(),
                count,
                cube,
                t.arg(),
                scalar as f32,
                out.arg(),
                code,
            );
        } else {
            // A bool compared with a number: as 0 or 1 against the number's truth.
            let s = u32::from(scalar != 0.0);
            kernels::compare_scalar_u32_kernel::launch(t.client(), count, cube, t.arg(), s, out.arg(), code);
        }
        out
    }

    fn where_cond(cond: &CubeStorage, a: &CubeStorage, b: &CubeStorage) -> CubeStorage {
        let (c, x, y) = (native("where_cond", cond), native("where_cond", a), native("where_cond", b));
        let shape = broadcast_all(&[&c.shape, &x.shape, &y.shape]);
        let out = CubeStorage::empty(&x.device, &shape, x.dtype);
        let n = out.numel();
        if n == 0 {
            return out;
        }
        let (ca, xa, ya) = (c.broadcast_to(&shape).0, x.broadcast_to(&shape).0, y.broadcast_to(&shape).0);
        let (count, cube) = grid(n);
        if x.dtype == DType::F32 {
            kernels::where_kernel::launch::<f32>(x.client(), count, cube, ca, xa, ya, out.arg());
        } else if x.dtype == DType::F16 {
            kernels::where_kernel::launch::<blaze_runtime::f16>(x.client(), count, cube, ca, xa, ya, out.arg());
        } else {
            kernels::where_kernel::launch::<u32>(x.client(), count, cube, ca, xa, ya, out.arg());
        }
        out
    }

    fn reduce(op: ReduceOp, x: &CubeStorage, dim: usize) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::reduce(op, &x.widen(), dim).narrow(h);
        }
        reduce::reduce(op, native("reduce", x), dim)
    }

    fn matmul(a: &CubeStorage, b: &CubeStorage) -> CubeStorage {
        matmul::matmul(floats("matmul", a), floats("matmul", b))
    }

    fn reshape(x: &CubeStorage, shape: &[usize]) -> CubeStorage {
        Self::reshaped(x, shape)
    }

    fn permute(x: &CubeStorage, axes: &[usize]) -> CubeStorage {
        let t = native("permute", x);
        let st = strides(&t.shape);
        let shape: Vec<usize> = axes.iter().map(|&a| t.shape[a]).collect();
        Self::copy_view(t, 0, axes.iter().map(|&a| st[a]).collect(), &shape)
    }

    fn expand(x: &CubeStorage, shape: &[usize]) -> CubeStorage {
        let t = native("expand", x);
        if t.shape == shape {
            return t.clone();
        }
        let st = strides(&t.shape);
        let st = t.shape.iter().zip(&st).map(|(&d, &s)| if d == 1 { 0 } else { s }).collect();
        Self::copy_view(t, 0, st, shape)
    }

    fn slice(x: &CubeStorage, ranges: &[Range<usize>]) -> CubeStorage {
        let t = native("slice", x);
        let st = strides(&t.shape);
        let start = ranges.iter().zip(&st).map(|(r, s)| r.start * s).sum();
        let shape: Vec<usize> = ranges.iter().map(|r| r.end - r.start).collect();
        Self::copy_view(t, start, st, &shape)
    }

    fn pad(x: &CubeStorage, pads: &[(usize, usize)], value: f64) -> CubeStorage {
        let t = native("pad", x);
        let shape: Vec<usize> = t.shape.iter().zip(pads).map(|(&d, &(b, a))| d + b + a).collect();
        let out = Self::full(&shape, value, t.dtype, &t.device);
        let at = pads.iter().zip(strides(&shape)).map(|(&(b, _), s)| b * s).sum();
        Self::copy_into(t.arg(), 0, &out, at, &t.shape);
        out
    }

    fn cat(xs: &[CubeStorage], dim: usize) -> CubeStorage {
        let parts: Vec<&CubeStorage> = xs.iter().map(|x| native("cat", x)).collect();
        let mut shape = parts[0].shape.clone();
        shape[dim] = parts.iter().map(|p| p.shape[dim]).sum();
        let out = CubeStorage::empty(&parts[0].device, &shape, parts[0].dtype);
        let step = strides(&shape)[dim];
        let mut at = 0;
        for part in parts {
            Self::copy_into(part.arg(), 0, &out, at * step, &part.shape);
            at += part.shape[dim];
        }
        out
    }

    fn gather(x: &CubeStorage, dim: usize, index: &CubeStorage) -> CubeStorage {
        index::gather(native("gather", x), dim, index)
    }

    fn scatter_add(x: &CubeStorage, dim: usize, index: &CubeStorage, src: &CubeStorage) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::scatter_add(&x.widen(), dim, index, &src.widen()).narrow(h);
        }
        index::scatter_add(float("scatter_add", x), dim, index, float("scatter_add", src))
    }

    fn index_select(x: &CubeStorage, dim: usize, index: &CubeStorage) -> CubeStorage {
        index::index_select(native("index_select", x), dim, index)
    }

    fn index_add(x: &CubeStorage, dim: usize, index: &CubeStorage, src: &CubeStorage) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::index_add(&x.widen(), dim, index, &src.widen()).narrow(h);
        }
        index::index_add(float("index_add", x), dim, index, float("index_add", src))
    }

    fn conv2d(x: &CubeStorage, weight: &CubeStorage, bias: Option<&CubeStorage>, o: &Conv2dOptions) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::conv2d(&x.widen(), &weight.widen(), wide(bias).as_ref(), o).narrow(h);
        }
        conv::conv2d(float("conv2d", x), float("conv2d", weight), bias, o, conv::Products::AsStored)
    }

    fn max_pool2d(x: &CubeStorage, o: &Pool2dOptions, with_indices: bool) -> (CubeStorage, Option<CubeStorage>) {
        if let Some(h) = half(x) {
            let (y, i) = Self::max_pool2d(&x.widen(), o, with_indices);
            return (y.narrow(h), i);
        }
        conv::max_pool2d(float("max_pool2d", x), o, with_indices)
    }

    fn avg_pool2d(x: &CubeStorage, o: &Pool2dOptions) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::avg_pool2d(&x.widen(), o).narrow(h);
        }
        conv::avg_pool2d(float("avg_pool2d", x), o)
    }

    fn conv2d_input_grad(
        grad_out: &CubeStorage,
        weight: &CubeStorage,
        input_shape: [usize; 4],
        o: &Conv2dOptions,
    ) -> CubeStorage {
        if let Some(h) = half(grad_out) {
            return Self::conv2d_input_grad(&grad_out.widen(), &weight.widen(), input_shape, o).narrow(h);
        }
        conv::conv2d_input_grad(
            float("conv2d_input_grad", grad_out),
            float("conv2d_input_grad", weight),
            input_shape,
            o,
            conv::Products::AsStored,
        )
    }

    fn conv2d_weight_grad(
        x: &CubeStorage,
        grad_out: &CubeStorage,
        weight_shape: [usize; 4],
        o: &Conv2dOptions,
    ) -> CubeStorage {
        if let Some(h) = half(x) {
            return Self::conv2d_weight_grad(&x.widen(), &grad_out.widen(), weight_shape, o).narrow(h);
        }
        let (x, grad_out) = (float("conv2d_weight_grad", x), float("conv2d_weight_grad", grad_out));
        conv::conv2d_weight_grad(x, grad_out, weight_shape, o, conv::Products::AsStored)
    }

    fn avg_pool2d_input_grad(grad_out: &CubeStorage, input_shape: [usize; 4], o: &Pool2dOptions) -> CubeStorage {
        if let Some(h) = half(grad_out) {
            return Self::avg_pool2d_input_grad(&grad_out.widen(), input_shape, o).narrow(h);
        }
        conv::avg_pool2d_input_grad(float("avg_pool2d_input_grad", grad_out), input_shape, o)
    }
}

/// The defaults: models train on `HostFallback<CubeNative, _>`, a generic
/// type whose loop is compiled where it is used.
impl blaze_runtime::Precompiled for CubeNative {}

impl Kernels for CubeNative {
    fn elementwise<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<CubeStorage>],
        shape: &[usize],
        dtype: DType,
    ) -> CubeStorage {
        if dtype == DType::F16 {
            let wide: Vec<KernelArg<CubeStorage>> = inputs.iter().map(|a| a.map(CubeStorage::widen)).collect();
            return ew::elementwise::<K>(f, &wide, shape, DType::F32).narrow(dtype);
        }
        ew::elementwise::<K>(f, inputs, shape, dtype)
    }

    fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, CubeStorage>], scalars: &[ScalarArg]) {
        ew::launch::<K>(groups, buffers, scalars)
    }
}
