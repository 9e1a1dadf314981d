// What every shader of the backend starts with: the uniform block of 64
// `u32` parameters (read with `pu(k)`, an f32's bits with `pf(k)`), a NaN
// test by the bits (WGSL lets a compiler assume there is no NaN) and a
// bool as a `u32`. Each shader binds its buffers in order, then `params`.

struct Params { v: array<vec4<u32>, 16> }

fn pu(k: u32) -> u32 { return params.v[k >> 2u][k & 3u]; }
fn pf(k: u32) -> f32 { return bitcast<f32>(pu(k)); }

fn isnan_(x: f32) -> bool {
    let b = bitcast<u32>(x);
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u;
}
fn b2f(x: bool) -> u32 { return select(0u, 1u, x); }
