//! The operators that compute: each becomes a layer field or an expression
//! of the forward body.

use super::*;

impl<'g> Lower<'g> {
    pub(super) fn concat(&mut self, n: &Node) -> R<()> {
        let vals: Vec<Val> = (0..n.inputs.len()).map(|k| self.input_val(n, k).cloned()).collect::<R<_>>()?;
        if vals.iter().all(|v| matches!(v, Val::Tensor(_))) {
            let ts: Vec<Tensor> = (0..vals.len()).map(|k| self.plain(n, k)).collect::<R<_>>()?;
            let rank = ts[0].under.len();
            let axis = norm_axis(n.int("axis").ok_or("has no axis")?, rank)?;
            if axis == 0 {
                return Err("concatenates along the batch dim".into());
            }
            let mut under = ts[0].under.clone();
            for t in &ts[1..] {
                if t.under.len() != rank {
                    return Err("concatenates tensors of different ranks".into());
                }
                under[axis] =
                    under[axis].add(&t.under[axis]).ok_or("concatenates dims that do not add up to one named dim")?;
            }
            let parts: Vec<&str> = ts.iter().map(|t| t.name.as_str()).collect();
            let expr = format!("cat([{}], {})", parts.join(", "), sample_axis(axis, rank));
            return self.emit(n, 0, expr, under, None, ts[0].dtype);
        }
        let mut out = Vec::new();
        for k in 0..vals.len() {
            out.extend(self.ints(n, k)?);
        }
        self.set(n, 0, Val::Shape(out));
        Ok(())
    }

    pub(super) fn gather(&mut self, n: &Node) -> R<()> {
        let axis = n.int("axis").unwrap_or(0);
        let indices = self.input_val(n, 1)?.clone();
        match (self.input_val(n, 0)?.clone(), indices) {
            (Val::Tensor(t), Val::Const(ix)) if ix.dims.is_empty() => {
                // One index along a dim: `qkv[0]`. In the data, a narrow
                // along that axis and a reshape without it.
                let shape = t.shape();
                let rank = shape.len();
                let axis = norm_axis(axis, rank)?;
                let mut groups = t.groups();
                let [u] = groups[axis][..] else {
                    return Err(format!(
                        "picks one index of dim {axis} of {}, which is several dims merged",
                        show(&shape)
                    ));
                };
                if u == 0 {
                    return Err("picks one sample of the batch".into());
                }
                let k = ix.as_i64().ok_or("gathers with float indices")?[0];
                let k = match t.under[u].value() {
                    Some(size) => {
                        let k = if k < 0 { k + size } else { k };
                        if !(0..size).contains(&k) {
                            return Err(format!("picks index {k} of a dim of {size}"));
                        }
                        k
                    }
                    // The first of a named dim (`hidden[:, 0]`, a classifier's
                    // first token), which every non-empty size has.
                    None if k == 0 => 0,
                    None => {
                        return Err(format!("picks index {k} of the named dim {}; only its first is read", t.under[u]));
                    }
                };
                let mut under = t.under.clone();
                under.remove(u);
                check_dims(&under[1..])?;
                let code: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
                let expr = format!(
                    "{}.narrow({}, {k}, 1).reshape([{}])",
                    t.name,
                    sample_axis(u, t.under.len()),
                    code.join(", ")
                );
                groups.remove(axis);
                for g in &mut groups {
                    for a in g.iter_mut() {
                        if *a > u {
                            *a -= 1;
                        }
                    }
                }
                let view = Tensor::plain(String::new(), under.clone(), t.dtype).seen(groups).view;
                self.emit(n, 0, expr, under, view, t.dtype)?;
            }
            (Val::Shape(s), Val::Const(ix)) => {
                let r = s.len() as i64;
                let pick = |k: i64| s.get(if k < 0 { k + r } else { k } as usize).cloned();
                let ix = ix.as_i64().ok_or("gathers with float indices")?;
                let picked: Vec<Dim> = ix
                    .iter()
                    .map(|&k| pick(k).ok_or_else(|| "gathers past the shape".to_string()))
                    .collect::<R<_>>()?;
                let d = self.konst(n, 1)?;
                self.set(n, 0, if d.dims.is_empty() { Val::Scalar(picked[0].clone()) } else { Val::Shape(picked) });
            }
            (Val::Const(table), ids) if axis == 0 && table.dims.len() == 2 => {
                let (input, call) = match ids {
                    Val::Tensor(t) if t.dtype == DType::I64 && t.view.is_none() => (t.clone(), None),
                    // Positions behind at most one unit dim (which the batch
                    // takes): per sample `[T]`.
                    Val::Positions { len, lead: 0 | 1, trail: 0 } => (
                        Tensor::plain(String::new(), vec![Dim::named(BATCH), len.clone()], DType::I64),
                        Some((format!("positions({})", dim_code(&len)?), String::new(), None)),
                    ),
                    Val::Filled(Fill::Num(k), _) => {
                        // One row for every element (BERT's token type 0):
                        // the rows up to it looked up by position, it kept.
                        let v = table.dims[0] as f64;
                        if k.fract() != 0.0 || !(0.0..v).contains(&k) {
                            return Err(format!("looks up row {k} of a table of {v} rows"));
                        }
                        let k = k as i64;
                        let narrow = if k > 0 { format!(".narrow(0, {k}, 1)") } else { String::new() };
                        let ids = Tensor::plain(String::new(), vec![Dim::named(BATCH), Dim::known(k + 1)], DType::I64);
                        (ids, Some((format!("positions({})", k + 1), narrow, Some(Dim::known(1)))))
                    }
                    _ => return Err("looks up rows of a table by something other than token ids or positions".into()),
                };
                let [v, d] = [table.dims[0], table.dims[1]];
                let base = self.field_base(n, &[n.input(0).unwrap_or("")]);
                let f = self.field(&base, Layer::Embedding, vec![v, d], vec![], vec![table])?;
                let out = self.layer_out(f, &input)?;
                match call {
                    None => self.layer_step(n, f, &input, out),
                    Some((call, narrow, rows)) => {
                        // `self.pos(positions(T))`: per-sample [T, D], the same
                        // for each sample (one row of it: [1, D], broadcast).
                        let expr = format!("self.{}({call}){narrow}", self.fields[f].name);
                        let mut under = vec![Dim::named(BATCH)];
                        under.extend(out);
                        if let Some(rows) = rows {
                            under[1] = rows;
                        }
                        self.emit(n, 0, expr, under, None, DType::F32)?;
                    }
                }
            }
            _ => return Err("gathers something other than rows of a weight table or dims of a shape".into()),
        }
        Ok(())
    }

    /// A constant `arange(0, n)` behind unit dims (a registered
    /// `position_ids` buffer) cut from 0 along its last dim, as positions;
    /// `None` for other constants and cuts.
    fn arange_cut(&self, n: &Node, d: &Data, starts: &[i64]) -> R<Option<Val>> {
        let r = d.dims.len();
        let values = d.as_i64();
        let arange = r > 0
            && d.dims[..r - 1].iter().all(|&x| x == 1)
            && values.is_some_and(|v| v.iter().enumerate().all(|(k, &x)| x == k as i64));
        let axes = match n.input(3) {
            Some(_) => self.known_ints(n, 3)?,
            None => (0..starts.len() as i64).collect(),
        };
        let steps_one = match n.input(4) {
            Some(_) => self.known_ints(n, 4)?.iter().all(|&s| s == 1),
            None => true,
        };
        let last = |a: i64| a == r as i64 - 1 || a == -1;
        if !arange || !steps_one || starts != [0] || axes.len() != 1 || !last(axes[0]) {
            return Ok(None);
        }
        let [end] = &self.ints(n, 2)?[..] else { return Ok(None) };
        let len = match end.value() {
            Some(e) if e < 0 || e > d.dims[r - 1] as i64 => return Ok(None),
            _ => end.clone(),
        };
        Ok(Some(Val::Positions { lead: r - 1, len, trail: 0 }))
    }

    pub(super) fn slice(&mut self, n: &Node) -> R<()> {
        let starts = self.known_ints(n, 1)?;
        let input = self.input_val(n, 0)?.clone();
        if let Some(mut tri) = input.triangle() {
            let rank = tri.lead + 2;
            // A causal mask cut to the sequence: `bias[:, :, :T, :T]`.
            let ends = self.ints(n, 2)?;
            let axes = match n.input(3) {
                Some(_) => self.known_ints(n, 3)?,
                None => (0..starts.len() as i64).collect(),
            };
            for ((&s, e), &a) in starts.iter().zip(&ends).zip(&axes) {
                let axis = norm_axis(a, rank)?;
                let full = e.value().is_some_and(|v| v >= i64::from(i32::MAX));
                if s != 0 || (axis + 2 < rank && !full) || e.value().is_some_and(|v| v < 0) {
                    return Err(format!("cuts a mask other than from its top-left corner (axis {a}, {s}..{e})"));
                }
                if !full {
                    if axis + 2 == rank {
                        tri.rows = e.clone()
                    } else if axis + 1 == rank {
                        tri.cols = e.clone()
                    }
                }
            }
            self.set(n, 0, Val::Triangle(tri));
            return Ok(());
        }
        if let Val::Const(d) = &input
            && let Some(positions) = self.arange_cut(n, d, &starts)?
        {
            // `position_ids[:, :T]` of a registered `arange(n)` buffer.
            self.set(n, 0, positions);
            return Ok(());
        }
        let ends = self.known_ints(n, 2)?;
        let axes = match n.input(3) {
            Some(_) => self.known_ints(n, 3)?,
            None => (0..starts.len() as i64).collect(),
        };
        let steps = match n.input(4) {
            Some(_) => self.known_ints(n, 4)?,
            None => vec![1; starts.len()],
        };
        if steps.iter().any(|&s| s != 1) {
            return Err("slices with a step other than 1".into());
        }
        match input {
            // A fill cut where its sizes are known (or kept whole) is a fill.
            Val::Filled(fill, mut shape) => {
                let rank = shape.len();
                for ((&s, &e), &a) in starts.iter().zip(&ends).zip(&axes) {
                    let axis = norm_axis(a, rank)?;
                    shape[axis] = match shape[axis].value() {
                        _ if s == 0 && e >= i64::from(i32::MAX) => continue,
                        Some(size) => {
                            let clamp = |x: i64| (if x < 0 { x + size } else { x }).clamp(0, size);
                            Dim::known((clamp(e) - clamp(s)).max(0))
                        }
                        None => return Err(format!("cuts the filled dim {} at {s}..{e}", shape[axis])),
                    };
                }
                self.set(n, 0, Val::Filled(fill, shape));
            }
            Val::Shape(s) => {
                let r = s.len() as i64;
                let clamp = |x: i64| (if x < 0 { x + r } else { x }).clamp(0, r) as usize;
                let (a, b) = (clamp(starts[0]), clamp(ends[0]));
                self.set(n, 0, Val::Shape(s[a..b.max(a)].to_vec()));
            }
            // Rows of a weight (a projection's share of a packed matrix,
            // as Blaze's export cuts `in_proj_weight`): those rows.
            Val::Const(d) if !d.dims.is_empty() && axes.iter().all(|&a| a == 0) && starts.len() == 1 => {
                let rows = d.dims[0] as i64;
                let clamp = |x: i64| (if x < 0 { x + rows } else { x }).clamp(0, rows) as usize;
                let (a, b) = (clamp(starts[0]), clamp(ends[0]).max(clamp(starts[0])));
                let row: usize = d.dims[1..].iter().product();
                let v = d.as_f64();
                let mut dims = d.dims.clone();
                dims[0] = b - a;
                let cut = Data { dims, values: Values::F32(v[a * row..b * row].iter().map(|&x| x as f32).collect()) };
                self.set(n, 0, Val::Const(cut));
            }
            Val::Tensor(_) => {
                let t = self.plain(n, 0)?;
                let rank = t.under.len();
                let mut expr = t.name.clone();
                let mut under = t.under.clone();
                for ((&s, &e), &a) in starts.iter().zip(&ends).zip(&axes) {
                    let axis = norm_axis(a, rank)?;
                    if axis == 0 {
                        return Err("slices the batch dim".into());
                    }
                    // The last entries of a named dim (`x[:, -1:]`): a
                    // narrow counted from the end.
                    if under[axis].value().is_none() && s < 0 && e >= i64::from(i32::MAX) {
                        expr = format!("{expr}.narrow({}, {s}, {})", sample_axis(axis, rank), -s);
                        under[axis] = Dim::known(-s);
                        continue;
                    }
                    let size =
                        under[axis].value().ok_or_else(|| format!("slices dim {axis}, which is named, not known"))?;
                    let clamp = |x: i64| (if x < 0 { x + size } else { x }).clamp(0, size);
                    let (a0, b0) = (clamp(s), clamp(e));
                    let len = (b0 - a0).max(0);
                    expr = format!("{expr}.narrow({}, {a0}, {len})", sample_axis(axis, rank));
                    under[axis] = Dim::known(len);
                }
                self.emit(n, 0, expr, under, None, t.dtype)?;
            }
            _ => return Err("slices a value the importer cannot follow".into()),
        }
        Ok(())
    }

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

    pub(super) fn matmul(&mut self, n: &'g Node) -> R<()> {
        match self.input_val(n, 1)?.clone() {
            Val::Const(w) if w.dims.len() == 2 => {
                // x @ W (+ b): a Linear with weight W^T.
                let x = self.linear_input(n, 0)?;
                let [i, o] = [w.dims[0], w.dims[1]];
                let weight = transpose2(&w)?;
                let mut tensors = vec![weight];
                let mut names = vec![n.input(1).unwrap_or("")];
                let mut out_node = n;
                if let Some((ai, add)) = self.only_reader(&n.outputs[0])
                    && add.op == "Add"
                {
                    let other = add.inputs.iter().find(|s| **s != n.outputs[0]);
                    if let Some(other) = other
                        && let Some(Val::Const(b)) = self.vals.get(other)
                        && b.dims == [o]
                    {
                        tensors.push(b.clone());
                        names.insert(0, other);
                        self.skip.insert(ai);
                        out_node = add;
                    }
                }
                let bias = tensors.len() == 2;
                let base = self.field_base(n, &names);
                let keys = if bias { vec![] } else { vec![("bias", Value::Bool(false))] };
                let f = self.field(&base, Layer::Linear, vec![i, o], keys, tensors)?;
                let out = self.layer_out(f, &x)?;
                self.layer_step(out_node, f, &x, out);
                Ok(())
            }
            Val::Tensor(_) => {
                let (a, b) = (self.plain(n, 0)?, self.plain(n, 1)?);
                let (ra, rb) = (a.under.len(), b.under.len());
                if ra != rb || ra < 3 {
                    return Err(format!(
                        "multiplies {} by {}; per-sample matrices of the same rank are converted",
                        show(&a.shape()),
                        show(&b.shape())
                    ));
                }
                if a.under[ra - 1] != b.under[rb - 2] {
                    return Err(format!("multiplies {} by {}: inner dims differ", show(&a.shape()), show(&b.shape())));
                }
                let mut under = broadcast(&a.under[..ra - 2], &b.under[..rb - 2])?;
                under.push(a.under[ra - 2].clone());
                under.push(b.under[rb - 1].clone());
                self.emit(n, 0, format!("{}.matmul({})", a.name, b.name), under, None, a.dtype)
            }
            _ => Err("multiplies by a value the importer cannot follow".into()),
        }
    }

    /// An `LSTM` or `GRU` node as PyTorch's exporters write `nn.LSTM` and
    /// `nn.GRU` (one layer, forward or both ways, zero initial state): an
    /// `Lstm` or `Gru` field. Its input is the sequence-first view of
    /// batch-first data, which the layer reads as it is; its output
    /// `[T, directions, batch, H]` is a view of the layer's `[T, dirs H]`
    /// (split into `[T, dirs, H]` first when it runs both ways); a forward
    /// layer's final hidden state `[1, batch, H]` is its last step.
    pub(super) fn recurrent(&mut self, n: &Node) -> R<()> {
        let lstm = n.op == "LSTM";
        // The gates in PyTorch's order, by their place in ONNX's: an LSTM's
        // i, o, f, c become i, f, g, o; a GRU's z, r, h become r, z, n.
        let (layer, order, states): (Layer, &[usize], &[usize]) =
            if lstm { (Layer::Lstm, &[0, 2, 3, 1], &[5, 6]) } else { (Layer::Gru, &[1, 0, 2], &[5]) };
        let gates = order.len();
        let h = n.int("hidden_size").ok_or("has no hidden_size")? as usize;
        let dirs = match n.string("direction").unwrap_or("forward") {
            "forward" => 1,
            "bidirectional" => 2,
            d => {
                return Err(format!(
                    "runs {d} only; Blaze's {} runs forward, or both ways (bidirectional = true)",
                    layer.name()
                ));
            }
        };
        if n.int("layout").unwrap_or(0) != 0 || n.int("input_forget").unwrap_or(0) != 0 || n.float("clip").is_some() {
            return Err("sets layout, input_forget or clip; PyTorch's exports set none".into());
        }
        if n.attrs.contains_key("activations") {
            return Err(format!("names its activations; Blaze's {} uses sigmoid and tanh", layer.name()));
        }
        if !lstm && n.int("linear_before_reset").unwrap_or(0) != 1 {
            return Err(
                "applies the reset gate before the hidden weights (linear_before_reset = 0); nn.GRU's export sets 1"
                    .into(),
            );
        }
        if n.input(4).is_some() {
            return Err(format!("takes sequence lengths; Blaze's {} reads whole sequences", layer.name()));
        }
        for &i in states {
            if n.input(i).is_some() && self.input_val(n, i)?.one_value() != Some(Fill::Num(0.0)) {
                return Err(format!(
                    "starts from a state (input {i}) other than zeros; Blaze's {} starts from zeros",
                    layer.name()
                ));
            }
        }
        // The final hidden state is the forward direction's last output
        // and the reverse direction's first; a cell state is not an output.
        let read = |k: usize| {
            n.outputs.get(k).is_some_and(|o| !o.is_empty() && self.readers.get(o).is_some_and(|r| !r.is_empty()))
        };
        if read(2) {
            return Err(format!(
                "has its final cell state `{}` read; Blaze's Lstm returns its outputs and final hidden state, not the \
                 cell state: read `output` or `h_n` in the model instead",
                n.outputs[2]
            ));
        }
        let final_hidden = read(1);
        let t = self.tensor(n, 0)?;
        if t.under.len() != 3 || t.view.as_deref() != Some(&[vec![1], vec![0], vec![2]][..]) {
            return Err(format!("reads {}, which is not a batch-first sequence seen sequence-first", show(&t.shape())));
        }
        let (w, r) = (self.konst(n, 1)?, self.konst(n, 2)?);
        let i = t.under[2].value().ok_or("reads a sequence of named width")? as usize;
        let rows = gates * h;
        if w.dims != [dirs, rows, i] || r.dims != [dirs, rows, h] {
            return Err(format!("has weights of shapes {:?} and {:?} for {i} inputs and {h} units", w.dims, r.dims));
        }
        let reorder = |v: &[f32], width: usize| -> Data {
            let block = h * width;
            let values = order.iter().flat_map(|&g| v[g * block..(g + 1) * block].iter().copied()).collect();
            Data { dims: if width == 1 { vec![rows] } else { vec![rows, width] }, values: Values::F32(values) }
        };
        let floats = |d: &Data| d.f32s().map(<[f32]>::to_vec).ok_or("has weights that are not floats");
        let (w, r) = (floats(&w)?, floats(&r)?);
        let b = match n.input(3) {
            Some(_) => {
                let b = self.konst(n, 3)?;
                if b.dims != [dirs, 2 * rows] {
                    return Err(format!("has a bias of shape {:?} for {h} units", b.dims));
                }
                Some(floats(&b)?)
            }
            None => None,
        };
        // Per direction, as the layer holds them: the input weights, the
        // hidden weights, then their biases.
        let mut tensors = vec![];
        for d in 0..dirs {
            tensors.push(reorder(&w[d * rows * i..(d + 1) * rows * i], i));
            tensors.push(reorder(&r[d * rows * h..(d + 1) * rows * h], h));
            if let Some(b) = &b {
                let v = &b[2 * d * rows..2 * (d + 1) * rows];
                tensors.push(reorder(&v[..rows], 1));
                tensors.push(reorder(&v[rows..], 1));
            }
        }
        let mut keys = vec![];
        if b.is_none() {
            keys.push(("bias", Value::Bool(false)));
        }
        if dirs == 2 {
            keys.push(("bidirectional", Value::Bool(true)));
        }
        let names: Vec<&str> = (1..4).filter_map(|k| n.input(k)).collect();
        let base = self.field_base(n, &names);
        let f = self.field(&base, layer, vec![i, h], keys, tensors)?;
        let x = Tensor::plain(t.name.clone(), t.under.clone(), t.dtype);
        let shape = self.layer_out(f, &x)?;
        let mut name = self.binding(&n.outputs[0]);
        self.steps.push(Step::Layer { field: f, input: x.name.clone(), output: name.clone(), shape: shape.clone() });
        let mut under = vec![Dim::named(BATCH)];
        under.extend(shape);
        // `[T, num_directions, batch, H]`: one direction is a dim of 1;
        // two are the halves of the layer's features, forward first.
        let groups = if dirs == 1 {
            vec![vec![1], vec![], vec![0], vec![2]]
        } else {
            let whole = under.clone();
            under = vec![under[0].clone(), under[1].clone(), Dim::known(2), Dim::known(h as i64)];
            let dims: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
            let split = self.binding(&format!("{}_directions", n.outputs[0]));
            let expr = format!("{name}.reshape([{}])", dims.join(", "));
            self.steps.push(Step::Expr { outputs: vec![split.clone()], expr, shapes: vec![under[1..].to_vec()] });
            self.splits.insert(split.clone(), (name, whole));
            name = split;
            vec![vec![1], vec![2], vec![0], vec![3]]
        };
        if final_hidden {
            // `[directions, batch, H]`: the forward direction's last step
            // and the reverse direction's first.
            let last = vec![under[0].clone(), Dim::known(dirs as i64), Dim::known(h as i64)];
            let h_n = self.binding(&n.outputs[1]);
            let expr = if dirs == 1 {
                format!("{name}.narrow(0, -1, 1)")
            } else {
                format!(
                    "cat([{name}.narrow(0, -1, 1).narrow(1, 0, 1), {name}.narrow(0, 0, 1).narrow(1, 1, 1)], 1).reshape([2, {h}])"
                )
            };
            self.steps.push(Step::Expr { outputs: vec![h_n.clone()], expr, shapes: vec![last[1..].to_vec()] });
            let state = Tensor::plain(h_n, last, DType::F32).seen(vec![vec![1], vec![0], vec![2]]);
            self.set(n, 1, Val::Tensor(state));
        }
        let y = Tensor::plain(name, under, DType::F32).seen(groups);
        self.set(n, 0, Val::Tensor(y));
        Ok(())
    }

    pub(super) fn gemm(&mut self, n: &Node) -> R<()> {
        let x = self.linear_input(n, 0)?;
        if n.int("transA").unwrap_or(0) != 0 {
            return Err("transposes its input (transA = 1)".into());
        }
        let (alpha, beta) = (n.float("alpha").unwrap_or(1.0), n.float("beta").unwrap_or(1.0));
        if alpha != 1.0 || (beta != 1.0 && n.input(2).is_some()) {
            return Err(format!("scales by alpha = {alpha}, beta = {beta}; a Linear computes x W^T + b"));
        }
        let w = self.konst(n, 1)?;
        if w.dims.len() != 2 {
            return Err(format!("has a weight of shape {:?}", w.dims));
        }
        let weight = if n.int("transB").unwrap_or(0) == 1 { w } else { transpose2(&w)? };
        let [o, i] = [weight.dims[0], weight.dims[1]];
        let mut tensors = vec![weight];
        let mut keys = vec![];
        let mut names = vec![n.input(1).unwrap_or("")];
        match n.input(2) {
            Some(b) => {
                let bias = self.konst(n, 2)?;
                if bias.len() != o {
                    return Err(format!(
                        "has a bias of shape {:?} for {o} outputs; a Linear's bias has one per output",
                        bias.dims
                    ));
                }
                tensors.push(Data { dims: vec![o], values: bias.values });
                names.insert(0, b);
            }
            None => keys.push(("bias", Value::Bool(false))),
        }
        let base = self.field_base(n, &names);
        let f = self.field(&base, Layer::Linear, vec![i, o], keys, tensors)?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
    }

    pub(super) fn conv(&mut self, n: &Node) -> R<()> {
        let x = self.plain(n, 0)?;
        let w = self.konst(n, 1)?;
        let spatial = w.dims.len().saturating_sub(2);
        let groups = n.int("group").unwrap_or(1) as usize;
        let transposed = n.op == "ConvTranspose";
        let layer = match (spatial, transposed) {
            (1, false) => Layer::Conv1d,
            (2, false) => Layer::Conv2d,
            (2, true) => Layer::ConvTranspose2d,
            _ => {
                return Err(format!(
                    "has a weight of shape {:?}; 1-D and 2-D convolutions (2-D transposed) are converted",
                    w.dims
                ));
            }
        };
        let k = w.dims[2];
        if w.dims[2..].iter().any(|&d| d != k) {
            return Err(format!("has a {:?} kernel; Blaze's convolutions are square", &w.dims[2..]));
        }
        let one = |name: &str, default: i64| -> R<i64> {
            match n.ints(name) {
                None => Ok(default),
                Some(v) if v.iter().all(|&x| x == v[0]) && !v.is_empty() => Ok(v[0]),
                Some(v) => Err(format!("has {name} {v:?}; Blaze takes one value for every side and dim")),
            }
        };
        if n.string("auto_pad").is_some_and(|a| a != "NOTSET" && a != "VALID") {
            return Err("pads automatically (auto_pad SAME); export with explicit pads".into());
        }
        let (stride, padding, dilation) = (one("strides", 1)?, one("pads", 0)?, one("dilations", 1)?);
        let (cin, cout) = if transposed { (w.dims[0], w.dims[1] * groups) } else { (w.dims[1] * groups, w.dims[0]) };
        let mut keys = vec![];
        if stride != 1 {
            keys.push(("stride", Value::Int(stride.into())));
        }
        if padding != 0 {
            keys.push(("padding", Value::Int(padding.into())));
        }
        if transposed {
            let op = one("output_padding", 0)?;
            if op != 0 {
                keys.push(("output_padding", Value::Int(op.into())));
            }
        }
        if dilation != 1 {
            keys.push(("dilation", Value::Int(dilation.into())));
        }
        if groups != 1 {
            keys.push(("groups", Value::Int(groups as i128)));
        }
        let mut tensors = vec![w];
        let mut names = vec![n.input(1).unwrap_or("")];
        match n.input(2) {
            Some(b) => {
                tensors.push(self.konst(n, 2)?);
                names.push(b);
            }
            None => keys.push(("bias", Value::Bool(false))),
        }
        let base = self.field_base(n, &names);
        let f = self.field(&base, layer, vec![cin, cout, k], keys, tensors)?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
    }

    pub(super) fn batch_norm(&mut self, n: &Node) -> R<()> {
        let x = self.plain(n, 0)?;
        if n.int("training_mode").unwrap_or(0) != 0 {
            return Err("is exported in training mode; export the model in eval mode".into());
        }
        let layer = match x.under.len() {
            4 => Layer::BatchNorm2d,
            2 | 3 => Layer::BatchNorm1d,
            r => return Err(format!("normalises a rank-{r} tensor; BatchNorm1d and BatchNorm2d take rank 2 to 4")),
        };
        let tensors: Vec<Data> = (1..5).map(|k| self.konst(n, k)).collect::<R<_>>()?;
        let c = tensors[0].len();
        let eps = f64::from(n.float("epsilon").unwrap_or(1e-5));
        let momentum = 1.0 - f64::from(n.float("momentum").unwrap_or(0.9));
        let mut keys = vec![];
        if (eps - 1e-5).abs() > 1e-12 {
            keys.push(("eps", Value::Float(eps)));
        }
        if (momentum - 0.1).abs() > 1e-6 {
            keys.push(("momentum", Value::Float(momentum)));
        }
        let names: Vec<&str> = (1..5).filter_map(|k| n.input(k)).collect();
        let base = self.field_base(n, &names);
        let f = self.field(&base, layer, vec![c], keys, tensors)?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
    }

    pub(super) fn layer_norm(&mut self, n: &Node) -> R<()> {
        let x = self.plain(n, 0)?;
        let rank = x.under.len();
        if norm_axis(n.int("axis").unwrap_or(-1), rank)? != rank - 1 {
            return Err("normalises over more than the last dim; LayerNorm<N> normalises the last".into());
        }
        let scale = self.konst(n, 1)?;
        let c = scale.len();
        let bias = match n.input(2) {
            Some(_) => self.konst(n, 2)?,
            None => Data { dims: vec![c], values: Values::F32(vec![0.0; c]) },
        };
        let eps = f64::from(n.float("epsilon").unwrap_or(1e-5));
        let keys = if (eps - 1e-5).abs() > 1e-12 { vec![("eps", Value::Float(eps))] } else { vec![] };
        let names: Vec<&str> = (1..3).filter_map(|k| n.input(k)).collect();
        let base = self.field_base(n, &names);
        let f = self.field(&base, Layer::LayerNorm, vec![c], keys, vec![scale, bias])?;
        let out = self.layer_out(f, &x)?;
        self.layer_step(n, f, &x, out);
        Ok(())
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

    pub(super) fn pool(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let k = n.ints("kernel_shape").ok_or("has no kernel_shape")?;
        if k.len() != 2 || k[0] != k[1] {
            return Err(format!("pools over a {k:?} window; Blaze pools 2-D square windows"));
        }
        let one = |name: &str, default: i64| -> R<i64> {
            match n.ints(name) {
                None => Ok(default),
                Some(v) if !v.is_empty() && v.iter().all(|&x| x == v[0]) => Ok(v[0]),
                Some(v) => Err(format!("has {name} {v:?}; Blaze takes one value for every side and dim")),
            }
        };
        let (stride, pad) = (one("strides", 1)?, one("pads", 0)?);
        if one("dilations", 1)? != 1 {
            return Err("dilates its window; Blaze's pooling windows are dense".into());
        }
        let ceil = n.int("ceil_mode").unwrap_or(0) != 0;
        if n.string("auto_pad").is_some_and(|a| a != "NOTSET" && a != "VALID") {
            return Err("pads automatically (auto_pad SAME); export with explicit pads".into());
        }
        let avg = n.op == "AveragePool";
        if avg && pad > 0 && n.int("count_include_pad").unwrap_or(0) == 0 {
            return Err("averages without counting the padding; Blaze's AvgPool2d counts it (PyTorch's default)".into());
        }
        let mut keys = vec![];
        if stride != k[0] {
            keys.push(("stride", Value::Int(stride.into())));
        }
        if pad != 0 {
            keys.push(("padding", Value::Int(pad.into())));
        }
        if ceil {
            keys.push(("ceil_mode", Value::Bool(true)));
        }
        let (layer, base) = if avg { (Layer::AvgPool2d, "avg_pool") } else { (Layer::MaxPool2d, "max_pool") };
        self.act(n, layer, vec![k[0] as usize], keys, None, &t, base)
    }

    /// `Resize` of an image's height and width by one factor: `Upsample`.
    pub(super) fn resize(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let shape = t.shape();
        if shape.len() != 4 {
            return Err(format!("resizes a tensor of shape {}; Upsample takes images", show(&shape)));
        }
        let factors: Vec<f64> = match (n.input(2), n.input(3)) {
            (Some(_), _) => self.konst(n, 2)?.as_f64(),
            (None, Some(_)) => {
                let sizes = self.known_ints(n, 3)?;
                let mut f = Vec::new();
                for (d, &to) in shape.iter().zip(&sizes) {
                    let from = d.value().ok_or("resizes to fixed sizes from a named dim")?;
                    f.push(to as f64 / from as f64);
                }
                f
            }
            _ => return Err("gives neither scales nor sizes".into()),
        };
        let [1.0, 1.0, fh, fw] = factors[..] else {
            return Err(format!("scales by {factors:?}; Upsample scales height and width only"));
        };
        if fh != fw {
            return Err(format!("scales height by {fh} and width by {fw}; Upsample takes one factor"));
        }
        if n.int("antialias").unwrap_or(0) != 0 {
            return Err("antialiases; Upsample does not".into());
        }
        let transform = n.string("coordinate_transformation_mode").unwrap_or("half_pixel");
        let (mode, align) = match (n.string("mode").unwrap_or("nearest"), transform) {
            ("nearest", "asymmetric") if n.string("nearest_mode").unwrap_or("round_prefer_floor") == "floor" => {
                ("nearest", false)
            }
            ("linear", "half_pixel" | "pytorch_half_pixel") => ("bilinear", false),
            ("linear", "align_corners") => ("bilinear", true),
            (mode, transform) => {
                return Err(format!(
                    "resizes in mode `{mode}` with coordinates `{transform}`; Upsample's nearest (asymmetric, floor) and bilinear (half_pixel or align_corners) are converted"
                ));
            }
        };
        let mut keys = vec![];
        if fh != 2.0 {
            keys.push(("scale_factor", Value::Float(fh)));
        }
        if mode != "nearest" {
            keys.push(("mode", Value::Str(mode)));
        }
        if align {
            keys.push(("align_corners", Value::Bool(true)));
        }
        self.act(n, Layer::Upsample, vec![], keys, None, &t, "upsample")
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

    pub(super) fn split(&mut self, n: &Node) -> R<()> {
        let t = self.plain(n, 0)?;
        let rank = t.under.len();
        let axis = norm_axis(n.int("axis").unwrap_or(0), rank)?;
        if axis == 0 {
            return Err("splits the batch dim".into());
        }
        let size = t.under[axis].value().ok_or("splits a dim that is named, not known")?;
        let parts = n.outputs.len() as i64;
        let sizes: Vec<i64> = if let Some(s) = n.ints("split") {
            s.to_vec()
        } else if n.input(1).is_some() {
            self.known_ints(n, 1)?
        } else {
            let chunk = (size + parts - 1) / parts;
            (0..parts).map(|k| chunk.min(size - k * chunk)).collect()
        };
        if sizes.iter().sum::<i64>() != size || sizes.len() != n.outputs.len() {
            return Err(format!("splits {size} into {sizes:?}"));
        }
        let d = sample_axis(axis, rank);
        let names: Vec<String> = n.outputs.iter().map(|o| self.binding(o)).collect();
        let shapes: Vec<Vec<Dim>> = sizes
            .iter()
            .map(|&s| {
                let mut u = t.under.clone();
                u[axis] = Dim::known(s);
                u
            })
            .collect();
        if sizes.iter().all(|&s| s == sizes[0]) {
            self.steps.push(Step::Expr {
                outputs: names.clone(),
                expr: format!("{}.split({}, {d})", t.name, sizes[0]),
                shapes: shapes.iter().map(|u| u[1..].to_vec()).collect(),
            });
        } else {
            let mut start = 0;
            for (k, name) in names.iter().enumerate() {
                self.steps.push(Step::Expr {
                    outputs: vec![name.clone()],
                    expr: format!("{}.narrow({d}, {start}, {})", t.name, sizes[k]),
                    shapes: vec![shapes[k][1..].to_vec()],
                });
                start += sizes[k];
            }
        }
        for (k, (name, under)) in names.into_iter().zip(shapes).enumerate() {
            self.set(n, k, Val::Tensor(Tensor::plain(name, under, t.dtype)));
        }
        Ok(())
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
