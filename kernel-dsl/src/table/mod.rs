//! The op table (`blaze_spec::ops`) printed for each crate that computes
//! its ops: every entry's body is parsed as a `kernel!` function, checked,
//! differentiated (or given its written derivative) and printed by the
//! same printers as user kernels. The runtime gets the `UnaryOp` enum and
//! one `Elementwise` kernel per op with its adjoint (`g * ∂f/∂x`); the
//! CubeCL backend gets the `#[cube]` functions and launchers of the same
//! kernels. A fused group calls the runtime's kernel, so an op computes
//! the same bits fused and unfused.

use blaze_spec::ops::{
    BINARY, Binary, COMPARE, Cost, Domain, Grad, MAX_UNARY_PARAMS, REDUCE, ReduceKind, UNARY, Unary,
};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::ir::{self, Home, Kernel};
use super::{check, codegen, cube, diff, lower};
use crate::errors::Errors;
use crate::ir::{BINARY_PREFIX, PREFIX};

mod enums;
pub use enums::{compare_cube, compare_runtime, reduce_cube, reduce_runtime};

/// `fn name(x: f32, params..: f32) -> f32 { body }` lowered and checked,
/// emitted at `home`. Panics on a body that does not check: the table is
/// ours, and `the_table_checks_prints_and_validates` runs every entry,
/// unary and binary.
fn kernel(name: &str, args: &[&str], body: &str, home: Home) -> Kernel {
    let params: Vec<String> = args.iter().map(|a| format!("{a}: f32")).collect();
    // Parsed under a neutral name: an op may be named like the intrinsic
    // its body calls (`abs`).
    let src = format!("fn op({}) -> f32 {{ {body} }}", params.join(", "));
    let item: syn::ItemFn = syn::parse_str(&src).unwrap_or_else(|e| panic!("op table: `{src}`: {e}"));
    let mut errors = Errors::default();
    let lowered = lower::lower(&item, &mut errors);
    let checked = lowered.map(|mut k| (check::check(&mut k, &mut errors), k));
    let Some((true, mut k)) = checked.filter(|_| errors.is_empty()) else {
        let why = errors.messages();
        panic!("op table: `{src}`: {}", why.join("; "));
    };
    k.name = name.to_owned();
    k.home = home;
    k
}

/// An op's input and parameter names, in order.
fn args(op: &Unary) -> Vec<&'static str> {
    std::iter::once("x").chain(op.params.iter().copied()).collect()
}

/// The kernels of one op: its value, with one partial per argument (the
/// first written or derived as the table says), and its adjoint, with its
/// own partials.
pub(crate) struct OpKernels {
    pub value: Kernel,
    pub partials: Vec<Kernel>,
    pub adjoint: Kernel,
    pub adjoint_partials: Vec<Kernel>,
}

/// The derivative of `op` by `x`, as the body of a function of `x` and
/// the parameters.
fn by_x(op: &Unary) -> Option<String> {
    match op.grad {
        Grad::Derived => None,
        Grad::OfInput(g) => Some(g.to_owned()),
        Grad::OfOutput(g) => Some(format!("let y = {{ {} }}; {g}", op.body)),
    }
}

pub(crate) fn op_kernels(op: &Unary, home: Home) -> OpKernels {
    let args = args(op);
    let name = format!("{PREFIX}{}", op.name);
    let value = kernel(&name, &args, op.body, home);
    let mut partials: Vec<Kernel> = (0..args.len()).map(|p| diff::partial(&value, p)).collect();
    if let Some(g) = by_x(op) {
        partials[0] = kernel(&name, &args, &g, home);
    }
    // `g * ∂f/∂x`, from the output when the derivative is written in it.
    let adjoint_name = format!("{name}_adjoint");
    let adjoint = match op.grad {
        Grad::OfOutput(g) => {
            let mut with_g = vec!["y"];
            with_g.extend(op.params);
            with_g.push("g");
            kernel(&adjoint_name, &with_g, &format!("g * {{ {g} }}"), home)
        }
        Grad::OfInput(_) | Grad::Derived => {
            let mut a = super::times_g(partials[0].clone(), adjoint_name);
            // A zero derivative (floor) is 0, not `g * 0`, which an
            // infinite `g` would make NaN.
            if matches!(partials[0].result, Some(ir::Expr { kind: ir::ExprKind::Float(v), .. }) if v == 0.0) {
                a.result.clone_from(&partials[0].result);
            }
            a
        }
    };
    let adjoint_partials = (0..adjoint.params.len()).map(|p| diff::partial(&adjoint, p)).collect();
    OpKernels { value, partials, adjoint, adjoint_partials }
}

/// `k` and its partials as the items of a type (`codegen::kernel_type`).
fn items(k: &Kernel, partials: &[Kernel]) -> TokenStream {
    let shared: Vec<Kernel> = partials.iter().map(diff::share_common).collect();
    codegen::kernel_type(&diff::share_common(k), &shared).unwrap_or_else(|e| panic!("op table: `{}`: {e}", k.name))
}

fn variant(op: &Unary) -> syn::Ident {
    format_ident!("{}", op.variant)
}

/// The methods every op enum of the table has, `name`, `supports` and
/// `costly`, from each op's pattern (`UnaryOp::Relu`, `UnaryOp::Elu(..)`),
/// name, dtypes and cost.
fn described(ops: &[(TokenStream, &str, Domain, Cost)], name_doc: &str) -> TokenStream {
    let names = ops.iter().map(|(p, name, _, _)| quote!(#p => #name));
    let supports = ops.iter().map(|(p, _, domain, _)| {
        let rule = match domain {
            Domain::Float => quote!(dtype.is_float()),
            Domain::Signed => quote!(dtype != crate::dtype::DType::Bool),
            Domain::Bool => quote!(dtype == crate::dtype::DType::Bool),
        };
        quote!(#p => #rule)
    });
    let costly = ops.iter().map(|(p, _, _, cost)| {
        let c = *cost == Cost::Costly;
        quote!(#p => #c)
    });
    quote! {
        #[doc = #name_doc]
        pub fn name(self) -> &'static str {
            match self {
                #(#names,)*
            }
        }

        /// Whether the op is defined for `dtype`.
        pub fn supports(self, dtype: crate::dtype::DType) -> bool {
            match self {
                #(#supports,)*
            }
        }

        /// Whether the op computes a transcendental function per
        /// element (else it is memory-bound).
        pub fn costly(self) -> bool {
            match self {
                #(#costly,)*
            }
        }
    }
}

/// The runtime's side of the table: `UnaryOp`, the visitor that hands a
/// caller each op's kernels as types, and a module per op.
pub fn runtime() -> TokenStream {
    let variants = UNARY.iter().map(|op| {
        let (v, doc) = (variant(op), op.doc);
        if op.params.is_empty() {
            quote!(#[doc = #doc] #v)
        } else {
            let fields = op.params.iter().map(|_| quote!(f64));
            quote!(#[doc = #doc] #v(#(#fields),*))
        }
    });
    let pattern = |op: &Unary| {
        let v = variant(op);
        if op.params.is_empty() {
            quote!(UnaryOp::#v)
        } else {
            let ps = op.params.iter().map(|p| format_ident!("{}", p));
            quote!(UnaryOp::#v(#(#ps),*))
        }
    };
    let wild = |op: &Unary| {
        let v = variant(op);
        if op.params.is_empty() { quote!(UnaryOp::#v) } else { quote!(UnaryOp::#v(..)) }
    };
    let described = described(
        &UNARY.iter().map(|op| (wild(op), op.name, op.domain, op.cost)).collect::<Vec<_>>(),
        "The op's name as it appears in messages (PyTorch's).",
    );
    let of_output = UNARY.iter().map(|op| {
        let (p, o) = (wild(op), matches!(op.grad, Grad::OfOutput(_)));
        quote!(#p => #o)
    });
    let indices = UNARY.iter().enumerate().map(|(i, op)| {
        let p = wild(op);
        quote!(#p => #i)
    });
    let params = UNARY.iter().map(|op| {
        let p = pattern(op);
        let mut ps: Vec<TokenStream> = op.params.iter().map(|p| format_ident!("{}", p)).map(|p| quote!(#p)).collect();
        ps.resize(MAX_UNARY_PARAMS, quote!(0.0));
        quote!(#p => [#(#ps),*])
    });
    let by_name = UNARY.iter().map(|op| {
        let (name, value) = (op.name, pattern(op));
        let ps = op.params.iter().map(|p| format_ident!("{}", p));
        quote!((#name, &[#(#ps),*]) => Some(#value))
    });
    let visits = UNARY.iter().map(|op| {
        let p = pattern(op);
        if op.domain == Domain::Bool {
            return quote!(#p => None);
        }
        let m = format_ident!("{}", op.name);
        let ps = op.params.iter().map(|p| format_ident!("{}", p));
        quote!(#p => Some(v.visit::<#m::Op>(&[#(#ps),*])))
    });
    let methods = UNARY.iter().map(|op| {
        let (m, doc) = (format_ident!("{}", op.name), op.doc);
        let ps: Vec<syn::Ident> = op.params.iter().map(|p| format_ident!("{}", p)).collect();
        let v = variant(op);
        let value = if ps.is_empty() { quote!(UnaryOp::#v) } else { quote!(UnaryOp::#v(#(#ps),*)) };
        quote! {
            #[doc = #doc]
            pub fn #m(&self #(, #ps: f64)*) -> Self {
                self.unary(#value)
            }
        }
    });
    let modules = UNARY.iter().filter(|op| op.domain != Domain::Bool).map(|op| {
        let ks = op_kernels(op, Home::Runtime);
        let value = items(&ks.value, &ks.partials);
        let adjoint = items(&ks.adjoint, &ks.adjoint_partials);
        let m = format_ident!("{}", op.name);
        let doc = format!("`{}`: {}", op.name, op.doc);
        let adjoint_doc = if matches!(op.grad, Grad::OfOutput(_)) {
            "`g * ∂f/∂x` from the output `y`, the parameters and `g`."
        } else {
            "`g * ∂f/∂x` from the input `x`, the parameters and `g`."
        };
        quote! {
            #[doc = #doc]
            #[allow(clippy::all, unused_parens, missing_docs)]
            pub mod #m {
                #value

                /// The op and its adjoint as types.
                #[derive(Clone, Copy, Debug)]
                pub struct Op;

                impl super::UnaryKernel for Op {
                    type Value = Kernel;
                    type Adjoint = adjoint::Kernel;
                }

                #[doc = #adjoint_doc]
                #[allow(clippy::all, unused_parens, missing_docs)]
                pub mod adjoint {
                    #adjoint
                }
            }
        }
    });
    quote! {
        /// Elementwise functions of one tensor, one per entry of the op
        /// table (`blaze_spec::ops::UNARY`). Float-only unless noted.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum UnaryOp {
            #(#variants,)*
        }

        impl UnaryOp {
            #described

            /// Whether its gradient reads the output alone (so the
            /// training forward keeps the output, not the input).
            pub fn grad_of_output(self) -> bool {
                match self {
                    #(#of_output,)*
                }
            }

            /// The op named `name` (its tensor method's name) with
            /// `params`, if the table has one of that name taking that
            /// many.
            pub fn from_name(name: &str, params: &[f64]) -> Option<UnaryOp> {
                match (name, params) {
                    #(#by_name,)*
                    _ => None,
                }
            }

            /// The op's position in the table: its code where a backend
            /// picks the op while compiling a kernel.
            pub fn index(self) -> usize {
                match self {
                    #(#indices,)*
                }
            }

            /// The op's parameters in order, then zeros.
            pub fn params(self) -> [f64; MAX_UNARY_PARAMS] {
                match self {
                    #(#params,)*
                }
            }

            /// Hands `v` the op's kernels and parameters; `None` for an op
            /// without a float body (`logical_not`).
            #[inline]
            pub fn visit<V: UnaryVisitor>(self, v: V) -> Option<V::Out> {
                match self {
                    #(#visits,)*
                }
            }
        }

        /// The table's ops as tensor methods.
        impl<B: crate::Backend, const D: usize> crate::Tensor<B, D> {
            #(#methods)*
        }

        #(#modules)*
    }
}

/// A binary op's kernel, `fn(a, b)`, and its partials by `a` and `b`,
/// written or derived as the table says.
fn binary_kernels(op: &Binary, home: Home) -> (Kernel, Vec<Kernel>) {
    let name = format!("{BINARY_PREFIX}{}", op.name);
    let value = kernel(&name, &["a", "b"], op.body, home);
    let partials = match op.grads {
        Some(grads) => grads.iter().map(|g| kernel(&name, &["a", "b"], g, home)).collect(),
        None => (0..2).map(|p| diff::partial(&value, p)).collect(),
    };
    (value, partials)
}

/// The runtime's side of the binary ops: `BinaryOp` and a module per op
/// with a float body, holding its kernel.
pub fn binary_runtime() -> TokenStream {
    let wild = |op: &Binary| {
        let v = format_ident!("{}", op.variant);
        quote!(BinaryOp::#v)
    };
    let variants = BINARY.iter().map(|op| {
        let (v, doc) = (format_ident!("{}", op.variant), op.doc);
        quote!(#[doc = #doc] #v)
    });
    let count = BINARY.len();
    let alls = BINARY.iter().map(wild);
    let described = described(
        &BINARY.iter().map(|op| (wild(op), op.name, op.domain, op.cost)).collect::<Vec<_>>(),
        "The op's name as it appears in messages.",
    );
    let indices = BINARY.iter().enumerate().map(|(i, op)| {
        let p = wild(op);
        let i = i as u32;
        quote!(#p => #i)
    });
    let visits = BINARY.iter().map(|op| {
        let p = wild(op);
        if op.domain == Domain::Bool {
            return quote!(#p => None);
        }
        let m = format_ident!("{}", op.name);
        quote!(#p => Some(v.visit::<#m::Kernel>()))
    });
    let modules = BINARY.iter().filter(|op| op.domain != Domain::Bool).map(|op| {
        let (value, partials) = binary_kernels(op, Home::Runtime);
        let items = items(&value, &partials);
        let m = format_ident!("{}", op.name);
        let doc = format!("`{}`: {}", op.name, op.doc);
        quote! {
            #[doc = #doc]
            #[allow(clippy::all, unused_parens, missing_docs)]
            pub mod #m {
                #items
            }
        }
    });
    quote! {
        /// Elementwise functions of two tensors of one dtype, one per
        /// entry of the op table (`blaze_spec::ops::BINARY`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum BinaryOp {
            #(#variants,)*
        }

        impl BinaryOp {
            /// Every op, in the table's order.
            pub const ALL: [BinaryOp; #count] = [#(#alls),*];

            #described

            /// The op's position in the table: its code where a backend
            /// picks the op while compiling a kernel.
            pub fn index(self) -> u32 {
                match self {
                    #(#indices,)*
                }
            }

            /// Hands `v` the op's float kernel; `None` for a bool op.
            #[inline]
            pub fn visit<V: BinaryVisitor>(self, v: V) -> Option<V::Out> {
                match self {
                    #(#visits,)*
                }
            }
        }

        #(#modules)*
    }
}

/// The CubeCL backend's side of the binary ops: per op the `#[cube]`
/// function and launcher of its kernel, `launcher`, which finds the
/// launcher of a kernel of the runtime's, and `op(a, b, code)`, op number
/// `code` of the table (`BinaryOp::index`) at `a` and `b`, for kernels
/// that pick their op while compiling.
pub fn binary_cube() -> TokenStream {
    let private = cube::private(Home::Cube);
    let picks = BINARY.iter().enumerate().filter(|(_, op)| op.domain != Domain::Bool).map(|(i, op)| {
        let (value, partials) = binary_kernels(op, Home::Cube);
        let (items, _) = cube::elementwise(&diff::share_common(&value), &shared(&partials));
        let m = format_ident!("{}", op.name);
        let code = i as u32;
        (
            quote! {
                pub mod #m {
                    #items
                }
            },
            (
                quote!(if comptime!(code == #code) { y = #private::binary::#m::__cube::value(a, b); }),
                quote! {
                    if k == TypeId::of::<::blaze_runtime::binary::#m::Kernel>() {
                        return Some(&#m::__cube::TABLE);
                    }
                },
            ),
        )
    });
    let (modules, rest): (Vec<_>, Vec<_>) = picks.unzip();
    let (picks, arms): (Vec<_>, Vec<_>) = rest.into_iter().unzip();
    quote! {
        #(#modules)*

        /// The launcher of `K` if it is the kernel of a binary op of the table.
        pub fn launcher<K: ::blaze_runtime::kernel::Elementwise>() -> Option<&'static crate::CubeElementwise> {
            use ::core::any::TypeId;
            let k = TypeId::of::<K>();
            #(#arms)*
            None
        }

        pub use pick::op;

        mod pick {
            use ::cubecl::prelude::*;

            /// Op number `code` of the table (`BinaryOp::index`) at `a`
            /// and `b`; `a` itself for a code of no float op.
            #[allow(unused_variables, unused_mut)]
            #[cube]
            pub fn op(a: f32, b: f32, #[comptime] code: u32) -> f32 {
                let mut y = a;
                #(#picks)*
                y
            }
        }
    }
}

/// `blaze-nn`'s layers of the table (`Unary::layer`): per op a unit
/// struct named after its variant, a `Layer` whose cache is what the
/// op's derivative reads (the output, else the input) and whose backward
/// is the op's adjoint, `FromSpec` as `blaze_spec::Layer::Unary` and, for
/// an op whose derivative reads its input, `Recompute` of its output.
pub fn layers() -> TokenStream {
    let ops = || UNARY.iter().enumerate().filter(|(_, op)| op.layer);
    let items = ops().map(|(i, op)| {
        let (ty, m, v) = (variant(op), format_ident!("{}", op.name), variant(op));
        let doc = format!("`{}` as a layer (PyTorch's `nn.{}`): {}", op.name, op.variant, op.doc);
        let of_output = matches!(op.grad, Grad::OfOutput(_));
        let (cache_doc, train, recompute) = if of_output {
            ("The output, which the derivative reads.", quote!(let y = x.#m(); (y.clone(), y)), quote!())
        } else {
            (
                "The input, which the derivative reads.",
                quote!((x.#m(), x.clone())),
                quote! {
                    impl<B: ::blaze_runtime::Backend, const D: usize> crate::Recompute<B, D> for #ty {
                        fn recompute(&self, x: &::blaze_runtime::Tensor<B, D>) -> ::blaze_runtime::Tensor<B, D> {
                            x.#m()
                        }
                    }
                },
            )
        };
        quote! {
            #[doc = #doc]
            #[derive(Clone, Copy, Debug, Default)]
            pub struct #ty;

            impl<B: ::blaze_runtime::Backend, const D: usize> crate::Layer<B, D, D> for #ty {
                #[doc = #cache_doc]
                type Cache = ::blaze_runtime::Tensor<B, D>;
                fn forward(&self, x: &::blaze_runtime::Tensor<B, D>) -> ::blaze_runtime::Tensor<B, D> {
                    x.#m()
                }
                fn forward_train(
                    &mut self,
                    x: &::blaze_runtime::Tensor<B, D>,
                    _: &mut crate::Ctx,
                ) -> (::blaze_runtime::Tensor<B, D>, ::blaze_runtime::Tensor<B, D>) {
                    #train
                }
                fn backward(&self, c: &::blaze_runtime::Tensor<B, D>, g: &::blaze_runtime::Tensor<B, D>) -> (::blaze_runtime::Tensor<B, D>, ()) {
                    let (c, g) = (c.storage(), g.storage());
                    (::blaze_runtime::Tensor::from_storage(::blaze_runtime::adjoint::unary::<B>(::blaze_runtime::UnaryOp::#v, c, c, g)), ())
                }
            }

            #recompute

            impl<B: ::blaze_runtime::Backend> crate::FromSpec<B> for #ty {
                const LAYER: ::blaze_spec::Layer = ::blaze_spec::Layer::Unary(&::blaze_spec::ops::UNARY[#i]);
                fn from_spec(_: &::blaze_spec::Options, _: &mut ::blaze_runtime::rng::Rng, _: &B::Device) -> Self {
                    #ty
                }
            }
        }
    });
    let tys = ops().map(|(_, op)| variant(op));
    quote! {
        #(#items)*
        crate::stateless_module!(#(#tys),*);
    }
}

/// The CubeCL backend's side: per op a module with the `#[cube]`
/// functions and launchers of its kernel and adjoint, and `launcher`,
/// which finds the launcher of a kernel of the runtime's table.
pub fn cube() -> TokenStream {
    let mut modules = Vec::new();
    let mut arms = Vec::new();
    for op in UNARY.iter().filter(|op| op.domain != Domain::Bool) {
        let ks = op_kernels(op, Home::Cube);
        let (value, _) = cube::elementwise(&diff::share_common(&ks.value), &shared(&ks.partials));
        let (adjoint, _) = cube::elementwise(&diff::share_common(&ks.adjoint), &shared(&ks.adjoint_partials));
        let m = format_ident!("{}", op.name);
        modules.push(quote! {
            pub mod #m {
                #value
                pub mod adjoint {
                    #adjoint
                }
            }
        });
        arms.push(quote! {
            if k == TypeId::of::<::blaze_runtime::unary::#m::Kernel>() {
                return Some(&#m::__cube::TABLE);
            }
            if k == TypeId::of::<::blaze_runtime::unary::#m::adjoint::Kernel>() {
                return Some(&#m::adjoint::__cube::TABLE);
            }
        });
    }
    // `op(x, p0, .., code)`: op number `code` of the table, for kernels
    // that pick their op while compiling (a bias pass's activation).
    let private = cube::private(Home::Cube);
    let ps: Vec<syn::Ident> = (0..MAX_UNARY_PARAMS).map(|i| format_ident!("p{}", i)).collect();
    let picks = UNARY.iter().enumerate().filter(|(_, op)| op.domain != Domain::Bool).map(|(i, op)| {
        let (m, code) = (format_ident!("{}", op.name), i as u32);
        let args = &ps[..op.params.len()];
        quote!(if comptime!(code == #code) { y = #private::unary::#m::__cube::value(x #(, #args)*); })
    });
    quote! {
        #(#modules)*

        pub use pick::op;

        mod pick {
            use ::cubecl::prelude::*;

            /// Op number `code` of the op table (`UnaryOp::index`) at `x`,
            /// with the op's parameters; `x` itself for a code of no op.
            #[allow(unused_variables, unused_mut)]
            #[cube]
            pub fn op(x: f32, #(#ps: f32,)* #[comptime] code: u32) -> f32 {
                let mut y = x;
                #(#picks)*
                y
            }
        }

        /// The launcher of `K` if it is a kernel of the op table.
        pub fn launcher<K: ::blaze_runtime::kernel::Elementwise>() -> Option<&'static crate::CubeElementwise> {
            use ::core::any::TypeId;
            let k = TypeId::of::<K>();
            #(#arms)*
            None
        }
    }
}

fn shared(ks: &[Kernel]) -> Vec<Kernel> {
    ks.iter().map(diff::share_common).collect()
}

/// A call of op `name` of the table inside a fused group: the runtime's
/// kernel, so that the group computes the bits the unfused op does.
pub fn call(name: &str, args: Vec<ir::Expr>, span: Span) -> ir::Expr {
    let m = format_ident!("{}", name);
    let f = ir::Extern {
        path: quote!(::blaze::runtime::unary::#m),
        name: format!("{PREFIX}{name}"),
        partial: None,
        table: true,
    };
    ir::Expr::new(ir::ExprKind::Extern(Box::new(f), args), span)
}

/// A call of the kernel of binary op `name` of the table (its runtime
/// kernel `::blaze::runtime::binary::name`), as a fused group makes it.
pub fn call_binary(name: &str, args: Vec<ir::Expr>, span: Span) -> ir::Expr {
    let m = format_ident!("{}", name);
    let f = ir::Extern {
        path: quote!(::blaze::runtime::binary::#m),
        name: format!("{BINARY_PREFIX}{name}"),
        partial: None,
        table: true,
    };
    ir::Expr::new(ir::ExprKind::Extern(Box::new(f), args), span)
}

/// `Export` for each activation layer of the op table (in `blaze_export`,
/// which owns the trait): the op, written as ONNX by `ops::unary`.
pub fn exports() -> TokenStream {
    let items = UNARY.iter().filter(|op| op.layer).map(|op| {
        let v = variant(op);
        quote! {
            impl crate::Export for ::blaze_nn::unary_layers::#v {
                fn export(&self, g: &mut crate::OnnxGraph, _: &str, x: &[crate::Value]) -> crate::Value {
                    crate::ops::unary(g, ::blaze_runtime::UnaryOp::#v, &x[0])
                }
            }
        }
    });
    quote!(#(#items)*)
}

#[cfg(test)]
mod tests {
    #[test]
    fn operators_parse() {
        use blaze_spec::ops::{COMPARE, REDUCE, ReduceKind};
        let reduce = REDUCE.iter().map(|r| match r.kind {
            ReduceKind::Fold(s) | ReduceKind::Select { beats: s, .. } => s,
        });
        for symbol in COMPARE.iter().map(|c| c.symbol).chain(reduce) {
            let tokens: proc_macro2::TokenStream = symbol.parse().unwrap_or_else(|e| panic!("`{symbol}`: {e}"));
            assert_eq!(tokens.to_string().replace(' ', ""), symbol);
        }
    }

    use super::*;

    #[test]
    fn the_table_checks_prints_and_validates() {
        for op in UNARY.iter().filter(|op| op.domain != Domain::Bool) {
            for home in [Home::Runtime, Home::Cube] {
                let ks = op_kernels(op, home);
                assert_eq!(ks.partials.len(), 1 + op.params.len(), "{}", op.name);
                // Printing validates the WGSL with naga.
                let _ = items(&ks.value, &ks.partials);
                let _ = items(&ks.adjoint, &ks.adjoint_partials);
            }
        }
        for op in BINARY.iter().filter(|op| op.domain != Domain::Bool) {
            for home in [Home::Runtime, Home::Cube] {
                let (value, partials) = binary_kernels(op, home);
                assert_eq!(partials.len(), 2, "{}", op.name);
                let _ = items(&value, &partials);
            }
        }
    }
}
