//! The flags the image classifiers (`mnist`, `images`) share: SGD with
//! momentum for some epochs, the best epoch chosen on a validation split
//! of the training images, what the run writes kept in a folder. Each
//! flattens them into its own flags with `#[command(flatten)]`.

use std::path::PathBuf;

/// How an image classifier trains, and where it writes.
#[derive(Debug, clap::Args)]
pub struct TrainingFlags {
    /// Epochs to train.
    #[arg(long, default_value_t = 15)]
    pub epochs: usize,
    /// SGD's learning rate (momentum 0.9).
    #[arg(long, default_value_t = 0.05)]
    pub lr: f64,
    /// Seed of the weights, the validation split, the shuffling, dropout
    /// and augmentation.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Share of the training images held out to choose the best epoch on
    /// (the test images are not).
    #[arg(long, default_value_t = 0.1)]
    pub val_fraction: f64,
    /// Folder for the weights, the curves and what else the run writes.
    // `out/<example>`: the example that includes this file.
    #[arg(long, default_value = concat!("out/", env!("CARGO_CRATE_NAME")))]
    pub out: PathBuf,
    /// The precision of the model's products, forward and backward: f32,
    /// bf16 or f16 (with loss scaling); weights and optimizer stay f32.
    #[arg(long, default_value_t = blaze::Precision::F32)]
    pub precision: blaze::Precision,
}
