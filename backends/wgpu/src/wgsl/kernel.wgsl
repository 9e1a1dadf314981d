// A `kernel!` elementwise function (or one of its partials) over whole
// tensors: one call per output, the tensors read at `i`, the numbers and
// the noise's seed from the parameters after the element count.

{{bindings}}

{{functions}}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= pu(0u)) { return; }
    out[i] = {{call}};
}
