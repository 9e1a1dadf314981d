// One part of a concatenation: `x`, shaped `[outer, n, inner]`, written
// into `out` shaped `[outer, total, inner]` from index `at` of the dim.
// Parameters: `[numel of x, n, inner, total, at]`.

@group(0) @binding(0) var<storage, read> x: array<{{ty}}>;
@group(0) @binding(1) var<storage, read_write> out: array<{{ty}}>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let inner = pu(2u); let n = pu(1u);
    let r = i % inner; let k = (i / inner) % n; let o = i / (inner * n);
    out[(o * pu(3u) + pu(4u) + k) * inner + r] = x[i];
}
