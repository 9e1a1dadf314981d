//! The helpers `kernel!`'s `#[cube]` code calls, so that a kernel
//! computes on this backend what the WGSL printer makes every adapter
//! compute: NaN-aware comparisons and `min`/`max`, C's `pow`, integer
//! division and remainder defined at zero, saturating float-to-integer
//! casts.

// `#[cube]` writes an undocumented module and struct beside each function.
#![allow(missing_docs)]

use blaze_runtime::kernel::ScalarArg;
use cubecl::prelude::*;

pub use super::kernels::{erf, is_nan, offset_in, pow, tanh};

#[cube]
pub fn sign(x: f32) -> f32 {
    select(x > 0.0, 1.0f32, select(x < 0.0, -1.0f32, x))
}

#[cube]
pub fn max(a: f32, b: f32) -> f32 {
    select(is_nan(a) || is_nan(b), a + b, f32::max(a, b))
}

#[cube]
pub fn min(a: f32, b: f32) -> f32 {
    select(is_nan(a) || is_nan(b), a + b, f32::min(a, b))
}

#[cube]
pub fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    min(max(x, lo), hi)
}

#[cube]
pub fn lt(a: f32, b: f32) -> bool {
    a < b && !is_nan(a) && !is_nan(b)
}

#[cube]
pub fn le(a: f32, b: f32) -> bool {
    a <= b && !is_nan(a) && !is_nan(b)
}

#[cube]
pub fn gt(a: f32, b: f32) -> bool {
    a > b && !is_nan(a) && !is_nan(b)
}

#[cube]
pub fn ge(a: f32, b: f32) -> bool {
    a >= b && !is_nan(a) && !is_nan(b)
}

#[cube]
pub fn eq(a: f32, b: f32) -> bool {
    a == b && !is_nan(a) && !is_nan(b)
}

#[cube]
pub fn ne(a: f32, b: f32) -> bool {
    a != b || is_nan(a) || is_nan(b)
}

/// WGSL's float remainder, `a - b * trunc(a / b)`.
#[cube]
pub fn rem_f32(a: f32, b: f32) -> f32 {
    a - b * f32::trunc(a / b)
}

/// `a / b` toward zero; `a / 0 = a`.
#[cube]
pub fn div_u32(a: u32, b: u32) -> u32 {
    select(b == 0u32, a, a / select(b == 0u32, 1u32, b))
}

/// `a % b`; `a % 0 = 0`.
#[cube]
pub fn rem_u32(a: u32, b: u32) -> u32 {
    select(b == 0u32, 0u32, a % select(b == 0u32, 1u32, b))
}

/// `a / b` toward zero on the magnitudes; `a / 0 = a`, `MIN / -1 = MIN`.
#[cube]
pub fn div_i32(a: i32, b: i32) -> i32 {
    let ua = select(a < 0i32, 0u32 - u32::cast_from(a), u32::cast_from(a));
    let ub = select(b < 0i32, 0u32 - u32::cast_from(b), u32::cast_from(b));
    let q = ua / select(ub == 0u32, 1u32, ub);
    let signed = select((a < 0i32) != (b < 0i32), i32::cast_from(0u32 - q), i32::cast_from(q));
    select(b == 0i32, a, signed)
}

/// `a % b` with the sign of `a`; `a % 0 = 0`.
#[cube]
pub fn rem_i32(a: i32, b: i32) -> i32 {
    let ua = select(a < 0i32, 0u32 - u32::cast_from(a), u32::cast_from(a));
    let ub = select(b < 0i32, 0u32 - u32::cast_from(b), u32::cast_from(b));
    let r = ua % select(ub == 0u32, 1u32, ub);
    let signed = select(a < 0i32, i32::cast_from(0u32 - r), i32::cast_from(r));
    select(b == 0i32, 0i32, signed)
}

/// Toward zero, saturating; NaN is 0.
#[cube]
pub fn f32_to_i32(x: f32) -> i32 {
    let mut r = i32::cast_from(f32::clamp(x, -2_147_483_648.0f32, 2_147_483_520.0f32));
    if x >= 2_147_483_648.0f32 {
        r = 2_147_483_647i32;
    }
    select(is_nan(x), 0i32, r)
}

/// Toward zero, saturating; NaN and negatives are 0.
#[cube]
pub fn f32_to_u32(x: f32) -> u32 {
    let mut r = u32::cast_from(f32::clamp(x, 0.0f32, 4_294_967_040.0f32));
    if x >= 4_294_967_296.0f32 {
        r = 4_294_967_295u32;
    }
    select(is_nan(x), 0u32, r)
}

/// A launch's scalar as the kernel's `f32` parameter (the runtime checked
/// the kinds against the kernel's parameters).
pub fn scalar_f32(s: &ScalarArg) -> f32 {
    match *s {
        ScalarArg::F32(v) => v,
        ScalarArg::U32(v) => v as f32,
        ScalarArg::I32(v) => v as f32,
    }
}

/// A launch's scalar as a `u32` parameter.
pub fn scalar_u32(s: &ScalarArg) -> u32 {
    match *s {
        ScalarArg::U32(v) => v,
        ScalarArg::I32(v) => v as u32,
        ScalarArg::F32(v) => v as u32,
    }
}

/// A launch's scalar as an `i32` parameter.
pub fn scalar_i32(s: &ScalarArg) -> i32 {
    match *s {
        ScalarArg::I32(v) => v,
        ScalarArg::U32(v) => v as i32,
        ScalarArg::F32(v) => v as i32,
    }
}
