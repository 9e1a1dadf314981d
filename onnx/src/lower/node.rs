//! One ONNX node lowered: the dispatch by operator type to the methods
//! of `ops.rs`, `layers.rs`, `movement.rs`, `view.rs` and `mask.rs`, and
//! the operators simple enough to lower here.

use super::*;

impl<'g> Lower<'g> {
    pub(super) fn node(&mut self, n: &'g Node) -> R<()> {
        let op = n.op.as_str();
        match op {
            "Identity" => {
                let v = self.input_val(n, 0)?.clone();
                self.set(n, 0, v);
            }
            "Constant" => {
                let d = if let Some(crate::proto::Attr::Tensor(d)) = n.attrs.get("value") {
                    d.clone()
                } else if let Some(v) = n.float("value_float") {
                    Data { dims: vec![], values: Values::F32(vec![v]) }
                } else if let Some(v) = n.int("value_int") {
                    Data { dims: vec![], values: Values::I64(vec![v]) }
                } else if let Some(v) = n.ints("value_ints") {
                    Data { dims: vec![v.len()], values: Values::I64(v.to_vec()) }
                } else if let Some(crate::proto::Attr::Floats(v)) = n.attrs.get("value_floats") {
                    Data { dims: vec![v.len()], values: Values::F32(v.clone()) }
                } else {
                    return Err("holds no value the importer reads (value, value_float(s), value_int(s))".into());
                };
                self.set(n, 0, Val::Const(d));
            }
            "Cast" => {
                // Integer shape arithmetic and float scalars pass through;
                // casting a computed tensor changes nothing Blaze computes in f32.
                let v = self.input_val(n, 0)?.clone();
                let v = match (v, n.int("to")) {
                    (Val::Tensor(t), Some(1)) if t.dtype == DType::F32 => Val::Tensor(t),
                    // Integers from the data: a body cannot compute them, and
                    // whatever reads them says why.
                    (Val::Tensor(_) | Val::Opaque(_), to) => Val::Opaque(format!(
                        "`{}` casts a tensor computed from the data to ONNX type {}",
                        n.name,
                        to.unwrap_or(0)
                    )),
                    // A mask's values as bools (`Cast(to = BOOL)` of a
                    // triangle of ones and zeros).
                    (Val::Triangle(t), Some(9)) => Val::Triangle(t.map(|f| match f {
                        mask::Fill::Num(x) => mask::Fill::Bool(*x != 0.0),
                        b => b.clone(),
                    })),
                    // Constants and known sizes turn to floats (float, double) here.
                    (v, Some(1 | 11)) if v.known().is_some() => {
                        let c = v.known().expect("known");
                        Val::Const(Data {
                            values: Values::F32(c.as_f64().iter().map(|&x| x as f32).collect()),
                            dims: c.dims,
                        })
                    }
                    (v, _) => v,
                };
                self.set(n, 0, v);
            }
            "Shape" => {
                let v = self.input_val(n, 0)?;
                let s = match v {
                    _ if v.dims().is_some() => v.dims().expect("dims"),
                    Val::Shape(s) => vec![Dim::known(s.len() as i64)],
                    Val::Triangle(t) => {
                        let mut s = vec![Dim::known(1); t.lead];
                        s.extend([t.rows.clone(), t.cols.clone()]);
                        s
                    }
                    other => {
                        return Err(format!("reads the shape of {}, which the importer cannot follow", kind(other)));
                    }
                };
                let r = s.len() as i64;
                let clamp = |x: i64| (if x < 0 { x + r } else { x }).clamp(0, r) as usize;
                let start = clamp(n.int("start").unwrap_or(0));
                let end = clamp(n.int("end").unwrap_or(r));
                self.set(n, 0, Val::Shape(s[start..end.max(start)].to_vec()));
            }
            "Squeeze" | "Unsqueeze" => self.squeeze(n)?,
            "Concat" => self.concat(n)?,
            "Gather" => self.gather(n)?,
            "Slice" => self.slice(n)?,
            "Range" => {
                let start = self.ints(n, 0)?;
                let limit = self.ints(n, 1)?;
                let delta = self.ints(n, 2)?;
                match (start.as_slice(), limit.as_slice(), delta.as_slice()) {
                    ([s], [l], [d]) if s.value() == Some(0) && d.value() == Some(1) => {
                        self.set(n, 0, Val::Positions { lead: 0, len: l.clone(), trail: 0 });
                    }
                    _ => return Err("is not `arange(0, n)`, the positions of a sequence".into()),
                }
            }
            "Expand" => {
                let shape = self.ints(n, 1)?;
                let v = self.input_val(n, 0)?;
                if let Val::Triangle(tri) = v {
                    // A mask broadcast over the batch and heads: masking
                    // broadcasts it anyway.
                    let tri = mask::expanded(tri, &shape)?;
                    self.set(n, 0, Val::Triangle(tri));
                    return Ok(());
                }
                match (v.one_value(), v.dims()) {
                    // One value, broadcast to the shape (ONNX's Expand
                    // broadcasts both ways).
                    (Some(fill), Some(dims)) => {
                        let shape = broadcast(&dims, &shape)?;
                        self.set(n, 0, Val::Filled(fill, shape));
                    }
                    _ => return Err("expands something other than a constant of one value".into()),
                }
            }
            "GatherElements" => {
                // `buffer.gather(1, position_ids)` of a buffer of one value
                // (BERT's token types): that value, in the indices' shape.
                let (data, index) = (self.input_val(n, 0)?, self.input_val(n, 1)?);
                match (data.one_value(), index.dims()) {
                    (Some(fill), Some(shape)) => self.set(n, 0, Val::Filled(fill, shape)),
                    _ => {
                        return Err(format!(
                            "gathers elements of {}; only a constant of one value (a buffer of zeros) is read",
                            kind(data)
                        ));
                    }
                }
            }
            "Greater" | "GreaterOrEqual" | "Less" | "LessOrEqual" => self.order(n)?,
            "IsNaN" => {
                // The guard around attention's softmax (NaN to 0 where every
                // key is masked) is read by `Where`; nothing else is.
                match self.input_val(n, 0)? {
                    Val::Tensor(t) if self.produced_by(&n.inputs[0], "Softmax") => {
                        let v = Val::SoftmaxNan(t.clone());
                        self.set(n, 0, v);
                    }
                    other => {
                        let v = Val::Opaque(format!("`{}` tests {} for NaN", n.name, kind(other)));
                        self.set(n, 0, v);
                    }
                }
            }
            "ConstantOfShape" => {
                let shape = self.ints(n, 0)?;
                let value = match n.attrs.get("value") {
                    Some(crate::proto::Attr::Tensor(d)) if d.len() == 1 => d.clone(),
                    Some(_) => return Err("has a `value` of more than one element".into()),
                    None => Data { dims: vec![], values: Values::F32(vec![0.0]) },
                };
                let sizes = shape.iter().map(Dim::value).collect::<Option<Vec<i64>>>();
                match sizes.as_deref() {
                    // A vector of known length (an exporter's shape
                    // arithmetic, `where(shape == -1, 1, shape)`): a constant
                    // of the value's type.
                    Some(&[k]) if (0..=64).contains(&k) => {
                        let k = k as usize;
                        let values = match &value.values {
                            Values::I64(v) => Values::I64(vec![v[0]; k]),
                            Values::F32(v) => Values::F32(vec![v[0]; k]),
                            Values::Bool(v) => Values::Bool(vec![v[0]; k]),
                        };
                        self.set(n, 0, Val::Const(Data { dims: vec![k], values }));
                    }
                    _ => {
                        let fill = match &value.values {
                            Values::Bool(b) => Fill::Bool(b[0]),
                            _ => Fill::Num(value.as_f64()[0]),
                        };
                        self.set(n, 0, Val::Filled(fill, shape));
                    }
                }
            }
            "LSTM" | "GRU" => self.recurrent(n)?,
            "Trilu" => {
                let lower = n.int("upper").unwrap_or(1) == 0;
                let diagonal = match n.input(1) {
                    Some(_) => *self.known_ints(n, 1)?.first().ok_or("has an empty diagonal")?,
                    None => 0,
                };
                match self.input_val(n, 0)? {
                    Val::Filled(f, s) if s.len() == 2 => {
                        let off = match f {
                            Fill::Num(_) => Fill::Num(0.0),
                            Fill::Bool(_) => Fill::Bool(false),
                        };
                        let (rows, cols) = (s[0].clone(), s[1].clone());
                        let v = Val::Triangle(Tri { lead: 0, rows, cols, lower, diagonal, on: f.clone(), off });
                        self.set(n, 0, v);
                    }
                    _ => return Err("keeps a triangle of something other than a square of one value".into()),
                }
            }
            "Equal" if self.input_val(n, 0)?.known().is_some() && self.input_val(n, 1)?.known().is_some() => {
                // Shape arithmetic (`where(shape == -1, 1, shape)`) done here.
                let known = |k| self.input_val(n, k).map(|v| v.known().expect("known"));
                let v = ops::fold_equal(&known(0)?, &known(1)?)?;
                self.set(n, 0, Val::Const(v));
            }
            "Equal" if matches!(self.input_val(n, 0)?, Val::Shape(_)) && self.input_val(n, 1)?.known().is_some() => {
                // A shape with named sizes against numbers: a size is never
                // negative (`shape == -1` is false there).
                let s = self.ints(n, 0)?;
                let c = self.input_val(n, 1)?.known().expect("known").as_f64();
                if c.len() != s.len() && c.len() != 1 {
                    return Err(format!("compares a shape of {} sizes with {} numbers", s.len(), c.len()));
                }
                let values = s
                    .iter()
                    .enumerate()
                    .map(|(k, d)| {
                        let c = c[if c.len() == 1 { 0 } else { k }];
                        match d.value() {
                            Some(v) => Ok(v as f64 == c),
                            None if c < 0.0 => Ok(false),
                            None => Err(format!("compares the size {d} with {c}, which it may equal")),
                        }
                    })
                    .collect::<R<Vec<bool>>>()?;
                self.set(n, 0, Val::Const(Data { dims: vec![s.len()], values: Values::Bool(values) }));
            }
            "Equal" => {
                let tri = self.input_val(n, 0)?.clone();
                let c = self.konst(n, 1)?.scalar().ok_or("compares with more than one value")?;
                match tri {
                    Val::Triangle(t) => {
                        let v = Val::Triangle(t.map(|f| match f {
                            Fill::Num(x) => Fill::Bool(*x == c),
                            Fill::Bool(b) => Fill::Bool(f64::from(u8::from(*b)) == c),
                        }));
                        self.set(n, 0, v);
                    }
                    _ => return Err("compares values computed from the data; only a mask's triangle is read".into()),
                }
            }
            "Where" => self.select(n)?,
            "Add" | "Sub" | "Mul" | "Div" | "Mod" => self.arith(n)?,
            "Pow" => self.pow(n)?,
            "MatMul" => self.matmul(n)?,
            "Gemm" => self.gemm(n)?,
            "Conv" | "ConvTranspose" => self.conv(n)?,
            "BatchNormalization" => self.batch_norm(n)?,
            "LayerNormalization" => self.layer_norm(n)?,
            "LeakyRelu" | "Gelu" | "Dropout" | "Softmax" | "LogSoftmax" | "Flatten" | "Clip" | "HardSigmoid"
            | "Softplus" => self.unary(n)?,
            op if table_op_named(op).is_some() => self.unary(n)?,
            "MaxPool" | "AveragePool" => self.pool(n)?,
            "Resize" => self.resize(n)?,
            "GlobalAveragePool" => {
                let t = self.plain(n, 0)?;
                self.act(n, Layer::AdaptiveAvgPool2d, vec![1, 1], vec![], None, &t, "global_avg_pool")?;
            }
            "ReduceMean" | "ReduceSum" => self.reduce(n)?,
            "Reshape" => self.reshape(n)?,
            "Transpose" => self.transpose(n)?,
            "Split" => self.split(n)?,
            other => return Err(format!("`{other}` has no conversion")),
        }
        Ok(())
    }
}
