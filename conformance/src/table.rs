//! The op table against PyTorch: every elementwise op of one tensor and
//! its derivative at points where naive formulas lose digits or overflow.

use super::{FLOATS, assert_close, tensor};
use blaze_runtime::{Backend, DType, Tensor, UnaryOp, adjoint};

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

/// Every binary op of the op table with a float body, in f32 and f64,
/// computes the bits its kernel does where a fused group calls it (so
/// fusing an op changes nothing), broadcast and against a number; and
/// `pow`, `maximum` and `minimum` keep PyTorch's values where naive forms
/// differ: negative bases, `x^0 = 1` even for NaN, `0^-1 = inf`, NaN in
/// either operand of a maximum.
pub fn binary_ops_match_their_kernels<B: Backend>(dev: &B::Device) {
    use blaze_runtime::BinaryOp;
    use blaze_runtime::binary::BinaryVisitor;
    use blaze_runtime::kernel::{Arg, Elementwise, call, partial};

    /// The op's kernel called on `a` and `b`, as a fused group calls it.
    struct Fused<'a, B: Backend>(&'a Tensor<B, 2>, &'a Tensor<B, 2>);
    impl<B: Backend> BinaryVisitor for Fused<'_, B> {
        type Out = Tensor<B, 2>;
        fn visit<K: Elementwise>(self) -> Tensor<B, 2> {
            call::<K, B, 2>(&[Arg::Tensor(self.0), Arg::Tensor(self.1)])
        }
    }
    let nan = f64::NAN;
    let a0 = [-2.0, -2.0, -2.0, nan, 0.0, 0.0, 3.0, nan, 1.5, -0.5, 4.0, 2.0];
    let b0 = [3.0, 2.0, 0.5, 0.0, -1.0, 2.0, nan, 1.0, 1.5, -3.0, 0.25, -2.0];
    let bits = |t: &Tensor<B, 2>| {
        super::values(t).iter().map(|v| if v.is_nan() { u64::MAX } else { v.to_bits() }).collect::<Vec<_>>()
    };
    for dtype in FLOATS {
        let (a, b) = (tensor::<B, 2>(&a0, [2, 6], dtype, dev), tensor::<B, 2>(&b0, [2, 6], dtype, dev));
        let row = tensor::<B, 2>(&b0[..6], [1, 6], dtype, dev);
        for op in BinaryOp::ALL {
            let Some(fused) = op.visit(Fused(&a, &b)) else { continue };
            let what = format!("{} ({dtype})", op.name());
            assert_eq!(bits(&a.binary(op, &b)), bits(&fused), "{what}: the op and its kernel");
            let broadcast = op.visit(Fused(&a, &row.expand([2, 6]))).expect("a float op");
            assert_eq!(bits(&a.binary(op, &row)), bits(&broadcast), "{what}, broadcast");
            let number = op.visit(Fused(&a, &Tensor::<B, 2>::full_dtype([2, 6], 1.5, dtype, dev))).expect("a float op");
            assert_eq!(bits(&a.binary_scalar(op, 1.5)), bits(&number), "{what} with a number");
        }
        // C's `pow` (the CPU's): zeros, infinities and NaN included.
        let inf = f64::INFINITY;
        let (pa, pb): (Vec<f64>, Vec<f64>) = [
            (-2.0, 3.0),
            (-2.0, 0.5),
            (nan, 0.0),
            (1.0, nan),
            (0.0, -1.0),
            (-0.0, -3.0),
            (-0.0, 3.0),
            (inf, -2.0),
            (-inf, 3.0),
            (-1.0, inf),
            (0.5, -inf),
            (2.0, -inf),
            (3.0, nan),
            (1.5, 1.5),
            (-0.5, -3.0),
            (4.0, 0.25),
            (-2.0, 1e10),
            (2.0, 200.0),
        ]
        .into_iter()
        .unzip();
        let n = pa.len();
        let want: Vec<f64> = pa.iter().zip(&pb).map(|(&x, &y)| x.powf(y)).collect();
        let got = tensor::<B, 1>(&pa, [n], dtype, dev).binary(BinaryOp::Pow, &tensor::<B, 1>(&pb, [n], dtype, dev));
        let what = format!("pow ({dtype}) of {pa:?} by {pb:?}");
        assert_close(&what, &got, &rounded(&want, dtype), &[n], (1e-6, 0.0));
        let signs = |t: &Tensor<B, 1>| super::values(t).iter().map(|v| v.is_sign_negative()).collect::<Vec<_>>();
        let want_signs: Vec<bool> = want.iter().map(|v| v.is_sign_negative()).collect();
        assert_eq!(signs(&got)[4..9], want_signs[4..9], "{what}: the signs of zeros and infinities");
        // The kernel's partials, which a fused group's backward reads, are
        // PyTorch's at a zero base and a zero exponent too.
        let (za, zb) = (
            tensor::<B, 1>(&[0.0, 2.0, 0.0, 3.0], [4], dtype, dev),
            tensor::<B, 1>(&[2.0, 3.0, 0.0, 0.5], [4], dtype, dev),
        );
        let args = [Arg::Tensor(&za), Arg::Tensor(&zb)];
        let want_a = [0.0, 12.0, 0.0, 0.5 / 3f64.sqrt()];
        let want_b = [0.0, 8.0 * 2f64.ln(), 0.0, 3f64.sqrt() * 3f64.ln()];
        let pow_d = |i| partial::<blaze_runtime::binary::pow::Kernel, B, 1>(i, &args);
        assert_close(&format!("d pow/da ({dtype})"), &pow_d(0), &rounded(&want_a, dtype), &[4], (1e-6, 1e-6));
        assert_close(&format!("d pow/db ({dtype})"), &pow_d(1), &rounded(&want_b, dtype), &[4], (1e-6, 1e-6));
        let want_max = [3.0, 2.0, 0.5, nan, 0.0, 2.0, nan, nan, 1.5, -0.5, 4.0, 2.0];
        assert_close(&format!("maximum ({dtype})"), &a.binary(BinaryOp::Maximum, &b), &want_max, &[2, 6], (0.0, 0.0));
        let want_min = [-2.0, -2.0, -2.0, nan, -1.0, 0.0, nan, nan, 1.5, -3.0, 0.25, -2.0];
        assert_close(&format!("minimum ({dtype})"), &a.binary(BinaryOp::Minimum, &b), &want_min, &[2, 6], (0.0, 0.0));
    }
}

/// Every comparison of the table equals its operator (`Comparison::holds`,
/// IEEE 754 for floats) on zeros of both signs, infinities and NaN, in
/// every dtype, broadcast and with a number; with a NaN operand it is the
/// entry's `unordered` value.
pub fn comparisons_match_the_table<B: Backend>(dev: &B::Device) {
    use blaze_runtime::CmpOp;
    use blaze_runtime::compare::{CmpVisitor, Comparison};

    /// The comparison of `a` and `b` by its operator.
    struct Holds(f64, f64);
    impl CmpVisitor for Holds {
        type Out = bool;
        fn visit<K: Comparison>(self) -> bool {
            K::holds(self.0, self.1)
        }
    }
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let points = [-inf, -2.0, -0.0, 0.0, 1.5, inf, nan];
    let (a0, b0): (Vec<f64>, Vec<f64>) = points.iter().flat_map(|&a| points.iter().map(move |&b| (a, b))).unzip();
    for dtype in FLOATS.into_iter().chain([DType::I64, DType::Bool]) {
        // Integers and bools keep the points they can hold.
        let keep = |v: f64| match dtype {
            DType::I64 => v.is_finite(),
            DType::Bool => v == 0.0 || v == 1.5,
            _ => true,
        };
        let cast = |v: f64| if dtype == DType::Bool { f64::from(u8::from(v != 0.0)) } else { v };
        let (a0, b0): (Vec<f64>, Vec<f64>) =
            a0.iter().zip(&b0).filter(|&(&a, &b)| keep(a) && keep(b)).map(|(&a, &b)| (cast(a), cast(b))).unzip();
        let n = a0.len();
        let (a, b) = (tensor::<B, 1>(&a0, [n], dtype, dev), tensor::<B, 1>(&b0, [n], dtype, dev));
        for op in CmpOp::ALL {
            let want: Vec<bool> = a0.iter().zip(&b0).map(|(&x, &y)| op.visit(Holds(x, y))).collect();
            let what = format!("{} ({dtype}) of {a0:?} and {b0:?}", op.name());
            assert_eq!(a.compare(op, &b).to_vec::<bool>(), want, "{what}");
            for (i, (&x, &y)) in a0.iter().zip(&b0).enumerate() {
                if x.is_nan() || y.is_nan() {
                    assert_eq!(want[i], op.unordered(), "{what}: unordered at {i}");
                }
            }
            let s = b0[n / 2];
            let with_number: Vec<bool> = a0.iter().map(|&x| op.visit(Holds(x, s))).collect();
            assert_eq!(a.compare_scalar(op, s).to_vec::<bool>(), with_number, "{what} with the number {s}");
            let row = tensor::<B, 2>(&[s], [1, 1], dtype, dev);
            let broadcast = a.reshape([n, 1]).compare(op, &row).reshape([n]);
            assert_eq!(broadcast.to_vec::<bool>(), with_number, "{what} broadcast against {s}");
        }
    }
}

/// Every reduction of the table over every dim, in every float dtype and
/// i64, against its step run in order in f64 (a fold from 0; a
/// selection's first winner, a NaN winning): short and long rows (the
/// vector and tree paths), with ties, infinities and NaN (zeros of both
/// signs are in the rows; their sign is not compared).
pub fn reductions_match_the_table<B: Backend>(dev: &B::Device) {
    use super::reference;
    use blaze_runtime::ReduceOp;
    use blaze_runtime::reduction::{ReduceVisitor, Reduction};

    /// The reduction of a row, one element after another.
    struct InOrder<'a>(&'a [f64]);
    impl ReduceVisitor for InOrder<'_> {
        type Out = f64;
        fn visit<R: Reduction>(self) -> f64 {
            let row = self.0;
            if !R::SELECTS {
                return row.iter().fold(0.0, |acc, &v| R::step(acc, v));
            }
            let at = (1..row.len()).fold(0, |at, j| if R::beats(row[j], row[at]) { j } else { at });
            if R::POSITION { at as f64 } else { row[at] }
        }
    }
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    // Small values whose sums are exact in every dtype; ties on purpose.
    let finite = [-2.0, -0.0, 0.0, 1.5, 3.0, 1.5, -2.0];
    let edges = [-inf, 3.0, -0.0, inf, 0.0, 1.5, nan, 3.0, -inf, 1.5, nan];
    for shape in [[3, 7, 2], [2, 300, 1]] {
        let count = shape.iter().product::<usize>();
        for (points, with_edges) in [(&finite[..], false), (&edges[..], true)] {
            // A spread that puts the points in every order.
            let x: Vec<f64> = (0..count).map(|i| points[(i * 5 + i / 7) % points.len()]).collect();
            for dtype in FLOATS.into_iter().chain((!with_edges).then_some(DType::I64)) {
                let t = tensor::<B, 3>(&x, shape, dtype, dev);
                // The points as the dtype holds them (i64 truncates).
                let x = super::values(&t);
                for op in ReduceOp::ALL {
                    for dim in 0..3 {
                        let got: Tensor<B, 3> = Tensor::from_storage(B::reduce(op, t.storage(), dim));
                        let want = reference::reduce(&x, &shape, dim, |row| op.visit(InOrder(row)));
                        let mut out = shape;
                        out[dim] = 1;
                        let what = format!("{} over dim {dim} of {shape:?} ({dtype})", op.name());
                        assert_close(&what, &got, &want, &out, (0.0, 0.0));
                        if op.position() {
                            assert_eq!(got.dtype(), DType::I64, "{what}");
                        }
                        if !op.selects() {
                            // A fold from 0: a sum of -0 is +0 (as PyTorch's),
                            // whichever dim it runs along.
                            let zeros = tensor::<B, 3>(&vec![-0.0; count], shape, dtype, dev);
                            let sums: Tensor<B, 3> = Tensor::from_storage(B::reduce(op, zeros.storage(), dim));
                            let signs = super::values(&sums).iter().any(|v| v.is_sign_negative());
                            assert!(!signs, "{} of -0 over dim {dim} of {shape:?} ({dtype}): -0", op.name());
                        }
                    }
                }
            }
        }
    }
}

/// The tape's gradients of every float binary op are the table's
/// partials (`g ∂K/∂a`, `g ∂K/∂b`, each summed to its operand's shape),
/// those it computes in closed form (`g`, `-g`, `g b`, `g / b`, ...)
/// included, broadcast and at ties, zeros and NaN.
pub fn tape_binary_gradients_are_the_tables<B: Backend>(dev: &B::Device) {
    use blaze_runtime::BinaryOp;
    use blaze_runtime::binary::BinaryVisitor;
    use blaze_runtime::kernel::{Arg, Elementwise, partial};

    /// The table's partials of the op's kernel at `a` and `b`.
    struct Partials<'a, B: Backend>(&'a Tensor<B, 2>, &'a Tensor<B, 2>);
    impl<B: Backend> BinaryVisitor for Partials<'_, B> {
        type Out = [Tensor<B, 2>; 2];
        fn visit<K: Elementwise>(self) -> [Tensor<B, 2>; 2] {
            let args = [Arg::Tensor(self.0), Arg::Tensor(self.1)];
            [0, 1].map(|i| partial::<K, B, 2>(i, &args))
        }
    }
    let nan = f64::NAN;
    let a0 = [1.5, -2.0, 0.0, 3.0, nan, 0.5, -1.0, 2.0, 0.25, -0.5, 4.0, 1.0];
    let b0 = [1.5, 0.5, 2.0, -3.0, 1.0, 0.0];
    let g0 = [0.3, -1.2, 0.7, 2.0, -0.4, 1.1, 0.9, -0.6, 0.2, 1.5, -2.5, 0.8];
    for dtype in FLOATS {
        let (a, b, g) = (
            tensor::<B, 2>(&a0, [2, 6], dtype, dev),
            tensor::<B, 2>(&b0, [1, 6], dtype, dev),
            tensor::<B, 2>(&g0, [2, 6], dtype, dev),
        );
        for op in BinaryOp::ALL {
            let Some([pa, pb]) = op.visit(Partials(&a, &b.expand([2, 6]))) else { continue };
            let [da, db] = adjoint::binary::<B>(op, a.storage(), b.storage(), g.storage());
            let (da, db) = (Tensor::<B, 2>::from_storage(da), Tensor::<B, 2>::from_storage(db));
            let what = |by: &str| format!("d {}/d{by} ({dtype})", op.name());
            let want_a = super::values(&g.mul(&pa));
            let want_b = super::values(&g.mul(&pb).sum_dim(0));
            assert_close(&what("a"), &da, &want_a, &[2, 6], (1e-6, 1e-6));
            assert_close(&what("b"), &db, &want_b, &[1, 6], (1e-6, 1e-6));
        }
    }
}
