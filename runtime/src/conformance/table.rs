//! The op table against PyTorch: every elementwise op of one tensor and
//! its derivative at points where naive formulas lose digits or overflow.

use super::{FLOATS, assert_close, tensor};
use crate::{Backend, DType, Tensor, UnaryOp, adjoint};

/// One op's record in `unary_torch.txt`: its name and parameters, the
/// points, PyTorch's values there and its derivatives.
struct Record {
    name: String,
    params: Vec<f64>,
    x: Vec<f64>,
    y: Vec<f64>,
    dy: Vec<f64>,
}

/// The records of `unary_torch.txt`, written by
/// `tests/fixtures/make_unary_fixture.py` (PyTorch, float64).
fn records() -> Vec<Record> {
    let mut out = Vec::new();
    let mut lines = include_str!("unary_torch.txt").lines().filter(|l| !l.starts_with('#'));
    let numbers = |line: Option<&str>, tag: &str| -> Vec<f64> {
        let line = line.unwrap_or_else(|| panic!("unary_torch.txt: no `{tag}` line"));
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some(tag), "unary_torch.txt: `{line}`");
        words.map(|w| w.parse().unwrap_or_else(|e| panic!("unary_torch.txt: `{w}`: {e}"))).collect()
    };
    while let Some(head) = lines.next() {
        let mut words = head.split_whitespace();
        assert_eq!(words.next(), Some("op"), "unary_torch.txt: `{head}`");
        let name = words.next().expect("an op's name").to_owned();
        let params = words.map(|w| w.parse().expect("a parameter")).collect();
        let (x, y, dy) = (numbers(lines.next(), "x"), numbers(lines.next(), "y"), numbers(lines.next(), "dy"));
        out.push(Record { name, params, x, y, dy });
    }
    out
}

/// `v` rounded to `dtype`.
fn rounded(v: &[f64], dtype: DType) -> Vec<f64> {
    match dtype {
        DType::F32 => v.iter().map(|&x| f64::from(x as f32)).collect(),
        _ => v.to_vec(),
    }
}

/// Every op of the op table with a float body, in f32 and f64: its value
/// (the op as a tensor method runs it) and its derivative (the adjoint
/// kernel the tape, the layers and `#[model]`'s backward run) against
/// PyTorch's, rounded to the dtype, within 1e-5 relative and absolute;
/// NaN and infinities where PyTorch has them.
pub fn unary_ops_match_pytorch<B: Backend>(dev: &B::Device) {
    let records = records();
    for op in blaze_spec::ops::UNARY.iter().filter(|op| !op.body.is_empty()) {
        assert!(
            records.iter().any(|r| r.name == op.name),
            "`{}` has no PyTorch record: run make_unary_fixture.py",
            op.name
        );
    }
    for r in &records {
        let op = UnaryOp::from_name(&r.name, &r.params)
            .unwrap_or_else(|| panic!("unary_torch.txt: `{}` with {:?} is no op of the table", r.name, r.params));
        let n = r.x.len();
        for dtype in FLOATS {
            let x: Tensor<B, 1> = tensor(&r.x, [n], dtype, dev);
            let y = x.unary(op);
            let ones = Tensor::<B, 1>::ones_like(&x);
            let dy = Tensor::<B, 1>::from_storage(adjoint::unary::<B>(op, x.storage(), y.storage(), ones.storage()));
            let what = |of: &str| format!("{of}({}{:?}) in {dtype} at {:?}", r.name, r.params, r.x);
            assert_close(&what(&r.name), &y, &rounded(&r.y, dtype), &[n], (1e-5, 1e-5));
            assert_close(&what("d/dx "), &dy, &rounded(&r.dy, dtype), &[n], (1e-5, 1e-5));
        }
    }
}
