//! Vectorisable f32 math, shared by the CPU backend and `kernel!` kernels
//! (`exp`, `erf`, `tanh`, `log`). `f32::exp` is a call into libm that the
//! compiler cannot vectorise; these are straight-line arithmetic and
//! selects, so a loop over a slice becomes AVX code, about 3x faster than
//! the libm call for `exp`, 10 times for `log`, 60 times for `tanh`.

/// `e^x` for f32 with a relative error below 2e-7 over the whole range,
/// including overflow to `inf`, gradual underflow to 0 and NaN.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that n * LN2_HI is exact for |n| <= 2^9 (Cody-Waite).
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    // Below -104 the result underflows to 0; above 88.73 it overflows.
    // `clamp` passes NaN through, and every step after it keeps it NaN.
    let xc = x.clamp(-104.0, 88.73);
    // `rounded` is 1.5 * 2^23 + n, where a float's unit in the last place
    // is 1: its low bits hold the integer n.
    let rounded = xc.mul_add(LOG2E, ROUND);
    let n = rounded - ROUND;
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, xc));
    // Cephes' minimax polynomial for e^r on |r| <= ln(2) / 2, in fused
    // multiply-adds: the CPU backend's vector copies (AVX2, AVX-512) have
    // FMA, and the chain of dependent operations is half as long (softmax
    // over rows of 1024: 2.9-3.5 ms before, 2.3-2.7 ms after, one core).
    // Code built without FMA calls libm's `fmaf`: as exact, slower.
    let mut p = 1.987_569_1e-4_f32;
    p = p.mul_add(r, 1.398_199_9e-3);
    p = p.mul_add(r, 8.333_452e-3);
    p = p.mul_add(r, 4.166_579_6e-2);
    p = p.mul_add(r, 1.666_666_5e-1);
    p = p.mul_add(r, 0.5);
    let e = p.mul_add(r * r, r) + 1.0;
    // Scale by 2^n in two halves so that neither exponent leaves the normal
    // range: 2^128 then overflows to inf and 2^-150 underflows gradually,
    // each in one rounding, since `e * 2^n1` is exact. The halves are
    // integer arithmetic on `rounded`'s bits, a bit cast rather than a
    // float-to-int conversion (which would stop the loop from vectorising).
    // Taking n from the bits, not halving it as a float, saves a fifth of
    // the loop's cycles on Ice Lake's model (`llvm-mca`), same bits for
    // every f32 input.
    let n_int = (rounded.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let n1 = n_int >> 1;
    let pow2 = |k: i32| f32::from_bits(((k + 127) << 23) as u32);
    e * pow2(n1) * pow2(n_int - n1)
}

/// The error function for f32, branch-free (so a loop over a slice
/// vectorises): a rational minimax approximation on `[-4, 4]`, and ±1
/// from 3.9 on, where erf rounds to ±1 in f32. Absolute error below 1e-6 (libm's `erff` is a
/// scalar call with branches).
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    // Squared and capped rather than clamped first: from 3.9 on the select
    // below answers, so `x` itself need not be clamped (a vector operation
    // fewer, same bits for every f32 input). NaN stays NaN through `x * p`.
    let x2 = (x * x).min(16.0);
    // Odd numerator and even denominator, as in Eigen's and XLA's erf.
    let mut p = -2.726_142_3e-10_f32;
    p = p.mul_add(x2, 2.770_681_4e-8);
    p = p.mul_add(x2, -2.101_024e-6);
    p = p.mul_add(x2, -5.692_506_4e-5);
    p = p.mul_add(x2, -7.349_906_3e-4);
    p = p.mul_add(x2, -2.954_600_1e-3);
    p = p.mul_add(x2, -1.609_603_3e-2);
    let mut q = -1.456_607_2e-5_f32;
    q = q.mul_add(x2, -2.133_740_6e-4);
    q = q.mul_add(x2, -1.682_827e-3);
    q = q.mul_add(x2, -7.373_329e-3);
    q = q.mul_add(x2, -1.426_474e-2);
    // Past 3.9, erf rounds to ±1 in f32; the approximation falls just short.
    if x.abs() >= 3.9 { 1.0f32.copysign(x) } else { x * p / q }
}

/// `tanh(x)` for f32, branch-free (libm's `tanhf` is a scalar call, about
/// 60 times slower over a slice): Eigen's rational minimax approximation
/// (an odd polynomial of degree 13 over an even one of degree 6, on `x`
/// clamped to ±7.905), `x` itself where `|x| < 0.0004` (where `tanh(x)`
/// rounds to `x`), and ±1 from 9 on (where it rounds to ±1). Absolute
/// error below 4e-7, 6 ulp at most; libm's is within 1 ulp.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let c = x.clamp(-7.905_311, 7.905_311);
    let x2 = c * c;
    let mut p = -2.760_768_5e-16_f32;
    p = p.mul_add(x2, 2.000_188e-13);
    p = p.mul_add(x2, -8.604_672e-11);
    p = p.mul_add(x2, 5.122_297e-8);
    p = p.mul_add(x2, 1.485_722_4e-5);
    p = p.mul_add(x2, 6.372_619_3e-4);
    p = p.mul_add(x2, 4.893_524_6e-3);
    let mut q = 1.198_258_4e-6_f32;
    q = q.mul_add(x2, 1.185_347e-4);
    q = q.mul_add(x2, 2.268_434_6e-3);
    q = q.mul_add(x2, 4.893_525e-3);
    let y = if x.abs() >= 9.0 { 1.0f32.copysign(x) } else { c * p / q };
    if x.abs() < 0.000_4 { x } else { y }
}

/// `ln(x)` for f32, branch-free (libm's `logf` is a scalar call, about 10
/// times slower over a slice): Cephes' `logf`, a polynomial of degree 9 for
/// `ln(1 + f)` on the mantissa reduced to `[sqrt(1/2), sqrt(2))`, plus the
/// exponent times ln 2 in two parts. Subnormals are scaled up first; `0`
/// gives `-inf`, a negative number or NaN gives NaN, `inf` gives `inf`.
/// Within 1 ulp (relative error below 1e-7), as libm's.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
    // A subnormal input is scaled by 2^23 into the normal range.
    let tiny = x < f32::MIN_POSITIVE;
    let scaled = if tiny { x * 8_388_608.0 } else { x };
    let bits = scaled.to_bits();
    // The exponent, and the mantissa as a number in [0.5, 1).
    let e = ((bits >> 23) & 0xff) as f32 - 126.0 - if tiny { 23.0 } else { 0.0 };
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    // Below sqrt(1/2) the mantissa doubles and the exponent drops by one, so
    // that f = m - 1 lies in [sqrt(1/2) - 1, sqrt(2) - 1).
    let low = m < SQRT_HALF;
    let e = if low { e - 1.0 } else { e };
    let f = if low { m + m - 1.0 } else { m - 1.0 };
    let z = f * f;
    let mut p = 7.037_683_6e-2_f32;
    p = p.mul_add(f, -1.151_461e-1);
    p = p.mul_add(f, 1.167_699_9e-1);
    p = p.mul_add(f, -1.242_014_1e-1);
    p = p.mul_add(f, 1.424_932_3e-1);
    p = p.mul_add(f, -1.666_805_8e-1);
    p = p.mul_add(f, 2.000_071_4e-1);
    p = p.mul_add(f, -2.499_999_4e-1);
    p = p.mul_add(f, 3.333_333e-1);
    // ln 2 in two parts, as in `exp_f32`: e * LN2_HI is exact.
    let y = e.mul_add(-2.121_944_4e-4, p * f * z) - 0.5 * z;
    let r = e.mul_add(0.693_359_4, f + y);
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x.is_nan() || x < 0.0 {
        f32::NAN
    } else if x == f32::INFINITY {
        x
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::{erf_f32, exp_f32, log_f32, tanh_f32};

    #[test]
    fn erf_matches_f64_erf() {
        let mut worst = 0.0f64;
        let mut x = -6.0f32;
        while x < 6.0 {
            let want = libm::erf(x as f64);
            worst = worst.max((erf_f32(x) as f64 - want).abs());
            x += 0.000_37;
        }
        assert!(worst < 1e-6, "worst absolute error {worst}");
        assert_eq!(erf_f32(0.0), 0.0);
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert!(erf_f32(f32::NAN).is_nan());
    }

    /// The worst relative error of `f` against `want` (in f64) at `xs`,
    /// skipping where `want` is 0.
    fn worst_relative(f: fn(f32) -> f32, want: fn(f64) -> f64, xs: impl Iterator<Item = f32>) -> f64 {
        xs.map(|x| (f(x) as f64, want(x as f64)))
            .filter(|&(_, w)| w != 0.0)
            .map(|(g, w)| ((g - w) / w).abs())
            .fold(0.0, f64::max)
    }

    /// `from`, `from + step`, .. below `to`.
    fn steps(from: f32, to: f32, step: f32) -> impl Iterator<Item = f32> {
        std::iter::successors(Some(from), move |x| Some(x + step)).take_while(move |&x| x < to)
    }

    #[test]
    fn tanh_matches_f64_tanh() {
        let worst_abs =
            steps(-12.0, 12.0, 0.000_61).map(|x| (tanh_f32(x) as f64 - (x as f64).tanh()).abs()).fold(0.0, f64::max);
        // Relative error over the range, and from 1e-8 up to 1 by factors
        // of 1.001, where tanh(x) is small.
        let small = std::iter::successors(Some(1e-8f32), |x| Some(x * 1.001)).take_while(|&x| x < 1.0);
        let worst_rel = worst_relative(tanh_f32, f64::tanh, steps(-12.0, 12.0, 0.000_61).chain(small));
        assert!(worst_rel < 4e-7 && worst_abs < 4e-7, "worst relative error {worst_rel}, absolute {worst_abs}");
        assert_eq!(tanh_f32(0.0), 0.0);
        assert_eq!(tanh_f32(9.0), 1.0);
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }

    #[test]
    fn log_matches_f64_ln_over_the_whole_range() {
        // Every 2^-13th step of the mantissa over every binade, subnormals
        // included; then around 1, where ln(x) is small.
        let binades = (1..f32::INFINITY.to_bits()).step_by(1 << 10).map(f32::from_bits);
        let worst = worst_relative(log_f32, f64::ln, binades.chain(steps(0.9, 1.1, 1e-5)));
        assert!(worst < 1e-7, "worst relative error {worst}");
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f32(f32::NAN).is_nan() && log_f32(f32::NEG_INFINITY).is_nan());
    }

    #[test]
    fn exp_matches_f64_exp_over_the_whole_range() {
        let mut worst = 0.0f64;
        let mut x = -110.0f32;
        while x < 90.0 {
            let want = (x as f64).exp();
            let got = exp_f32(x) as f64;
            if want > f32::MAX as f64 {
                assert_eq!(got, f64::INFINITY, "exp({x})");
            } else if want >= f32::MIN_POSITIVE as f64 {
                worst = worst.max(((got - want) / want).abs());
            } else {
                // Subnormal results keep fewer bits; compare absolutely.
                assert!((got - want).abs() < 2e-45, "exp({x}) = {got}, want {want}");
            }
            x += 0.0137;
        }
        assert!(worst < 2e-7, "worst relative error {worst}");
    }

    #[test]
    fn exp_special_values() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(88.8), f32::INFINITY);
        assert_eq!(exp_f32(-200.0), 0.0);
    }
}
