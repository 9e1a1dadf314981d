//! General kernels the CPU, wgpu and CubeCL tests all run.

use blaze::kernel;

kernel! {
    /// Sums each row of a `[rows, cols]` matrix: one workgroup per row, a
    /// strided pass into shared memory, then a tree reduction.
    #[workgroup(64)]
    pub fn row_sum(input: &[f32], out: &mut [f32], cols: u32) {
        let row = workgroup_id();
        let lane = local_id();
        #[shared]
        let partial: [f32; 64];
        let mut acc = 0.0;
        let mut c = lane;
        while c < cols {
            acc += input[row * cols + c];
            c += 64;
        }
        partial[lane] = acc;
        barrier();
        let mut stride = 32;
        while stride > 0 {
            if lane < stride {
                partial[lane] += partial[lane + stride];
            }
            barrier();
            stride = stride / 2;
        }
        if lane == 0 {
            out[row] = partial[0];
        }
    }
}

/// Outputs of [`semantics`] per case.
pub const SEMANTICS_OUT: usize = 32;

kernel! {
    /// Operations whose results WGSL defines but GPU backends leave open
    /// (negative and zero divisors, shifts of 32 or more, casts of NaN and
    /// out-of-range floats, NaN through max/min/clamp, float remainder at
    /// infinities): case `i` reads `x[i]` and `y[i]`, converts them to i32
    /// and u32, and writes 32 outputs. Integer results go out as their high
    /// and low 16 bits, which f32 holds exactly.
    #[workgroup(64)]
    pub fn semantics(x: &[f32], y: &[f32], out: &mut [f32], n: u32) {
        let i = global_id();
        if i < n {
            let fa = x[i];
            let fb = y[i];
            let a = fa as i32;
            let b = fb as i32;
            let ua = fa as u32;
            let ub = fb as u32;
            let o = i * 32;
            out[o] = (a >> 16) as f32;
            out[o + 1] = (a & 65535) as f32;
            out[o + 2] = (ua >> 16) as f32;
            out[o + 3] = (ua & 65535) as f32;
            let q = a / b;
            out[o + 4] = (q >> 16) as f32;
            out[o + 5] = (q & 65535) as f32;
            let r = a % b;
            out[o + 6] = (r >> 16) as f32;
            out[o + 7] = (r & 65535) as f32;
            let uq = ua / ub;
            out[o + 8] = (uq >> 16) as f32;
            out[o + 9] = (uq & 65535) as f32;
            let ur = ua % ub;
            out[o + 10] = (ur >> 16) as f32;
            out[o + 11] = (ur & 65535) as f32;
            let shl = a << b;
            out[o + 12] = (shl >> 16) as f32;
            out[o + 13] = (shl & 65535) as f32;
            let shr = a >> ub;
            out[o + 14] = (shr >> 16) as f32;
            out[o + 15] = (shr & 65535) as f32;
            let ushr = ua >> b;
            out[o + 16] = (ushr >> 16) as f32;
            out[o + 17] = (ushr & 65535) as f32;
            let mut bits = a ^ b;
            bits |= a & 255;
            bits <<= 3;
            out[o + 18] = (bits >> 16) as f32;
            out[o + 19] = (bits & 65535) as f32;
            let mut m = a;
            m %= b;
            m /= 2;
            out[o + 20] = (m >> 16) as f32;
            out[o + 21] = (m & 65535) as f32;
            out[o + 22] = max(fa, fb);
            out[o + 23] = min(fa, fb);
            out[o + 24] = clamp(fa, -1.0, 1.0);
            out[o + 25] = fa % fb;
            out[o + 26] = select(fa > fb, 1.0, 0.0);
            out[o + 27] = ((-a) >> 16) as f32;
            out[o + 28] = ((-a) & 65535) as f32;
            out[o + 29] = ((ua ^ 4294967295) >> 16) as f32;
            out[o + 30] = (a as u32 >> 28) as f32;
            out[o + 31] = select(fa != fa, 1.0, 0.0);
        }
    }
}

/// The inputs of [`semantics`]: every pair of these values.
pub const SEMANTICS_VALUES: [f32; 20] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    3.0e9,
    -3.0e9,
    -2147483648.0,
    -7.0,
    -2.7,
    -1.0,
    -0.5,
    0.0,
    0.5,
    1.0,
    2.7,
    3.0,
    7.0,
    31.0,
    32.0,
    33.0,
    4294967296.0,
];

/// `(x, y)` for every pair of [`SEMANTICS_VALUES`].
pub fn semantics_inputs() -> (Vec<f32>, Vec<f32>) {
    let v = SEMANTICS_VALUES;
    (v.iter().flat_map(|&a| v.map(|_| a)).collect(), v.iter().flat_map(|_| v).collect())
}

kernel! {
    /// `y = a * x + b` with the global id, a float and a u32 scalar.
    #[workgroup(32)]
    pub fn affine(x: &[f32], y: &mut [f32], a: f32, n: u32) {
        let i = global_id();
        if i < n {
            y[i] = a * x[i] + exp(-abs(x[i]));
        }
    }
}

kernel! {
    /// Signed arithmetic: unsuffixed literals take i32 from the other
    /// operand; division and remainder round toward zero, as in WGSL.
    #[workgroup(16)]
    pub fn signed(out: &mut [f32], shift: i32) {
        let i = global_id() as i32;
        let centred = i - 8;
        let d = (centred + shift) / -3;
        let r = (centred * 7) % 5;
        let mut m = -2147483648;
        m = m / -1;
        out[global_id()] = (d * 10 + r) as f32 + abs(centred as f32) + select(m < 0, 0.5, 0.0);
    }
}

/// What `signed` computes at `i`.
pub fn signed_reference(i: i32, shift: i32) -> f32 {
    let centred = i - 8;
    let (d, r) = ((centred + shift) / -3, (centred * 7) % 5);
    // i32::MIN / -1 overflows in Rust; WGSL defines it as i32::MIN.
    (d * 10 + r) as f32 + (centred as f32).abs() + 0.5
}
