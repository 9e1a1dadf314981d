// `x` plus, at each element, the sources `src` whose index in `ix` (shaped
// as `src`) points at it along `DIM`. One invocation per output, which
// walks its line of the index. Parameters: `[numel, shape[RANK] of x,
// shape[RANK] of ix, strides[RANK] of ix]`.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> ix: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

const RANK: u32 = {{rank}}u;
const DIM: u32 = {{dim}}u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    // The output's coordinates: along DIM, the index to match; across it,
    // where its line of the index starts (if the index reaches it).
    var rem = i;
    var along = 0u;
    var inside = true;
    var base = 0u;
    for (var d = RANK; d > 0u; d = d - 1u) {
        let n = pu(d);
        let c = rem % n;
        rem = rem / n;
        if (d - 1u == DIM) {
            along = c;
        } else {
            inside = inside && c < pu(RANK + d);
            base = base + c * pu(2u * RANK + d);
        }
    }
    var acc = x[i];
    if (inside) {
        for (var t = 0u; t < pu(1u + RANK + DIM); t = t + 1u) {
            let at = base + t * pu(1u + 2u * RANK + DIM);
            if (ix[at] == along) { acc = acc + src[at]; }
        }
    }
    out[i] = acc;
}
