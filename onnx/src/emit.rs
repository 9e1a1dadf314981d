//! The `#[model]` source of a converted graph: a struct of fields in
//! sequence where the graph is a chain of layers, a struct and a forward
//! body otherwise. Every line is written as a person would write it, with
//! each step's per-sample output shape in a comment.

use std::collections::HashSet;
use std::fmt::Write;

use crate::dim::Dim;
use crate::lower::{Field, Program, Step, dim_code};
use crate::proto::DType;

/// What the header says about where the model came from.
pub struct Origin<'a> {
    pub file: &'a str,
    pub opset: i64,
}

/// The source, and the fields in the order the weights name them.
pub fn source(p: &Program, name: &str, origin: &Origin<'_>) -> Result<(String, Vec<Field>), String> {
    let mut out = String::new();
    // Plain comments, not `//!`: the file may be `include!`d (from a build
    // script's output), where inner doc comments are refused.
    let _ = writeln!(out, "// `{name}`, converted by blaze-onnx from `{}` (ONNX opset {}).", origin.file, origin.opset);
    let _ = writeln!(out, "//");
    let _ = writeln!(out, "// Plain `#[model]` source: edit it, retrain it. Its weights went to a");
    let _ = writeln!(out, "// safetensors file under the fields' names; load them with");
    let _ = writeln!(out, "// `blaze::record::load_model(&mut model, path)`.");
    let _ = writeln!(out);
    let _ = writeln!(out, "use blaze::prelude::*;");
    let _ = writeln!(out);
    match sequential(p) {
        Some(chain) => {
            let mut fields = Vec::new();
            let mut taken: HashSet<String> = p.fields.iter().map(|f| f.name.clone()).collect();
            let _ = writeln!(out, "#[model(input = {})]", dims(&p.input.1)?);
            let _ = writeln!(out, "pub struct {name} {{");
            for (field, shape) in chain {
                let mut f = field.clone();
                if f.tensors.is_empty() {
                    f.name = unique(&f.name, &mut taken);
                }
                write_field(&mut out, &f, Some(shape))?;
                fields.push(f);
            }
            let _ = writeln!(out, "}}");
            Ok((out, fields.into_iter().filter(|f| !f.tensors.is_empty()).collect()))
        }
        None => body(p, name, out),
    }
}

/// The chain of fields, if every step is a layer reading the one before.
fn sequential(p: &Program) -> Option<Vec<(&Field, &Vec<Dim>)>> {
    if !p.symbols.is_empty() || p.input.2 != DType::F32 {
        return None;
    }
    let mut prev = &p.input.0;
    let mut chain = Vec::new();
    for s in &p.steps {
        match s {
            Step::Layer { field, input, output, shape } if input == prev => {
                chain.push((&p.fields[*field], shape));
                prev = output;
            }
            Step::Act { field, input, output, shape, .. } if input == prev => {
                chain.push((&**field, shape));
                prev = output;
            }
            _ => return None,
        }
    }
    (*prev == p.output).then_some(chain)
}

fn body(p: &Program, name: &str, mut out: String) -> Result<(String, Vec<Field>), String> {
    let mut taken: HashSet<String> = p.fields.iter().map(|f| f.name.clone()).collect();
    let mut extra: Vec<Field> = Vec::new();
    let mut lines = Vec::new();
    for s in &p.steps {
        match s {
            Step::Layer { field, input, output, shape } => {
                lines.push(format!("let {output} = self.{}({input}); // {}", p.fields[*field].name, dims(shape)?));
            }
            Step::Act { body: Some(b), input, output, shape, .. } => {
                lines.push(format!("let {output} = {}; // {}", b.replace("{x}", input), dims(shape)?));
            }
            Step::Act { field, body: None, input, output, shape } => {
                let mut f = Field::clone(field);
                f.name = unique(&f.name, &mut taken);
                lines.push(format!("let {output} = self.{}({input}); // {}", f.name, dims(shape)?));
                extra.push(f);
            }
            Step::Expr { outputs, expr, shapes } => {
                let shown: Vec<String> = shapes.iter().map(|s| dims(s)).collect::<Result<_, _>>()?;
                let lhs = if outputs.len() == 1 { outputs[0].clone() } else { format!("[{}]", outputs.join(", ")) };
                lines.push(format!("let {lhs} = {expr}; // {}", shown.join(", ")));
            }
        }
    }
    // Fields in the order the forward pass first uses them.
    let mut fields: Vec<Field> = Vec::new();
    for s in &p.steps {
        match s {
            Step::Layer { field, .. } => {
                let f = &p.fields[*field];
                if !fields.iter().any(|g| g.name == f.name) {
                    fields.push(f.clone());
                }
            }
            Step::Act { body: None, .. } => {
                let f = extra.remove(0);
                fields.push(f);
            }
            Step::Expr { expr, .. } => {
                for f in &p.fields {
                    if expr.contains(&format!("self.{}(", f.name)) && !fields.iter().any(|g| g.name == f.name) {
                        fields.push(f.clone());
                    }
                }
            }
            Step::Act { .. } => {}
        }
    }
    let _ = writeln!(out, "#[model]");
    let _ = writeln!(out, "pub struct {name} {{");
    for f in &fields {
        write_field(&mut out, f, None)?;
    }
    let _ = writeln!(out, "}}");
    let _ = writeln!(out);
    let _ = writeln!(out, "#[model(input = {})]", dims(&p.input.1)?);
    let _ = writeln!(out, "impl {name} {{");
    let _ = writeln!(out, "    fn forward(&self, {}: Tensor) -> Tensor {{", p.input.0);
    // The last step's value is the output: written as the body's tail.
    let tail = format!("let {} = ", p.output);
    if lines.last().is_some_and(|l| l.starts_with(&tail)) {
        let last = lines.pop().expect("a last line");
        let (expr, comment) = last[tail.len()..].split_once("; //").expect("every line has a shape comment");
        lines.push(format!("{expr} //{comment}"));
    } else {
        lines.push(p.output.clone());
    }
    for l in lines {
        let _ = writeln!(out, "        {l}");
    }
    let _ = writeln!(out, "    }}");
    let _ = writeln!(out, "}}");
    Ok((out, fields.into_iter().filter(|f| !f.tensors.is_empty()).collect()))
}

fn write_field(out: &mut String, f: &Field, shape: Option<&Vec<Dim>>) -> Result<(), String> {
    if !f.keys.is_empty() {
        let keys: Vec<String> = f.keys.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(out, "    #[layer({})]", keys.join(", "));
    }
    let ty = f.layer.display(&f.generics, "");
    match shape {
        Some(s) => {
            let _ = writeln!(out, "    {}: {ty}, // -> {}", f.name, dims(s)?);
        }
        None => {
            let _ = writeln!(out, "    {}: {ty},", f.name);
        }
    }
    Ok(())
}

fn dims(d: &[Dim]) -> Result<String, String> {
    let parts: Vec<String> = d.iter().map(dim_code).collect::<Result<_, _>>()?;
    Ok(format!("[{}]", parts.join(", ")))
}

fn unique(base: &str, taken: &mut HashSet<String>) -> String {
    let mut name = base.to_owned();
    let mut k = 1;
    while taken.contains(&name) {
        name = format!("{base}_{k}");
        k += 1;
    }
    taken.insert(name.clone());
    name
}
