//! The facade's integration tests: models, graphs, kernels, training,
//! records and data against PyTorch fixtures and finite differences.
//! One test binary for the package: its files are modules here, so the
//! test command compiles and links the stack once instead of once per
//! file. Binaries with their own `main` or global state stay apart.

mod autodiff_oracle;
#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod common;
mod concurrency;
mod decode;
/// The mnist example's models, shared by the export and quantization tests.
#[path = "../../examples/common/digits.rs"]
mod digits;
mod fit_tasks;
#[path = "../common/fused_models.rs"]
mod fused_models;
mod fusion;
mod graph;
mod graph_torch;
mod guide;
/// The example's GPT sizes, shared by the decoding and export tests.
#[path = "../../examples/common/gpt_model.rs"]
mod gpt_model;
mod hf_gpt2;
mod kernel;
mod kernel_general;
#[path = "../common/kernels.rs"]
#[allow(dead_code)]
mod kernels;
mod layers_torch;
mod model;
mod model_torch;
mod npy;
mod onnx_export;
mod precision;
mod quant;
/// The verses example's recurrent readers, shared by the export and
/// quantization tests.
#[path = "../../examples/common/readers.rs"]
mod readers;
mod record;
#[path = "../common/concurrency.rs"]
#[allow(dead_code)]
mod serving;
mod spec;
mod tabular;
#[path = "../common/torch_fixture.rs"]
#[allow(dead_code)]
mod torch_fixture;
mod train;
mod train_failures;
#[path = "../common/transformer.rs"]
#[allow(dead_code)]
mod transformer;
