//! A sequential model as the one op IR (`graph::lower`'s SSA op list):
//! each field a call on the value the field before it made, with the
//! shapes `check.rs` inferred. From there a sequential model takes the
//! same passes as a forward body: fusion, the backward, printing.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::check::{Plan, Shape};
use super::ir::{LayerKind, Model};
use crate::model::ops::{Callee, Dim, Lowered, Node, Op, SampleDim, Val};

/// The model's fields in order as ops: a field that is an op of the op
/// table as that op, another built-in layer as a layer call, a type the
/// macro cannot see as a nested call (shaped by its `Block` consts, which
/// const assertions check). `check` has accepted `plan`.
pub fn lower(model: &Model, plan: &Plan) -> Lowered {
    let input: Vec<Dim> = model.input.iter().map(|&(d, _)| Dim::size(d)).collect();
    let mut vals = vec![Val { shape: input, opaque: None, batched: true, grad: true, params: false }];
    let mut nodes = vec![Node { op: Op::Input, args: Vec::new(), out: 0, span: model.ident.span(), field: None }];
    let mut asserts = Vec::new();
    let mut first_output = Vec::new();
    for (i, (f, step)) in model.fields.iter().zip(&plan.steps).enumerate() {
        let callee = Callee { field: i, index: None };
        let (op, field) = match &f.kind {
            LayerKind::Builtin { layer: blaze_spec::Layer::Unary(u), .. } => (Op::Unary(u), Some(callee)),
            LayerKind::Builtin { .. } => (Op::Layer(callee), None),
            LayerKind::Opaque { .. } => (Op::Nested(callee), None),
        };
        let prev = vals.len() - 1;
        let elementwise = f.kind.builtin().is_some_and(|(l, _)| l.is_elementwise());
        let (shape, opaque) = match &step.output {
            Shape::Known(d) => (d.iter().map(|&n| Dim::size(n)).collect(), None),
            // An elementwise field keeps its input's shape, as the same
            // expression, so that the passes see one shape (and fuse and
            // recompute after a nested field as after any other).
            Shape::Opaque(_) if elementwise => (Vec::new(), vals[prev].opaque.clone()),
            Shape::Opaque(e) => (Vec::new(), Some(e.clone())),
        };
        let params = vals[prev].params || f.kind.has_params();
        vals.push(Val { shape, opaque, batched: true, grad: true, params });
        let out = vals.len() - 1;
        nodes.push(Node { op, args: vec![prev], out, span: f.ident.span(), field });
        first_output.push(Some(out));
        asserts.extend(field_asserts(model, i, plan));
    }
    let output = vals.len() - 1;
    Lowered { vals, nodes, inputs: vec![0], output, symbols: Vec::new(), asserts, first_output }
}

/// Field `i`'s const assertions: a type the macro cannot see accepts the
/// shape before it, a `Map`'s kernel takes one argument, and the const
/// that holds a compile-time output shape.
fn field_asserts(model: &Model, i: usize, plan: &Plan) -> Vec<TokenStream> {
    let (f, s) = (&model.fields[i], &plan.steps[i]);
    let span = f.ty.span();
    let mut out = Vec::new();
    if let LayerKind::Opaque { .. } = f.kind {
        let ty = f.kind.opaque_ty(&quote!(::blaze::Cpu));
        let prev = s.input.static_tokens();
        let from = if i == 0 { "the model input".to_owned() } else { format!("`{}`", model.fields[i - 1].ident) };
        let produced = match &s.input {
            Shape::Known(d) => format!(" {d:?}"),
            Shape::Opaque(_) => String::new(),
        };
        let msg = format!(
            "`{}: {}` expects another per-sample input shape than {from} produces{produced} (see its INPUT_SHAPE)",
            f.ident,
            f.kind.display()
        );
        out.push(quote_spanned! {span=>
            const _: () = ::blaze::nn::shape_rules::expect(
                <#ty as ::blaze::nn::Block<::blaze::Cpu>>::INPUT, #prev, #msg);
        });
    }
    if let LayerKind::Builtin { kernel: Some((kernel, name)), .. } = &f.kind {
        let msg = format!("`{}: Map<{name}>`: Map applies a kernel of one argument", f.ident);
        out.push(quote_spanned! {span=>
            const _: () = ::core::assert!(
                <#kernel as ::blaze::runtime::kernel::Elementwise>::ARGS.len() == 1, #msg);
        });
    }
    if let (Shape::Opaque(name), Some(def)) = (&s.output, &s.output_def) {
        out.push(quote_spanned! {span=>
            #[doc(hidden)]
            #[allow(non_upper_case_globals)]
            const #name: ::blaze::nn::StaticShape = #def;
        });
    }
    out
}
