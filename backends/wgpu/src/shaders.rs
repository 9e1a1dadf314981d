//! WGSL for the tensor primitives, generated per op, rank and layout.
//!
//! These are written by hand rather than with `kernel!`: they index
//! buffers of several element types (f32 values, u32 booleans and
//! indices) through shapes and strides passed at run time, which the
//! `kernel!` DSL (f32 buffers, fixed arity) does not express.
//!
//! Every shader binds its buffers in order, then a uniform block of 64
//! `u32` parameters, read with `pu(k)` (`pf(k)` for an f32's bits).

/// Invocations per workgroup of one-element-per-invocation kernels.
pub const WG: u32 = 256;

/// The parameter block and helpers every shader starts with.
fn prelude(storage: &[(&str, &str, bool)]) -> String {
    let mut s = String::new();
    for (i, (name, ty, write)) in storage.iter().enumerate() {
        let access = if *write { "read_write" } else { "read" };
        s += &format!("@group(0) @binding({i}) var<storage, {access}> {name}: array<{ty}>;\n");
    }
    s += &format!(
        "struct Params {{ v: array<vec4<u32>, 16> }}\n\
         @group(0) @binding({}) var<uniform> params: Params;\n\
         fn pu(k: u32) -> u32 {{ return params.v[k >> 2u][k & 3u]; }}\n\
         fn pf(k: u32) -> f32 {{ return bitcast<f32>(pu(k)); }}\n",
        storage.len()
    );
    s += MATH;
    s
}

/// Scalar functions the primitives call: a NaN test by the bits (WGSL
/// lets a compiler assume there is no NaN) and a bool as a `u32`.
const MATH: &str = "
fn isnan_(x: f32) -> bool {
    let b = bitcast<u32>(x);
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u;
}
fn b2f(x: bool) -> u32 { return select(0u, 1u, x); }
";

/// The flat index of this invocation in a 2-D grid of `WG`-wide groups.
const FLAT: &str = "let i = gid.x + gid.y * nwg.x * 256u;";

/// One input of an elementwise kernel: its WGSL element type and whether
/// it is read at the output's index (`direct`) or through strides.
#[derive(Clone, Copy, Debug)]
pub struct EwInput {
    pub ty: &'static str,
    pub direct: bool,
}

/// Parameters: `[numel, extras.., shape[rank], then per strided input
/// offset, strides[rank]]`. The inputs are `a`, `b`, `c` in `expr`, the
/// extras `pu(1)`, `pu(2)`, .. (`pf(1)` as floats); `expr` may call the
/// functions `funcs` defines.
pub fn elementwise(inputs: &[EwInput], out_ty: &str, rank: usize, extras: usize, funcs: &str, expr: &str) -> String {
    let names = ["in0", "in1", "in2"];
    let mut bufs: Vec<(&str, &str, bool)> = inputs.iter().enumerate().map(|(k, x)| (names[k], x.ty, false)).collect();
    bufs.push(("out", out_ty, true));
    let mut s = prelude(&bufs);
    s += funcs;
    s += "\n";
    s += "@compute @workgroup_size(256)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n";
    s += &format!("    {FLAT}\n    if (i >= pu(0u)) {{ return; }}\n");
    let shape = 1 + extras;
    let strided: Vec<usize> = (0..inputs.len()).filter(|&k| !inputs[k].direct).collect();
    for (slot, &k) in strided.iter().enumerate() {
        let base = shape + rank + slot * (rank + 1);
        s += &format!("    var o{k} = pu({base}u);\n");
    }
    if !strided.is_empty() {
        s += "    var rem = i;\n";
        for d in (0..rank).rev() {
            s += &format!("    {{ let n = pu({}u); let idx = rem % n; rem = rem / n;\n", shape + d);
            for (slot, &k) in strided.iter().enumerate() {
                let base = shape + rank + slot * (rank + 1);
                s += &format!("      o{k} = o{k} + idx * pu({}u);\n", base + 1 + d);
            }
            s += "    }\n";
        }
    }
    let vars = ["a", "b", "c"];
    for (k, x) in inputs.iter().enumerate() {
        let at = if x.direct { "i".to_owned() } else { format!("o{k}") };
        s += &format!("    let {} = {}[{at}];\n", vars[k], names[k]);
    }
    s += &format!("    out[i] = {expr};\n}}\n");
    s
}

/// `out[o] = x[..]` with `out` shaped `[outer, out_n, inner]` and the
/// input read at dim index `k - before` of `[outer, in_n, inner]`, the
/// pad value outside. Parameters: `[numel, in_n, out_n, inner, before, value]`.
pub fn pad_dim(ty: &str) -> String {
    let mut s = prelude(&[("x", ty, false), ("out", ty, true)]);
    s += &format!(
        "@compute @workgroup_size(256)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n    {FLAT}\n\
         if (i >= pu(0u)) {{ return; }}\n\
         let inner = pu(3u); let out_n = pu(2u); let in_n = pu(1u);\n\
         let r = i % inner; let k = (i / inner) % out_n; let o = i / (inner * out_n);\n\
         let src = i32(k) - i32(pu(4u));\n\
         if (src < 0 || src >= i32(in_n)) {{ out[i] = {}; return; }}\n\
         out[i] = x[(o * in_n + u32(src)) * inner + r];\n}}\n",
        if ty == "f32" { "pf(5u)" } else { "pu(5u)" }
    );
    s
}

/// The combining function of reduction `op`: `comb(va, ia, vb, ib)` gives
/// the winner of two (value, index) pairs as bits: NaN first, then the
/// better value, then the lower index.
fn combiner(op: &str) -> String {
    if op == "sum" {
        return "fn comb(va: f32, ia: u32, vb: f32, ib: u32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(va + vb), 0u); }\n"
            .to_owned();
    }
    let better = if op.ends_with("max") { ">" } else { "<" };
    format!(
        "fn comb(va: f32, ia: u32, vb: f32, ib: u32) -> vec2<u32> {{\n\
         let na = isnan_(va); let nb = isnan_(vb);\n\
         var take = false;\n\
         if (nb && !na) {{ take = true; }}\n\
         else if (nb && na) {{ take = ib < ia; }}\n\
         else if (!na) {{ take = vb {better} va || (vb == va && ib < ia); }}\n\
         return select(vec2<u32>(bitcast<u32>(va), ia), vec2<u32>(bitcast<u32>(vb), ib), take);\n}}\n"
    )
}

/// The starting value of reduction `op`.
fn identity(op: &str) -> &'static str {
    match op {
        "sum" => "0.0",
        "max" | "argmax" => "bitcast<f32>(0xff800000u)",
        _ => "bitcast<f32>(0x7f800000u)",
    }
}

/// Reduction over short rows of `[outer, n, inner]`: one invocation per
/// output, looping over the row. Parameters as [`reduce`].
pub fn reduce_short(op: &str) -> String {
    let arg = op.starts_with("arg");
    let mut s = prelude(&[("x", "f32", false), ("out", if arg { "u32" } else { "f32" }, true)]);
    s += &combiner(op);
    s += &format!(
        "@compute @workgroup_size(256)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n    {FLAT}\n\
         if (i >= pu(0u)) {{ return; }}\n\
         let n = pu(1u); let inner = pu(2u);\n\
         let base = (i / inner) * n * inner + i % inner;\n\
         var v = {}; var ix = 0xffffffffu;\n\
         for (var k = 0u; k < n; k = k + 1u) {{\n\
             let c = comb(v, ix, x[base + k * inner], k); v = bitcast<f32>(c.x); ix = c.y;\n\
         }}\n\
         out[i] = {};\n}}\n",
        identity(op),
        if arg { "ix" } else { "v" }
    );
    s
}

/// Reduction over the middle dim of `[outer, n, inner]`: one workgroup per
/// output, a strided pass, then a tree in workgroup memory. `op` is
/// `sum`, `max`, `min`, `argmax` or `argmin`. Parameters: `[outputs, n, inner]`.
pub fn reduce(op: &str) -> String {
    let arg = op.starts_with("arg");
    let out_ty = if arg { "u32" } else { "f32" };
    let mut s = prelude(&[("x", "f32", false), ("out", out_ty, true)]);
    let init = identity(op);
    s += &combiner(op);
    s += &format!(
        "var<workgroup> sv: array<f32, 64>;\nvar<workgroup> si: array<u32, 64>;\n\
         @compute @workgroup_size(64)\n\
         fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         let j = wid.x + wid.y * nwg.x;\n\
         if (j >= pu(0u)) {{ return; }}\n\
         let n = pu(1u); let inner = pu(2u);\n\
         let base = (j / inner) * n * inner + j % inner;\n\
         var v = {init}; var ix = 0xffffffffu;\n\
         for (var k = lid.x; k < n; k = k + 64u) {{\n\
             let c = comb(v, ix, x[base + k * inner], k); v = bitcast<f32>(c.x); ix = c.y;\n\
         }}\n\
         sv[lid.x] = v; si[lid.x] = ix;\n\
         workgroupBarrier();\n\
         for (var st = 32u; st > 0u; st = st >> 1u) {{\n\
             if (lid.x < st) {{\n\
                 let c = comb(sv[lid.x], si[lid.x], sv[lid.x + st], si[lid.x + st]);\n\
                 sv[lid.x] = bitcast<f32>(c.x); si[lid.x] = c.y;\n\
             }}\n\
             workgroupBarrier();\n\
         }}\n\
         if (lid.x == 0u) {{ out[j] = {}; }}\n}}\n",
        if arg { "si[0]" } else { "sv[0]" }
    );
    s
}

/// The widest query, key and value rows [`attention`] takes; wider ones
/// compose.
pub const ATTENTION_MAX_WIDTH: usize = 128;

/// Attention for inference, one invocation per query row: the keys walked
/// in order with an online softmax (a running maximum and sum, the output
/// row held in private memory and rescaled when the maximum grows), so the
/// `[.., T, S]` weights never exist. Parameters: `[rows, t, s, d, e,
/// causal, scale as f32 bits]`, `rows` the batch entries times `t`.
pub fn attention() -> String {
    let mut s = prelude(&[("q", "f32", false), ("k", "f32", false), ("v", "f32", false), ("out", "f32", true)]);
    s += &format!(
        "@compute @workgroup_size(64)\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         let row = gid.x + gid.y * nwg.x * 64u;\n\
         if (row >= pu(0u)) {{ return; }}\n\
         let t = pu(1u); let s = pu(2u); let d = pu(3u); let e = pu(4u); let scale = pf(6u);\n\
         let b = row / t; let i = row % t;\n\
         let seen = select(s, min(i + 1u, s), pu(5u) == 1u);\n\
         var acc: array<f32, {w}>;\n\
         for (var c = 0u; c < e; c = c + 1u) {{ acc[c] = 0.0; }}\n\
         var mx = bitcast<f32>(0xff800000u); var sum = 0.0;\n\
         let qb = row * d; let kb = b * s * d; let vb = b * s * e;\n\
         for (var j = 0u; j < seen; j = j + 1u) {{\n\
             var sc = 0.0;\n\
             for (var c = 0u; c < d; c = c + 1u) {{ sc = sc + q[qb + c] * k[kb + j * d + c]; }}\n\
             sc = sc * scale;\n\
             let nm = max(mx, sc);\n\
             let fix = exp(mx - nm); let p = exp(sc - nm);\n\
             sum = sum * fix + p;\n\
             for (var c = 0u; c < e; c = c + 1u) {{ acc[c] = acc[c] * fix + p * v[vb + j * e + c]; }}\n\
             mx = nm;\n\
         }}\n\
         for (var c = 0u; c < e; c = c + 1u) {{ out[row * e + c] = acc[c] / sum; }}\n\
         }}\n",
        w = ATTENTION_MAX_WIDTH
    );
    s
}

/// One Adam or AdamW update (see `AdamStep`): the parameter and both
/// moments read and written anew in one pass. Parameters: `[n, β1, β2, eps,
/// weight_decay, keep, lr / (1 - β1^t), 1 / (1 - β2^t), coupled]`, the
/// floats as their bits.
pub fn adam() -> String {
    let mut s = prelude(&[
        ("p", "f32", false),
        ("m", "f32", false),
        ("v", "f32", false),
        ("g", "f32", false),
        ("p_out", "f32", true),
        ("m_out", "f32", true),
        ("v_out", "f32", true),
    ]);
    s += "@compute @workgroup_size(64)\n\
        fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n\
        let i = gid.x + gid.y * nwg.x * 64u;\n\
        if (i >= pu(0u)) { return; }\n\
        let b1 = pf(1u); let b2 = pf(2u);\n\
        let gi = select(g[i], g[i] + pf(4u) * p[i], pu(8u) == 1u);\n\
        let mi = b1 * m[i] + (1.0 - b1) * gi;\n\
        let vi = b2 * v[i] + (1.0 - b2) * (gi * gi);\n\
        m_out[i] = mi; v_out[i] = vi;\n\
        p_out[i] = pf(5u) * p[i] - pf(6u) * (mi / (sqrt(vi * pf(7u)) + pf(3u)));\n\
        }\n";
    s
}

/// Batched `[m, k] x [k, n]`: 64x64 output tiles per workgroup of 16x16
/// invocations, each computing a 4x4 block in registers from 64x16 and
/// 16x64 tiles staged in workgroup memory. The batch is `z`; batch dims
/// (up to 6) broadcast through per-operand strides counted in matrices.
/// Parameters: `[m, n, k, batch_rank, dims[6], a_strides[6], b_strides[6]]`.
pub fn matmul() -> String {
    let mut s = prelude(&[("a", "f32", false), ("b", "f32", false), ("out", "f32", true)]);
    s += "var<workgroup> ta: array<f32, 1024>;\nvar<workgroup> tb: array<f32, 1024>;\n\
        @compute @workgroup_size(16, 16)\n\
        fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {\n\
        let m = pu(0u); let n = pu(1u); let k = pu(2u); let br = pu(3u);\n\
        var rem = wid.z; var oa = 0u; var ob = 0u;\n\
        for (var d = br; d > 0u; d = d - 1u) {\n\
            let size = pu(4u + d - 1u); let idx = rem % size; rem = rem / size;\n\
            oa = oa + idx * pu(10u + d - 1u); ob = ob + idx * pu(16u + d - 1u);\n\
        }\n\
        oa = oa * m * k; ob = ob * k * n;\n\
        let oc = wid.z * m * n;\n\
        let row0 = wid.y * 64u; let col0 = wid.x * 64u;\n\
        let t = lid.y * 16u + lid.x;\n\
        var acc: array<f32, 16>;\n\
        for (var q = 0u; q < 16u; q = q + 1u) { acc[q] = 0.0; }\n\
        for (var kk = 0u; kk < k; kk = kk + 16u) {\n\
            for (var l = 0u; l < 4u; l = l + 1u) {\n\
                let e = t + l * 256u;\n\
                let ar = row0 + e / 16u; let ac = kk + e % 16u;\n\
                var va = 0.0;\n\
                if (ar < m && ac < k) { va = a[oa + ar * k + ac]; }\n\
                ta[e] = va;\n\
                let br2 = kk + e / 64u; let bc = col0 + e % 64u;\n\
                var vb = 0.0;\n\
                if (br2 < k && bc < n) { vb = b[ob + br2 * n + bc]; }\n\
                tb[e] = vb;\n\
            }\n\
            workgroupBarrier();\n\
            for (var q = 0u; q < 16u; q = q + 1u) {\n\
                let a0 = ta[(lid.y * 4u) * 16u + q]; let a1 = ta[(lid.y * 4u + 1u) * 16u + q];\n\
                let a2 = ta[(lid.y * 4u + 2u) * 16u + q]; let a3 = ta[(lid.y * 4u + 3u) * 16u + q];\n\
                let bv = vec4<f32>(tb[q * 64u + lid.x * 4u], tb[q * 64u + lid.x * 4u + 1u], tb[q * 64u + lid.x * 4u + 2u], tb[q * 64u + lid.x * 4u + 3u]);\n\
                for (var c = 0u; c < 4u; c = c + 1u) {\n\
                    acc[c] = acc[c] + a0 * bv[c]; acc[4u + c] = acc[4u + c] + a1 * bv[c];\n\
                    acc[8u + c] = acc[8u + c] + a2 * bv[c]; acc[12u + c] = acc[12u + c] + a3 * bv[c];\n\
                }\n\
            }\n\
            workgroupBarrier();\n\
        }\n\
        for (var r = 0u; r < 4u; r = r + 1u) {\n\
            let row = row0 + lid.y * 4u + r;\n\
            for (var c = 0u; c < 4u; c = c + 1u) {\n\
                let col = col0 + lid.x * 4u + c;\n\
                if (row < m && col < n) { out[oc + row * n + col] = acc[r * 4u + c]; }\n\
            }\n\
        }\n}\n";
    s
}

/// The kernel body of a one-invocation-per-output shader over `bufs`,
/// with `body` run for flat index `i < pu(0)`.
pub fn per_output(bufs: &[(&str, &str, bool)], body: &str) -> String {
    let mut s = prelude(bufs);
    s += &format!(
        "@compute @workgroup_size(256)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n    {FLAT}\n    if (i >= pu(0u)) {{ return; }}\n{body}\n}}\n"
    );
    s
}

/// Flattened index `i` of a shape given by params `pu(at..at + rank)` into
/// `c0, c1, ..` coordinates (WGSL statements).
pub fn coords(rank: usize, at: usize) -> String {
    let mut s = "    var rem = i;\n".to_owned();
    for d in (0..rank).rev() {
        s += &format!("    let c{d} = rem % pu({}u); rem = rem / pu({}u);\n", at + d, at + d);
    }
    s
}
