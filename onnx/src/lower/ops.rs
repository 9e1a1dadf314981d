//! The operators that compute: each becomes a layer field or an expression
//! of the forward body.

use super::*;

impl<'g> Lower<'g> {
    pub(super) fn arith(&mut self, n: &'g Node) -> R<()> {
        let op = n.op.as_str();
        let a = self.input_val(n, 0)?.clone();
        let b = self.input_val(n, 1)?.clone();
        // Arithmetic on constants and known sizes (an exporter's shape
        // arithmetic, `chunk`'s `(size + 1) / 2`) is done here; a size stays
        // a size and sizes stay sizes. (Named sizes are combined below.)
        let known = |v: &Val| v.known();
        if let (Some(x), Some(y)) = (known(&a), known(&b)) {
            let v = fold(op, &x, &y, n.int("fmod") == Some(1))?;
            let size = matches!(a, Val::Scalar(_)) || matches!(b, Val::Scalar(_));
            let sizes = matches!(a, Val::Shape(_)) || matches!(b, Val::Shape(_));
            let v = match v.as_i64() {
                Some(k) if sizes => Val::Shape(k.iter().map(|&k| Dim::known(k)).collect()),
                Some(k) if size && k.len() == 1 && v.dims.is_empty() => Val::Scalar(Dim::known(k[0])),
                _ => Val::Const(v),
            };
            self.set(n, 0, v);
            return Ok(());
        }
        if let (Val::Scalar(d), Some(k)) = (&a, known(&b).and_then(|c| c.as_i64()).filter(|k| k.len() == 1))
            && op == "Div"
            && let Some(q) = d.div(&Dim::known(k[0]))
        {
            // A symbolic size divided by a number it is a multiple of.
            self.set(n, 0, Val::Scalar(q));
            return Ok(());
        }
        // A constant causal mask (an export at a fixed length) is a triangle;
        // one number over a shape that does not widen the tensor is the number.
        // An export at a fixed batch writes the batch as its number there.
        let fixed_batch = self.fixed_batch.clone();
        let widens = |f: &Val, other: &Val| match (f.dims(), other) {
            (Some(mut s), Val::Tensor(t)) => {
                let shape = t.shape();
                if s.len() == shape.len() && !s.is_empty() && s.first() == fixed_batch.as_ref() {
                    s[0] = shape[0].clone();
                }
                broadcast(&s, &shape).map_or(true, |b| b != shape)
            }
            _ => true,
        };
        let narrow = |v: Val, other: &Val| match &v {
            Val::Filled(Fill::Num(x), _) if !widens(&v, other) => {
                Val::Const(Data { dims: vec![], values: Values::F32(vec![*x as f32]) })
            }
            _ => v.triangle().map_or(v, Val::Triangle),
        };
        // Adding zeros (the additive form of a mask that hides nothing) or
        // scaling by one changes nothing.
        if let (Val::Tensor(t), Some(x)) = (&a, mask::number(&b))
            && !widens(&b, &a)
            && (x == 0.0 && matches!(op, "Add" | "Sub") || x == 1.0 && matches!(op, "Mul" | "Div"))
        {
            let t = t.clone();
            self.alias(n, 0, t);
            return Ok(());
        }
        let (a, b) = (narrow(a.clone(), &b), narrow(b, &a));
        let sym = match op {
            "Add" => "+",
            "Sub" => "-",
            "Mul" => "*",
            "Div" => "/",
            _ => {
                return Err(format!(
                    "takes the remainder of {} by {}; only constants' remainders are computed",
                    kind(&a),
                    kind(&b)
                ));
            }
        };
        match (&a, &b) {
            (Val::Tensor(_), Val::Const(c)) | (Val::Const(c), Val::Tensor(_)) if c.len() == 1 => {
                let first = matches!(a, Val::Tensor(_));
                let ti = if first { 0 } else { 1 };
                let t = self.tensor(n, ti)?;
                let x = c.scalar().expect("one value");
                let xname = n.inputs[ti].clone();
                let gelu = match op {
                    "Div" if first => (x - std::f64::consts::SQRT_2).abs() < 1e-5,
                    "Mul" => (x - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-5,
                    _ => false,
                };
                if gelu && self.gelu(n, &xname, &t)? {
                    return Ok(());
                }
                let lit = float_lit(x);
                let expr = if first { format!("{} {sym} {lit}", t.name) } else { format!("{lit} {sym} {}", t.name) };
                self.emit(n, 0, expr, t.under.clone(), t.view.clone(), t.dtype)
            }
            (Val::Tensor(_), Val::Tensor(_)) => {
                let (x, y) = (self.plain(n, 0)?, self.plain(n, 1)?);
                let under = broadcast(&x.under, &y.under)?;
                self.emit(n, 0, format!("{} {sym} {}", x.name, y.name), under, None, x.dtype)
            }
            (Val::Tensor(_), Val::Triangle(tri)) | (Val::Triangle(tri), Val::Tensor(_)) if op == "Add" => {
                // The causal mask an exporter adds to attention scores:
                // adding a huge negative and filling with it agree after the
                // softmax.
                let huge = |f: &Fill| matches!(f, Fill::Num(x) if *x <= -1e9);
                let zero = |f: &Fill| matches!(f, Fill::Num(x) if *x == 0.0);
                let fill = [&tri.on, &tri.off].into_iter().find(|f| huge(f)).cloned();
                match (tri.causal(huge), tri.region(zero), fill) {
                    (Some(_), Region::AtMost(0), Some(Fill::Num(v))) => {
                        let ti = if matches!(a, Val::Tensor(_)) { 0 } else { 1 };
                        self.mask(n, ti, tri, v)
                    }
                    _ => Err(format!(
                        "adds {} to scores; only a causal mask is converted",
                        kind(&Val::Triangle(tri.clone()))
                    )),
                }
            }
            // Sizes taken from a shape one at a time (`shape[2:3] * shape[3:4]`).
            (Val::Shape(x), Val::Shape(y)) if op == "Mul" && x.len() == 1 && y.len() == 1 => {
                let v = Val::Shape(vec![x[0].mul(&y[0])]);
                self.set(n, 0, v);
                Ok(())
            }
            (Val::Scalar(x), Val::Scalar(y)) if op == "Mul" => {
                let v = Val::Scalar(x.mul(y));
                self.set(n, 0, v);
                Ok(())
            }
            (Val::Scalar(x), Val::Const(c)) | (Val::Const(c), Val::Scalar(x))
                if op == "Mul" && c.len() == 1 && c.as_i64().is_some() =>
            {
                let k = c.as_i64().expect("integers")[0];
                let v = Val::Scalar(x.mul(&Dim::known(k)));
                self.set(n, 0, v);
                Ok(())
            }
            (Val::Tensor(_), Val::Const(c)) | (Val::Const(c), Val::Tensor(_)) => Err(format!(
                "{} a constant tensor of shape {:?}; a forward body holds numbers and layers, not constant tensors",
                match op {
                    "Add" => "adds",
                    "Sub" => "subtracts",
                    "Mul" => "multiplies by",
                    _ => "divides by",
                },
                c.dims
            )),
            _ => Err(format!(
                "combines {} with {}; the importer follows tensors, numbers and causal masks",
                kind(&a),
                kind(&b)
            )),
        }
    }

    /// `Pow`: a tensor to a constant power is its `powf` (the op table's
    /// `pow` with a number, C's: a negative base to an integer power keeps
    /// its sign), to a computed power `pow(x, y)`, broadcast.
    pub(super) fn pow(&mut self, n: &'g Node) -> R<()> {
        let (a, b) = (self.input_val(n, 0)?.clone(), self.input_val(n, 1)?.clone());
        match (&a, &b) {
            (Val::Tensor(_), Val::Const(c)) if c.len() == 1 => {
                let t = self.tensor(n, 0)?;
                let e = c.scalar().expect("one value");
                let expr = format!("{}.powf({})", t.name, float_lit(e));
                self.emit(n, 0, expr, t.under.clone(), t.view.clone(), t.dtype)
            }
            (Val::Tensor(_), Val::Tensor(_)) => {
                let (x, y) = (self.plain(n, 0)?, self.plain(n, 1)?);
                let under = broadcast(&x.under, &y.under)?;
                self.emit(n, 0, format!("pow({}, {})", x.name, y.name), under, None, x.dtype)
            }
            _ => Err(format!(
                "raises {} to {}; the importer converts a tensor to a number's or a tensor's power",
                kind(&a),
                kind(&b)
            )),
        }
    }

    /// `x * 0.5 * (1 + erf(x / sqrt(2)))` from its division (or its
    /// product by `1 / sqrt(2)`): emits `gelu(x)` for the last product and
    /// skips the rest.
    pub(super) fn gelu(&mut self, n: &'g Node, xname: &str, x: &Tensor) -> R<bool> {
        let Some((ei, erf)) = self.only_reader(&n.outputs[0]) else { return Ok(false) };
        if erf.op != "Erf" {
            return Ok(false);
        }
        let Some((ai, add)) = self.only_reader(&erf.outputs[0]) else { return Ok(false) };
        let one = add.inputs.iter().find(|s| **s != erf.outputs[0]).and_then(|s| match self.vals.get(s) {
            Some(Val::Const(c)) => c.scalar(),
            _ => None,
        });
        if add.op != "Add" || one != Some(1.0) {
            return Ok(false);
        }
        // Up to two products by `x` and 0.5, in either order.
        let mut cur = add.outputs[0].clone();
        let mut taken = vec![ei, ai];
        let (mut seen_x, mut seen_half) = (false, false);
        while !(seen_x && seen_half) {
            let Some((mi, mul)) = self.only_reader(&cur) else { return Ok(false) };
            if mul.op != "Mul" {
                return Ok(false);
            }
            let other = mul.inputs.iter().find(|s| **s != cur).cloned().unwrap_or_else(|| cur.clone());
            if other == xname && !seen_x {
                seen_x = true;
            } else if matches!(self.vals.get(&other), Some(Val::Const(c)) if c.scalar() == Some(0.5)) && !seen_half {
                seen_half = true;
            } else if let Some(&pi) = self.producer.get(&other) {
                // `(x * 0.5) * (1 + erf)`: the other factor is itself `x * 0.5`.
                let p = &self.g.nodes[pi];
                let half_x = p.op == "Mul"
                    && p.inputs.iter().any(|s| s == xname)
                    && p.inputs
                        .iter()
                        .any(|s| matches!(self.vals.get(s), Some(Val::Const(c)) if c.scalar() == Some(0.5)))
                    && self.only_reader(&p.outputs[0]).is_some_and(|(r, _)| r == mi);
                if !half_x || seen_x || seen_half {
                    return Ok(false);
                }
                taken.push(pi);
                seen_x = true;
                seen_half = true;
            } else {
                return Ok(false);
            }
            taken.push(mi);
            cur = mul.outputs[0].clone();
        }
        let last = &self.g.nodes[*taken.last().expect("a product")];
        self.skip.extend(taken);
        self.table_op(last, "gelu", x)?;
        Ok(true)
    }

    pub(super) fn unary(&mut self, n: &Node) -> R<()> {
        // A function of a float constant (attention's `sqrt(head_dim)`) is one too.
        if let Val::Const(Data { dims, values: Values::F32(v) }) = self.input_val(n, 0)? {
            let f: fn(f32) -> f32 = match n.op.as_str() {
                "Sqrt" => f32::sqrt,
                "Tanh" => f32::tanh,
                "Relu" => |x| if x < 0.0 { 0.0 } else { x },
                "Sigmoid" => |x| 1.0 / (1.0 + (-x).exp()),
                op => {
                    return Err(format!(
                        "`{op}` of a constant; the importer computes only sqrt, tanh, relu and sigmoid of one"
                    ));
                }
            };
            let c = Data { dims: dims.clone(), values: Values::F32(v.iter().map(|&x| f(x)).collect()) };
            self.set(n, 0, Val::Const(c));
            return Ok(());
        }
        let t = self.tensor(n, 0)?;
        let rank = t.under.len();
        let base = n.op.to_lowercase();
        // `log(sigmoid(x))`, as both exporters write `nn.LogSigmoid`: the
        // table's log-sigmoid, which PyTorch computed (the composition is
        // -inf where the sigmoid underflows).
        if n.op == "Sigmoid"
            && let Some((li, log)) = self.only_reader(&n.outputs[0])
            && log.op == "Log"
        {
            self.skip.insert(li);
            return self.table_op(log, "logsigmoid", &t);
        }
        if let Some(name) = table_op_named(&n.op) {
            return self.table_op(n, name, &t);
        }
        match n.op.as_str() {
            // ReLU6 as PyTorch exports it; other bounds have no layer.
            "Clip" => {
                let bound = |k: usize, name: &str| -> R<Option<f64>> {
                    match n.input(k) {
                        Some(_) => Ok(Some(self.konst(n, k)?.scalar().ok_or("has bounds of more than one value")?)),
                        None => Ok(n.float(name).map(f64::from)),
                    }
                };
                match (bound(1, "min")?, bound(2, "max")?) {
                    (Some(lo), Some(hi)) if lo == 0.0 && hi == 6.0 => self.table_op(n, "relu6", &t),
                    (lo, hi) => Err(format!(
                        "clamps to [{}, {}]; Blaze converts Clip to [0, 6] (ReLU6)",
                        lo.unwrap_or(f64::NEG_INFINITY),
                        hi.unwrap_or(f64::INFINITY)
                    )),
                }
            }
            // ONNX's defaults are 0.2 and 0.5; PyTorch exports 1/6.
            "HardSigmoid" => {
                let (alpha, beta) = (n.float("alpha").unwrap_or(0.2), n.float("beta").unwrap_or(0.5));
                if (alpha - 1.0 / 6.0).abs() > 1e-6 || (beta - 0.5).abs() > 1e-6 {
                    return Err(format!(
                        "computes max(0, min(1, {alpha} x + {beta})); Blaze's Hardsigmoid is PyTorch's, 1/6 x + 1/2"
                    ));
                }
                self.table_op(n, "hardsigmoid", &t)
            }
            // ONNX's is exact where PyTorch's default turns linear past
            // 20, which moves the value by less than e^-20.
            "Softplus" => self.act(n, Layer::Softplus, vec![], vec![], None, &t, &base),
            "Gelu" => match n.string("approximate").unwrap_or("none") {
                "none" => self.table_op(n, "gelu", &t),
                "tanh" => self.table_op(n, "gelu_tanh", &t),
                a => Err(format!("uses the `{a}` approximation; Blaze has the exact GELU and the tanh one")),
            },
            "LeakyRelu" => {
                let slope = f64::from(n.float("alpha").unwrap_or(0.01));
                let keys =
                    if (slope - 0.01).abs() > 1e-9 { vec![("negative_slope", Value::Float(slope))] } else { vec![] };
                self.act(n, Layer::LeakyRelu, vec![], keys, None, &t, "leaky_relu")
            }
            "Dropout" => {
                let p = match n.input(1) {
                    Some(_) => self.konst(n, 1)?.scalar().ok_or("has a ratio of more than one value")?,
                    None => f64::from(n.float("ratio").unwrap_or(0.5)),
                };
                let keys = if (p - 0.5).abs() > 1e-9 { vec![("p", Value::Float(p))] } else { vec![] };
                self.act(n, Layer::Dropout, vec![], keys, None, &t, "dropout")
            }
            "Softmax" | "LogSoftmax" => {
                let t = self.plain(n, 0)?;
                let axis = norm_axis(n.int("axis").unwrap_or(-1), rank)?;
                if axis == 0 {
                    return Err("normalises over the batch dim".into());
                }
                if self.g.opset < 13 && axis != rank - 1 {
                    return Err("flattens before normalising (opset < 13) over more than the last dim".into());
                }
                let d = sample_axis(axis, rank);
                let keys = if d == -1 { vec![] } else { vec![("dim", Value::Int(d.into()))] };
                let (layer, method) =
                    if n.op == "Softmax" { (Layer::Softmax, "softmax") } else { (Layer::LogSoftmax, "log_softmax") };
                let body = format!("{{x}}.{method}({d})");
                self.act(n, layer, vec![], keys, Some(&body), &t, method)
            }
            "Flatten" => {
                let t = self.plain(n, 0)?;
                if norm_axis(n.int("axis").unwrap_or(1), rank)? != 1 {
                    return Err(
                        "flattens from a dim other than 1; Flatten keeps the batch dim and flattens the rest".into()
                    );
                }
                self.act(n, Layer::Flatten, vec![], vec![], Some("{x}.flatten()"), &t, "flatten")
            }
            op => Err(format!("`{op}` is not an elementwise op the importer converts")),
        }
    }

    /// Op `name` of the op table on `t`: its layer where it is one, else
    /// its function in the forward body.
    fn table_op(&mut self, n: &Node, name: &str, t: &Tensor) -> R<()> {
        let op = blaze_spec::ops::unary(name).ok_or("is not in the op table")?;
        if op.layer {
            let body = format!("{name}({{x}})");
            return self.act(n, Layer::Unary(op), vec![], vec![], Some(&body), t, name);
        }
        // A forward body writes every op as a function but `neg`.
        let expr = if name == "neg" { format!("{}.neg()", t.name) } else { format!("{name}({})", t.name) };
        self.emit(n, 0, expr, t.under.clone(), t.view.clone(), t.dtype)
    }

    pub(super) fn reduce(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let rank = t.under.len();
        let keep = n.int("keepdims").unwrap_or(1) == 1;
        let mut axes: Vec<usize> = match self.axes(n, 1)? {
            Some(a) => a.iter().map(|&x| norm_axis(x, rank)).collect::<R<_>>()?,
            None => (0..rank).collect(),
        };
        axes.sort_unstable();
        let mean = n.op == "ReduceMean";
        if mean && rank == 4 && axes == [2, 3] {
            return if keep {
                self.act(n, Layer::AdaptiveAvgPool2d, vec![1, 1], vec![], None, &t, "avg_pool")
            } else {
                self.act(n, Layer::GlobalAvgPool, vec![], vec![], None, &t, "global_avg_pool")
            };
        }
        if axes.contains(&0) {
            return Err(format!("reduces over the batch dim (axes {axes:?})"));
        }
        // One `mean_dim`/`sum_dim` per axis (each keeps its dim), then a
        // reshape without them unless ONNX keeps them.
        let m = if mean { "mean_dim" } else { "sum_dim" };
        let mut expr = t.name.clone();
        let mut under = t.under.clone();
        for &a in &axes {
            expr = format!("{expr}.{m}({})", sample_axis(a, rank));
            under[a] = Dim::known(1);
        }
        if !keep {
            under = under.into_iter().enumerate().filter(|(k, _)| !axes.contains(k)).map(|(_, d)| d).collect();
            check_dims(&under[1..])?;
            let code: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
            expr = format!("{expr}.reshape([{}])", code.join(", "));
        }
        self.emit(n, 0, expr, under, None, t.dtype)
    }
}

/// `x op y` for two constants, as ONNX defines it: NumPy broadcasting,
/// integer division rounding toward zero, and `Mod` taking the divisor's
/// sign (or the dividend's, C's `fmod`, with `fmod = 1`, which floats need).
fn fold(op: &str, x: &Data, y: &Data, fmod: bool) -> R<Data> {
    let dims = broadcast_known(&[x, y])?;
    let at = |d: &Data, i: usize| index_broadcast(&d.dims, &dims, i);
    let n: usize = dims.iter().product();
    let values = match (&x.values, &y.values) {
        (Values::I64(a), Values::I64(b)) => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let (p, q) = (a[at(x, i)], b[at(y, i)]);
                out.push(match op {
                    "Add" => p.wrapping_add(q),
                    "Sub" => p.wrapping_sub(q),
                    "Mul" => p.wrapping_mul(q),
                    _ if q == 0 => return Err(format!("divides the constant {p} by 0")),
                    "Div" => p.wrapping_div(q),
                    _ if fmod => p.wrapping_rem(q),
                    _ => p.wrapping_rem(q).wrapping_add(q).wrapping_rem(q),
                });
            }
            Values::I64(out)
        }
        (Values::F32(a), Values::F32(b)) => {
            if op == "Mod" && !fmod {
                return Err("takes an integer remainder (`fmod = 0`) of floats, which ONNX does not allow".into());
            }
            let f = |p: f32, q: f32| match op {
                "Add" => p + q,
                "Sub" => p - q,
                "Mul" => p * q,
                "Div" => p / q,
                _ => p % q,
            };
            Values::F32((0..n).map(|i| f(a[at(x, i)], b[at(y, i)])).collect())
        }
        _ => return Err("combines constants of different element types".into()),
    };
    Ok(Data { dims, values })
}

/// The dims of constants broadcast together.
fn broadcast_known(ds: &[&Data]) -> R<Vec<usize>> {
    let mut dims: Vec<Dim> = Vec::new();
    for d in ds {
        let sizes: Vec<Dim> = d.dims.iter().map(|&k| Dim::known(k as i64)).collect();
        dims = broadcast(&dims, &sizes)
            .map_err(|_| format!("combines constants of shapes that do not broadcast: {:?}", d.dims))?;
    }
    Ok(dims.iter().map(|d| d.value().expect("known") as usize).collect())
}

/// `Equal` of two constants, broadcast.
pub(super) fn fold_equal(x: &Data, y: &Data) -> R<Data> {
    let dims = broadcast_known(&[x, y])?;
    let (a, b) = (x.as_f64(), y.as_f64());
    let n: usize = dims.iter().product();
    let values =
        (0..n).map(|i| a[index_broadcast(&x.dims, &dims, i)] == b[index_broadcast(&y.dims, &dims, i)]).collect();
    Ok(Data { dims, values: Values::Bool(values) })
}

/// `Where` of three constants, broadcast, between branches of one
/// element type.
pub(super) fn fold_where(c: &Data, x: &Data, y: &Data) -> R<Data> {
    let dims = broadcast_known(&[c, x, y])?;
    let n: usize = dims.iter().product();
    let cond = c.as_f64();
    let pick = |i: usize| cond[index_broadcast(&c.dims, &dims, i)] != 0.0;
    let at = |d: &Data, i: usize| index_broadcast(&d.dims, &dims, i);
    let values = match (&x.values, &y.values) {
        (Values::I64(a), Values::I64(b)) => {
            Values::I64((0..n).map(|i| if pick(i) { a[at(x, i)] } else { b[at(y, i)] }).collect())
        }
        (Values::F32(a), Values::F32(b)) => {
            Values::F32((0..n).map(|i| if pick(i) { a[at(x, i)] } else { b[at(y, i)] }).collect())
        }
        (Values::Bool(a), Values::Bool(b)) => {
            Values::Bool((0..n).map(|i| if pick(i) { a[at(x, i)] } else { b[at(y, i)] }).collect())
        }
        _ => return Err("selects between constants of different element types".into()),
    };
    Ok(Data { dims, values })
}

/// The flat index into a tensor of shape `dims` of element `i` of its
/// broadcast to `out`.
fn index_broadcast(dims: &[usize], out: &[usize], mut i: usize) -> usize {
    let (mut index, mut stride) = (0, 1);
    for (k, &o) in out.iter().enumerate().rev() {
        let coord = i % o;
        i /= o;
        let Some(d) = (k + dims.len()).checked_sub(out.len()).map(|j| dims[j]) else { continue };
        if d != 1 {
            index += coord * stride;
        }
        stride *= d;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(dims: &[usize], v: &[i64]) -> Data {
        Data { dims: dims.to_vec(), values: Values::I64(v.to_vec()) }
    }

    #[test]
    fn constants_fold_as_onnx_defines_their_arithmetic() {
        let (a, b) = (ints(&[4], &[7, -7, 7, -7]), ints(&[4], &[3, 3, -3, -3]));
        // `Mod` takes the divisor's sign; with `fmod = 1`, the dividend's.
        assert_eq!(fold("Mod", &a, &b, false).unwrap(), ints(&[4], &[1, 2, -2, -1]));
        assert_eq!(fold("Mod", &a, &b, true).unwrap(), ints(&[4], &[1, -1, 1, -1]));
        // Integer division rounds toward zero.
        assert_eq!(fold("Div", &a, &b, false).unwrap(), ints(&[4], &[2, -2, -2, 2]));
        // NumPy broadcasting: [2, 1] with [3].
        let (col, row) = (ints(&[2, 1], &[10, 20]), ints(&[3], &[1, 2, 3]));
        assert_eq!(fold("Sub", &col, &row, false).unwrap(), ints(&[2, 3], &[9, 8, 7, 19, 18, 17]));
        assert!(
            fold("Add", &ints(&[2], &[1, 2]), &ints(&[3], &[1, 2, 3]), false).unwrap_err().contains("do not broadcast")
        );
        assert!(fold("Mod", &a, &ints(&[], &[0]), false).unwrap_err().contains("by 0"));
        let f = Data { dims: vec![], values: Values::F32(vec![7.5]) };
        assert!(fold("Mod", &f, &f, false).unwrap_err().contains("fmod = 0"));
        assert_eq!(
            fold("Mod", &f, &Data { dims: vec![], values: Values::F32(vec![2.0]) }, true).unwrap().scalar(),
            Some(1.5)
        );
    }
}
