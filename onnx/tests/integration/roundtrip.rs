//! Both ways: a model Blaze exports imports again. The mnist example's CNN
//! and MLP go out through `blaze::export` and come back through the
//! importer as `#[model]` source with the same layers and field names, the
//! verses example's LSTM reader and the gpt example's small GPT as forward
//! bodies (the GPT's attention written out), all in
//! `tests/generated/roundtrip_*.rs` (rewritten by `BLAZE_BLESS=1`); their
//! weights give the original's outputs.

use std::path::{Path, PathBuf};

use blaze::prelude::*;
use blaze::record::load_model;
use blaze_onnx::import_bytes;

use crate::digits;
#[path = "../../../examples/common/gpt_model.rs"]
mod gpt_model;
#[path = "../../../examples/common/readers.rs"]
#[allow(dead_code)]
mod readers;

#[path = "../generated/roundtrip_digits_cnn.rs"]
mod roundtrip_digits_cnn;
#[path = "../generated/roundtrip_digits_mlp.rs"]
mod roundtrip_digits_mlp;
#[path = "../generated/roundtrip_gpt.rs"]
mod roundtrip_gpt;
#[path = "../generated/roundtrip_lstm_reader.rs"]
mod roundtrip_lstm_reader;

fn generated(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/generated").join(name)
}

/// `model`'s export imported as `name`: the source and weights as
/// committed (or, blessing, written).
fn round_trip<M: blaze::export::OnnxModel>(model: &M, name: &str, struct_name: &str) {
    let bytes = blaze::export::to_onnx(model);
    let import = import_bytes(&bytes, &format!("{name}.onnx"), struct_name).expect("Blaze's export imports");
    let (rs, st) = (generated(&format!("{name}.rs")), generated(&format!("{name}.safetensors")));
    if std::env::var_os("BLAZE_BLESS").is_some() {
        import.write(&rs, &st).unwrap();
        return;
    }
    let hint = "the round trip's source changed; review it and rerun with BLAZE_BLESS=1 to accept it";
    assert_eq!(std::fs::read_to_string(&rs).unwrap(), import.source, "{name}: {hint}");
    assert!(std::fs::read(&st).unwrap() == import.weights_bytes(), "{name}: {hint}");
}

fn images(n: usize) -> Tensor<Cpu, 4> {
    let v: Vec<f32> = (0..n * 64).map(|i| ((i * 7919 + 13) % 1000) as f32 / 500.0 - 1.0).collect();
    Tensor::from_vec(v, [n, 1, 8, 8], &CpuDevice)
}

#[test]
fn the_digits_cnn_and_mlp_come_back_as_themselves() {
    let cnn = digits::DigitsCnn::<Cpu>::new_seeded(21, &CpuDevice);
    round_trip(&cnn, "roundtrip_digits_cnn", "DigitsCnn");
    let mlp = digits::DigitsMlp::<Cpu>::new_seeded(22, &CpuDevice);
    round_trip(&mlp, "roundtrip_digits_mlp", "DigitsMlp");
    if std::env::var_os("BLAZE_BLESS").is_some() {
        return;
    }
    let x = images(3);
    let mut back = roundtrip_digits_cnn::DigitsCnn::<Cpu>::new(&CpuDevice);
    load_model(&mut back, &generated("roundtrip_digits_cnn.safetensors")).unwrap();
    assert_eq!(back.forward(&x).to_vec::<f32>(), cnn.forward(&x).to_vec::<f32>());
    let mut back = roundtrip_digits_mlp::DigitsMlp::<Cpu>::new(&CpuDevice);
    load_model(&mut back, &generated("roundtrip_digits_mlp.safetensors")).unwrap();
    assert_eq!(back.forward(&x).to_vec::<f32>(), mlp.forward(&x).to_vec::<f32>());
}

fn ids(n: usize, t: usize, vocab: usize) -> Tensor<Cpu, 2> {
    Tensor::from_vec((0..n * t).map(|i| ((i * 31 + 7) % vocab) as i64).collect::<Vec<_>>(), [n, t], &CpuDevice)
}

fn assert_close(what: &str, got: &Tensor<Cpu, 3>, want: &Tensor<Cpu, 3>) {
    let worst = (got - want).abs().max().item();
    assert!(worst <= 1e-5, "{what}: the round trip's outputs differ by {worst}");
}

#[test]
fn the_gpt_and_the_lstm_reader_come_back_as_forward_bodies() {
    let gpt = gpt_model::Gpt::<Cpu>::new_seeded(23, &CpuDevice);
    round_trip(&gpt, "roundtrip_gpt", "Gpt");
    let reader = readers::LstmReader::<Cpu>::new_seeded(24, &CpuDevice);
    round_trip(&reader, "roundtrip_lstm_reader", "LstmReader");
    if std::env::var_os("BLAZE_BLESS").is_some() {
        return;
    }
    let x = ids(2, 9, gpt_model::VOCAB);
    let mut back = roundtrip_gpt::Gpt::<Cpu>::new(&CpuDevice);
    load_model(&mut back, &generated("roundtrip_gpt.safetensors")).unwrap();
    assert_close("gpt", &back.forward(&x), &gpt.forward(&x));
    let mut back = roundtrip_lstm_reader::LstmReader::<Cpu>::new(&CpuDevice);
    load_model(&mut back, &generated("roundtrip_lstm_reader.safetensors")).unwrap();
    let (got, want) = (back.forward(&x), reader.forward(&x));
    let worst = (got - want).abs().max().item();
    assert!(worst <= 1e-5, "lstm reader: the round trip's outputs differ by {worst}");
}
