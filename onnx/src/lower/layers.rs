//! The operators that become layer fields: products (`MatMul`, `Gemm`,
//! `Conv`), recurrent layers, norms, pooling and `Resize`.

use super::*;

impl<'g> Lower<'g> {
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
}
