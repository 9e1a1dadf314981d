// Attention for inference, one invocation per query row: the keys walked
// in order with an online softmax (a running maximum and sum, the output
// row held in private memory and rescaled when the maximum grows), so the
// `[.., T, S]` weights never exist. Rows are at most `acc`'s length wide.
// Parameters: `[rows, t, s, d, e, causal, scale as f32 bits]`, `rows` the
// batch entries times `t`.

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= pu(0u)) { return; }
    let t = pu(1u); let s = pu(2u); let d = pu(3u); let e = pu(4u); let scale = pf(6u);
    let b = row / t; let i = row % t;
    let seen = select(s, min(i + 1u, s), pu(5u) == 1u);
    var acc: array<f32, {{width}}>;
    for (var c = 0u; c < e; c = c + 1u) { acc[c] = 0.0; }
    var mx = bitcast<f32>(0xff800000u); var sum = 0.0;
    let qb = row * d; let kb = b * s * d; let vb = b * s * e;
    for (var j = 0u; j < seen; j = j + 1u) {
        var sc = 0.0;
        for (var c = 0u; c < d; c = c + 1u) { sc = sc + q[qb + c] * k[kb + j * d + c]; }
        sc = sc * scale;
        let nm = max(mx, sc);
        let fix = exp(mx - nm); let p = exp(sc - nm);
        sum = sum * fix + p;
        for (var c = 0u; c < e; c = c + 1u) { acc[c] = acc[c] * fix + p * v[vb + j * e + c]; }
        mx = nm;
    }
    for (var c = 0u; c < e; c = c + 1u) { out[row * e + c] = acc[c] / sum; }
}
