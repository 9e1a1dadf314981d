// `x` shaped `[outer, n, inner]` plus each of the `k` slices of `src`
// at the middle-dim index `ix` gives it. Parameters: `[numel, k, inner, n]`.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> ix: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let inner = pu(2u); let n = pu(3u); let k = pu(1u);
    let r = i % inner; let j = (i / inner) % n; let o = i / (inner * n);
    var acc = x[i];
    for (var t = 0u; t < k; t = t + 1u) {
        if (ix[t] == j) { acc = acc + src[(o * k + t) * inner + r]; }
    }
    out[i] = acc;
}
