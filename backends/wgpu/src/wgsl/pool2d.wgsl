// Pooling, one invocation per output: a walk over its window inside the
// plane (padding skipped), folding each value into the state.
// Parameters: `[outputs, ow, oh, h, w, kh, kw, sh, sw, ph, pw]`.

{{bindings}}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let ow = pu(1u); let oh = pu(2u); let h = pu(3u); let w = pu(4u);
    let ox = i % ow; let oy = (i / ow) % oh; let plane = i / (ow * oh);
{{start}}
    for (var ky = 0u; ky < pu(5u); ky = ky + 1u) {
        for (var kx = 0u; kx < pu(6u); kx = kx + 1u) {
            let y = i32(oy * pu(7u) + ky) - i32(pu(9u)); let xx = i32(ox * pu(8u) + kx) - i32(pu(10u));
            if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) {
                let q = u32(y) * w + u32(xx); let v = x[plane * h * w + q];
{{fold}}
            }
        }
    }
{{finish}}
}
