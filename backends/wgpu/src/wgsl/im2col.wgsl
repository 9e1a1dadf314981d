// A convolution's input as columns `[n, groups, cg * kh * kw, oh * ow]`,
// zeros where a window reaches the padding. Parameters: `[outputs, oh *
// ow, cg * kh * kw, groups, ow, kh, kw, cg, h, w, sh, sw, dh, dw, ph, pw]`.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let l = i % pu(1u); let q = (i / pu(1u)) % pu(2u); let gi = (i / (pu(1u) * pu(2u))) % pu(3u); let b = i / (pu(1u) * pu(2u) * pu(3u));
    let ow = pu(4u); let kh = pu(5u); let kw = pu(6u); let cg = pu(7u); let h = pu(8u); let w = pu(9u);
    let oy = l / ow; let ox = l % ow;
    let ci = q / (kh * kw); let ky = (q / kw) % kh; let kx = q % kw;
    let y = i32(oy * pu(10u) + ky * pu(12u)) - i32(pu(14u));
    let xx = i32(ox * pu(11u) + kx * pu(13u)) - i32(pu(15u));
    var v = 0.0;
    if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) { v = x[((b * pu(3u) * cg + gi * cg + ci) * h + u32(y)) * w + u32(xx)]; }
    out[i] = v;
}
