//! Tables from CSV files, as a new user meets them: a classifier of wine
//! cultivars from 13 chemical measurements, and a regressor of a car's
//! fuel use (miles per gallon) from its engine, weight, year and origin
//! (a categorical column, one-hot encoded). Both ship in `data/tabular`
//! (UCI data, CC BY 4.0; see the README).
//!
//! Each run splits its table with a seed into training, validation and
//! test parts, fits a per-feature standardiser on the training part
//! alone, applies it to every part, trains with early stopping on the
//! validation part (which then restores the best epoch's weights),
//! measures those weights on the test part once, and saves them with the
//! scaler beside them, so the model can later be used on raw rows the
//! same way.
//!
//! ```text
//! cargo run --release --example tabular
//! cargo run --release --example tabular -- --task regress --epochs 300
//! cargo run --release --example tabular -- --help
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use blaze::data::{CsvOptions, DataLoader, Dataset, read_csv};
use blaze::optim::Adam;
use blaze::prelude::*;
use blaze::train::{EarlyStopping, FitConfig, History, Mse, Scores, evaluate, fit};
use clap::Parser;

#[path = "common/tabular.rs"]
mod tabular;

use tabular::{MpgMlp, WineMlp, mpg_options, standardized_split};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Which {
    /// The wine classifier.
    Classify,
    /// The fuel-use regressor.
    Regress,
    /// Both, one after the other.
    Both,
}

/// Trains a classifier and a regressor on the CSV tables in data/tabular.
#[derive(Parser)]
struct Args {
    /// Which model to train.
    #[arg(long, value_enum, default_value_t = Which::Both)]
    task: Which,
    /// The folder holding wine.csv and auto-mpg.csv.
    #[arg(long, default_value_os_t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/tabular"))]
    data: PathBuf,
    /// Most epochs to train (early stopping may end sooner).
    #[arg(long, default_value_t = 200)]
    epochs: usize,
    /// Epochs without a better validation score before stopping.
    #[arg(long, default_value_t = 20)]
    patience: usize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 1e-2)]
    lr: f64,
    /// Share of each table held out for validation.
    #[arg(long, default_value_t = 0.2)]
    val_fraction: f64,
    /// Share of each table held out to test the chosen weights on, once,
    /// at the end.
    #[arg(long, default_value_t = 0.2)]
    test_fraction: f64,
    /// Seed of the split, the initial weights and the shuffling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Folder for the weights, scalers and curves.
    #[arg(long, default_value = "out/tabular")]
    out: PathBuf,
}

fn config<L>(loss: L, args: &Args, out: &Path) -> FitConfig<L> {
    FitConfig {
        epochs: args.epochs,
        early_stopping: Some(EarlyStopping::patience(args.patience)),
        out_dir: Some(out.to_path_buf()),
        seed: args.seed,
        verbose: false,
        ..FitConfig::new(loss)
    }
}

/// What the best epoch scored on validation, why training ended, and
/// what its weights (restored by early stopping) score on the test rows.
fn report(name: &str, history: &History, test: &Scores) {
    let Some(best) = history.best() else { return };
    println!("{name}: best epoch {} of {}: validation {}", best.epoch, history.epochs.len(), best.val);
    if let Some(why) = &history.stopped_early {
        println!("  stopped early: {why}");
    }
    println!("  test, with the weights of epoch {}: {test}", best.epoch);
}

fn classify(args: &Args) -> Result<()> {
    let table = read_csv(&args.data.join("wine.csv"), &CsvOptions::classes("cultivar"))?;
    println!(
        "wine.csv: {} rows, {} features, classes {}",
        table.dataset.len(),
        table.schema.input_names().len(),
        table.schema.classes.join(", ")
    );
    // The test rows, which nothing sees before the end.
    let (rest, mut test) = table.dataset.split_validation(args.test_fraction, args.seed)?;
    let (train, val, scaler) = standardized_split(&rest, args.val_fraction, args.seed)?;
    scaler.apply(&mut test);
    let out = args.out.join("wine");
    let mut model = WineMlp::new_seeded(args.seed, &CpuDevice);
    let mut train = DataLoader::new(train, 16).shuffle(args.seed);
    let mut val = DataLoader::new(val, 64);
    let config = config(blaze::train::CrossEntropy::default(), args, &out);
    let history = fit(&mut model, &mut Adam::new(args.lr), &mut train, &mut val, &config)?;
    report("wine classifier", &history, &evaluate(&model, &mut DataLoader::new(test, 64), &config)?);
    if let Some(m) = &history.confusion {
        println!("validation after the last epoch trained:\n{m}");
    }
    scaler.save(&out.join("scaler.safetensors"))?;
    Ok(())
}

fn regress(args: &Args) -> Result<()> {
    let table = read_csv(&args.data.join("auto-mpg.csv"), &mpg_options())?;
    println!(
        "auto-mpg.csv: {} rows ({} skipped for a missing value), inputs {}",
        table.dataset.len(),
        table.skipped_rows,
        table.schema.input_names().join(", ")
    );
    // The test rows, which nothing sees before the end.
    let (rest, mut test) = table.dataset.split_validation(args.test_fraction, args.seed)?;
    let (train, val, scaler) = standardized_split(&rest, args.val_fraction, args.seed)?;
    scaler.apply(&mut test);
    let out = args.out.join("mpg");
    let mut model = MpgMlp::new_seeded(args.seed, &CpuDevice);
    let mut train = DataLoader::new(train, 16).shuffle(args.seed);
    let mut val = DataLoader::new(val, 128);
    let config = FitConfig { monitor: Some("r2".into()), ..config(Mse, args, &out) };
    let history = fit(&mut model, &mut Adam::new(args.lr), &mut train, &mut val, &config)?;
    report("fuel-use regressor", &history, &evaluate(&model, &mut DataLoader::new(test, 128), &config)?);
    scaler.save(&out.join("scaler.safetensors"))?;
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    if matches!(args.task, Which::Classify | Which::Both) {
        classify(&args).context("the wine classifier")?;
    }
    if matches!(args.task, Which::Regress | Which::Both) {
        regress(&args).context("the fuel-use regressor")?;
    }
    println!("weights, scalers and curves are in {}", args.out.display());
    Ok(())
}
