//! The operators that move or select values: `Concat`, `Gather`,
//! `Slice`, `Split`.

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
    pub(super) fn arange_cut(&self, n: &Node, d: &Data, starts: &[i64]) -> R<Option<Val>> {
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
