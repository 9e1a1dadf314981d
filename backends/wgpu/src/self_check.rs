//! Opening a device ([`WgpuDevice::open`]), and the self-check every
//! device runs when it opens: the integer, shift,
//! comparison and NaN operations that Blaze's shaders (the tensor ops and
//! the helpers `kernel!` emits) rely on, on values where WGSL defines the
//! result but a backend's translation might not honour it, compared with
//! what the CPU computes. An adapter that disagrees would give wrong
//! answers without a word, so it is refused (unless the caller opts in).
//!
//! What the shaders do not rely on is not checked: WGSL lets a compiler
//! assume floats are never NaN, and Mesa's Vulkan driver does (`a != a`
//! is false there), so every NaN test in generated WGSL reads the bits.

use blaze_gpu_host::{GpuBackend, OpenError};

use crate::{DeviceOptions, WgpuDevice, WgpuError};

impl WgpuDevice {
    /// The best adapter present, or the one `BLAZE_WGPU_ADAPTER` names,
    /// with its own limits.
    pub fn new() -> Result<Self, WgpuError> {
        Self::open(DeviceOptions::default())
    }

    /// A device as `options` say; the adapter must pass the self-check
    /// unless `allow_divergent` (or `BLAZE_WGPU_ALLOW_DIVERGENT=1`).
    pub fn open(options: DeviceOptions) -> Result<Self, WgpuError> {
        let dev = Self::open_unchecked(&options)?;
        let check = run(&dev);
        Ok(GpuBackend::Wgpu.admit(dev, options.allow_divergent, check)?)
    }
}

/// Results per case.
const OUT: usize = 12;

/// The checks, one line each, as the error names them.
const CHECKS: [&str; OUT] = [
    "a / b (u32, b > 0)",
    "a % b (u32, b > 0)",
    "0u - a (wrapping)",
    "a << (b & 31)",
    "a >> (b & 31) (u32)",
    "i32(a) >> (b & 31) (arithmetic)",
    "i32(a) * i32(b) (wrapping)",
    "isnan(f32(a) + f32(b)), by its bits",
    "f32(a) < f32(b), NaN decided by the bits",
    "f32(a) >= 2147483648.0",
    "i32(clamp(f32(a), -1e9, 1e9)) (toward zero)",
    "f32(a) != f32(b), NaN decided by the bits",
];

const SHADER: &str = "
@group(0) @binding(0) var<storage, read> cases: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
fn nan_bits(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&cases) / 2u) { return; }
    let a = cases[2u * i];
    let b = cases[2u * i + 1u];
    let fa = bitcast<f32>(a);
    let fb = bitcast<f32>(b);
    let o = i * 12u;
    out[o] = a / max(b, 1u);
    out[o + 1u] = a % max(b, 1u);
    out[o + 2u] = 0u - a;
    out[o + 3u] = a << (b & 31u);
    out[o + 4u] = a >> (b & 31u);
    out[o + 5u] = u32(i32(a) >> (b & 31u));
    out[o + 6u] = u32(i32(a) * i32(b));
    out[o + 7u] = select(0u, 1u, nan_bits(fa + fb));
    out[o + 8u] = select(0u, 1u, fa < fb && !nan_bits(fa) && !nan_bits(fb));
    out[o + 9u] = select(0u, 1u, fa >= 2147483648.0);
    out[o + 10u] = u32(i32(clamp(fa, -1e9, 1e9)));
    out[o + 11u] = select(0u, 1u, fa != fb || nan_bits(fa) || nan_bits(fb));
}
";

/// Integers and float bit patterns where translations go wrong: zero,
/// one, shift amounts at and past 31, the sign bit, NaN, infinities.
const VALUES: [u32; 14] = [
    0,
    1,
    7,
    31,
    32,
    33,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fff9, // -7
    0x7fc0_0000, // NaN
    0x7f80_0000, // inf
    0xff80_0000, // -inf
    0x4040_0000, // 3.0
    0xc02c_cccd, // -2.7
];

/// What the CPU computes for one case, as the shader does.
fn expected(a: u32, b: u32) -> [u32; OUT] {
    let (fa, fb) = (f32::from_bits(a), f32::from_bits(b));
    let s = b & 31;
    [
        a / b.max(1),
        a % b.max(1),
        0u32.wrapping_sub(a),
        a << s,
        a >> s,
        ((a as i32) >> s) as u32,
        (a as i32).wrapping_mul(b as i32) as u32,
        u32::from((fa + fb).is_nan()),
        u32::from(fa < fb),
        u32::from(fa >= 2147483648.0),
        // NaN clamps to either bound on a GPU; the cases keep it out.
        fa.clamp(-1e9, 1e9) as i32 as u32,
        u32::from(fa != fb),
    ]
}

/// The cases: every pair of [`VALUES`], without a NaN `a` for the clamp,
/// whose result WGSL leaves open there.
fn cases() -> Vec<(u32, u32)> {
    VALUES.iter().flat_map(|&a| VALUES.map(|b| (a, b))).collect()
}

/// The first disagreement between `got` and the CPU, as an error.
pub(crate) fn compare(adapter: &str, cases: &[(u32, u32)], got: &[u32]) -> Result<(), OpenError> {
    for (c, &(a, b)) in cases.iter().enumerate() {
        let want = expected(a, b);
        for k in 0..OUT {
            let nan_clamp = k == 10 && f32::from_bits(a).is_nan();
            let g = got.get(c * OUT + k).copied();
            if !nan_clamp && g != Some(want[k]) {
                return Err(OpenError::Divergent {
                    backend: GpuBackend::Wgpu,
                    adapter: adapter.to_owned(),
                    check: format!("{} with a = {a:#010x}, b = {b:#010x}", CHECKS[k]),
                    got: g.map_or("nothing".into(), |g| format!("{g:#010x}")),
                    want: format!("{:#010x}", want[k]),
                });
            }
        }
    }
    Ok(())
}

/// Runs the check on `device`.
pub(crate) fn run(device: &WgpuDevice) -> Result<(), OpenError> {
    let cases = cases();
    let words: Vec<u8> = cases.iter().flat_map(|&(a, b)| [a, b]).flat_map(u32::to_le_bytes).collect();
    let input = device.upload(&words);
    let out = device.alloc((cases.len() * OUT * 4) as u64);
    let pipeline = device
        .pipeline("self_check", "self_check", || SHADER.to_owned(), "main")
        .map_err(|e| OpenError::Device { adapter: device.adapter_name(), message: e.to_string() })?;
    let groups = (cases.len() as u32).div_ceil(64);
    device.dispatch_with(&Some(pipeline), &[input.get(), out.get()], None, (groups, 1, 1));
    let adapter = device.adapter_name();
    let bytes = device
        .try_read(out.get(), (cases.len() * OUT * 4) as u64)
        .ok_or_else(|| OpenError::Device { adapter: adapter.clone(), message: device.fault().unwrap_or_default() })?;
    let got: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    compare(&adapter, &cases, &got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_agrees_with_itself_and_a_wrong_answer_is_named() {
        let cases = cases();
        let mut got: Vec<u32> = cases.iter().flat_map(|&(a, b)| expected(a, b)).collect();
        assert!(compare("cpu", &cases, &got).is_ok());
        // Say a driver returned 5 for 7 % 1.
        let at = cases.iter().position(|&c| c == (7, 1)).expect("a case") * OUT + 1;
        got[at] = 5;
        let err = compare("test adapter", &cases, &got).expect_err("diverges").to_string();
        assert!(err.starts_with("adapter test adapter computes a % b (u32, b > 0) with a = 0x00000007, b = 0x00000001 as 0x00000005, the CPU as 0x00000000"), "{err}");
        assert!(err.contains("BLAZE_WGPU_ALLOW_DIVERGENT=1"), "{err}");
        assert!(compare("short", &cases, &got[..3]).is_err(), "missing results are a divergence");
    }
}
