use blaze::prelude::*;

#[model(input = [10, 6])]
pub struct WrongWidth {
    lstm: Lstm<8, 16>,
}

#[model(input = [10, 8])]
pub struct TooDeep {
    #[layer(num_layers = 9)]
    gru: Gru<8, 16>,
}

#[model(input = [10, 8])]
pub struct BothWaysIntoOneWay {
    #[layer(bidirectional = true)]
    lstm: Lstm<8, 16>,
    gru: Gru<16, 4>,
}

fn main() {}
