//! `blaze-onnx export`: a `#[model]` in a Rust source file, with its
//! weights, as an ONNX file. A model is Rust code, so the command compiles
//! it: it writes a small crate that includes the source file as a module
//! and depends on the Blaze checkout this tool was built from, builds it
//! with cargo (in a cache folder kept between runs, so only the first
//! export compiles Blaze), and runs it on the weights and the output path;
//! the program loads the weights and calls `blaze::export::save_onnx`.
//! Each source file and model has its own crate in the cache (named by a
//! digest of both), so exports running at once do not overwrite each
//! other's; they share one target folder, which cargo locks.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What `blaze-onnx export` was asked.
#[derive(Clone, Debug)]
pub struct ExportRequest {
    /// The Rust file that defines the model (it may use `blaze` and `std`
    /// only; a `fn main` in it is ignored).
    pub source: PathBuf,
    /// The model's type name in that file.
    pub model: String,
    /// Its weights, as `blaze::record::save_model` writes them (a model
    /// initialised from seed 0 when none are given).
    pub weights: Option<PathBuf>,
    /// The ONNX file to write.
    pub out: PathBuf,
    /// Where the crate is written and built (kept, so that later exports
    /// reuse the build).
    pub cache: PathBuf,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The request names something that cannot work.
    #[error("{0}")]
    Request(String),
    /// Cargo could not build the program (what it printed follows).
    #[error(
        "{source_file}: could not build the exporting program (the file may use crates other than blaze, or `{model}` may not be a `pub` #[model] there):\n{output}"
    )]
    Build {
        /// The model's source file.
        source_file: PathBuf,
        /// The model's name.
        model: String,
        /// Cargo's messages.
        output: String,
    },
    /// The program ran and failed: the weights did not load, or the file
    /// could not be written.
    #[error("{0}")]
    Run(String),
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io { path: path.to_path_buf(), source }
}

/// The Blaze checkout this tool was built from.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Whether `name` is a Rust type name the program may write.
fn is_type_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn absolute(path: &Path) -> Result<PathBuf, ExportError> {
    std::path::absolute(path).map_err(io(path))
}

/// A string as a Rust literal.
fn literal(path: &Path) -> String {
    format!("{:?}", path.to_string_lossy())
}

/// Compiles the model's source into a program that writes its ONNX file,
/// and runs it. Returns what the program printed.
pub fn export_source(req: &ExportRequest) -> Result<String, ExportError> {
    if !is_type_name(&req.model) {
        return Err(ExportError::Request(format!("`{}` is not a Rust type name (--model)", req.model)));
    }
    let source = absolute(&req.source)?;
    if !source.is_file() {
        return Err(ExportError::Io {
            path: req.source.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such source file"),
        });
    }
    let weights = req.weights.as_deref().map(absolute).transpose()?;
    if let Some(w) = &weights
        && !w.is_file()
    {
        return Err(ExportError::Io {
            path: w.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such weights file"),
        });
    }
    let out = absolute(&req.out)?;
    let blaze = checkout();
    if !blaze.join("Cargo.toml").is_file() || !blaze.join("export").is_dir() {
        return Err(ExportError::Request(format!(
            "the Blaze checkout this tool was built from ({}) is gone; reinstall it from a checkout",
            blaze.display()
        )));
    }
    let package = format!("blaze-onnx-export-{}", digest(&format!("{}\0{}", source.display(), req.model)));
    let dir = req.cache.join("crates").join(&package);
    std::fs::create_dir_all(dir.join("src")).map_err(io(&dir))?;
    let manifest = format!(
        "[package]\nname = \"{package}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nblaze = {{ path = {} }}\n\n[workspace]\n",
        literal(&blaze)
    );
    write(&dir.join("Cargo.toml"), &manifest)?;
    // The checkout's versions of every crate, so nothing new is fetched.
    if let Ok(lock) = std::fs::read(blaze.join("Cargo.lock")) {
        std::fs::write(dir.join("Cargo.lock"), lock).map_err(io(&dir))?;
    }
    let main = format!(
        "//! Written by `blaze-onnx export`: loads `{model}` and writes it as ONNX.\n\n\
         #[path = {src}]\n#[allow(dead_code, unused_imports)]\nmod model_source;\n\n\
         /// Arguments: the weights (empty: none) and the ONNX file.\n\
         fn run() -> Result<usize, Box<dyn std::error::Error>> {{\n    \
         let args: Vec<String> = std::env::args().collect();\n    \
         let mut model = model_source::{model}::<blaze::Cpu>::new_seeded(0, &blaze::CpuDevice);\n    \
         if !args[1].is_empty() {{\n        \
         blaze::record::load_model(&mut model, std::path::Path::new(&args[1]))?;\n    }}\n    \
         blaze::export::save_onnx(&model, &args[2])?;\n    \
         Ok(blaze::export::to_graph(&model).op_counts().iter().map(|(_, n)| n).sum())\n}}\n\n\
         fn main() -> std::process::ExitCode {{\n    \
         match run() {{\n        \
         Ok(n) => {{ println!(\"{{n}} operators\"); std::process::ExitCode::SUCCESS }}\n        \
         Err(e) => {{ eprintln!(\"{{e}}\"); std::process::ExitCode::FAILURE }}\n    }}\n}}\n",
        model = req.model,
        src = literal(&source),
    );
    write(&dir.join("src/main.rs"), &main)?;
    let target = req.cache.join("target");
    let build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .map_err(io(Path::new("cargo")))?;
    if !build.status.success() {
        return Err(ExportError::Build {
            source_file: req.source.clone(),
            model: req.model.clone(),
            output: String::from_utf8_lossy(&build.stderr).into_owned(),
        });
    }
    let program = target.join("debug").join(format!("{package}{}", std::env::consts::EXE_SUFFIX));
    let weights = weights.map_or_else(std::ffi::OsString::new, PathBuf::into_os_string);
    let run = Command::new(&program).arg(weights).arg(&out).output().map_err(io(&program))?;
    if !run.status.success() {
        return Err(ExportError::Run(String::from_utf8_lossy(&run.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&run.stdout).trim().to_string())
}

/// FNV-1a of `text`, in hex.
fn digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn write(path: &Path, text: &str) -> Result<(), ExportError> {
    // Unchanged files keep their times, so cargo rebuilds only what changed.
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(io(path))
}

/// Where exports build by default: the user's cache folder.
pub fn default_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("blaze").join("onnx-export")
}
