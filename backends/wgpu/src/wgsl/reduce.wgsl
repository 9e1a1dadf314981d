// A reduction over the middle dim of `[outer, n, inner]`: one workgroup
// per output, a strided pass from the identity, then a tree in
// workgroup memory; the value or, for an arg-reduction, the index.
// Parameters: `[outputs, n, inner]`.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_ty}}>;
@group(0) @binding(2) var<uniform> params: Params;

{{combine}}

var<workgroup> sv: array<f32, 64>;
var<workgroup> si: array<u32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = wid.x + wid.y * nwg.x;
    if (j >= pu(0u)) { return; }
    let n = pu(1u); let inner = pu(2u);
    let base = (j / inner) * n * inner + j % inner;
    var v = {{identity}}; var ix = 0xffffffffu;
    for (var k = lid.x; k < n; k = k + 64u) {
        let c = comb(v, ix, x[base + k * inner], k);
        v = bitcast<f32>(c.x); ix = c.y;
    }
    sv[lid.x] = v; si[lid.x] = ix;
    workgroupBarrier();
    for (var st = 32u; st > 0u; st = st >> 1u) {
        if (lid.x < st) {
            let c = comb(sv[lid.x], si[lid.x], sv[lid.x + st], si[lid.x + st]);
            sv[lid.x] = bitcast<f32>(c.x); si[lid.x] = c.y;
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) { out[j] = {{result}}; }
}
