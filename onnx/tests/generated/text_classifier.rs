// `TextClassifier`, converted by blaze-onnx from `text_classifier.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct TextClassifier {
    emb: Embedding<30, 12>,
    fc: Linear<12, 3>,
}

#[model(input = [T])]
impl TextClassifier {
    fn forward(&self, input: Tensor) -> Tensor {
        let embedding = self.emb(input); // [T, 12]
        let mean = embedding.mean_dim(-2).reshape([12]); // [12]
        self.fc(mean) // [3]
    }
}
