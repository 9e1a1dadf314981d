// `x` shaped `[outer, n, inner]` at the `k` indices `ix` of its middle
// dim. Parameters: `[numel, k, inner, n]`.

@group(0) @binding(0) var<storage, read> x: array<{{ty}}>;
@group(0) @binding(1) var<storage, read> ix: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<{{ty}}>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let inner = pu(2u); let k = pu(1u);
    let r = i % inner; let j = (i / inner) % k; let o = i / (inner * k);
    out[i] = x[(o * pu(3u) + ix[j]) * inner + r];
}
