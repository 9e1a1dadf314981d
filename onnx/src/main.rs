//! `blaze-onnx model.onnx --out src/model.rs`: writes `#[model]` source and,
//! next to it (or at `--weights`), a safetensors file of the weights.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Converts an ONNX model into Blaze `#[model]` source and safetensors weights.
#[derive(Parser)]
#[command(name = "blaze-onnx", version)]
struct Args {
    /// The ONNX file.
    model: PathBuf,
    /// Where the source goes.
    #[arg(long)]
    out: PathBuf,
    /// Where the weights go (default: the source's path with a .safetensors extension).
    #[arg(long)]
    weights: Option<PathBuf>,
    /// The model struct's name (default: from the ONNX file's name).
    #[arg(long)]
    name: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let weights = args.weights.clone().unwrap_or_else(|| args.out.with_extension("safetensors"));
    let result = blaze_onnx::import_file(&args.model, args.name.as_deref()).and_then(|import| {
        import.write(&args.out, &weights)?;
        Ok(import)
    });
    match result {
        Ok(import) => {
            let n: usize = import.weights.iter().map(|(_, _, v)| v.len()).sum();
            println!(
                "wrote `{}` to {} and {} tensors ({n} values) to {}",
                import.name,
                args.out.display(),
                import.weights.len(),
                weights.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
