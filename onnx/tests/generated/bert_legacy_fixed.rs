// `BertLegacyFixed`, converted by blaze-onnx from `bert_legacy_fixed.onnx` (ONNX opset 17).
//
// Plain `#[model]` source: edit it, retrain it. Its weights went to a
// safetensors file under the fields' names; load them with
// `blaze::record::load_model(&mut model, path)`.

use blaze::prelude::*;

#[model]
pub struct BertLegacyFixed {
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
impl BertLegacyFixed {
    fn forward(&self, input: Tensor) -> Tensor {
        let bert_embeddings_word_embeddings_gather_output_0 = self.bert_embeddings_word_embeddings(input); // [T, 16]
        let bert_embeddings_token_type_embeddings_gather_output_0 = self.bert_embeddings_token_type_embeddings(positions(1)); // [1, 16]
        let bert_embeddings_add_output_0 = bert_embeddings_word_embeddings_gather_output_0 + bert_embeddings_token_type_embeddings_gather_output_0; // [T, 16]
        let bert_embeddings_position_embeddings_gather_output_0 = self.bert_embeddings_position_embeddings(positions(T)); // [T, 16]
        let bert_embeddings_add_1_output_0 = bert_embeddings_add_output_0 + bert_embeddings_position_embeddings_gather_output_0; // [T, 16]
        let bert_embeddings_layernorm_layernormalization_output_0 = self.bert_embeddings_layernorm(bert_embeddings_add_1_output_0); // [T, 16]
        let bert_encoder_layer_0_attention_self_query_add_output_0 = self.bert_encoder_layer_0_attention_self_query(bert_embeddings_layernorm_layernormalization_output_0); // [T, 16]
        let bert_encoder_layer_0_attention_self_reshape_output_0 = bert_encoder_layer_0_attention_self_query_add_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let bert_encoder_layer_0_attention_self_transpose_output_0 = bert_encoder_layer_0_attention_self_reshape_output_0.transpose(-3, -2); // [4, T, 4]
        let bert_encoder_layer_0_attention_self_key_add_output_0 = self.bert_encoder_layer_0_attention_self_key(bert_embeddings_layernorm_layernormalization_output_0); // [T, 16]
        let bert_encoder_layer_0_attention_self_reshape_1_output_0 = bert_encoder_layer_0_attention_self_key_add_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let bert_encoder_layer_0_attention_self_value_add_output_0 = self.bert_encoder_layer_0_attention_self_value(bert_embeddings_layernorm_layernormalization_output_0); // [T, 16]
        let bert_encoder_layer_0_attention_self_reshape_2_output_0 = bert_encoder_layer_0_attention_self_value_add_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let bert_encoder_layer_0_attention_self_transpose_1_output_0 = bert_encoder_layer_0_attention_self_reshape_2_output_0.transpose(-3, -2); // [4, T, 4]
        let bert_encoder_layer_0_attention_self_transpose_2_output_0 = bert_encoder_layer_0_attention_self_reshape_1_output_0.permute([1, 2, 0]); // [4, 4, T]
        let bert_encoder_layer_0_attention_self_mul_output_0 = bert_encoder_layer_0_attention_self_transpose_output_0 * 0.70710677; // [4, T, 4]
        let bert_encoder_layer_0_attention_self_mul_1_output_0 = bert_encoder_layer_0_attention_self_transpose_2_output_0 * 0.70710677; // [4, 4, T]
        let bert_encoder_layer_0_attention_self_matmul_output_0 = bert_encoder_layer_0_attention_self_mul_output_0.matmul(bert_encoder_layer_0_attention_self_mul_1_output_0); // [4, T, T]
        let bert_encoder_layer_0_attention_self_softmax_output_0 = bert_encoder_layer_0_attention_self_matmul_output_0.softmax(-1); // [4, T, T]
        let bert_encoder_layer_0_attention_self_matmul_1_output_0 = bert_encoder_layer_0_attention_self_softmax_output_0.matmul(bert_encoder_layer_0_attention_self_transpose_1_output_0); // [4, T, 4]
        let bert_encoder_layer_0_attention_self_reshape_3_output_0 = bert_encoder_layer_0_attention_self_matmul_1_output_0.reshape([4, T, 4]); // [4, T, 4]
        let bert_encoder_layer_0_attention_self_transpose_3_output_0 = bert_encoder_layer_0_attention_self_reshape_3_output_0.transpose(-3, -2); // [T, 4, 4]
        let bert_encoder_layer_0_attention_self_reshape_4_output_0 = bert_encoder_layer_0_attention_self_transpose_3_output_0.reshape([T, 16]); // [T, 16]
        let bert_encoder_layer_0_attention_output_dense_add_output_0 = self.bert_encoder_layer_0_attention_output_dense(bert_encoder_layer_0_attention_self_reshape_4_output_0); // [T, 16]
        let bert_encoder_layer_0_attention_output_add_output_0 = bert_encoder_layer_0_attention_output_dense_add_output_0 + bert_embeddings_layernorm_layernormalization_output_0; // [T, 16]
        let bert_encoder_layer_0_attention_output_layernorm_layernormalization_output_0 = self.bert_encoder_layer_0_attention_output_layernorm(bert_encoder_layer_0_attention_output_add_output_0); // [T, 16]
        let bert_encoder_layer_0_intermediate_dense_add_output_0 = self.bert_encoder_layer_0_intermediate_dense(bert_encoder_layer_0_attention_output_layernorm_layernormalization_output_0); // [T, 32]
        let bert_encoder_layer_0_intermediate_intermediate_act_fn_mul_1_output_0 = gelu(bert_encoder_layer_0_intermediate_dense_add_output_0); // [T, 32]
        let bert_encoder_layer_0_output_dense_add_output_0 = self.bert_encoder_layer_0_output_dense(bert_encoder_layer_0_intermediate_intermediate_act_fn_mul_1_output_0); // [T, 16]
        let bert_encoder_layer_0_output_add_output_0 = bert_encoder_layer_0_output_dense_add_output_0 + bert_encoder_layer_0_attention_output_layernorm_layernormalization_output_0; // [T, 16]
        let bert_encoder_layer_0_output_layernorm_layernormalization_output_0 = self.bert_encoder_layer_0_output_layernorm(bert_encoder_layer_0_output_add_output_0); // [T, 16]
        let bert_encoder_layer_1_attention_self_query_add_output_0 = self.bert_encoder_layer_1_attention_self_query(bert_encoder_layer_0_output_layernorm_layernormalization_output_0); // [T, 16]
        let bert_encoder_layer_1_attention_self_reshape_output_0 = bert_encoder_layer_1_attention_self_query_add_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let bert_encoder_layer_1_attention_self_transpose_output_0 = bert_encoder_layer_1_attention_self_reshape_output_0.transpose(-3, -2); // [4, T, 4]
        let bert_encoder_layer_1_attention_self_key_add_output_0 = self.bert_encoder_layer_1_attention_self_key(bert_encoder_layer_0_output_layernorm_layernormalization_output_0); // [T, 16]
        let bert_encoder_layer_1_attention_self_reshape_1_output_0 = bert_encoder_layer_1_attention_self_key_add_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let bert_encoder_layer_1_attention_self_value_add_output_0 = self.bert_encoder_layer_1_attention_self_value(bert_encoder_layer_0_output_layernorm_layernormalization_output_0); // [T, 16]
        let bert_encoder_layer_1_attention_self_reshape_2_output_0 = bert_encoder_layer_1_attention_self_value_add_output_0.reshape([T, 4, 4]); // [T, 4, 4]
        let bert_encoder_layer_1_attention_self_transpose_1_output_0 = bert_encoder_layer_1_attention_self_reshape_2_output_0.transpose(-3, -2); // [4, T, 4]
        let bert_encoder_layer_1_attention_self_transpose_2_output_0 = bert_encoder_layer_1_attention_self_reshape_1_output_0.permute([1, 2, 0]); // [4, 4, T]
        let bert_encoder_layer_1_attention_self_mul_output_0 = bert_encoder_layer_1_attention_self_transpose_output_0 * 0.70710677; // [4, T, 4]
        let bert_encoder_layer_1_attention_self_mul_1_output_0 = bert_encoder_layer_1_attention_self_transpose_2_output_0 * 0.70710677; // [4, 4, T]
        let bert_encoder_layer_1_attention_self_matmul_output_0 = bert_encoder_layer_1_attention_self_mul_output_0.matmul(bert_encoder_layer_1_attention_self_mul_1_output_0); // [4, T, T]
        let bert_encoder_layer_1_attention_self_softmax_output_0 = bert_encoder_layer_1_attention_self_matmul_output_0.softmax(-1); // [4, T, T]
        let bert_encoder_layer_1_attention_self_matmul_1_output_0 = bert_encoder_layer_1_attention_self_softmax_output_0.matmul(bert_encoder_layer_1_attention_self_transpose_1_output_0); // [4, T, 4]
        let bert_encoder_layer_1_attention_self_reshape_3_output_0 = bert_encoder_layer_1_attention_self_matmul_1_output_0.reshape([4, T, 4]); // [4, T, 4]
        let bert_encoder_layer_1_attention_self_transpose_3_output_0 = bert_encoder_layer_1_attention_self_reshape_3_output_0.transpose(-3, -2); // [T, 4, 4]
        let bert_encoder_layer_1_attention_self_reshape_4_output_0 = bert_encoder_layer_1_attention_self_transpose_3_output_0.reshape([T, 16]); // [T, 16]
        let bert_encoder_layer_1_attention_output_dense_add_output_0 = self.bert_encoder_layer_1_attention_output_dense(bert_encoder_layer_1_attention_self_reshape_4_output_0); // [T, 16]
        let bert_encoder_layer_1_attention_output_add_output_0 = bert_encoder_layer_1_attention_output_dense_add_output_0 + bert_encoder_layer_0_output_layernorm_layernormalization_output_0; // [T, 16]
        let bert_encoder_layer_1_attention_output_layernorm_layernormalization_output_0 = self.bert_encoder_layer_1_attention_output_layernorm(bert_encoder_layer_1_attention_output_add_output_0); // [T, 16]
        let bert_encoder_layer_1_intermediate_dense_add_output_0 = self.bert_encoder_layer_1_intermediate_dense(bert_encoder_layer_1_attention_output_layernorm_layernormalization_output_0); // [T, 32]
        let bert_encoder_layer_1_intermediate_intermediate_act_fn_mul_1_output_0 = gelu(bert_encoder_layer_1_intermediate_dense_add_output_0); // [T, 32]
        let bert_encoder_layer_1_output_dense_add_output_0 = self.bert_encoder_layer_1_output_dense(bert_encoder_layer_1_intermediate_intermediate_act_fn_mul_1_output_0); // [T, 16]
        let bert_encoder_layer_1_output_add_output_0 = bert_encoder_layer_1_output_dense_add_output_0 + bert_encoder_layer_1_attention_output_layernorm_layernormalization_output_0; // [T, 16]
        let bert_encoder_layer_1_output_layernorm_layernormalization_output_0 = self.bert_encoder_layer_1_output_layernorm(bert_encoder_layer_1_output_add_output_0); // [T, 16]
        let gather_output_0 = bert_encoder_layer_1_output_layernorm_layernormalization_output_0.narrow(-2, 0, 1).reshape([16]); // [16]
        self.fc(gather_output_0) // [3]
    }
}
