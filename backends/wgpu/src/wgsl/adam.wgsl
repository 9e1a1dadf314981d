// One Adam or AdamW update (see `AdamStep`): the parameter and both
// moments read and written anew in one pass. Parameters: `[n, β1, β2,
// eps, weight_decay, keep, lr / (1 - β1^t), 1 / (1 - β2^t), coupled]`,
// the floats as their bits.

@group(0) @binding(0) var<storage, read> p: array<f32>;
@group(0) @binding(1) var<storage, read> m: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read_write> p_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> m_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_out: array<f32>;
@group(0) @binding(7) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= pu(0u)) { return; }
    let b1 = pf(1u); let b2 = pf(2u);
    let gi = select(g[i], g[i] + pf(4u) * p[i], pu(8u) == 1u);
    let mi = b1 * m[i] + (1.0 - b1) * gi;
    let vi = b2 * v[i] + (1.0 - b2) * (gi * gi);
    m_out[i] = mi; v_out[i] = vi;
    p_out[i] = pf(5u) * p[i] - pf(6u) * (mi / (sqrt(vi * pf(7u)) + pf(3u)));
}
