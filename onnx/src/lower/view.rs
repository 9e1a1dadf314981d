//! Tensors seen through views: a reshape or transpose that moves the batch
//! changes only how the graph sees the data, and an op that computes reads
//! the data permuted batch-first again.

use super::*;

/// A tensor computed from the input. Its binding holds data of the full
/// shape `under`, the batch first, as a forward body computes per sample.
/// The graph may see it differently (`view`): its dims in another order,
/// some merged, the batch among them (sequence-first attention, heads
/// folded into the batch); each of the graph's dims is a group of `under`'s
/// axes, multiplied, an empty group a dim of 1. Reshapes and transposes
/// only change the view; an op that computes reads the data once the
/// batch is first again, permuted by one `permute` (see `Lower::canonical`).
#[derive(Clone, Debug)]
pub(super) struct Tensor {
    pub(super) name: String,
    pub(super) under: Vec<Dim>,
    /// `None`: the graph sees `under` itself.
    pub(super) view: Option<Vec<Vec<usize>>>,
    pub(super) dtype: DType,
}

impl Tensor {
    pub(super) fn plain(name: String, under: Vec<Dim>, dtype: DType) -> Tensor {
        Tensor { name, under, view: None, dtype }
    }

    /// The graph's dims as groups of `under`'s axes.
    pub(super) fn groups(&self) -> Vec<Vec<usize>> {
        self.view.clone().unwrap_or_else(|| (0..self.under.len()).map(|k| vec![k]).collect())
    }

    /// The shape the graph sees.
    pub(super) fn shape(&self) -> Vec<Dim> {
        self.groups().iter().map(|g| Dim::product(g.iter().map(|&k| &self.under[k]))).collect()
    }

    pub(super) fn per_sample(&self) -> &[Dim] {
        &self.under[1..]
    }

    /// The same data seen through `groups`; no view if that is `under`.
    pub(super) fn seen(mut self, groups: Vec<Vec<usize>>) -> Tensor {
        let identity = groups.len() == self.under.len() && groups.iter().enumerate().all(|(k, g)| *g == [k]);
        self.view = (!identity).then_some(groups);
        self
    }
}

impl<'g> Lower<'g> {
    /// Input `i` as data the graph sees as it is, batch first: a viewed
    /// tensor is permuted and reshaped into its view.
    pub(super) fn plain(&mut self, n: &Node, i: usize) -> R<Tensor> {
        let t = self.tensor(n, i)?;
        let c = self.canonical(&n.inputs[i], &t)?;
        if c.view.is_some() {
            return Err(format!(
                "reads `{}` of shape {}, where the batch is not the first dim on its own; Blaze computes per sample",
                n.inputs[i],
                show(&t.shape())
            ));
        }
        Ok(c)
    }

    /// `t`'s data rearranged so that each of the view's groups but the
    /// batch's is one axis, in the view's order, after the batch: one
    /// `permute` and one `reshape` at most. The view that remains only
    /// places the batch (alone, or merged with the dims it was merged with).
    pub(super) fn canonical(&mut self, onnx: &str, t: &Tensor) -> R<Tensor> {
        let Some(groups) = &t.view else { return Ok(t.clone()) };
        let batch = groups.iter().position(|g| g.contains(&0)).ok_or("a view without the batch dim")?;
        // The axes in the view's order, the batch first.
        let mut order = vec![0];
        order.extend(groups.iter().flatten().copied().filter(|&k| k != 0));
        let mut expr = t.name.clone();
        let moved: Vec<usize> = (1..order.len()).filter(|&k| order[k] != k).collect();
        let rank = order.len();
        expr = match moved.as_slice() {
            [] => expr,
            [a, b] if order[*a] == *b && order[*b] == *a => {
                format!("{expr}.transpose({}, {})", sample_axis(*a, rank), sample_axis(*b, rank))
            }
            _ => {
                let axes: Vec<String> = order[1..].iter().map(|&k| (k - 1).to_string()).collect();
                format!("{expr}.permute([{}])", axes.join(", "))
            }
        };
        let permuted: Vec<Dim> = order.iter().map(|&k| t.under[k].clone()).collect();
        // One axis per group; the batch's group keeps its axes apart.
        let mut under = vec![Dim::named(BATCH)];
        let mut view = Vec::new();
        for (g, members) in groups.iter().enumerate() {
            if g == batch {
                let mut v = Vec::new();
                for &k in members {
                    if k == 0 {
                        v.push(0);
                    } else {
                        v.push(under.len());
                        under.push(t.under[k].clone());
                    }
                }
                view.push(v);
            } else {
                view.push(vec![under.len()]);
                under.push(Dim::product(members.iter().map(|&k| &t.under[k])));
            }
        }
        // A split axis read back whole is the binding it was split from.
        if let Some((whole, shape)) = self.splits.get(&t.name)
            && moved.is_empty()
            && under == *shape
        {
            let out = Tensor::plain(whole.clone(), under, t.dtype).seen(view);
            self.vals.insert(onnx.to_owned(), Val::Tensor(out.clone()));
            return Ok(out);
        }
        if under != permuted {
            check_dims(&under[1..])?;
            let dims: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
            expr = format!("{expr}.reshape([{}])", dims.join(", "));
        }
        let out = Tensor::plain(String::new(), under, t.dtype).seen(view);
        if expr == t.name {
            return Ok(Tensor { name: t.name.clone(), ..out });
        }
        let name = self.binding(&format!("{onnx}_data"));
        check_dims(&out.under[1..])?;
        self.steps.push(Step::Expr { outputs: vec![name.clone()], expr, shapes: vec![out.under[1..].to_vec()] });
        let out = Tensor { name, ..out };
        self.vals.insert(onnx.to_owned(), Val::Tensor(out.clone()));
        Ok(out)
    }

    /// Input `i` of a `Linear`, which acts on the last dim: it may stay a
    /// view when that dim is the data's last axis.
    pub(super) fn linear_input(&mut self, n: &Node, i: usize) -> R<Tensor> {
        let t = self.tensor(n, i)?;
        let c = self.canonical(&n.inputs[i], &t)?;
        let last = c.under.len() - 1;
        match &c.view {
            None => Ok(c),
            Some(g) if last > 0 && g.last().is_some_and(|l| *l == [last]) => Ok(c),
            Some(_) => Err(format!("applies a weight to {}, whose last dim holds the batch", show(&t.shape()))),
        }
    }

    pub(super) fn reshape(&mut self, n: &Node) -> R<()> {
        // A size computed from shapes, as a list of one (or back).
        match self.input_val(n, 0)?.clone() {
            Val::Scalar(d) => {
                self.set(n, 0, Val::Shape(vec![d]));
                return Ok(());
            }
            Val::Shape(s) if s.len() == 1 && self.ints(n, 1)?.is_empty() => {
                self.set(n, 0, Val::Scalar(s[0].clone()));
                return Ok(());
            }
            // A list of sizes kept a list (`[k]` or `[-1]`).
            Val::Shape(s) if matches!(self.known_ints(n, 1).as_deref(), Ok([k]) if *k == -1 || *k == s.len() as i64) => {
                self.set(n, 0, Val::Shape(s));
                return Ok(());
            }
            // A constant keeps its values under the new shape.
            Val::Const(c) => {
                let shape: Vec<Dim> = c.dims.iter().map(|&d| Dim::known(d as i64)).collect();
                let target = self.ints(n, 1)?;
                let dims = target_dims(&target, &shape, n.int("allowzero").unwrap_or(0) == 1)?;
                let dims = fill_rest(dims, &shape, &target)?;
                let dims = dims.iter().map(|d| d.value().map(|v| v as usize)).collect::<Option<Vec<_>>>();
                let dims = dims
                    .filter(|d| d.iter().product::<usize>() == c.len())
                    .ok_or_else(|| format!("reshapes a constant of shape {:?} to {}", c.dims, show(&target)))?;
                self.set(n, 0, Val::Const(Data { dims, values: c.values }));
                return Ok(());
            }
            _ => {}
        }
        let t = self.tensor(n, 0)?;
        let target = self.ints(n, 1)?;
        let shape = t.shape();
        let numel = Dim::product(&shape);
        let mut dims = target_dims(&target, &shape, n.int("allowzero").unwrap_or(0) == 1)?;
        // An export at a fixed batch size writes that size (or a multiple:
        // batch times heads) where the batch goes: if the sizes agree only
        // with the batch in one of those places, it is there.
        let agree = |dims: &[Option<Dim>]| {
            let known = Dim::product(dims.iter().flatten());
            if dims.iter().any(Option::is_none) { numel.div(&known).is_some() } else { numel == known }
        };
        if let Some(b) = self.fixed_batch.clone()
            && !agree(&dims)
        {
            // Where the dims before it hold as many values as those before
            // the batch in the input, first (a row-major reshape keeps its
            // place); then the size itself, then its multiples (at batch 3,
            // 9 is both a length and 3 x 3).
            let (shape, groups) = (t.shape(), t.groups());
            let before = groups.iter().position(|g| g.contains(&0)).map(|g| {
                let inner = groups[g].iter().take_while(|&&a| a != 0).map(|&a| &t.under[a]);
                Dim::product(&shape[..g]).mul(&Dim::product(inner))
            });
            let in_place = (0..dims.len()).filter(|&k| {
                dims[..k].iter().all(Option::is_some)
                    && before.as_ref().is_some_and(|p| *p == Dim::product(dims[..k].iter().flatten()))
            });
            let exact = (0..dims.len()).filter(|&k| dims[k].as_ref() == Some(&b));
            let batched = in_place.chain(exact).chain(0..dims.len()).find_map(|k| {
                let q = dims[k].as_ref()?.div(&b).filter(|q| q.value().is_some())?;
                let mut batched = dims.clone();
                batched[k] = Some(q.mul(&Dim::named(BATCH)));
                agree(&batched).then_some(batched)
            });
            if let Some(batched) = batched {
                dims = batched;
            }
        }
        let mut dims = fill_rest(dims, &shape, &target)?;
        // An export at a fixed batch size writes that size where the batch goes.
        if t.view.is_none()
            && dims[0].value().is_some()
            && numel.div(&Dim::product(&dims[1..])).is_some_and(|b| b.name().is_some_and(|n| n == BATCH))
        {
            dims[0] = Dim::named(BATCH);
        }
        if t.view.is_none() && dims[0].name().is_some_and(|n| n == BATCH) {
            let rest = dims[1..].to_vec();
            if rest.len() == 1 && t.under.len() > 2 {
                return self.act(n, Layer::Flatten, vec![], vec![], Some("{x}.flatten()"), &t, "flatten");
            }
            check_dims(&rest)?;
            let code: Vec<String> = rest.iter().map(dim_code).collect::<R<_>>()?;
            let mut under = vec![Dim::named(BATCH)];
            under.extend(rest);
            return self.emit(n, 0, format!("{}.reshape([{}])", t.name, code.join(", ")), under, None, t.dtype);
        }
        let v = self.regroup(n, &t, &dims)?;
        self.alias(n, 0, v);
        Ok(())
    }

    /// `t` seen with shape `target`: the view's axes, in its order, grouped
    /// into the new dims. An axis that a new dim cuts is split in the data
    /// (a per-sample reshape: the batch is never split), and axes of size 1
    /// left over are dropped.
    pub(super) fn regroup(&mut self, n: &Node, t: &Tensor, target: &[Dim]) -> R<Tensor> {
        let cannot = |why: String| format!("reshapes {} to {}: {why}", show(&t.shape()), show(target));
        // The data's axes as (id, size); a split replaces one by two new ids.
        let mut axes: Vec<(usize, Dim)> = t.under.iter().cloned().enumerate().collect();
        let mut next = axes.len();
        let size = |axes: &[(usize, Dim)], id: usize| axes.iter().find(|(i, _)| *i == id).map(|(_, d)| d.clone());
        let mut atoms: std::collections::VecDeque<usize> = t.groups().into_iter().flatten().collect();
        let one = Dim::known(1);
        let mut groups = Vec::new();
        for d in target {
            let mut group = Vec::new();
            let mut rest = d.clone();
            while rest != one {
                let a = *atoms.front().ok_or_else(|| cannot("the sizes do not match".into()))?;
                let s = size(&axes, a).expect("a live axis");
                if let Some(r) = rest.div(&s) {
                    group.push(a);
                    atoms.pop_front();
                    rest = r;
                    continue;
                }
                let q = s.div(&rest).ok_or_else(|| cannot(format!("dim {s} does not split into {rest}")))?;
                if a == 0 {
                    return Err(cannot("it splits the batch dim".into()));
                }
                let pos = axes.iter().position(|(i, _)| *i == a).expect("a live axis");
                axes.splice(pos..=pos, [(next, rest.clone()), (next + 1, q)]);
                group.push(next);
                atoms[0] = next + 1;
                next += 2;
                rest = one.clone();
            }
            groups.push(group);
        }
        for a in atoms {
            if size(&axes, a) != Some(one.clone()) {
                return Err(cannot("the sizes do not match".into()));
            }
            axes.retain(|(i, _)| *i != a);
        }
        let under: Vec<Dim> = axes.iter().map(|(_, d)| d.clone()).collect();
        let at = |id: usize| axes.iter().position(|(i, _)| *i == id).expect("a live axis");
        let groups: Vec<Vec<usize>> = groups.iter().map(|g| g.iter().map(|&id| at(id)).collect()).collect();
        if under == t.under {
            return Ok(Tensor { view: None, ..t.clone() }.seen(groups));
        }
        // Split or dropped axes: the data is reshaped per sample first.
        check_dims(&under[1..])?;
        let code: Vec<String> = under[1..].iter().map(dim_code).collect::<R<_>>()?;
        let name = self.binding(&n.outputs[0]);
        self.steps.push(Step::Expr {
            outputs: vec![name.clone()],
            expr: format!("{}.reshape([{}])", t.name, code.join(", ")),
            shapes: vec![under[1..].to_vec()],
        });
        Ok(Tensor::plain(name, under, t.dtype).seen(groups))
    }

    pub(super) fn transpose(&mut self, n: &Node) -> R<()> {
        if let Val::Const(w) = self.input_val(n, 0)?
            && w.dims.len() == 2
            && n.ints("perm").is_none_or(|p| p == [1, 0])
        {
            // A weight transposed in the graph (`MatMul` by `W^T`, as
            // Blaze's own export writes a `Linear` of sequences): the
            // transposed weight.
            let t = transpose2(w)?;
            self.set(n, 0, Val::Const(t));
            return Ok(());
        }
        let t = self.tensor(n, 0)?;
        let rank = t.shape().len();
        let perm: Vec<usize> = match n.ints("perm") {
            Some(p) => p.iter().map(|&x| norm_axis(x, rank)).collect::<R<_>>()?,
            None => (0..rank).rev().collect(),
        };
        if t.view.is_some() || perm.first() != Some(&0) {
            // Only the view changes; the data moves when an op computes.
            let groups = t.groups();
            let seen: Vec<Vec<usize>> = perm.iter().map(|&p| groups[p].clone()).collect();
            self.alias(n, 0, t.seen(seen));
            return Ok(());
        }
        let under: Vec<Dim> = perm.iter().map(|&k| t.under[k].clone()).collect();
        let moved: Vec<usize> = (1..perm.len()).filter(|&k| perm[k] != k).collect();
        let expr = match moved.as_slice() {
            [] => {
                self.alias(n, 0, t);
                return Ok(());
            }
            [a, b] if perm[*a] == *b && perm[*b] == *a => {
                format!("{}.transpose({}, {})", t.name, sample_axis(*a, rank), sample_axis(*b, rank))
            }
            _ => {
                let axes: Vec<String> = perm[1..].iter().map(|&k| (k - 1).to_string()).collect();
                format!("{}.permute([{}])", t.name, axes.join(", "))
            }
        };
        self.emit(n, 0, expr, under, None, t.dtype)
    }

    pub(super) fn squeeze(&mut self, n: &Node) -> R<()> {
        let axes = self.axes(n, 1)?;
        let v = self.input_val(n, 0)?.clone();
        let out = match (n.op.as_str(), v) {
            ("Squeeze", Val::Shape(s)) if s.len() == 1 && axes.as_deref().is_none_or(|a| a == [0] || a == [-1]) => {
                Val::Scalar(s[0].clone())
            }
            ("Unsqueeze", Val::Scalar(d)) if axes.as_deref().is_some_and(|a| a == [0] || a == [-1]) => {
                Val::Shape(vec![d])
            }
            ("Unsqueeze", Val::Const(d)) if d.dims.is_empty() && axes.as_deref().is_some_and(|a| a == [0]) => {
                Val::Const(Data { dims: vec![1], values: d.values })
            }
            (op, Val::Tensor(t)) => {
                // A reshape by another name.
                let shape = t.shape();
                let rank = shape.len();
                let target: Vec<Dim> = if op == "Squeeze" {
                    let axes: Vec<usize> = match &axes {
                        Some(a) => a.iter().map(|&x| norm_axis(x, rank)).collect::<R<_>>()?,
                        None => (0..rank).filter(|&k| shape[k] == Dim::known(1)).collect(),
                    };
                    if axes.iter().any(|&k| shape[k] != Dim::known(1)) {
                        return Err(format!("squeezes axes {axes:?} of {}, not all of size 1", show(&shape)));
                    }
                    shape.iter().enumerate().filter(|(k, _)| !axes.contains(k)).map(|(_, d)| d.clone()).collect()
                } else {
                    let axes = axes.ok_or("has no axes")?;
                    let out = rank + axes.len();
                    let mut axes: Vec<usize> = axes.iter().map(|&x| norm_axis(x, out)).collect::<R<_>>()?;
                    axes.sort_unstable();
                    let mut dims = shape.into_iter();
                    (0..out)
                        .map(|k| if axes.contains(&k) { Dim::known(1) } else { dims.next().expect("rank") })
                        .collect()
                };
                let v = self.regroup(n, &t, &target)?;
                Val::Tensor(v)
            }
            ("Unsqueeze", Val::Positions { lead, len, trail }) if axes.is_some() => {
                // Unit dims before or after the positions.
                let a = axes.as_deref().expect("axes");
                let out = (lead + 1 + trail + a.len()) as i64;
                let mut at: Vec<i64> = a.iter().map(|&x| if x < 0 { x + out } else { x }).collect();
                at.sort_unstable();
                at.dedup();
                if at.len() != a.len() || at.iter().any(|&x| !(0..out).contains(&x)) {
                    return Err(format!("unsqueezes positions at axes {a:?}, which are repeated or past rank {out}"));
                }
                let mut place = 0;
                let (mut before, mut after) = (0, 0);
                for k in 0..out {
                    if at.contains(&k) {
                        if place <= lead { before += 1 } else { after += 1 }
                    } else {
                        place += 1;
                    }
                }
                Val::Positions { lead: lead + before, len, trail: trail + after }
            }
            ("Unsqueeze", Val::Triangle(mut tri))
                if axes.as_deref().is_some_and(|a| a.iter().all(|&x| x >= 0 && (x as usize) < a.len())) =>
            {
                // `[T, T]` to `[1, 1, T, T]`: unit dims in front.
                tri.lead += axes.as_deref().map_or(0, <[i64]>::len);
                Val::Triangle(tri)
            }
            _ => return Err("is applied to a value the importer cannot follow".into()),
        };
        self.set(n, 0, out);
        Ok(())
    }
}

/// A `Reshape`'s target against the input's `shape`: 0 copies the input's
/// dim (unless `allowzero`), -1 (at most one) is left for [`fill_rest`].
fn target_dims(target: &[Dim], shape: &[Dim], allowzero: bool) -> R<Vec<Option<Dim>>> {
    let dims: Vec<Option<Dim>> = target
        .iter()
        .enumerate()
        .map(|(k, d)| match d.value() {
            Some(0) if !allowzero => {
                shape.get(k).cloned().map(Some).ok_or("copies a dim past the input's rank".to_string())
            }
            Some(-1) => Ok(None),
            Some(v) if v < 0 => Err(format!("has a negative size {v}")),
            _ => Ok(Some(d.clone())),
        })
        .collect::<R<_>>()?;
    if dims.iter().filter(|d| d.is_none()).count() > 1 {
        return Err("has more than one -1".into());
    }
    Ok(dims)
}

/// `dims` with its -1 taking the values the others leave of `shape`'s.
fn fill_rest(mut dims: Vec<Option<Dim>>, shape: &[Dim], target: &[Dim]) -> R<Vec<Dim>> {
    let numel = Dim::product(shape);
    let known = Dim::product(dims.iter().flatten());
    if let Some(slot) = dims.iter_mut().find(|d| d.is_none()) {
        *slot = Some(
            numel
                .div(&known)
                .ok_or_else(|| format!("reshapes {} to {}: the sizes do not divide", show(shape), show(target)))?,
        );
    }
    Ok(dims.into_iter().map(|d| d.expect("filled")).collect())
}
