//! A model trained elsewhere, brought into Blaze: a LeNet that PyTorch
//! trained on the 8x8 digits (`examples/make_lenet_digits.py` exported it
//! to `examples/lenet_digits.onnx`) becomes `#[model]` source, classifies
//! the test images as PyTorch did, and is fine-tuned with `fit`.
//!
//! The import is one command, which wrote `model.rs` and
//! `model.safetensors` next to this file (the tests check that it still
//! writes exactly these):
//!
//! ```text
//! cargo run -p blaze-onnx -- onnx/examples/lenet_digits.onnx \
//!     --out onnx/examples/lenet_digits/model.rs --name LeNet
//! ```
//!
//! Run: `cargo run --release -p blaze-onnx --example lenet_digits`

mod model;

use std::error::Error;
use std::path::Path;

use blaze::data::DataLoader;
use blaze::data::mnist::read_mnist;
use blaze::optim::Sgd;
use blaze::prelude::*;
use blaze::record::load_model;
use blaze::train::{FitConfig, evaluate, fit};
use model::LeNet;

/// PyTorch's accuracy on the same 360 test images (make_lenet_digits.py).
const PYTORCH_ACCURACY: f64 = 0.9889;

fn main() -> Result<(), Box<dyn Error>> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));

    // What the converter makes of the file: the struct in model.rs.
    let import = blaze_onnx::import_file(&here.join("examples/lenet_digits.onnx"), Some("LeNet"))?;
    let start = import.source.find("#[model(").unwrap_or(0);
    println!("{}", &import.source[start..]);

    // Inference with the imported weights.
    let mut model = LeNet::new(&CpuDevice);
    load_model(&mut model, &here.join("examples/lenet_digits/model.safetensors"))?;
    let data = read_mnist(&here.join("../data/digits-8x8"))?;
    let mut train = DataLoader::new(data.train.into_dataset(), 64).shuffle(0);
    let mut test = DataLoader::new(data.test.into_dataset(), 256);
    let config = FitConfig { epochs: 3, ..FitConfig::default() };
    let imported = evaluate(&model, &mut test, &config)?["accuracy"];
    println!("imported: test accuracy {imported:.4} (PyTorch: {PYTORCH_ACCURACY:.4})");

    // Fine-tuning through the backward pass #[model] generated (fit
    // prints each epoch).
    let mut sgd = Sgd::new(0.01).momentum(0.9);
    let history = fit(&mut model, &mut sgd, &mut train, &mut test, &config)?;
    if let Some(last) = history.epochs.last() {
        println!("fine-tuned {} epochs: test accuracy {imported:.4} -> {:.4}", last.epoch, last.val["accuracy"]);
    }
    Ok(())
}
