// A selection's combining step: the winner of two (value, index) pairs
// as bits, NaN first, then the value that beats the other by the table's
// operator, then the lower index.
fn comb(va: f32, ia: u32, vb: f32, ib: u32) -> vec2<u32> {
    let na = isnan_(va); let nb = isnan_(vb);
    var take = false;
    if (nb && !na) {
        take = true;
    } else if (nb && na) {
        take = ib < ia;
    } else if (!na) {
        take = vb {{beats}} va || (vb == va && ib < ia);
    }
    return select(vec2<u32>(bitcast<u32>(va), ia), vec2<u32>(bitcast<u32>(vb), ib), take);
}
