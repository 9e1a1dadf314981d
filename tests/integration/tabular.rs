//! The tables shipped in `data/tabular` train as `examples/tabular.rs`
//! trains them: a classifier of wine cultivars and a regressor of fuel
//! use, each standardised on its training split, reaching the accuracy
//! and R² a small MLP gets there.

use std::path::PathBuf;

use blaze::data::{CsvOptions, DataLoader, Dataset, InMemoryDataset, read_csv};
use blaze::optim::Adam;
use blaze::prelude::*;
use blaze::train::{CrossEntropy, EarlyStopping, FitConfig, Mse, fit};

#[path = "../../examples/common/tabular.rs"]
pub(crate) mod tables;

use tables::{MpgMlp, WineMlp, mpg_options, standardized_split};

fn table(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/tabular").join(name)
}

/// Training and validation loaders, standardised on the training split.
fn loaders(data: &InMemoryDataset) -> (DataLoader<InMemoryDataset>, DataLoader<InMemoryDataset>) {
    let (train, val, _) = standardized_split(data, 0.2, 0).expect("a training split to fit on");
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
    let table = read_csv(&table("auto-mpg.csv"), &mpg_options()).expect("the shipped table reads");
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
