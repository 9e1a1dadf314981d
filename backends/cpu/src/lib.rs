//! The Blaze CPU backend.
//!
//! Storage is an ndarray per dtype ([`CpuStorage`]); permutes and slices are
//! views that share the values, and op outputs come from a buffer pool
//! (`pool.rs`), so a training step of fixed shapes allocates nothing after
//! its first run. Matmul and convolution go through the packed GEMMs of
//! `blaze-gemm`, which select AVX-512, AVX2 or AMX kernels at run time.
//! Elementwise ops and reductions run as tight serial loops on small tensors
//! and fork onto rayon's pool only above a size threshold, because waking a
//! second core costs more than a small op does.
//!
//! Thread count follows rayon: run work inside
//! `rayon::ThreadPoolBuilder::new().num_threads(n).build()?.install(..)` to
//! pin it (the benchmarks do this for their 1- and 2-thread columns).
#![deny(missing_docs)]

mod attention;
mod composites;
mod conv;
mod elementwise;
mod kernel;
mod matmul;
mod maxpool;
mod movement;
mod norm;
mod parallel;
mod pool;
mod reduce;
mod rows;
mod storage;
mod stream;

// The GEMM crate's modules, by the names this crate's modules use.
use blaze_gemm::{cpuinfo, gemm, gemm_bf16, gemm_int8, gemm_tune, simd};

use std::ops::Range;

use blaze_runtime::binary::BinaryVisitor;
use blaze_runtime::kernel::{Elementwise, KernelArg, KernelFloat, KernelFn, LaunchBuffer, ScalarArg, Workgroups};
use blaze_runtime::shape::Dims;
use blaze_runtime::unary::{UnaryKernel, UnaryVisitor};
use blaze_runtime::{
    AdamStep, BinaryOp, CmpOp, Composites, Conv2dOptions, DType, Device, Kernels, Pool2dOptions, Primitives, ReduceOp,
    RowNorm, SoftmaxOptions, TensorData, UnaryOp,
};

pub use crate::cpuinfo::{CpuInfo, FMA_CHAINS, Vendor, cpu_info, fma_chains, fma_ports_512};
use crate::elementwise::{Loops, map, map_baseline, map_keeping_layout, select, zip, zip_baseline};
pub use crate::gemm::{GemmKernel, GemmPlan, gemm_plan};
pub use crate::gemm_bf16::{Bf16Kernel, Bf16Plan, amx_runs_here, bf16_kernel_runs_here, bf16_plan};
pub use crate::gemm_int8::{Int8Kernel, amx_int8_runs_here, conv2d_int8_on, linear_int8_on, vnni_runs_here};
pub use crate::gemm_tune::{clear_gemm_tuning, gemm_tune_cache_path};
use crate::kernel::{Kernel, KernelLoops};
use crate::parallel::{CHEAP_OP_MIN, COSTLY_OP_MIN};
pub use crate::storage::CpuStorage;
use crate::storage::{Array, Float, Num, map_storage};
use blaze_runtime::reduction::{ReduceVisitor, Reduction};

/// The CPU backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu;

/// The CPU as a device (there is one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuDevice;

impl Device for CpuDevice {
    fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        // Parallel ops called from outside the pool hand all their pieces to
        // the workers and sleep until they finish (so there they fork only
        // for `OUTSIDE_POOL` times the work); from a worker, the calling
        // thread takes a piece itself. On the MLP benchmark that is about a
        // tenth of the step. The other workers poll for work through the
        // stretch rather than sleep between ops: another tenth on the GPT
        // example's step.
        if rayon::current_thread_index().is_some() {
            blaze_gemm::threads::keep_awake(f)
        } else {
            rayon::scope(|_| blaze_gemm::threads::keep_awake(f))
        }
    }
}

impl blaze_runtime::BackendDevice<Cpu> for CpuDevice {
    fn as_device(&self) -> &CpuDevice {
        self
    }
}

/// Tunes glibc's allocator for training: tensors of a few megabytes that
/// are allocated and freed again (shapes that change, so the buffer pool
/// cannot reuse them) are by default returned to the kernel and mapped
/// again, so each step pays page faults and cross-core TLB flushes (a third
/// of a small CNN's step time on two cores before op outputs were pooled).
/// This keeps blocks up to 64 MiB in the heap and trims it only past
/// 256 MiB of free memory. It changes process-wide allocator settings, so
/// it is opt-in: programs that train call it once at start-up. Does nothing
/// on other platforms; returns whether the settings were applied.
pub fn tune_allocator_for_training() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator parameters; it is safe to
        // call at any time from any thread.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Bytes of op outputs that tensors hold right now (the buffer pool's
/// buffers in use, whatever their dtype). The difference across a call is
/// what it keeps alive: after a training forward, what its cache holds for
/// the backward.
pub fn bytes_in_use() -> usize {
    pool::bytes::<f32>(false) + pool::bytes::<f64>(false) + pool::bytes::<i64>(false) + pool::bytes::<bool>(false)
}

/// Bytes of every buffer the pool keeps, free ones included: since free
/// buffers are reused, not returned, its growth across a call is the most
/// the call held at once beyond what the pool already had.
pub fn bytes_pooled() -> usize {
    pool::bytes::<f32>(true) + pool::bytes::<f64>(true) + pool::bytes::<i64>(true) + pool::bytes::<bool>(true)
}

/// An optional operand as `T` values: `Some(None)` when absent, `None`
/// when present with another dtype (the caller then composes).
fn optional<T>(p: Option<&CpuStorage>, values: fn(&CpuStorage) -> Option<&Array<T>>) -> Option<Option<&Array<T>>> {
    match p {
        None => Some(None),
        Some(s) => values(s).map(Some),
    }
}

/// A CPU tensor of rank `D`.
pub type CpuTensor<const D: usize> = blaze_runtime::Tensor<Cpu, D>;

/// The dtype an op on `x` rounds its results to when `x` is f16 or bf16:
/// such ops run on f32 copies ([`CpuStorage::widen`]) and round once.
fn half(x: &CpuStorage) -> Option<DType> {
    x.is_half().then(|| x.dtype())
}

/// `x` widened to f32 when it is half precision (borrowed otherwise).
fn wide(x: Option<&CpuStorage>) -> Option<CpuStorage> {
    x.map(CpuStorage::widen)
}

/// The kernel operands with half-precision tensors widened to f32.
fn wide_args(inputs: &[KernelArg<CpuStorage>]) -> Vec<KernelArg<CpuStorage>> {
    inputs.iter().map(|a| a.map(CpuStorage::widen)).collect()
}

fn unsupported(op: &str, dtype: DType) -> ! {
    panic!("{op}: not defined for dtype {dtype}")
}

/// `op` of every element, by the op table's kernel for it (the function
/// a fused group calls too, so both compute the same bits).
fn unary_float<T: Float + KernelFloat>(op: UnaryOp, a: &Array<T>) -> Array<T> {
    /// The op's kernel mapped over `a`, parallel above the size its cost says.
    struct Map<'a, T>(&'a Array<T>, usize);
    impl<T: Float + KernelFloat> UnaryVisitor for Map<'_, T> {
        type Out = Array<T>;
        fn visit<K: UnaryKernel>(self, params: &[f64]) -> Array<T> {
            map(self.0, self.1, elementwise::unary_fn::<K, T>(params))
        }
    }
    op.visit(Map(a, elementwise::fork_min(op))).unwrap_or_else(|| unsupported(op.name(), DType::F32))
}

/// `act(x + bias) (+ residual)` in one pass over `x`'s buffer, or `x` back
/// where that pass does not apply.
fn bias_act_fused(
    x: CpuStorage,
    bias: Option<&CpuStorage>,
    dim: usize,
    act: Option<UnaryOp>,
    residual: Option<&CpuStorage>,
) -> Result<CpuStorage, CpuStorage> {
    let mut x = x;
    let done = match (&mut x, bias, residual) {
        (CpuStorage::F32(xa), b, r) => match (optional(b, CpuStorage::f32s), optional(r, CpuStorage::f32s)) {
            (Some(b), Some(r)) => elementwise::bias_act_in_place(xa, b, dim, act, r),
            _ => false,
        },
        (CpuStorage::F64(xa), b, r) => match (optional(b, CpuStorage::f64s), optional(r, CpuStorage::f64s)) {
            (Some(b), Some(r)) => elementwise::bias_act_in_place(xa, b, dim, act, r),
            _ => false,
        },
        _ => false,
    };
    if done { Ok(x) } else { Err(x) }
}

/// Float op `op` of the op table zipped over `a` and `b` (broadcast), its
/// kernel's body the loop's, parallel above the size its cost says.
fn binary_float<T: Float + KernelFloat>(op: BinaryOp, a: &Array<T>, b: &Array<T>) -> Array<T> {
    struct Zip<'a, T>(&'a Array<T>, &'a Array<T>, usize);
    impl<T: Float + KernelFloat> BinaryVisitor for Zip<'_, T> {
        type Out = Array<T>;
        fn visit<K: Elementwise>(self) -> Array<T> {
            zip(self.0, self.1, self.2, |x, y| K::at(&[x, y]))
        }
    }
    let fork_min = if op.costly() { COSTLY_OP_MIN } else { CHEAP_OP_MIN };
    op.visit(Zip(a, b, fork_min)).unwrap_or_else(|| unsupported(op.name(), DType::F32))
}

fn binary_i64(op: BinaryOp, a: &Array<i64>, b: &Array<i64>) -> Array<i64> {
    match op {
        BinaryOp::Add => zip_baseline(a, b, CHEAP_OP_MIN, i64::wrapping_add),
        BinaryOp::Sub => zip_baseline(a, b, CHEAP_OP_MIN, i64::wrapping_sub),
        BinaryOp::Mul => zip_baseline(a, b, CHEAP_OP_MIN, i64::wrapping_mul),
        BinaryOp::Div => zip_baseline(a, b, CHEAP_OP_MIN, |x, y| {
            assert!(y != 0, "div: integer division by zero");
            x.wrapping_div(y)
        }),
        BinaryOp::Maximum => zip_baseline(a, b, CHEAP_OP_MIN, i64::max),
        BinaryOp::Minimum => zip_baseline(a, b, CHEAP_OP_MIN, i64::min),
        BinaryOp::Pow | BinaryOp::And | BinaryOp::Or => unsupported(op.name(), DType::I64),
    }
}

fn binary_bool(op: BinaryOp, a: &Array<bool>, b: &Array<bool>) -> Array<bool> {
    match op {
        BinaryOp::And => zip_baseline(a, b, CHEAP_OP_MIN, |x, y| x & y),
        BinaryOp::Or => zip_baseline(a, b, CHEAP_OP_MIN, |x, y| x | y),
        _ => unsupported(op.name(), DType::Bool),
    }
}

fn compare<T: Loops + PartialOrd>(op: CmpOp, a: &Array<T>, b: &Array<T>) -> Array<bool> {
    match op {
        CmpOp::Eq => T::zip(a, b, CHEAP_OP_MIN, |x, y| x == y),
        CmpOp::Ne => T::zip(a, b, CHEAP_OP_MIN, |x, y| x != y),
        CmpOp::Lt => T::zip(a, b, CHEAP_OP_MIN, |x, y| x < y),
        CmpOp::Le => T::zip(a, b, CHEAP_OP_MIN, |x, y| x <= y),
        CmpOp::Gt => T::zip(a, b, CHEAP_OP_MIN, |x, y| x > y),
        CmpOp::Ge => T::zip(a, b, CHEAP_OP_MIN, |x, y| x >= y),
    }
}

/// A one-element array of `x`'s rank holding `value`, so it broadcasts.
fn scalar_like<T: pool::Pooled, U>(x: &Array<U>, value: T) -> Array<T> {
    let mut ones = Dims::new();
    ones.extend(std::iter::repeat_n(1, x.ndim()));
    pool::filled(&ones, value, |_| {})
}

fn reduce_num<T: Num>(op: ReduceOp, a: &Array<T>, dim: usize) -> CpuStorage
where
    Array<T>: IntoStorage,
{
    /// Runs the reduction it is handed over `dim` of its array.
    struct Run<'a, T>(&'a Array<T>, usize);
    impl<T: Num> ReduceVisitor for Run<'_, T>
    where
        Array<T>: IntoStorage,
    {
        type Out = CpuStorage;
        fn visit<R: Reduction>(self) -> CpuStorage {
            if R::POSITION {
                CpuStorage::I64(reduce::position::<R, T>(self.0, self.1))
            } else {
                reduce::fold::<R, T>(self.0, self.1).into_storage()
            }
        }
    }
    op.visit(Run(a, dim))
}

/// Wraps a typed array back into the storage enum.
trait IntoStorage {
    fn into_storage(self) -> CpuStorage;
}
impl IntoStorage for Array<f32> {
    fn into_storage(self) -> CpuStorage {
        CpuStorage::F32(self)
    }
}
impl IntoStorage for Array<f64> {
    fn into_storage(self) -> CpuStorage {
        CpuStorage::F64(self)
    }
}
impl IntoStorage for Array<i64> {
    fn into_storage(self) -> CpuStorage {
        CpuStorage::I64(self)
    }
}

/// Converts every element of `a` to `dtype`.
fn cast_from<T: Loops + blaze_runtime::Element>(a: &Array<T>, dtype: DType) -> CpuStorage {
    match dtype {
        DType::F32 => CpuStorage::F32(T::map(a, CHEAP_OP_MIN, |x| x.to_f64() as f32)),
        DType::F64 => CpuStorage::F64(T::map(a, CHEAP_OP_MIN, |x| x.to_f64())),
        // From f64 (exact for every source dtype): one rounding.
        DType::F16 => CpuStorage::F16(T::map(a, CHEAP_OP_MIN, |x| blaze_runtime::Element::from_f64(x.to_f64()))),
        DType::BF16 => CpuStorage::BF16(T::map(a, CHEAP_OP_MIN, |x| blaze_runtime::Element::from_f64(x.to_f64()))),
        DType::I64 => CpuStorage::I64(T::map(a, CHEAP_OP_MIN, |x| x.to_f64() as i64)),
        DType::Bool => CpuStorage::Bool(T::map(a, CHEAP_OP_MIN, |x| x.to_f64() != 0.0)),
    }
}

/// Applies `$f` to two storages of one numeric dtype (f32, f64 or i64) and
/// rewraps the result.
macro_rules! numeric_pair {
    ($op:expr, $x:expr, $y:expr, |$a:ident, $b:ident| $body:expr) => {
        match ($x, $y) {
            (CpuStorage::F32($a), CpuStorage::F32($b)) => CpuStorage::F32($body),
            (CpuStorage::F64($a), CpuStorage::F64($b)) => CpuStorage::F64($body),
            (CpuStorage::I64($a), CpuStorage::I64($b)) => CpuStorage::I64($body),
            (a, _) => unsupported($op, a.dtype()),
        }
    };
}

/// Applies `$body` to two storages of one float dtype and rewraps the result.
macro_rules! float_pair {
    ($op:expr, $x:expr, $y:expr, |$a:ident, $b:ident| $body:expr) => {
        match ($x, $y) {
            (CpuStorage::F32($a), CpuStorage::F32($b)) => CpuStorage::F32($body),
            (CpuStorage::F64($a), CpuStorage::F64($b)) => CpuStorage::F64($body),
            (a, b) => panic!("{}: not defined for dtypes {} and {}", $op, a.dtype(), b.dtype()),
        }
    };
}

impl Primitives for Cpu {
    type Device = CpuDevice;
    type Storage = CpuStorage;

    fn name() -> &'static str {
        "cpu"
    }

    fn from_data(data: TensorData, _device: &CpuDevice) -> CpuStorage {
        CpuStorage::from_data(data)
    }

    fn to_data(x: &CpuStorage) -> TensorData {
        x.to_data()
    }

    fn full(shape: &[usize], value: f64, dtype: DType, _device: &CpuDevice) -> CpuStorage {
        match dtype {
            DType::F32 => CpuStorage::F32(pool::filled(shape, value as f32, |_| {})),
            DType::F64 => CpuStorage::F64(pool::filled(shape, value, |_| {})),
            DType::F16 => CpuStorage::F16(pool::filled(shape, blaze_runtime::Element::from_f64(value), |_| {})),
            DType::BF16 => CpuStorage::BF16(pool::filled(shape, blaze_runtime::Element::from_f64(value), |_| {})),
            DType::I64 => CpuStorage::I64(pool::filled(shape, value as i64, |_| {})),
            DType::Bool => CpuStorage::Bool(pool::filled(shape, value != 0.0, |_| {})),
        }
    }

    fn shape(x: &CpuStorage) -> &[usize] {
        x.shape()
    }

    fn dtype(x: &CpuStorage) -> DType {
        x.dtype()
    }

    fn device(_x: &CpuStorage) -> CpuDevice {
        CpuDevice
    }

    fn cast(x: &CpuStorage, dtype: DType) -> CpuStorage {
        match x {
            CpuStorage::F32(a) => cast_from(a, dtype),
            CpuStorage::F64(a) => cast_from(a, dtype),
            CpuStorage::F16(a) => cast_from(a, dtype),
            CpuStorage::BF16(a) => cast_from(a, dtype),
            CpuStorage::I64(a) => cast_from(a, dtype),
            CpuStorage::Bool(a) => cast_from(a, dtype),
        }
    }

    fn unary(op: UnaryOp, x: &CpuStorage) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::unary(op, &x.widen()).narrow(h);
        }
        match x {
            CpuStorage::F32(a) => CpuStorage::F32(unary_float(op, a)),
            CpuStorage::F64(a) => CpuStorage::F64(unary_float(op, a)),
            CpuStorage::I64(a) => CpuStorage::I64(match op {
                UnaryOp::Neg => map_baseline(a, CHEAP_OP_MIN, i64::wrapping_neg),
                UnaryOp::Abs => map_baseline(a, CHEAP_OP_MIN, i64::wrapping_abs),
                UnaryOp::Sign => map_baseline(a, CHEAP_OP_MIN, i64::signum),
                _ => unsupported(op.name(), DType::I64),
            }),
            CpuStorage::Bool(a) => match op {
                UnaryOp::Not => CpuStorage::Bool(map_baseline(a, CHEAP_OP_MIN, |x| !x)),
                _ => unsupported(op.name(), DType::Bool),
            },
            other => unsupported(op.name(), other.dtype()),
        }
    }

    fn binary(op: BinaryOp, a: &CpuStorage, b: &CpuStorage) -> CpuStorage {
        if let Some(h) = half(a) {
            return Self::binary(op, &a.widen(), &b.widen()).narrow(h);
        }
        match (a, b) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(binary_float(op, a, b)),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(binary_float(op, a, b)),
            (CpuStorage::I64(a), CpuStorage::I64(b)) => CpuStorage::I64(binary_i64(op, a, b)),
            (CpuStorage::Bool(a), CpuStorage::Bool(b)) => CpuStorage::Bool(binary_bool(op, a, b)),
            (a, b) => panic!("{}: dtypes {} and {} differ", op.name(), a.dtype(), b.dtype()),
        }
    }

    fn binary_scalar(op: BinaryOp, x: &CpuStorage, scalar: f64) -> CpuStorage {
        // The scalar stays f32, as PyTorch keeps a Python number for a half tensor.
        if let Some(h) = half(x) {
            return Self::binary_scalar(op, &x.widen(), scalar).narrow(h);
        }
        let s = map_storage!(x, a => scalar_like(a, blaze_runtime::Element::from_f64(scalar)));
        Self::binary(op, x, &s)
    }

    fn compare(op: CmpOp, a: &CpuStorage, b: &CpuStorage) -> CpuStorage {
        if a.is_half() {
            return Self::compare(op, &a.widen(), &b.widen());
        }
        CpuStorage::Bool(match (a, b) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => compare(op, a, b),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => compare(op, a, b),
            (CpuStorage::I64(a), CpuStorage::I64(b)) => compare(op, a, b),
            (CpuStorage::Bool(a), CpuStorage::Bool(b)) => compare(op, a, b),
            (a, b) => panic!("{}: dtypes {} and {} differ", op.name(), a.dtype(), b.dtype()),
        })
    }

    fn compare_scalar(op: CmpOp, x: &CpuStorage, scalar: f64) -> CpuStorage {
        if x.is_half() {
            return Self::compare_scalar(op, &x.widen(), scalar);
        }
        let s = map_storage!(x, a => scalar_like(a, blaze_runtime::Element::from_f64(scalar)));
        Self::compare(op, x, &s)
    }

    fn where_cond(cond: &CpuStorage, a: &CpuStorage, b: &CpuStorage) -> CpuStorage {
        let c = cond.as_bool("where_cond");
        match (a, b) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(select(c, a, b)),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(select(c, a, b)),
            (CpuStorage::F16(a), CpuStorage::F16(b)) => CpuStorage::F16(select(c, a, b)),
            (CpuStorage::BF16(a), CpuStorage::BF16(b)) => CpuStorage::BF16(select(c, a, b)),
            (CpuStorage::I64(a), CpuStorage::I64(b)) => CpuStorage::I64(select(c, a, b)),
            (CpuStorage::Bool(a), CpuStorage::Bool(b)) => CpuStorage::Bool(select(c, a, b)),
            (a, b) => panic!("where_cond: dtypes {} and {} differ", a.dtype(), b.dtype()),
        }
    }

    fn reduce(op: ReduceOp, x: &CpuStorage, dim: usize) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::reduce(op, &x.widen(), dim).narrow(h);
        }
        match x {
            CpuStorage::F32(a) => reduce_num(op, a, dim),
            CpuStorage::F64(a) => reduce_num(op, a, dim),
            CpuStorage::I64(a) => reduce_num(op, a, dim),
            other => unsupported(op.name(), other.dtype()),
        }
    }

    fn matmul(a: &CpuStorage, b: &CpuStorage) -> CpuStorage {
        if let (CpuStorage::BF16(a), CpuStorage::BF16(b)) = (a, b)
            && gemm_bf16::bf16_kernel_runs_here()
        {
            // bf16 products summed in f32, the result rounded once.
            return CpuStorage::BF16(matmul::matmul(a, b));
        }
        if let Some(h) = half(a) {
            return Self::matmul(&a.widen(), &b.widen()).narrow(h);
        }
        float_pair!("matmul", a, b, |a, b| matmul::matmul(a, b))
    }

    fn reshape(x: &CpuStorage, shape: &[usize]) -> CpuStorage {
        map_storage!(x, a => movement::reshape(a, shape))
    }

    fn permute(x: &CpuStorage, axes: &[usize]) -> CpuStorage {
        map_storage!(x, a => movement::permute(a, axes))
    }

    fn expand(x: &CpuStorage, shape: &[usize]) -> CpuStorage {
        map_storage!(x, a => movement::expand(a, shape))
    }

    fn slice(x: &CpuStorage, ranges: &[Range<usize>]) -> CpuStorage {
        map_storage!(x, a => movement::slice(a, ranges))
    }

    fn pad(x: &CpuStorage, pads: &[(usize, usize)], value: f64) -> CpuStorage {
        map_storage!(x, a => movement::pad(a, pads, blaze_runtime::Element::from_f64(value)))
    }

    fn cat(xs: &[CpuStorage], dim: usize) -> CpuStorage {
        macro_rules! cat_as {
            ($variant:ident) => {{
                let arrays: Vec<_> = xs
                    .iter()
                    .map(|x| match x {
                        CpuStorage::$variant(a) => a,
                        other => panic!("cat: dtypes {} and {} differ", xs[0].dtype(), other.dtype()),
                    })
                    .collect();
                CpuStorage::$variant(movement::cat(&arrays, dim))
            }};
        }
        match &xs[0] {
            CpuStorage::F32(_) => cat_as!(F32),
            CpuStorage::F64(_) => cat_as!(F64),
            CpuStorage::F16(_) => cat_as!(F16),
            CpuStorage::BF16(_) => cat_as!(BF16),
            CpuStorage::I64(_) => cat_as!(I64),
            CpuStorage::Bool(_) => cat_as!(Bool),
        }
    }

    fn gather(x: &CpuStorage, dim: usize, index: &CpuStorage) -> CpuStorage {
        let idx = index.as_i64("gather");
        map_storage!(x, a => movement::gather(a, dim, idx))
    }

    fn scatter_add(x: &CpuStorage, dim: usize, index: &CpuStorage, src: &CpuStorage) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::scatter_add(&x.widen(), dim, index, &src.widen()).narrow(h);
        }
        let idx = index.as_i64("scatter_add");
        numeric_pair!("scatter_add", x, src, |a, s| movement::scatter_add(a, dim, idx, s))
    }

    fn index_select(x: &CpuStorage, dim: usize, index: &CpuStorage) -> CpuStorage {
        let idx = index.as_i64("index_select");
        map_storage!(x, a => movement::index_select(a, dim, idx))
    }

    fn index_add(x: &CpuStorage, dim: usize, index: &CpuStorage, src: &CpuStorage) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::index_add(&x.widen(), dim, index, &src.widen()).narrow(h);
        }
        let idx = index.as_i64("index_add");
        numeric_pair!("index_add", x, src, |a, s| movement::index_add(a, dim, idx, s))
    }

    fn conv2d(x: &CpuStorage, weight: &CpuStorage, bias: Option<&CpuStorage>, options: &Conv2dOptions) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::conv2d(&x.widen(), &weight.widen(), wide(bias).as_ref(), options).narrow(h);
        }
        match (x, weight, bias) {
            (CpuStorage::F32(x), CpuStorage::F32(w), None) => CpuStorage::F32(conv::conv2d(x, w, None, options)),
            (CpuStorage::F32(x), CpuStorage::F32(w), Some(CpuStorage::F32(b))) => {
                CpuStorage::F32(conv::conv2d(x, w, Some(b), options))
            }
            (CpuStorage::F64(x), CpuStorage::F64(w), None) => CpuStorage::F64(conv::conv2d(x, w, None, options)),
            (CpuStorage::F64(x), CpuStorage::F64(w), Some(CpuStorage::F64(b))) => {
                CpuStorage::F64(conv::conv2d(x, w, Some(b), options))
            }
            (x, w, _) => panic!("conv2d: not defined for dtypes {} and {}", x.dtype(), w.dtype()),
        }
    }

    fn max_pool2d(x: &CpuStorage, options: &Pool2dOptions, with_indices: bool) -> (CpuStorage, Option<CpuStorage>) {
        if let Some(h) = half(x) {
            let (out, idx) = Self::max_pool2d(&x.widen(), options, with_indices);
            return (out.narrow(h), idx);
        }
        let (out, idx) = match x {
            CpuStorage::F32(a) => {
                let (o, i) = conv::max_pool2d(a, options, with_indices);
                (CpuStorage::F32(o), i)
            }
            CpuStorage::F64(a) => {
                let (o, i) = conv::max_pool2d(a, options, with_indices);
                (CpuStorage::F64(o), i)
            }
            other => unsupported("max_pool2d", other.dtype()),
        };
        (out, idx.map(CpuStorage::I64))
    }

    fn avg_pool2d(x: &CpuStorage, options: &Pool2dOptions) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::avg_pool2d(&x.widen(), options).narrow(h);
        }
        match x {
            CpuStorage::F32(a) => CpuStorage::F32(conv::avg_pool2d(a, options)),
            CpuStorage::F64(a) => CpuStorage::F64(conv::avg_pool2d(a, options)),
            other => unsupported("avg_pool2d", other.dtype()),
        }
    }

    fn conv2d_input_grad(
        grad: &CpuStorage,
        weight: &CpuStorage,
        input_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> CpuStorage {
        if let Some(h) = half(grad) {
            return Self::conv2d_input_grad(&grad.widen(), &weight.widen(), input_shape, options).narrow(h);
        }
        float_pair!("conv2d_input_grad", grad, weight, |g, w| conv::conv2d_input_grad(g, w, input_shape, options))
    }

    fn conv2d_weight_grad(
        x: &CpuStorage,
        grad: &CpuStorage,
        weight_shape: [usize; 4],
        options: &Conv2dOptions,
    ) -> CpuStorage {
        if let Some(h) = half(x) {
            return Self::conv2d_weight_grad(&x.widen(), &grad.widen(), weight_shape, options).narrow(h);
        }
        float_pair!("conv2d_weight_grad", x, grad, |x, g| conv::conv2d_weight_grad(x, g, weight_shape, options))
    }

    fn avg_pool2d_input_grad(grad: &CpuStorage, input_shape: [usize; 4], options: &Pool2dOptions) -> CpuStorage {
        if let Some(h) = half(grad) {
            return Self::avg_pool2d_input_grad(&grad.widen(), input_shape, options).narrow(h);
        }
        match grad {
            CpuStorage::F32(g) => CpuStorage::F32(conv::avg_pool2d_input_grad(g, input_shape, options)),
            CpuStorage::F64(g) => CpuStorage::F64(conv::avg_pool2d_input_grad(g, input_shape, options)),
            other => unsupported("avg_pool2d_input_grad", other.dtype()),
        }
    }
}

// The runtime's code for this backend (`fit`'s loop, saving and loading,
// the optimizers' updates, ...), compiled here once instead of in every
// user crate.
blaze_train::precompile!(Cpu);

impl Kernels for Cpu {
    /// Unexpanded: the kernel loops read a repeated block or spread values
    /// in place, and copy only other broadcasts (`kernel.rs`).
    fn kernel_operand(x: &CpuStorage, _shape: &[usize]) -> CpuStorage {
        x.clone()
    }

    fn elementwise<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<CpuStorage>],
        shape: &[usize],
        dtype: DType,
    ) -> CpuStorage {
        if dtype.is_half() {
            return Self::elementwise::<K>(f, &wide_args(inputs), shape, DType::F32).narrow(dtype);
        }
        match dtype {
            DType::F32 => CpuStorage::F32(f32::run(Kernel::new::<K>(f), inputs, shape)),
            DType::F64 => CpuStorage::F64(f64::run(Kernel::new::<K>(f), inputs, shape)),
            other => unsupported(K::NAME, other),
        }
    }

    fn elementwise_sum<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<CpuStorage>],
        shape: &[usize],
        dtype: DType,
        scale: f64,
    ) -> CpuStorage {
        if dtype.is_half() {
            return Self::elementwise_sum::<K>(f, &wide_args(inputs), shape, DType::F32, scale).narrow(dtype);
        }
        match dtype {
            DType::F32 => CpuStorage::F32(f32::run_sum(Kernel::new::<K>(f), inputs, shape, scale)),
            DType::F64 => CpuStorage::F64(f64::run_sum(Kernel::new::<K>(f), inputs, shape, scale)),
            other => unsupported(K::NAME, other),
        }
    }

    fn elementwise_softmax<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<CpuStorage>],
        shape: &[usize],
        dtype: DType,
        log: bool,
    ) -> CpuStorage {
        if dtype.is_half() {
            return Self::elementwise_softmax::<K>(f, &wide_args(inputs), shape, DType::F32, log).narrow(dtype);
        }
        match dtype {
            DType::F32 => CpuStorage::F32(f32::run_softmax(Kernel::new::<K>(f), inputs, shape, log)),
            DType::F64 => CpuStorage::F64(f64::run_softmax(Kernel::new::<K>(f), inputs, shape, log)),
            other => unsupported(K::NAME, other),
        }
    }

    fn elementwise_norm<K: Elementwise>(
        f: KernelFn,
        inputs: &[KernelArg<CpuStorage>],
        shape: &[usize],
        dtype: DType,
        norm: RowNorm<'_, CpuStorage>,
        keep: bool,
    ) -> (CpuStorage, CpuStorage, Option<CpuStorage>) {
        if dtype.is_half() {
            let (weight, bias) = (wide(norm.weight), wide(norm.bias));
            let norm = RowNorm { weight: weight.as_ref(), bias: bias.as_ref(), ..norm };
            let (y, s, x) = Self::elementwise_norm::<K>(f, &wide_args(inputs), shape, DType::F32, norm, keep);
            return (y.narrow(dtype), s.narrow(dtype), x.map(|x| x.narrow(dtype)));
        }
        /// The fused pass, when the parameters are contiguous `T` arrays.
        fn fused<T: KernelLoops>(
            k: Kernel<T>,
            inputs: &[KernelArg<CpuStorage>],
            shape: &[usize],
            norm: &RowNorm<'_, CpuStorage>,
            keep: bool,
        ) -> Option<kernel::Normed<T>> {
            let (w, b) = (optional(norm.weight, T::values)?, optional(norm.bias, T::values)?);
            let (w, b) = (norm::param(w).ok()?, norm::param(b).ok()?);
            let affine = norm::Affine { w, b, eps: T::from_f64(norm.eps), centre: norm.centre };
            Some(T::run_norm(k, inputs, shape, affine, keep))
        }
        let out = match dtype {
            DType::F32 => fused::<f32>(Kernel::new::<K>(f), inputs, shape, &norm, keep)
                .map(|(y, s, x)| (CpuStorage::F32(y), CpuStorage::F32(s), x.map(CpuStorage::F32))),
            DType::F64 => fused::<f64>(Kernel::new::<K>(f), inputs, shape, &norm, keep)
                .map(|(y, s, x)| (CpuStorage::F64(y), CpuStorage::F64(s), x.map(CpuStorage::F64))),
            other => unsupported(K::NAME, other),
        };
        // Strided parameters: the kernel's values, then the norm.
        out.unwrap_or_else(|| {
            blaze_runtime::backend::composed_elementwise_norm::<Self, K>(f, inputs, shape, dtype, norm, keep)
        })
    }

    fn launch<K: Workgroups>(groups: u32, buffers: &mut [LaunchBuffer<'_, CpuStorage>], scalars: &[ScalarArg]) {
        kernel::launch::<K>(groups, buffers, scalars);
    }
}
