// `out` shaped `[outer, out_n, inner]` from `x` shaped `[outer, in_n,
// inner]`, read at dim index `k - before`; the pad value outside.
// Parameters: `[numel, in_n, out_n, inner, before, value]`.

@group(0) @binding(0) var<storage, read> x: array<{{ty}}>;
@group(0) @binding(1) var<storage, read_write> out: array<{{ty}}>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let inner = pu(3u); let out_n = pu(2u); let in_n = pu(1u);
    let r = i % inner; let k = (i / inner) % out_n; let o = i / (inner * out_n);
    let src = i32(k) - i32(pu(4u));
    if (src < 0 || src >= i32(in_n)) {
        out[i] = {{value}};
        return;
    }
    out[i] = x[(o * in_n + u32(src)) * inner + r];
}
