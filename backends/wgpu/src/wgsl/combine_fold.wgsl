// A fold's combining step: the two values by the table's operator, no
// index.
fn comb(va: f32, ia: u32, vb: f32, ib: u32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(va {{op}} vb), 0u);
}
