// A convolution's input gradient from its columns (`W^T g`, shaped `[n,
// groups, cg * kh * kw, oh * ow]`): each input element sums the column
// entries of the windows that cover it. Parameters: `[inputs, w, h, cg,
// kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, c]`.

@group(0) @binding(0) var<storage, read> cols: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let w = pu(1u); let h = pu(2u); let cg = pu(3u); let kh = pu(4u); let kw = pu(5u); let oh = pu(6u); let ow = pu(7u);
    let xx = i % w; let y = (i / w) % h; let ch = (i / (w * h)) % pu(14u); let b = i / (w * h * pu(14u));
    let gi = ch / cg; let ci = ch % cg; let groups = pu(14u) / cg;
    var acc = 0.0;
    for (var ky = 0u; ky < kh; ky = ky + 1u) {
        for (var kx = 0u; kx < kw; kx = kx + 1u) {
            let ty = i32(y) + i32(pu(12u)) - i32(ky * pu(10u)); let tx = i32(xx) + i32(pu(13u)) - i32(kx * pu(11u));
            if (ty >= 0 && tx >= 0 && u32(ty) % pu(8u) == 0u && u32(tx) % pu(9u) == 0u) {
                let oy = u32(ty) / pu(8u); let ox = u32(tx) / pu(9u);
                if (oy < oh && ox < ow) {
                    let q = (ci * kh + ky) * kw + kx;
                    acc = acc + cols[(((b * groups + gi) * cg * kh * kw) + q) * oh * ow + oy * ow + ox];
                }
            }
        }
    }
    out[i] = acc;
}
