//! What a model's passes fuse and recompute: the layers whose output the
//! backward rebuilds, the norms and dropouts, the fusion plan `FUSION`
//! lists, and the ops each pass runs.

use super::*;

impl Gen<'_> {
    /// Layer nodes whose input the backward recomputes rather than the
    /// training forward keeping it, with the node that makes it: a layer
    /// whose cache is its input (`Linear`) reading, and alone, the output
    /// of an activation or normalisation that can rebuild it from its own
    /// cache (GELU, LayerNorm, RMSNorm) and that runs on its own.
    pub fn recomputable(&self) -> Vec<(usize, usize)> {
        let low = self.low;
        let uses = low.uses();
        let taken = self.fused_activations();
        let builtin = |i: usize| {
            let (callee, _) = self.layer_call(i)?;
            self.fields()[callee.field].kind.builtin().map(|(l, _)| l)
        };
        let mut out = Vec::new();
        for (i, n) in low.nodes.iter().enumerate() {
            let layer = matches!(n.op, Op::Layer(_)) && builtin(i).is_some_and(|l| l.caches_input());
            if !layer || uses[n.args[0]] != 1 {
                continue;
            }
            let Some(p) = low.nodes.iter().position(|m| m.out == n.args[0]) else { continue };
            let producer = &low.nodes[p];
            // An op whose derivative reads its input keeps that input, from
            // which its output is one pass; a norm keeps a cache that
            // rebuilds its output, on its own or ending a group.
            let (rebuilds, input) = if let Op::Unary(u) = &producer.op {
                (!of_output(u), producer.args[0])
            } else if let Some((_, x)) = self.layer_call(p) {
                (builtin(p).is_some_and(|l| l.recomputes_output()), x)
            } else {
                continue;
            };
            if rebuilds && !taken.contains(&p) && low.vals[n.args[0]].rank() == low.vals[input].rank() {
                out.push((i, p));
            }
        }
        out
    }

    /// The nodes that call a `LayerNorm` (`true`) or `RMSNorm` layer: a
    /// group may end with one.
    pub fn norms(&self) -> Vec<(usize, bool)> {
        (0..self.low.nodes.len())
            .filter_map(|i| {
                let Op::Layer(c) = &self.low.nodes[i].op else { return None };
                let (layer, _) = self.fields()[c.field].kind.builtin()?;
                Some((i, layer.row_norm()?))
            })
            .collect()
    }

    /// The nodes that call a `Dropout` layer: elementwise, so a group may
    /// take them.
    pub fn dropouts(&self) -> Vec<usize> {
        let dropout =
            |c: &Callee| self.fields()[c.field].kind.builtin().is_some_and(|(l, _)| l == blaze_spec::Layer::Dropout);
        (0..self.low.nodes.len()).filter(|&i| matches!(&self.low.nodes[i].op, Op::Layer(c) if dropout(c))).collect()
    }

    /// The expression of the recomputed input of layer node `i`, from its
    /// producer `p`'s cache.
    pub(super) fn recomputed(&self, p: usize) -> TokenStream {
        let n = &self.low.nodes[p];
        let (r, cp) = (self.rank(n.out), layer_cache_ident(p));
        if let Op::Unary(u) = &n.op {
            let (m, vx) = (format_ident!("{}", u.name), value_ident(n.args[0]));
            return quote!(cache.#vx.#m());
        }
        let (callee, _) = self.layer_call(p).expect("only activations and layers rebuild their outputs");
        let ty = field_ty(&self.fields()[callee.field].kind);
        let at = access(callee, self.fields());
        quote!(<#ty as ::blaze::nn::Recompute<B, #r>>::recompute(&#at, &cache.#cp))
    }

    /// The activation nodes that run inside their layer's call
    /// (`Gen::fused`): not for elementwise groups.
    pub fn fused_activations(&self) -> Vec<usize> {
        self.fused().values().map(Epilogue::node).collect()
    }

    /// Ops the forward runs: every node but inputs, dropouts' seeds and
    /// the activations run inside their layer.
    fn forward_ops(&self) -> usize {
        let taken = self.fused_activations();
        let runs = |(i, n): &(usize, &Node)| !matches!(n.op, Op::Input | Op::Seed(_)) && !taken.contains(i);
        self.low.nodes.iter().enumerate().filter(runs).count()
    }

    /// Node `i` as the fusion plan names it: a call by its field (and
    /// index), an op of the body by its method.
    fn op_name(&self, i: usize) -> String {
        let fused = |op: &Op| crate::fuse::fusable(op).map(str::to_owned);
        let node = &self.low.nodes[i];
        let field = |c: &Callee| {
            let f = &self.fields()[c.field].ident;
            c.index.map_or_else(|| f.to_string(), |k| format!("{f}[{k}]"))
        };
        if let Some(c) = &node.field {
            return field(c);
        }
        match &node.op {
            Op::Layer(c) | Op::Nested(c) | Op::Attend(c) => field(c),
            Op::Kernel { path, .. } => crate::fuse::kernel_name(path),
            Op::Scalar(ScalarOp::Table(op), _) => op.with_number.to_owned(),
            op @ (Op::Unary(_) | Op::Bin(_) | Op::Binary(_) | Op::Scalar(..) | Op::Neg | Op::CausalFill { .. }) => {
                fused(op).expect("an elementwise op has a name")
            }
            Op::Softmax(_) => "softmax".into(),
            Op::LogSoftmax(_) => "log_softmax".into(),
            Op::Reduce { mean: true, .. } => "mean".into(),
            Op::Reduce { mean: false, .. } => "sum".into(),
            Op::Matmul => "matmul".into(),
            Op::Transpose(..) => "transpose".into(),
            Op::Permute(_) => "permute".into(),
            Op::Reshape(_) => "reshape".into(),
            Op::Narrow { .. } => "narrow".into(),
            Op::Cat(_) => "cat".into(),
            Op::Input => "input".into(),
            Op::Positions(_) => "positions".into(),
            Op::Seed(c) => field(c),
            // A group by the norm that ends it, else by its kernel.
            Op::Fused(g) => match self.layer_call(i) {
                Some((c, _)) => field(&c),
                None => self.plan.groups[*g].kernel.name.clone(),
            },
            Op::SoftmaxWith(s) => self.plan.softmaxes[*s].ops.last().expect("a fold ends with its softmax").to_string(),
        }
    }

    /// The model's `FUSION` constant: the groups of this plan, with `wgsl`
    /// for each, and the op counts with it (`backward` its reverse pass)
    /// and as `unfused` runs them.
    pub fn fusion_plan(&self, wgsl: &[String], unfused: &Gen<'_>, backward: &diff::Backward) -> TokenStream {
        let groups = self.plan.groups.iter().zip(wgsl).map(|(g, w)| {
            let (name, ops, inputs) = (&g.kernel.name, &g.ops, g.inputs.len());
            // A compile-time shape is not known to the macro.
            let value = &self.low.vals[g.out];
            let output = if value.opaque.is_some() { "[..]".to_owned() } else { show(&value.shape, &self.low.symbols) };
            quote!(::blaze::nn::FusedGroup { name: #name, ops: &[#(#ops),*], inputs: #inputs, output: #output, wgsl: #w })
        });
        let softmaxes = self.plan.softmaxes.iter().map(|s| {
            let ops = &s.ops;
            quote!(&[#(#ops),*])
        });
        let name = |i: usize| self.op_name(i);
        let recomputed = self.plan.recompute.iter().map(|&(l, p)| format!("{} <- {}", name(l), name(p)));
        let mut epilogues: Vec<(usize, String)> = self
            .fused()
            .into_iter()
            .map(|(i, e)| {
                let op = if matches!(e, Epilogue::Act(..)) { name(e.node()) } else { "add".into() };
                (i, format!("{} + {op}", name(i)))
            })
            .collect();
        epilogues.sort();
        let epilogues = epilogues.into_iter().map(|(_, e)| e);
        let fwd = [self.forward_ops(), unfused.forward_ops()];
        let bwd = [backward.ops(), diff::differentiate(unfused.low, unfused.plan, self.fields(), true).ops()];
        // The products, as the body wrote them.
        let items: Vec<precision::Item<'_>> = self
            .unfused
            .nodes
            .iter()
            .filter_map(|node| match &node.op {
                Op::Layer(c) | Op::Attend(c) | Op::Nested(c) => {
                    let field = &self.fields()[c.field];
                    let name = field.ident.to_string();
                    Some(match &field.kind {
                        LayerKind::Builtin { layer, sizes, .. } => {
                            let options = &self.options[c.field].spec;
                            precision::Item::Layer { name, layer: *layer, sizes, options }
                        }
                        LayerKind::Opaque { .. } => precision::Item::Nested { name },
                    })
                }
                Op::Matmul => {
                    let [a, b] = [0, 1].map(|i| &self.unfused.vals[node.args[i]].shape);
                    let depth = a.last().and_then(Extent::fixed);
                    let what = format!("matmul {} x {}", show(a, &self.low.symbols), show(b, &self.low.symbols));
                    Some(precision::Item::Matmul { what, depth })
                }
                // No product: nothing a 16-bit precision rounds.
                Op::Input | Op::Positions(_) | elementwise_ops!() | movement_ops!() | row_ops!() | fused_ops!() => None,
            })
            .collect();
        let products = precision::plan_fields(self.model.precision, &items);
        quote!(::blaze::nn::FusionPlan {
            groups: &[#(#groups),*],
            softmaxes: &[#(#softmaxes),*],
            epilogues: &[#(#epilogues),*],
            recomputed: &[#(#recomputed),*],
            forward_ops: [#(#fwd),*],
            backward_ops: [#(#bwd),*],
            #products
        })
    }

    /// Layer nodes that finish in their bias pass (`forward_fused`): a
    /// `Linear` or `Conv2d` whose output only a ReLU, sigmoid or tanh reads
    /// takes the activation, as in a model of fields in sequence; a
    /// `Linear` whose output only a residual add of a value of its shape
    /// reads (`x + fc(h)`) takes the add, unless fusion is off.
    pub(super) fn fused(&self) -> HashMap<usize, Epilogue> {
        let low = self.low;
        let uses = low.uses();
        let mut out = HashMap::new();
        for (i, n) in low.nodes.iter().enumerate() {
            let Op::Layer(callee) = &n.op else { continue };
            let Some((layer, _)) = self.fields()[callee.field].kind.builtin() else { continue };
            if !layer.fuses_activation() || uses[n.out] != 1 {
                continue;
            }
            let Some(j) = low.nodes.iter().position(|m| m.args.contains(&n.out)) else { continue };
            // The ops whose derivative reads the output fuse into the bias
            // pass (GELU's reads the input, which the pass does not keep).
            if let Op::Unary(u) = low.nodes[j].op
                && of_output(u)
            {
                let op = unary_op(u);
                out.insert(i, Epilogue::Act(j, quote!(::core::option::Option::Some(#op))));
                continue;
            }
            let node = &low.nodes[j];
            if self.plan.enabled && layer.fuses_residual() && matches!(node.op, Op::Bin(Bin::Add)) {
                let r = if node.args[0] == n.out { node.args[1] } else { node.args[0] };
                let (vr, vo) = (&low.vals[r], &low.vals[n.out]);
                // The layer's call runs where the layer was: `r` must be made before.
                let before = low.nodes[..i].iter().any(|m| m.out == r);
                if r != n.out && before && vr.same_shape(vo) && vr.batched == vo.batched {
                    out.insert(i, Epilogue::Residual(j, r));
                }
            }
        }
        out
    }

    /// [`Gen::fused`], and for inference also an op whose derivative reads
    /// its input (GELU) after a layer that fuses activations, when the op
    /// runs on its own: only the training forward must keep that input.
    pub(super) fn fused_for_inference(&self) -> HashMap<usize, Epilogue> {
        let mut fused = self.fused();
        if !self.plan.enabled {
            return fused;
        }
        let low = self.low;
        for (i, n) in low.nodes.iter().enumerate() {
            let Op::Layer(callee) = &n.op else { continue };
            let layer = self.fields()[callee.field].kind.builtin().map(|(l, _)| l);
            if fused.contains_key(&i) || !layer.is_some_and(|l| l.fuses_activation()) {
                continue;
            }
            let readers: Vec<usize> = (0..low.nodes.len()).filter(|&j| low.nodes[j].args.contains(&n.out)).collect();
            if let [j] = readers[..]
                && let Op::Unary(u) = low.nodes[j].op
                && low.output != n.out
            {
                let op = unary_op(u);
                fused.insert(i, Epilogue::Act(j, quote!(::core::option::Option::Some(#op))));
            }
        }
        fused
    }
}
