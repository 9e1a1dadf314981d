// A sum's combining step: the two values added, no index.
fn comb(va: f32, ia: u32, vb: f32, ib: u32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(va + vb), 0u);
}
