// `BertDynamoFixed`, converted by blaze-onnx from `bert_dynamo_fixed.onnx` (ONNX opset 18).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct BertDynamoFixed {
    bert_embeddings_word_embeddings: Embedding<50, 16>,
    bert_embeddings_token_type_embeddings: Embedding<2, 16>,
    bert_embeddings_position_embeddings: Embedding<16, 16>,
    #[layer(eps = 1e-12)]
    bert_embeddings_layernorm: LayerNorm<16>,
    bert_encoder_layer_0_attention_self_query: Linear<16, 16>,
    bert_encoder_layer_0_attention_self_key: Linear<16, 16>,
    bert_encoder_layer_0_attention_self_value: Linear<16, 16>,
    bert_encoder_layer_0_attention_output_dense: Linear<16, 16>,
    #[layer(eps = 1e-12)]
    bert_encoder_layer_0_attention_output_layernorm: LayerNorm<16>,
    bert_encoder_layer_0_intermediate_dense: Linear<16, 32>,
    bert_encoder_layer_0_output_dense: Linear<32, 16>,
    #[layer(eps = 1e-12)]
    bert_encoder_layer_0_output_layernorm: LayerNorm<16>,
    bert_encoder_layer_1_attention_self_query: Linear<16, 16>,
    bert_encoder_layer_1_attention_self_key: Linear<16, 16>,
    bert_encoder_layer_1_attention_self_value: Linear<16, 16>,
    bert_encoder_layer_1_attention_output_dense: Linear<16, 16>,
    #[layer(eps = 1e-12)]
    bert_encoder_layer_1_attention_output_layernorm: LayerNorm<16>,
    bert_encoder_layer_1_intermediate_dense: Linear<16, 32>,
    bert_encoder_layer_1_output_dense: Linear<32, 16>,
    #[layer(eps = 1e-12)]
    bert_encoder_layer_1_output_layernorm: LayerNorm<16>,
    fc: Linear<16, 3>,
}

#[model(input = [T])]
impl BertDynamoFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let embedding = self.bert_embeddings_word_embeddings(input); // [T, 16]
        let embedding_1 = self.bert_embeddings_token_type_embeddings(positions(1)); // [1, 16]
        let add = embedding + embedding_1; // [T, 16]
        let embedding_2 = self.bert_embeddings_position_embeddings(positions(T)); // [T, 16]
        let add_1 = add + embedding_2; // [T, 16]
        let layer_norm = self.bert_embeddings_layernorm(add_1); // [T, 16]
        let linear = self.bert_encoder_layer_0_attention_self_query(layer_norm); // [T, 16]
        let view = linear.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose = view.transpose(-3, -2); // [4, T, 4]
        let linear_1 = self.bert_encoder_layer_0_attention_self_key(layer_norm); // [T, 16]
        let view_1 = linear_1.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_1 = view_1.transpose(-3, -2); // [4, T, 4]
        let linear_2 = self.bert_encoder_layer_0_attention_self_value(layer_norm); // [T, 16]
        let view_2 = linear_2.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_2 = view_2.transpose(-3, -2); // [4, T, 4]
        let val_78 = transpose * 0.70710677; // [4, T, 4]
        let val_80 = transpose_1 * 0.70710677; // [4, T, 4]
        let val_80_data = val_80.transpose(-2, -1); // [4, 4, T]
        let val_84 = val_78.matmul(val_80_data); // [4, T, T]
        let val_86 = val_84.softmax(-1); // [4, T, T]
        let scaled_dot_product_attention = val_86.matmul(transpose_2); // [4, T, 4]
        let transpose_3 = scaled_dot_product_attention.transpose(-3, -2); // [T, 4, 4]
        let view_4 = transpose_3.reshape([T, 16]); // [T, 16]
        let linear_3 = self.bert_encoder_layer_0_attention_output_dense(view_4); // [T, 16]
        let add_4 = linear_3 + layer_norm; // [T, 16]
        let layer_norm_1 = self.bert_encoder_layer_0_attention_output_layernorm(add_4); // [T, 16]
        let linear_4 = self.bert_encoder_layer_0_intermediate_dense(layer_norm_1); // [T, 32]
        let gelu_out = gelu(linear_4); // [T, 32]
        let linear_5 = self.bert_encoder_layer_0_output_dense(gelu_out); // [T, 16]
        let add_5 = linear_5 + layer_norm_1; // [T, 16]
        let layer_norm_2 = self.bert_encoder_layer_0_output_layernorm(add_5); // [T, 16]
        let linear_6 = self.bert_encoder_layer_1_attention_self_query(layer_norm_2); // [T, 16]
        let view_5 = linear_6.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_4 = view_5.transpose(-3, -2); // [4, T, 4]
        let linear_7 = self.bert_encoder_layer_1_attention_self_key(layer_norm_2); // [T, 16]
        let view_6 = linear_7.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_5 = view_6.transpose(-3, -2); // [4, T, 4]
        let linear_8 = self.bert_encoder_layer_1_attention_self_value(layer_norm_2); // [T, 16]
        let view_7 = linear_8.reshape([T, 4, 4]); // [T, 4, 4]
        let transpose_6 = view_7.transpose(-3, -2); // [4, T, 4]
        let val_155 = transpose_4 * 0.70710677; // [4, T, 4]
        let val_157 = transpose_5 * 0.70710677; // [4, T, 4]
        let val_157_data = val_157.transpose(-2, -1); // [4, 4, T]
        let val_161 = val_155.matmul(val_157_data); // [4, T, T]
        let val_163 = val_161.softmax(-1); // [4, T, T]
        let scaled_dot_product_attention_1 = val_163.matmul(transpose_6); // [4, T, 4]
        let transpose_7 = scaled_dot_product_attention_1.transpose(-3, -2); // [T, 4, 4]
        let view_9 = transpose_7.reshape([T, 16]); // [T, 16]
        let linear_9 = self.bert_encoder_layer_1_attention_output_dense(view_9); // [T, 16]
        let add_6 = linear_9 + layer_norm_2; // [T, 16]
        let layer_norm_3 = self.bert_encoder_layer_1_attention_output_layernorm(add_6); // [T, 16]
        let linear_10 = self.bert_encoder_layer_1_intermediate_dense(layer_norm_3); // [T, 32]
        let gelu_1 = gelu(linear_10); // [T, 32]
        let linear_11 = self.bert_encoder_layer_1_output_dense(gelu_1); // [T, 16]
        let add_7 = linear_11 + layer_norm_3; // [T, 16]
        let layer_norm_4 = self.bert_encoder_layer_1_output_layernorm(add_7); // [T, 16]
        let select = layer_norm_4.narrow(-2, 0, 1).reshape([16]); // [16]
        self.fc(select) // [3]
    }
}
