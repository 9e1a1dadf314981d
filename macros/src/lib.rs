//! Blaze's procedural macros: `#[model]`, `#[derive(Module)]` and
//! `kernel!` (compiled by the `blaze-kernel-dsl` crate).
//!
//! `#[model]` turns a struct of layers, or a struct with a `forward` body,
//! into a statically shaped model: it infers every per-sample shape from
//! the literal const generics and `#[layer(...)]` options, reports every
//! mistake at the offending tokens, and generates initialisation,
//! inference and training forward passes, a straight-line backward pass,
//! parameter visiting and a summary. One pipeline serves both kinds:
//!
//! ```text
//! struct of layers: model/attr.rs (parse) -> model/check.rs (shapes, rules) -> model/lower.rs ─┐
//! forward body:     graph/ (the struct's fields, then lower/ the body, shapes checked as it goes) ─┤
//!      blaze-model-codegen: ops.rs, the one op IR (SSA, symbolic shapes) <───────────────────────┘
//!   -> fuse.rs (fused ops: groups and softmax folds as ops of their own, IR to IR)
//!   -> diff.rs (the reverse pass as steps of adjoints, IR to IR)
//!   -> emit/ (printing: forward, backward, cache; export and decode from the ops before fusion)
//!   -> generate.rs (the traits and inherent API around them); structs.rs the struct itself
//! ```
//!
//! This file only dispatches.
#![deny(missing_docs)]

mod graph;
mod meta;
mod model;
mod module;

#[cfg(test)]
mod fuzz;

use proc_macro::TokenStream;

/// Makes a struct of layers a model. See the `blaze` crate docs.
///
/// ```text
/// #[model(input = [1, 28, 28])]
/// pub struct LeNet {
///     #[layer(padding = 2)]
///     conv1: Conv2d<1, 6, 5>,
///     act1: Relu,
///     ...
/// }
/// ```
#[proc_macro_attribute]
pub fn model(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_model(attr.into(), item.into()).into()
}

/// `#[model]` on a struct (`model/`), or on the impl of a forward body
/// (`graph/`, the front end of such models).
fn expand_model(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    match syn::parse2::<syn::ItemImpl>(item.clone()) {
        Ok(imp) => graph::expand_impl(attr, imp),
        Err(_) => model::expand(attr, item),
    }
}

/// The second half of a model with a `forward` body: called by the macro
/// that `#[model]` leaves next to the struct, with the struct and the impl.
#[doc(hidden)]
#[proc_macro]
pub fn __model_graph(item: TokenStream) -> TokenStream {
    graph::expand_graph(item.into()).into()
}

/// Derives `blaze::nn::Module` for a struct of layers with a hand-written
/// forward: parameters are visited under their field names (`Vec` and array
/// entries as `name.0`, `name.1`, ...), so optimizers, `to_dtype`,
/// `to_device` and checkpoints work as for a `#[model]`. Fields that hold
/// no parameters are marked `#[module(skip)]`.
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(item: TokenStream) -> TokenStream {
    module::expand(item.into()).into()
}

/// A kernel written once for every backend.
///
/// Elementwise: a function of `f32` scalars becomes a function over tensors
/// (and numbers, in any mix, broadcasting), run as a vectorised loop on the
/// CPU and as WGSL on the GPU, with its partial derivatives derived
/// symbolically (so it trains under `Autodiff`, and is a layer as `Map<K>`).
///
/// ```text
/// kernel! {
///     /// Swish activation.
///     pub fn swish(x: f32, beta: f32) -> f32 {
///         x / (1.0 + exp(-beta * x))
///     }
/// }
/// let y = swish(&x, 1.0);
/// ```
///
/// General: `#[workgroup(N)]` over `f32` buffers and `f32`/`u32`/`i32`
/// scalars, with `global_id()`, `local_id()`, `workgroup_id()`,
/// `num_workgroups()`, `#[shared] let tile: [f32; N];` and `barrier()`;
/// launched with `name::launch(groups, &input, &mut out, ..)`.
///
/// ```text
/// kernel! {
///     #[workgroup(64)]
///     pub fn row_sum(input: &[f32], out: &mut [f32], cols: u32) { .. }
/// }
/// row_sum::launch(rows, &x, &mut sums, cols);
/// ```
#[proc_macro]
pub fn kernel(item: TokenStream) -> TokenStream {
    blaze_kernel_dsl::expand(item.into()).into()
}

/// The runtime's side of the op table (`blaze_spec::ops`): `UnaryOp` and a
/// kernel module per op. Invoked once, by `blaze_runtime::unary`.
#[doc(hidden)]
#[proc_macro]
pub fn __unary_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::runtime().into()
}

/// The op table's activation layers (`Relu`, `Gelu`, ...). Invoked
/// once, by `blaze_nn`.
#[doc(hidden)]
#[proc_macro]
pub fn __unary_layers(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::layers().into()
}

/// `Export` for each activation layer of the op table: its op through
/// `blaze_export::ops::unary`. Invoked once, by `blaze_export`.
#[doc(hidden)]
#[proc_macro]
pub fn __unary_exports(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::exports().into()
}

/// The runtime's side of the row ops (`blaze_spec::rows`): a general
/// kernel module per op. Invoked once, by `blaze_runtime::rows`.
#[doc(hidden)]
#[proc_macro]
pub fn __row_kernels(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::rows::runtime().into()
}

/// The CubeCL backend's side of the row ops: each op's `#[cube]` code and
/// launcher. Invoked once, by `blaze_cubecl`.
#[doc(hidden)]
#[proc_macro]
pub fn __cube_row_kernels(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::rows::cube().into()
}

/// The runtime's side of the binary ops of the op table
/// (`blaze_spec::ops::BINARY`): `BinaryOp` and a kernel module per op.
/// Invoked once, by `blaze_runtime::binary`.
#[doc(hidden)]
#[proc_macro]
pub fn __binary_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::binary_runtime().into()
}

/// The CubeCL backend's side of the binary ops: their `#[cube]` functions
/// and `op`, which picks one by its code. Invoked once, by `blaze_cubecl`.
#[doc(hidden)]
#[proc_macro]
pub fn __cube_binary_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::binary_cube().into()
}

/// The runtime's side of the comparisons of the op table
/// (`blaze_spec::ops::COMPARE`): `CmpOp` and a type per op. Invoked once,
/// by `blaze_runtime::compare`.
#[doc(hidden)]
#[proc_macro]
pub fn __compare_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::compare_runtime().into()
}

/// The CubeCL backend's side of the comparisons: `#[cube]` functions that
/// pick one by its code. Invoked once, by `blaze_cubecl`.
#[doc(hidden)]
#[proc_macro]
pub fn __cube_compare_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::compare_cube().into()
}

/// The runtime's side of the reductions of the op table
/// (`blaze_spec::ops::REDUCE`): `ReduceOp` and a type per op. Invoked
/// once, by `blaze_runtime::reduction`.
#[doc(hidden)]
#[proc_macro]
pub fn __reduce_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::reduce_runtime().into()
}

/// The CubeCL backend's side of the reductions: `#[cube]` functions that
/// pick one's step by its code. Invoked once, by `blaze_cubecl`.
#[doc(hidden)]
#[proc_macro]
pub fn __cube_reduce_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::reduce_cube().into()
}

/// The CubeCL backend's side of the op table: the `#[cube]` functions and
/// launchers of every op's kernels. Invoked once, by `blaze_cubecl`.
#[doc(hidden)]
#[proc_macro]
pub fn __cube_unary_ops(_: TokenStream) -> TokenStream {
    blaze_kernel_dsl::table::cube().into()
}
