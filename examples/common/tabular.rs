//! What `examples/tabular.rs` trains, shared with `tests/integration/tabular.rs`: the
//! two models, how the fuel-use table is read, and the standardised split.

use blaze::data::{CsvOptions, DataError, InMemoryDataset, Scaler};
use blaze::prelude::*;

/// 13 measurements to one of 3 cultivars.
#[model(input = [13])]
pub struct WineMlp {
    fc1: Linear<13, 32>,
    act: Relu,
    fc2: Linear<32, 3>,
}

/// 6 numbers and a one-hot origin of 3 levels to miles per gallon.
#[model(input = [9])]
pub struct MpgMlp {
    fc1: Linear<9, 64>,
    act1: Relu,
    fc2: Linear<64, 32>,
    act2: Relu,
    fc3: Linear<32, 1>,
}

/// `auto-mpg.csv` as `MpgMlp` reads it: six numeric columns and the
/// origin one-hot, miles per gallon to predict, rows with a gap skipped.
pub fn mpg_options() -> CsvOptions {
    CsvOptions::real("mpg")
        .features(&["cylinders", "displacement", "horsepower", "weight", "acceleration", "model_year", "origin"])
        .categorical(&["origin"])
        .skip_missing(true)
}

/// `data` cut into a standardised training and validation part, the
/// scaler fitted on the training part only (an error when a part would
/// be empty).
pub fn standardized_split(
    data: &InMemoryDataset,
    val_fraction: f64,
    seed: u64,
) -> Result<(InMemoryDataset, InMemoryDataset, Scaler), DataError> {
    let (mut train, mut val) = data.split_validation(val_fraction, seed)?;
    let scaler = Scaler::standardize(&train)?;
    scaler.apply(&mut train);
    scaler.apply(&mut val);
    Ok((train, val, scaler))
}
