//! A small CNN trained on a folder of images in the class-per-subfolder
//! layout (`root/<class>/<image>.png`, as torchvision's `ImageFolder`
//! reads): decoded and resized once, normalised per channel with the
//! training split's statistics, augmented while training by random crops
//! with padding.
//!
//! The best epoch is chosen on a validation split carved from the
//! training images (`--val-fraction`); the test images are read once, at
//! the end, for that epoch's weights.
//!
//! Without `--images`, it first writes the handwritten digits shipped in
//! `data/digits-8x8` (UCI, CC BY 4.0) as PNG files, one folder per digit,
//! under `--out`, and trains on those. Give it your own folder (with
//! `train/` and `test/` inside, each holding one folder per class) to train
//! on your images; `--rgb` reads colour.
//!
//! ```text
//! cargo run --release --features images --example images
//! cargo run --release --features images --example images -- --images my-photos --rgb --flip
//! cargo run --release --features images --example images -- --help
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use blaze::data::mnist::read_mnist;
use blaze::data::{Augment, ColorMode, DataLoader, Dataset, ImageFolder};
use blaze::nn::Block;
use blaze::optim::Sgd;
use blaze::prelude::*;
use blaze::record;
use blaze::train::{FitConfig, evaluate, fit};
use clap::Parser;

#[path = "common/training_flags.rs"]
mod training_flags;

use training_flags::TrainingFlags;

/// For 16x16 grey images of 10 classes.
#[model(input = [1, 16, 16])]
pub struct GrayCnn {
    #[layer(padding = 1)]
    conv1: Conv2d<1, 16, 3>, // -> [16, 16, 16]
    act1: Relu,
    pool1: MaxPool2d<2>, // -> [16, 8, 8]
    #[layer(padding = 1)]
    conv2: Conv2d<16, 32, 3>, // -> [32, 8, 8]
    act2: Relu,
    pool2: MaxPool2d<2>, // -> [32, 4, 4]
    flat: Flatten,
    fc: Linear<512, 10>,
}

/// For 16x16 colour images of 10 classes.
#[model(input = [3, 16, 16])]
pub struct RgbCnn {
    #[layer(padding = 1)]
    conv1: Conv2d<3, 16, 3>,
    act1: Relu,
    pool1: MaxPool2d<2>,
    #[layer(padding = 1)]
    conv2: Conv2d<16, 32, 3>,
    act2: Relu,
    pool2: MaxPool2d<2>,
    flat: Flatten,
    fc: Linear<512, 10>,
}

/// Trains a small CNN on a folder of images, one subfolder per class.
#[derive(Parser)]
struct Args {
    /// A folder with `train/` and `test/`, each holding one folder of
    /// images per class (at most 10 classes); by default the shipped
    /// digits, written out as PNG files first.
    #[arg(long)]
    images: Option<PathBuf>,
    /// Read colour images (three channels) instead of grey ones.
    #[arg(long)]
    rgb: bool,
    /// Pixels of zero padding around each image before the random crop.
    #[arg(long, default_value_t = 2)]
    crop_padding: usize,
    /// Mirror images left-right at random (not for digits or text).
    #[arg(long)]
    flip: bool,
    #[command(flatten)]
    training: TrainingFlags,
}

/// Writes the shipped digits as `root/{train,test}/<digit>/<n>.png`,
/// unless they are there already.
fn write_digits(root: &Path) -> Result<()> {
    if root.join("test/9").is_dir() {
        return Ok(());
    }
    let data = read_mnist(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/digits-8x8"))?;
    for (split, set) in [("train", &data.train), ("test", &data.test)] {
        let (rows, cols) = (set.rows as u32, set.cols as u32);
        for (n, (pixels, &label)) in set.images.chunks_exact(set.rows * set.cols).zip(&set.labels).enumerate() {
            let dir = root.join(split).join(label.to_string());
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let bytes: Vec<u8> = pixels.iter().map(|&p| (p * 255.0).round().clamp(0.0, 255.0) as u8).collect();
            let file = dir.join(format!("{n:04}.png"));
            write_gray_png(&file, cols, rows, &bytes).with_context(|| format!("cannot write {}", file.display()))?;
        }
    }
    println!("wrote the shipped digits as PNG files under {}", root.display());
    Ok(())
}

/// Writes 8-bit grey pixels, row-major, as a PNG file.
fn write_gray_png(path: &Path, cols: u32, rows: u32, pixels: &[u8]) -> Result<()> {
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(std::fs::File::create(path)?), cols, rows);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(pixels)?;
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let root = match &args.images {
        Some(root) => root.clone(),
        None => {
            let root = args.training.out.join("digits");
            write_digits(&root)?;
            root
        }
    };
    let mode = if args.rgb { ColorMode::Rgb } else { ColorMode::Gray };
    let all = ImageFolder::open(&root.join("train"), mode, 16, 16)?;
    let test = ImageFolder::open(&root.join("test"), mode, 16, 16)?;
    if all.classes() != test.classes() || all.classes().len() > 10 {
        bail!(
            "train/ has classes {:?} and test/ {:?}: they must agree, and this model tells at most 10 apart",
            all.classes(),
            test.classes()
        );
    }
    let (train, val) = all
        .split_validation(args.training.val_fraction, args.training.seed)
        .with_context(|| format!("--val-fraction {}", args.training.val_fraction))?;
    println!(
        "{}: {} training images ({} to train on, {} to choose the best epoch on) and {} test images, classes {}",
        root.display(),
        all.len(),
        train.len(),
        val.len(),
        test.len(),
        all.classes().join(" ")
    );
    let (mean, std) = train.channel_stats();
    println!("per-channel mean {mean:.3?}, std {std:.3?} (from the images to train on)");
    let augment = Augment { crop_padding: args.crop_padding, horizontal_flip: args.flip };
    let splits = [
        train.normalize(&mean, &std).augment(augment, args.training.seed),
        val.normalize(&mean, &std),
        test.normalize(&mean, &std),
    ];
    if args.rgb { run::<RgbCnn>(&args.training, splits) } else { run::<GrayCnn>(&args.training, splits) }
}

/// Trains `M`, choosing the best epoch on the validation split, then
/// measures that epoch's weights, read back from disk, on the test images.
fn run<M>(training: &TrainingFlags, [train, val, test]: [ImageFolder; 3]) -> Result<()>
where
    M: Block<Cpu, Input = Tensor<Cpu, 4>, Output = Tensor<Cpu, 2>>,
{
    let mut train = DataLoader::new(train, 64).shuffle(training.seed);
    let mut val = DataLoader::new(val, 256);
    let out = training.out.join("model");
    let config =
        FitConfig {
            epochs: training.epochs,
            out_dir: Some(out.clone()),
            seed: training.seed,
            precision: training.precision,
            ..FitConfig::default()
        };
    let mut sgd = Sgd::new(training.lr).momentum(0.9);
    let mut model = M::init(&mut blaze::Rng::seed_from_u64(training.seed), &CpuDevice);
    let history = fit(&mut model, &mut sgd, &mut train, &mut val, &config)?;
    let Some(best) = history.best() else { bail!("no epoch ran (is --epochs 0?)") };
    record::load_model(&mut model, &out.join("best.safetensors"))?;
    let scores = evaluate(&model, &mut DataLoader::new(test, 256), &config)?;
    println!(
        "validation accuracy {:.4} at epoch {} (the best); test accuracy {:.4} with that epoch's weights",
        best.val["accuracy"], best.epoch, scores["accuracy"]
    );
    Ok(())
}
