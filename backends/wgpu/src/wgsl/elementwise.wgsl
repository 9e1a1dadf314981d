// One elementwise expression per output over the inputs `a`, `b`, `c`,
// each read at the output's index or through its own offset and strides.
// Parameters: `[numel, extras.., shape[RANK], then per strided input its
// offset and strides[RANK]]`; the extras are `pu(1u)`, `pu(2u)`, ..
// (`pf(1u)` as floats).

{{bindings}}

{{functions}}

const RANK: u32 = {{rank}}u;
const EXTRAS: u32 = {{extras}}u;

// Where the `slot`-th strided input holds the output's flat index `i`.
fn strided(i: u32, slot: u32) -> u32 {
    let shape = 1u + EXTRAS;
    let base = shape + RANK + slot * (RANK + 1u);
    var at = pu(base);
    var rem = i;
    for (var d = RANK; d > 0u; d = d - 1u) {
        let n = pu(shape + d - 1u);
        at = at + (rem % n) * pu(base + d);
        rem = rem / n;
    }
    return at;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
{{loads}}
    out[i] = {{expr}};
}
