//! A GPT-2 written as `#[model]` forward bodies reads the checkpoint
//! `transformers` saved (`tests/fixtures/hf_gpt2`, made by its script):
//! the names and the transposed `Conv1D` weights are declared next to the
//! fields with `#[load(..)]`, the head reads the token embeddings it is
//! tied to. Its logits match `transformers`', and greedy decoding with the
//! cache gives the tokens `model.generate(do_sample=False)` gave.

use std::path::PathBuf;

use blaze::nn::{GenerateConfig, generate};
use blaze::prelude::*;
use blaze::record::{RecordError, load_model_from, load_tensors};

/// GPT-2's block: pre-LayerNorm causal attention and a tanh-GELU MLP.
#[model]
pub struct Gpt2Block {
    #[load("ln_1")]
    ln_1: LayerNorm<32>,
    #[layer(causal = true)]
    #[load(
        in_proj_weight = transposed("attn.c_attn.weight"),
        in_proj_bias = "attn.c_attn.bias",
        out_proj.weight = transposed("attn.c_proj.weight"),
        out_proj.bias = "attn.c_proj.bias"
    )]
    attn: MultiHeadAttention<32, 4>,
    #[load("ln_2")]
    ln_2: LayerNorm<32>,
    #[load(weight = transposed("mlp.c_fc.weight"), bias = "mlp.c_fc.bias")]
    fc: Linear<32, 128>,
    #[load(weight = transposed("mlp.c_proj.weight"), bias = "mlp.c_proj.bias")]
    proj: Linear<128, 32>,
}

#[model(input = [T, 32])]
impl Gpt2Block {
    fn forward(&self, x: Tensor) -> Tensor {
        let x = x + self.attn(self.ln_1(x));
        x + self.proj(gelu_tanh(self.fc(self.ln_2(x))))
    }
}

/// `GPT2LMHeadModel` at the fixture's sizes.
#[model]
pub struct Gpt2 {
    #[load("transformer.wte")]
    wte: Embedding<96, 32>,
    #[load("transformer.wpe")]
    wpe: Embedding<32, 32>,
    #[load("transformer.h.{i}")]
    h: [Gpt2Block; 2],
    #[load("transformer.ln_f")]
    ln_f: LayerNorm<32>,
    /// Tied to the token embeddings, as `transformers` ties them.
    #[layer(bias = false)]
    #[load(weight = "transformer.wte.weight")]
    lm_head: Linear<32, 96>,
}

#[model(input = [T])]
impl Gpt2 {
    fn forward(&self, ids: Tensor) -> Tensor {
        let mut x = self.wte(ids) + self.wpe(positions(T));
        for block in &self.h {
            x = block(x);
        }
        self.lm_head(self.ln_f(x))
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hf_gpt2").join(name)
}

fn loaded() -> Gpt2<Cpu> {
    let mut model = Gpt2::<Cpu>::new_seeded(0, &CpuDevice);
    load_model_from(&mut model, &fixture("model.safetensors")).expect("the checkpoint loads");
    model
}

fn io(name: &str) -> blaze::TensorData {
    let (tensors, _) = load_tensors(&fixture("io.safetensors")).unwrap();
    tensors.into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no `{name}`")).1
}

#[test]
fn transformers_gpt2_checkpoint_gives_its_logits() {
    let model = loaded();
    let ids = Tensor::<Cpu, 2>::from_data(io("ids"), &CpuDevice).unwrap();
    let want = Tensor::<Cpu, 3>::from_data(io("logits"), &CpuDevice).unwrap();
    let got = model.forward(&ids);
    let worst = (got - &want).abs().max().item();
    let scale = want.abs().max().item();
    assert!(worst <= 1e-4 * scale.max(1.0), "logits differ from transformers' by {worst} (largest {scale})");
}

#[test]
fn greedy_decoding_gives_transformers_tokens() {
    let model = loaded();
    let prompt = io("prompt").values.to_f64_vec().into_iter().map(|v| v as i64).collect::<Vec<_>>();
    let want: Vec<i64> = io("greedy").values.to_f64_vec().into_iter().map(|v| v as i64).collect();
    let got = generate(&model, &prompt, &GenerateConfig::greedy(want.len()), |_| {});
    assert_eq!(got, want);
}

#[test]
fn a_checkpoint_without_a_declared_tensor_names_it() {
    // The fixture's own weights under other names: the first source the
    // model asks for is missing, and the error says which, for what.
    let dir = std::env::temp_dir().join(format!("blaze-hf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("renamed.safetensors");
    let (tensors, _) = load_tensors(&fixture("model.safetensors")).unwrap();
    let renamed: Vec<(String, blaze::TensorData)> =
        tensors.into_iter().map(|(n, t)| (n.replace("transformer.", "model."), t)).collect();
    blaze::record::save_tensors(&path, &renamed, &[]).unwrap();
    let mut model = Gpt2::<Cpu>::new_seeded(0, &CpuDevice);
    let before = model.lm_head.weight.to_vec::<f32>();
    let err = load_model_from(&mut model, &path).unwrap_err();
    assert!(matches!(err, RecordError::Missing { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("transformer.wte.weight (for `wte.weight`)"), "{msg}");
    assert_eq!(model.lm_head.weight.to_vec::<f32>(), before, "a failed load leaves the model as it was");
    std::fs::remove_dir_all(&dir).ok();
}
