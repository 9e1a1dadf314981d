// A reduction over short rows of `[outer, n, inner]`: one invocation per
// output, looping over its row from the identity with `comb`; the value
// or, for an arg-reduction, the index. Parameters: `[outputs, n, inner]`.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_ty}}>;
@group(0) @binding(2) var<uniform> params: Params;

{{combine}}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    let n = pu(1u); let inner = pu(2u);
    let base = (i / inner) * n * inner + i % inner;
    var v = {{identity}}; var ix = 0xffffffffu;
    for (var k = 0u; k < n; k = k + 1u) {
        let c = comb(v, ix, x[base + k * inner], k);
        v = bitcast<f32>(c.x); ix = c.y;
    }
    out[i] = {{result}};
}
