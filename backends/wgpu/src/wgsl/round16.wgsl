// f32 values rounded to bf16 or f16 and kept in f32, to nearest even, as
// the CPU rounds them (`bf16::from_f32`, `f16::from_f32`): what a product
// under a 16-bit precision multiplies. Integer steps only, so no float
// optimisation of the driver's can move a rounding.

// bf16: the top 16 bits of an f32; NaN stays NaN.
fn round_bf16(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { return x; }
    return bitcast<f32>((bits + 0x7fffu + ((bits >> 16u) & 1u)) & 0xffff0000u);
}

// f16: 10 fraction bits; past f16's range infinity; below 2^-14 a
// multiple of 2^-24 (f16's subnormals); infinities and NaN as they are.
fn round_f16(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let sign = bits & 0x80000000u;
    let mag = bits & 0x7fffffffu;
    if (mag >= 0x7f800000u) { return x; }
    if (mag >= 0x38800000u) {
        let normal = (mag + 0x0fffu + ((mag >> 13u) & 1u)) & 0xffffe000u;
        return bitcast<f32>(sign | select(normal, 0x7f800000u, normal >= 0x47800000u));
    }
    // A multiple of 2^-24: the 24-bit significand shifted right by
    // 126 - exponent (at least 14), to nearest even; f32 subnormals and
    // values under 2^-25 give 0.
    let shift = 126u - (mag >> 23u);
    if ((mag >> 23u) == 0u || shift > 24u) { return bitcast<f32>(sign); }
    let m = (mag & 0x007fffffu) | 0x00800000u;
    let half = 1u << (shift - 1u);
    let rest = m & ((half << 1u) - 1u);
    var q = m >> shift;
    if (rest > half || (rest == half && (q & 1u) == 1u)) { q = q + 1u; }
    return bitcast<f32>(sign | bitcast<u32>(ldexp(f32(q), -24)));
}
