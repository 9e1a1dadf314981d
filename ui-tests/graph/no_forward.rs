use blaze::prelude::*;

#[model]
pub struct Net {
    fc: Linear<8, 8>,
}

fn main() {
    let _net: Net = Net::new(&CpuDevice);
}
