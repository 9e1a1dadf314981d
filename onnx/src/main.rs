//! `blaze-onnx model.onnx --out src/model.rs`: writes `#[model]` source and,
//! next to it (or at `--weights`), a safetensors file of the weights.
//! `blaze-onnx export src/model.rs --model Net --out net.onnx`: the other
//! way, a `#[model]` and its weights as an ONNX file.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Converts an ONNX model into Blaze `#[model]` source and safetensors
/// weights, or (`export`) a Blaze model into an ONNX file.
#[derive(Parser)]
#[command(name = "blaze-onnx", version, args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The ONNX file.
    #[arg(required = true)]
    model: Option<PathBuf>,
    /// Where the source goes.
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    /// Where the weights go (default: the source's path with a .safetensors extension).
    #[arg(long)]
    weights: Option<PathBuf>,
    /// The model struct's name (default: from the ONNX file's name).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Writes a #[model] defined in a Rust file, with its weights, as an
    /// ONNX file (compiles the file against this tool's Blaze checkout).
    Export {
        /// The Rust file that defines the model (using blaze and std only).
        source: PathBuf,
        /// The model's type name in that file.
        #[arg(long)]
        model: String,
        /// Its weights, as blaze::record::save_model writes them (default:
        /// the model initialised from seed 0).
        #[arg(long)]
        weights: Option<PathBuf>,
        /// The ONNX file to write (missing folders are created).
        #[arg(long)]
        out: PathBuf,
        /// Where the exporting program is built, kept between runs
        /// (default: $XDG_CACHE_HOME/blaze/onnx-export).
        #[arg(long)]
        cache: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.command {
        Some(Command::Export { source, model, weights, out, cache }) => {
            let cache = cache.unwrap_or_else(blaze_onnx::export::default_cache);
            let req = blaze_onnx::export::ExportRequest { source, model, weights, out, cache };
            match blaze_onnx::export::export_source(&req) {
                Ok(said) => {
                    println!("wrote `{}` to {} ({said})", req.model, req.out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: export: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        None => {
            let (Some(model), Some(out)) = (args.model, args.out) else {
                unreachable!("clap requires MODEL and --out without a subcommand")
            };
            import(&model, &out, args.weights, args.name.as_deref())
        }
    }
}

fn import(model: &std::path::Path, out: &std::path::Path, weights: Option<PathBuf>, name: Option<&str>) -> ExitCode {
    let weights = weights.unwrap_or_else(|| out.with_extension("safetensors"));
    let result = blaze_onnx::import_file(model, name).and_then(|import| {
        import.write(out, &weights)?;
        Ok(import)
    });
    match result {
        Ok(import) => {
            let n: usize = import.weights.iter().map(|(_, _, v)| v.len()).sum();
            println!(
                "wrote `{}` to {} and {} tensors ({n} values) to {}",
                import.name,
                out.display(),
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
