// `out[i] = x[..]` with the coordinate along `DIM` taken from the index
// tensor `ix` (shaped as `out`). Parameters: `[numel, shape[RANK] of out,
// strides[RANK] of x]`.

@group(0) @binding(0) var<storage, read> x: array<{{ty}}>;
@group(0) @binding(1) var<storage, read> ix: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<{{ty}}>;
@group(0) @binding(3) var<uniform> params: Params;

const RANK: u32 = {{rank}}u;
const DIM: u32 = {{dim}}u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    var rem = i;
    var at = 0u;
    for (var d = RANK; d > 0u; d = d - 1u) {
        let n = pu(d);
        var c = rem % n;
        rem = rem / n;
        if (d - 1u == DIM) { c = ix[i]; }
        at = at + c * pu(RANK + d);
    }
    out[i] = x[at];
}
