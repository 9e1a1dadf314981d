//! Causal masks over attention scores: `Add` or `Where` of a triangle that
//! hides exactly the later keys is `masked_fill(causal_mask(T), v)`.

use super::*;

/// One value of a table known while converting.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Fill {
    Num(f64),
    Bool(bool),
}

/// `[rows, cols]`: `on` where `j - i <= diagonal` (lower) or
/// `j - i >= diagonal` (upper), `off` elsewhere; `i` the row, `j` the column.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Tri {
    /// Unit dims in front (a registered `[1, 1, n, n]` mask).
    pub(super) lead: usize,
    pub(super) rows: Dim,
    pub(super) cols: Dim,
    pub(super) lower: bool,
    pub(super) diagonal: i64,
    pub(super) on: Fill,
    pub(super) off: Fill,
}

/// A set of positions `(i, j)` of a triangle, by `j - i`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Region {
    Everywhere,
    Nowhere,
    AtLeast(i64),
    AtMost(i64),
}

impl Tri {
    pub(super) fn map(&self, f: impl Fn(&Fill) -> Fill) -> Tri {
        Tri { on: f(&self.on), off: f(&self.off), ..self.clone() }
    }

    /// Where the value satisfies `pred`.
    pub(super) fn region(&self, pred: impl Fn(&Fill) -> bool) -> Region {
        match (pred(&self.on), pred(&self.off), self.lower) {
            (true, true, _) => Region::Everywhere,
            (false, false, _) => Region::Nowhere,
            (true, false, true) => Region::AtMost(self.diagonal),
            (true, false, false) => Region::AtLeast(self.diagonal),
            (false, true, true) => Region::AtLeast(self.diagonal + 1),
            (false, true, false) => Region::AtMost(self.diagonal - 1),
        }
    }

    /// The size of a causal mask whose masked positions (each query's
    /// later keys, `j > i`) are exactly those where `pred` holds.
    pub(super) fn causal(&self, pred: impl Fn(&Fill) -> bool) -> Option<&Dim> {
        (self.rows == self.cols && self.region(pred) == Region::AtLeast(1)).then_some(&self.rows)
    }

    /// The table a constant holds, if it is `tril(ones(n, n))` (of floats
    /// or bools) behind unit dims, as a model registers its causal mask.
    pub(super) fn of_constant(d: &Data) -> Option<Tri> {
        let r = d.dims.len();
        if r < 2 || d.dims[..r - 2].iter().any(|&x| x != 1) || d.dims[r - 1] != d.dims[r - 2] {
            return None;
        }
        let n = d.dims[r - 1];
        if n < 2 {
            return None;
        }
        // One value on and below the diagonal, another above: a registered
        // `tril` of ones, or the additive mask an export at a fixed length
        // folds into a constant.
        let v = d.as_f64();
        let (on, off) = (v[0], v[1]);
        let tril = on != off && (0..n).all(|i| (0..n).all(|j| v[i * n + j] == if j <= i { on } else { off }));
        let (on, off) = match d.values {
            Values::Bool(_) => (Fill::Bool(on != 0.0), Fill::Bool(off != 0.0)),
            _ => (Fill::Num(on), Fill::Num(off)),
        };
        let n = Dim::known(n as i64);
        tril.then(|| Tri { lead: r - 2, rows: n.clone(), cols: n, lower: true, diagonal: 0, on, off })
    }
}

/// `op` (`Less`, `LessOrEqual`, `Greater`, `GreaterOrEqual`) of positions
/// `a` and `b` of one length, one a column (`[.., T, 1]`: the query `i`)
/// and the other a row (`[.., 1, T]`: the key `j`), as a triangle of bools
/// by `j - i`.
pub(super) fn compare_positions(op: &str, a: &Val, b: &Val) -> R<Tri> {
    let (Val::Positions { lead: la, len: a_len, trail: ta }, Val::Positions { lead: lb, len: b_len, trail: tb }) = (a, b)
    else {
        return Err("compares values other than positions".into());
    };
    let (ra, rb) = (la + 1 + ta, lb + 1 + tb);
    let split = a_len != b_len || ra != rb || ra < 2;
    // Which side is the key: the row of positions, along the last dim.
    let key_first = match (ta, tb) {
        (0, 1) => true,
        (1, 0) => false,
        _ => {
            return Err(format!(
                "compares positions laid out as {} and {}; a causal mask compares a column with a row",
                show(&a.dims().unwrap_or_default()),
                show(&b.dims().unwrap_or_default())
            ));
        }
    };
    if split {
        return Err("compares positions of different lengths or ranks".into());
    }
    // With `d = j - i`: key op query, or query op key.
    let (lower, diagonal) = match (op, key_first) {
        ("LessOrEqual", true) | ("GreaterOrEqual", false) => (true, 0),
        ("Less", true) | ("Greater", false) => (true, -1),
        ("GreaterOrEqual", true) | ("LessOrEqual", false) => (false, 0),
        ("Greater", true) | ("Less", false) => (false, 1),
        _ => return Err(format!("compares positions with `{op}`")),
    };
    let t = a_len.clone();
    Ok(Tri { lead: ra - 2, rows: t.clone(), cols: t, lower, diagonal, on: Fill::Bool(true), off: Fill::Bool(false) })
}

/// Triangle `tri` expanded to `shape` (ONNX's two-way broadcast): the
/// same table behind more leading dims, which masking broadcasts anyway.
pub(super) fn expanded(tri: &Tri, shape: &[Dim]) -> R<Tri> {
    let r = shape.len();
    let fits = |d: &Dim, size: &Dim| d == size || d.value() == Some(1);
    if r < 2 || !fits(&shape[r - 2], &tri.rows) || !fits(&shape[r - 1], &tri.cols) {
        return Err(format!("expands a causal mask of {} positions to {}", tri.rows, show(shape)));
    }
    Ok(Tri { lead: tri.lead.max(r - 2), ..tri.clone() })
}

/// A number, from a one-element constant or one value expanded.
pub(super) fn number(v: &Val) -> Option<f64> {
    match v {
        Val::Const(d) => d.scalar(),
        Val::Filled(Fill::Num(x), _) => Some(*x),
        _ => None,
    }
}

impl<'g> Lower<'g> {
    /// `x.masked_fill(causal_mask(T), v)` for the tensor input `ti`.
    pub(super) fn mask(&mut self, n: &Node, ti: usize, tri: &Tri, v: f64) -> R<()> {
        let t = self.plain(n, ti)?;
        let r = t.under.len();
        if r < 3 || t.under[r - 1] != tri.cols || t.under[r - 2] != tri.rows {
            return Err(format!(
                "masks scores of shape {} with a causal mask of {} positions",
                show(&t.shape()),
                tri.rows
            ));
        }
        let expr = format!("{}.masked_fill(causal_mask({}), {})", t.name, dim_code(&tri.rows)?, float_lit(v));
        self.emit(n, 0, expr, t.under.clone(), None, t.dtype)
    }

    /// `Where(cond, a, b)`: between numbers, a new table; between a tensor
    /// and a number, by a causal mask, `masked_fill`.
    pub(super) fn select(&mut self, n: &Node) -> R<()> {
        let (a, b) = (self.input_val(n, 1)?.clone(), self.input_val(n, 2)?.clone());
        if let (Some(c), Some(x), Some(y)) = (self.input_val(n, 0)?.known(), a.known(), b.known()) {
            // Shape arithmetic: `where(shape == -1, 1, shape)`.
            let v = super::ops::fold_where(&c, &x, &y)?;
            let v = match (&a, &b, v.as_i64()) {
                (Val::Shape(_), _, Some(k)) | (_, Val::Shape(_), Some(k)) => {
                    Val::Shape(k.into_iter().map(Dim::known).collect())
                }
                _ => Val::Const(v),
            };
            self.set(n, 0, v);
            return Ok(());
        }
        let shapes = matches!(a, Val::Shape(_)) || matches!(b, Val::Shape(_));
        if let (Some(c), true) = (self.input_val(n, 0)?.known(), shapes) {
            // Between sizes by a known condition, named sizes included.
            let (x, y) = (self.ints(n, 1)?, self.ints(n, 2)?);
            let c = c.as_f64();
            if c.len() != x.len() || x.len() != y.len() {
                return Err(format!(
                    "selects between shapes of {} and {} sizes by {} values",
                    x.len(),
                    y.len(),
                    c.len()
                ));
            }
            let picked = c.iter().zip(x.into_iter().zip(y)).map(|(&c, (x, y))| if c != 0.0 { x } else { y }).collect();
            self.set(n, 0, Val::Shape(picked));
            return Ok(());
        }
        match self.input_val(n, 0)? {
            // A condition of one value picks one side, broadcast to the
            // shape of all three: a number becomes a fill of that shape; a
            // tensor is taken when it has the shape already.
            Val::Filled(Fill::Bool(c), cond) => {
                let (c, cond) = (*c, cond.clone());
                let (pick, other) = if c { (&a, &b) } else { (&b, &a) };
                let shapes = [Some(cond), a.dims(), b.dims()];
                let shape = shapes.iter().flatten().try_fold(Vec::new(), |s, d| broadcast(&s, d))?;
                let v = match (number(pick), pick) {
                    (Some(x), _) => Val::Filled(Fill::Num(x), shape),
                    (None, Val::Tensor(t)) if t.shape() == shape => pick.clone(),
                    _ => {
                        return Err(format!(
                            "selects {} over {} by a condition that always holds or never does; \
                             only a number or a tensor of the whole shape is picked",
                            kind(pick),
                            kind(other)
                        ));
                    }
                };
                self.set(n, 0, v);
                return Ok(());
            }
            // `where(isnan(p), 0, p)` after attention's softmax: Blaze's
            // softmax already weighs a row whose keys are all masked 0.
            Val::SoftmaxNan(p) if number(&a) == Some(0.0) && matches!(&b, Val::Tensor(t) if t.name == p.name) => {
                let p = p.clone();
                self.alias(n, 0, p);
                return Ok(());
            }
            _ => {}
        }
        let Some(cond) = self.input_val(n, 0)?.triangle() else {
            return Err("selects by a condition computed from the data; only a causal mask is converted".into());
        };
        let is_true = |f: &Fill| *f == Fill::Bool(true);
        let is_false = |f: &Fill| *f == Fill::Bool(false);
        match (number(&a), number(&b), &a, &b) {
            (Some(x), Some(y), _, _) => {
                let v = Val::Triangle(cond.map(|f| Fill::Num(if is_true(f) { x } else { y })));
                self.set(n, 0, v);
                Ok(())
            }
            // `scores.masked_fill(mask, v)`: v where the mask holds.
            (Some(x), None, _, Val::Tensor(_)) if cond.causal(is_true).is_some() => self.mask(n, 2, &cond, x),
            (None, Some(y), Val::Tensor(_), _) if cond.causal(is_false).is_some() => self.mask(n, 1, &cond, y),
            _ => Err(format!(
                "selects by {} between {} and {}; a causal mask over scores is converted",
                kind(&Val::Triangle(cond.clone())),
                kind(&a),
                kind(&b)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tri(lower: bool, diagonal: i64, on: bool) -> Tri {
        let t = Dim::named("T");
        Tri { lead: 0, rows: t.clone(), cols: t, lower, diagonal, on: Fill::Bool(on), off: Fill::Bool(!on) }
    }

    #[test]
    fn triangles_name_the_positions_a_causal_mask_hides() {
        let masked = |t: &Tri| t.causal(|f| *f == Fill::Bool(true)).is_some();
        // triu(ones, 1): true above the diagonal, the positions to hide.
        assert!(masked(&tri(false, 1, true)));
        // tril(ones) == 0: false on and below, true above.
        assert!(masked(&tri(true, 0, false)));
        // tril(ones) itself marks the positions to keep, triu(ones) hides the diagonal too.
        assert!(!masked(&tri(true, 0, true)));
        assert!(!masked(&tri(false, 0, true)));
        assert_eq!(tri(true, -1, true).region(|f| *f == Fill::Bool(false)), Region::AtLeast(0));
        let mut cut = tri(false, 1, true);
        cut.cols = Dim::known(8);
        assert!(!masked(&cut), "a mask that is not square is not causal_mask(T)");
    }

    #[test]
    fn a_registered_tril_buffer_is_read_as_a_triangle() {
        let n = 3;
        let ones: Vec<f32> = (0..n * n).map(|k| f32::from(u8::from(k % n <= k / n))).collect();
        let d = Data { dims: vec![1, 1, n, n], values: Values::F32(ones.clone()) };
        let t = Tri::of_constant(&d).expect("tril");
        assert_eq!((t.lead, t.lower, t.diagonal), (2, true, 0));
        let mut upper = ones;
        upper[1] = 1.0;
        assert!(Tri::of_constant(&Data { dims: vec![3, 3], values: Values::F32(upper) }).is_none());
    }
}
