//! Times one `read_csv` of a file and reports the process's peak memory,
//! for `bench/csv_read.py`, which alternates it with NumPy's `loadtxt`.
//!
//! ```text
//! cargo run --release -p blaze-runtime --example csv_read -- FILE TARGET
//! cargo run --release -p blaze-runtime --example csv_read -- --parse FILE
//! ```
//!
//! The first prints `seconds peak_bytes start_bytes data_bytes`: the read's
//! time, the peak resident memory (VmHWM), the resident memory before the
//! read (VmRSS), and the bytes of the dataset it returned. The second
//! times parsing every cell of the file as f32 directly and as f64 then
//! narrowed, and counts the cells where the two differ.

use std::path::Path;
use std::time::Instant;

use blaze_data::{CsvOptions, Dataset, read_csv};

/// A `/proc/self/status` figure in bytes (it is given in kB).
fn status(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).unwrap_or(0) * 1024
}

fn read(path: &Path, target: &str) {
    let start = status("VmRSS:");
    let clock = Instant::now();
    let table = read_csv(path, &CsvOptions::real(target)).unwrap_or_else(|e| panic!("{e}"));
    let seconds = clock.elapsed().as_secs_f64();
    let rows = table.dataset.len();
    let data = (rows * table.schema.input_names().len() + rows) * 4;
    println!("{seconds:.4} {} {start} {data}", status("VmHWM:"));
}

fn parse(path: &Path) {
    let mut reader = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{e}"));
    let mut cells = Vec::new();
    let mut record = csv::StringRecord::new();
    while reader.read_record(&mut record).unwrap_or_else(|e| panic!("{e}")) {
        cells.extend(record.iter().map(str::to_owned));
    }
    let time = |f: &dyn Fn(&str) -> f32| {
        let clock = Instant::now();
        let values: Vec<f32> = cells.iter().map(|c| f(c)).collect();
        (clock.elapsed().as_secs_f64(), values)
    };
    let (direct, a) = time(&|c| c.parse::<f32>().unwrap_or(f32::NAN));
    let (narrowed, b) = time(&|c| c.parse::<f64>().map_or(f32::NAN, |v| v as f32));
    let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
    println!("{} cells: parse::<f32> {direct:.3} s, parse::<f64> as f32 {narrowed:.3} s, {differ} differ", cells.len());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, file] if flag == "--parse" => parse(Path::new(file)),
        [file, target] => read(Path::new(file), target),
        _ => eprintln!("usage: csv_read FILE TARGET | csv_read --parse FILE"),
    }
}
