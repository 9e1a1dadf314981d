//! The `#[cube]` kernels of the elementwise, movement and indexing ops.
//!
//! Every kernel runs one unit per output element (`ABSOLUTE_POS`) and
//! stops past the output's end. Inputs that are not read at the output's
//! index carry their own strides, 0 where they broadcast, and are read
//! through [`offset_in`]. Ops are picked by a `#[comptime]` code, so each
//! op compiles to its own shader without branches.
//!
//! The device holds f32 as `f32` and bool as `u32` 0 or 1; NaN is decided
//! by the value's bits, as the wgpu backend does, since a shader compiler
//! may assume floats are never NaN.

// `#[cube]` writes an undocumented module and struct beside each function;
// the helpers `kernel!`'s code calls are public through `__private`.
#![allow(missing_docs)]

use cubecl::prelude::*;

/// No op of the table: the value itself (a bias add with no activation).
pub const IDENTITY: u32 = u32::MAX;

/// The offset in the view `x` of its element at row-major position `pos`
/// of its shape, through its strides.
#[cube]
pub fn offset_in<E: CubePrimitive>(pos: usize, x: &Tensor<E>) -> usize {
    let rank = x.rank();
    let mut rem = pos;
    let mut offset = 0usize;
    for i in 0..rank {
        let d = rank - 1 - i;
        let size = x.shape(d);
        offset += (rem % size) * x.stride(d);
        rem /= size;
    }
    offset
}

/// [`offset_in`] for a view that is written.
#[cube]
pub fn offset_to<E: CubePrimitive>(pos: usize, x: &mut Tensor<E>) -> usize {
    let rank = x.rank();
    let mut rem = pos;
    let mut offset = 0usize;
    for i in 0..rank {
        let d = rank - 1 - i;
        let size = x.shape(d);
        offset += (rem % size) * x.stride(d);
        rem /= size;
    }
    offset
}

/// Whether `x` is NaN, by its bits.
#[cube]
pub fn is_nan(x: f32) -> bool {
    let b = u32::reinterpret(x);
    (b & 0x7f80_0000u32) == 0x7f80_0000u32 && (b & 0x007f_ffffu32) != 0u32
}

#[cube]
fn nan() -> f32 {
    f32::reinterpret(0x7fc0_0000u32)
}

/// Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7), as the
/// wgpu backend computes it.
#[cube]
pub fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * f32::abs(x));
    let poly = ((((1.061_405_4 * t - 1.453_152) * t + 1.421_413_8) * t - 0.284_496_74) * t + 0.254_829_6) * t;
    let y = 1.0 - poly * f32::exp(-x * x);
    select(x >= 0.0, y, -y)
}

/// `tanh` from one exponential of a non-positive number, which cannot overflow.
#[cube]
pub fn tanh(x: f32) -> f32 {
    let e = f32::exp(f32::abs(x) * -2.0f32);
    let t = (1.0 - e) / (1.0 + e);
    select(x >= 0.0, t, -t)
}

/// `a^b` as the CPU computes it (C's `pow`), decided as the WGSL printer's
/// helper decides it: `x^0` and `1^y` are 1 even for NaN, NaN otherwise
/// spreads, zeros and infinities by their bits, and a negative base to an
/// integer power keeps its sign (to any other, NaN).
#[cube]
pub fn pow(a: f32, b: f32) -> f32 {
    let inf = f32::reinterpret(0x7f80_0000u32);
    let ua = u32::reinterpret(a) & 0x7fff_ffffu32;
    let ub = u32::reinterpret(b) & 0x7fff_ffffu32;
    let negative = (u32::reinterpret(a) >> 31u32) == 1u32;
    let integer = ub >= 0x4b00_0000u32 || b == f32::floor(b);
    let odd = ub < 0x4b80_0000u32 && b == f32::floor(b) && f32::abs(b - 2.0 * f32::floor(b * 0.5)) == 1.0;
    let mut r = f32::powf(f32::abs(a), b);
    if b == 0.0 || a == 1.0 {
        r = 1.0;
    } else if is_nan(a) || is_nan(b) {
        r = nan();
    } else if ub == 0x7f80_0000u32 {
        r = select(ua == 0x3f80_0000u32, 1.0, select((ua > 0x3f80_0000u32) == (b > 0.0), inf, 0.0));
    } else if ua == 0u32 || ua == 0x7f80_0000u32 {
        let m = select((ua == 0u32) == (b < 0.0), inf, 0.0);
        r = select(negative && odd, -m, m);
    } else if negative {
        r = select(integer, select(odd, -r, r), nan());
    }
    r
}

/// `a and b` (with `and`), else `a or b`, on bools (0 or 1): the binary
/// ops bools have.
#[cube]
pub fn binary_bool(a: u32, b: u32, #[comptime] and: bool) -> u32 {
    let mut y = a | b;
    if comptime!(and) {
        y = a & b;
    }
    y
}

/// Comparison `op` of the table (`CmpOp::index`) of `a` and `b` as 0 or
/// 1; with a NaN operand, its entry's `unordered` value.
#[cube]
pub fn compare_f32(a: f32, b: f32, #[comptime] op: u32) -> u32 {
    u32::cast_from(crate::__private::compare::op_f32(a, b, is_nan(a) || is_nan(b), op))
}

/// Comparison `op` of the table of two words as 0 or 1.
#[cube]
pub fn compare_u32(a: u32, b: u32, #[comptime] op: u32) -> u32 {
    u32::cast_from(crate::__private::compare::op_u32(a, b, op))
}

/// Reads the view `x` (of the output's shape) at the output position
/// `pos`: directly, or through its strides.
#[cube]
fn read<E: CubePrimitive>(x: &Tensor<E>, pos: usize, #[comptime] direct: bool) -> E {
    let mut at = pos;
    if comptime!(!direct) {
        at = offset_in(pos, x);
    }
    x[at]
}

/// Op number `op` of the op table (`UnaryOp::index`) with its parameters
/// `p0, p1` (zeros past its own).
#[cube(launch)]
pub fn unary_kernel(x: &Tensor<f32>, out: &mut Tensor<f32>, p0: f32, p1: f32, #[comptime] op: u32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = crate::__private::unary::op(x[ABSOLUTE_POS], p0, p1, op);
}

/// `1 - x` on bools.
#[cube(launch)]
pub fn not_kernel(x: &Tensor<u32>, out: &mut Tensor<u32>) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = 1u32 - x[ABSOLUTE_POS];
}

#[cube(launch)]
pub fn binary_f32_kernel(
    a: &Tensor<f32>,
    b: &Tensor<f32>,
    out: &mut Tensor<f32>,
    #[comptime] op: u32,
    #[comptime] a_direct: bool,
    #[comptime] b_direct: bool,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let x = read(a, ABSOLUTE_POS, a_direct);
    let y = read(b, ABSOLUTE_POS, b_direct);
    out[ABSOLUTE_POS] = crate::__private::binary::op(x, y, op);
}

#[cube(launch)]
pub fn binary_bool_kernel(
    a: &Tensor<u32>,
    b: &Tensor<u32>,
    out: &mut Tensor<u32>,
    #[comptime] and: bool,
    #[comptime] a_direct: bool,
    #[comptime] b_direct: bool,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let x = read(a, ABSOLUTE_POS, a_direct);
    let y = read(b, ABSOLUTE_POS, b_direct);
    out[ABSOLUTE_POS] = binary_bool(x, y, and);
}

#[cube(launch)]
pub fn binary_scalar_f32_kernel(a: &Tensor<f32>, s: f32, out: &mut Tensor<f32>, #[comptime] op: u32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = crate::__private::binary::op(a[ABSOLUTE_POS], s, op);
}

#[cube(launch)]
pub fn binary_scalar_bool_kernel(a: &Tensor<u32>, s: u32, out: &mut Tensor<u32>, #[comptime] and: bool) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = binary_bool(a[ABSOLUTE_POS], s, and);
}

#[cube(launch)]
pub fn compare_f32_kernel(
    a: &Tensor<f32>,
    b: &Tensor<f32>,
    out: &mut Tensor<u32>,
    #[comptime] op: u32,
    #[comptime] a_direct: bool,
    #[comptime] b_direct: bool,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let x = read(a, ABSOLUTE_POS, a_direct);
    let y = read(b, ABSOLUTE_POS, b_direct);
    out[ABSOLUTE_POS] = compare_f32(x, y, op);
}

#[cube(launch)]
pub fn compare_u32_kernel(
    a: &Tensor<u32>,
    b: &Tensor<u32>,
    out: &mut Tensor<u32>,
    #[comptime] op: u32,
    #[comptime] a_direct: bool,
    #[comptime] b_direct: bool,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let x = read(a, ABSOLUTE_POS, a_direct);
    let y = read(b, ABSOLUTE_POS, b_direct);
    out[ABSOLUTE_POS] = compare_u32(x, y, op);
}

#[cube(launch)]
pub fn compare_scalar_f32_kernel(a: &Tensor<f32>, s: f32, out: &mut Tensor<u32>, #[comptime] op: u32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = compare_f32(a[ABSOLUTE_POS], s, op);
}

#[cube(launch)]
pub fn compare_scalar_u32_kernel(a: &Tensor<u32>, s: u32, out: &mut Tensor<u32>, #[comptime] op: u32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = compare_u32(a[ABSOLUTE_POS], s, op);
}

/// `cond ? a : b`, every operand through its strides.
#[cube(launch)]
pub fn where_kernel<E: Numeric>(cond: &Tensor<u32>, a: &Tensor<E>, b: &Tensor<E>, out: &mut Tensor<E>) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let c = cond[offset_in(ABSOLUTE_POS, cond)];
    let x = a[offset_in(ABSOLUTE_POS, a)];
    let y = b[offset_in(ABSOLUTE_POS, b)];
    out[ABSOLUTE_POS] = select(c != 0u32, x, y);
}

/// f32 to bool: non-zero (NaN included) is true.
#[cube(launch)]
pub fn to_bool_kernel(x: &Tensor<f32>, out: &mut Tensor<u32>) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let v = x[ABSOLUTE_POS];
    out[ABSOLUTE_POS] = u32::cast_from(v != 0.0 || is_nan(v));
}

/// One float type to another: f16 to f32 exactly, f32 to f16 rounded to
/// the nearest.
#[cube(launch)]
pub fn convert_kernel<A: Float, B: Float>(x: &Tensor<A>, out: &mut Tensor<B>) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = B::cast_from(x[ABSOLUTE_POS]);
}

/// bool to f32.
#[cube(launch)]
pub fn to_f32_kernel(x: &Tensor<u32>, out: &mut Tensor<f32>) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = f32::cast_from(x[ABSOLUTE_POS]);
}

#[cube(launch)]
pub fn fill_f32_kernel(out: &mut Tensor<f32>, value: f32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = value;
}

#[cube(launch)]
pub fn fill_u32_kernel(out: &mut Tensor<u32>, value: u32) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = value;
}

/// The strided copy every movement op is made of: the element at
/// position `pos` of `x`'s (view) shape, read at `x_start` plus `x`'s
/// strides, written at `out_start` plus `out`'s strides. `out` is a view
/// of `x`'s shape into a buffer it may only partly cover (a slot of
/// `cat`, the inside of `pad`).
#[cube(launch)]
pub fn copy_kernel<E: Numeric>(x: &Tensor<E>, out: &mut Tensor<E>, x_start: usize, out_start: usize, n: usize) {
    if ABSOLUTE_POS >= n {
        terminate!();
    }
    let from = x_start + offset_in(ABSOLUTE_POS, x);
    let to = out_start + offset_to(ABSOLUTE_POS, out);
    out[to] = x[from];
}

/// `act(x + bias) (+ residual)`: the bias along the dim whose stride it
/// carries (1 there, 0 elsewhere), the residual through its strides.
#[cube(launch)]
pub fn bias_act_kernel(
    x: &Tensor<f32>,
    bias: &Tensor<f32>,
    residual: &Tensor<f32>,
    out: &mut Tensor<f32>,
    p0: f32,
    p1: f32,
    #[comptime] act: u32,
    #[comptime] has_bias: bool,
    #[comptime] has_residual: bool,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let mut v = x[ABSOLUTE_POS];
    if comptime!(has_bias) {
        v += bias[offset_in(ABSOLUTE_POS, bias)];
    }
    let mut y = crate::__private::unary::op(v, p0, p1, act);
    if comptime!(has_residual) {
        y += residual[offset_in(ABSOLUTE_POS, residual)];
    }
    out[ABSOLUTE_POS] = y;
}
