//! The tables shipped in `data/tabular` train as `examples/tabular.rs`
//! trains them: a classifier of wine cultivars and a regressor of fuel
//! use, each standardised on its training split, reaching the accuracy
//! and R² a small MLP gets there.

use std::path::PathBuf;

use blaze::data::{CsvOptions, DataLoader, Dataset, InMemoryDataset, Scaler, read_csv, train_val_split};
use blaze::optim::Adam;
use blaze::prelude::*;
use blaze::train::{CrossEntropy, EarlyStopping, FitConfig, Mse, fit};

#[model(input = [13])]
pub struct WineMlp {
    fc1: Linear<13, 32>,
    act: Relu,
    fc2: Linear<32, 3>,
}

#[model(input = [9])]
pub struct MpgMlp {
    fc1: Linear<9, 64>,
    act1: Relu,
    fc2: Linear<64, 32>,
    act2: Relu,
    fc3: Linear<32, 1>,
}

fn table(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/tabular").join(name)
}

/// Training and validation loaders, standardised on the training split.
fn loaders(data: &InMemoryDataset) -> (DataLoader<InMemoryDataset>, DataLoader<InMemoryDataset>) {
    let (train, val) = train_val_split(data.len(), 0.2, 0);
    let (mut train, mut val) = (data.subset(&train), data.subset(&val));
    let scaler = Scaler::standardize(&train);
    scaler.apply(&mut train);
    scaler.apply(&mut val);
    (DataLoader::new(train, 16).shuffle(0), DataLoader::new(val, 128))
}

#[test]
fn the_wine_classifier_reaches_its_accuracy() {
    let table = read_csv(&table("wine.csv"), &CsvOptions::classes("cultivar")).expect("the shipped table reads");
    assert_eq!((table.dataset.len(), table.schema.input_names().len(), table.schema.classes.len()), (178, 13, 3));
    let (mut train, mut val) = loaders(&table.dataset);
    let mut model = WineMlp::new_seeded(0, &CpuDevice);
    let config = FitConfig {
        epochs: 40,
        early_stopping: Some(EarlyStopping::patience(10)),
        verbose: false,
        ..FitConfig::new(CrossEntropy::default())
    };
    let history = fit(&mut model, &mut Adam::new(1e-2), &mut train, &mut val, &config).expect("trains");
    let best = history.best().expect("epochs");
    assert!(best.val["accuracy"] >= 0.9 && best.val["f1"] >= 0.9, "{}", best.val);
}

#[test]
fn the_fuel_use_regressor_reaches_its_r2() {
    let options = CsvOptions::real("mpg")
        .features(&["cylinders", "displacement", "horsepower", "weight", "acceleration", "model_year", "origin"])
        .categorical(&["origin"])
        .skip_missing(true);
    let table = read_csv(&table("auto-mpg.csv"), &options).expect("the shipped table reads");
    assert_eq!((table.dataset.len(), table.skipped_rows), (392, 14));
    let (mut train, mut val) = loaders(&table.dataset);
    let mut model = MpgMlp::new_seeded(0, &CpuDevice);
    let config = FitConfig {
        epochs: 60,
        monitor: Some("r2".into()),
        early_stopping: Some(EarlyStopping::patience(15)),
        verbose: false,
        ..FitConfig::new(Mse)
    };
    let history = fit(&mut model, &mut Adam::new(1e-2), &mut train, &mut val, &config).expect("trains");
    let best = history.best().expect("epochs");
    // A linear fit gets about 0.8 here; the MLP does better.
    assert!(best.val["r2"] > 0.85 && best.val["mae"] < 2.5, "{}", best.val);
}
