// The input gradient of average pooling, one invocation per input
// element: the share of every window that covers it.
// Parameters: `[inputs, ow, oh, h, w, kh, kw, sh, sw, ph, pw]`.

@group(0) @binding(0) var<storage, read> g: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);
    let xx = i % w; let y = (i / w) % h; let plane = i / (w * h);
    var acc = 0.0;
    for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {
        for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {
            let ty = i32(y) + i32(pu(9u)) - i32(ky); let tx = i32(xx) + i32(pu(10u)) - i32(kx);
            if (ty >= 0 && tx >= 0 && u32(ty) % pu(7u) == 0u && u32(tx) % pu(8u) == 0u) {
                let oy = u32(ty) / pu(7u); let ox = u32(tx) / pu(8u);
                if (oy < oh && ox < ow) { acc = acc + g[(plane * oh + oy) * ow + ox]; }
            }
        }
    }
    out[i] = acc / f32(pu(5u) * pu(6u));
}
