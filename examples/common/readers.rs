//! The recurrent classifiers `examples/verses.rs` trains, shared with the
//! ONNX export tests: ids `[T]` in, logits over eight books out.

use blaze::prelude::*;

/// Characters the models tell apart (the text has 63).
pub const VOCAB: usize = 64;

/// Ids `[T]` in, logits over the books out: the LSTM's last state.
#[model]
pub struct LstmReader {
    chars: Embedding<64, 32>,
    #[layer(num_layers = 2)]
    lstm: Lstm<32, 64>,
    head: Linear<64, 8>,
}

#[model(input = [T])]
impl LstmReader {
    fn forward(&self, ids: Tensor) -> Tensor {
        let states = self.lstm(self.chars(ids));
        self.head(states.narrow(0, -1, 1).reshape([64]))
    }
}

/// The same with a GRU.
#[model]
pub struct GruReader {
    chars: Embedding<64, 32>,
    #[layer(num_layers = 2)]
    gru: Gru<32, 64>,
    head: Linear<64, 8>,
}

#[model(input = [T])]
impl GruReader {
    fn forward(&self, ids: Tensor) -> Tensor {
        let states = self.gru(self.chars(ids));
        self.head(states.narrow(0, -1, 1).reshape([64]))
    }
}
