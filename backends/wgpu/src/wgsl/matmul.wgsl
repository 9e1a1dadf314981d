// Batched `[m, k] x [k, n]`: 64x64 output tiles per workgroup of 16x16
// invocations, each computing a 4x4 block in registers from 64x16 and
// 16x64 tiles staged in workgroup memory. The batch is `z`; batch dims
// (up to 6) broadcast through per-operand strides counted in matrices.
// Parameters: `[m, n, k, batch_rank, dims[6], a_strides[6], b_strides[6]]`.
// Holes: `round`, a function each value goes through as it is staged (a
// product under a 16-bit precision rounds there; `round16.wgsl`), and
// `tile`, the staged type: f16 where the adapter has it and the values
// are f16 (each exactly), else f32. The products and sums are f32.

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> ta: array<{{tile}}, 1024>;
var<workgroup> tb: array<{{tile}}, 1024>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let m = pu(0u); let n = pu(1u); let k = pu(2u); let br = pu(3u);
    var rem = wid.z; var oa = 0u; var ob = 0u;
    for (var d = br; d > 0u; d = d - 1u) {
        let size = pu(4u + d - 1u); let idx = rem % size; rem = rem / size;
        oa = oa + idx * pu(10u + d - 1u); ob = ob + idx * pu(16u + d - 1u);
    }
    oa = oa * m * k; ob = ob * k * n;
    let oc = wid.z * m * n;
    let row0 = wid.y * 64u; let col0 = wid.x * 64u;
    let t = lid.y * 16u + lid.x;
    var acc: array<f32, 16>;
    for (var q = 0u; q < 16u; q = q + 1u) { acc[q] = 0.0; }
    for (var kk = 0u; kk < k; kk = kk + 16u) {
        for (var l = 0u; l < 4u; l = l + 1u) {
            let e = t + l * 256u;
            let ar = row0 + e / 16u; let ac = kk + e % 16u;
            var va = 0.0;
            if (ar < m && ac < k) { va = a[oa + ar * k + ac]; }
            ta[e] = {{tile}}({{round}}(va));
            let br2 = kk + e / 64u; let bc = col0 + e % 64u;
            var vb = 0.0;
            if (br2 < k && bc < n) { vb = b[ob + br2 * n + bc]; }
            tb[e] = {{tile}}({{round}}(vb));
        }
        workgroupBarrier();
        for (var q = 0u; q < 16u; q = q + 1u) {
            let a0 = f32(ta[(lid.y * 4u) * 16u + q]); let a1 = f32(ta[(lid.y * 4u + 1u) * 16u + q]);
            let a2 = f32(ta[(lid.y * 4u + 2u) * 16u + q]); let a3 = f32(ta[(lid.y * 4u + 3u) * 16u + q]);
            let bv = vec4<f32>(f32(tb[q * 64u + lid.x * 4u]), f32(tb[q * 64u + lid.x * 4u + 1u]), f32(tb[q * 64u + lid.x * 4u + 2u]), f32(tb[q * 64u + lid.x * 4u + 3u]));
            for (var c = 0u; c < 4u; c = c + 1u) {
                acc[c] = acc[c] + a0 * bv[c]; acc[4u + c] = acc[4u + c] + a1 * bv[c];
                acc[8u + c] = acc[8u + c] + a2 * bv[c]; acc[12u + c] = acc[12u + c] + a3 * bv[c];
            }
        }
        workgroupBarrier();
    }
    for (var r = 0u; r < 4u; r = r + 1u) {
        let row = row0 + lid.y * 4u + r;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let col = col0 + lid.x * 4u + c;
            if (row < m && col < n) { out[oc + row * n + col] = acc[r * 4u + c]; }
        }
    }
}
