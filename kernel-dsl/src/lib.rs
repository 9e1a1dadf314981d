//! `kernel!`: kernels in a small Rust DSL, in two forms over one IR
//! (`ir.rs`): elementwise kernels (`fn f(x: f32, ..) -> f32`) and general
//! kernels (`#[workgroup(N)]` over buffers, in `general/`). An elementwise
//! kernel is a general one without buffers. The pipeline:
//! `lower.rs` / `general/lower.rs` (syntax to IR, rejecting what the form
//! lacks; `syn` ends here) -> `check.rs` (types, uniformity; one checker)
//! -> `diff.rs` (partial derivatives of elementwise kernels) -> emitters:
//! `wgsl.rs` and `rust.rs` print expressions of both forms (with the
//! helpers that make every adapter compute what the CPU computes),
//! `codegen.rs` and `general/{wgsl,rust}.rs` the items of each form. The
//! IR holds plain values, so `ir_tests.rs` runs the stages on kernels
//! built by hand.
//!
//! A library of `blaze-macros` (`kernel!`, the op table's printers, and
//! the fused kernels `#[model]` emits from the same IR), together with
//! the one error accumulator every macro stage uses ([`errors`]).

mod check;
mod codegen;
mod cube;
mod diff;
pub mod errors;
mod general;
pub mod ir;
#[cfg(test)]
mod ir_tests;
mod lower;
mod onnx;
pub mod rows;
mod rust;
pub mod table;
mod wgsl;

use proc_macro2::TokenStream;

use crate::errors::Errors;

/// A name without its raw prefix (`r#in` is `in`), to build other names
/// from: WGSL and generated identifiers have no raw form.
fn plain(name: &str) -> &str {
    name.strip_prefix("r#").unwrap_or(name)
}

/// A kernel built by another stage of the macros (a fused group of a
/// forward body's ops) as the items of a type (see
/// `codegen::kernel_type`), its partials derived; with `adjoints`, also
/// one kernel per parameter `i`, `Adjoint{i}`, computing `g * ∂f/∂a_i` from
/// the parameters and `g` (the output's gradient) in one pass, each with
/// its own partials. Also returns the forward kernel's WGSL. `Err` is an
/// internal error: the stage built a kernel that does not check.
pub fn fused_items(k: &ir::Kernel, adjoints: bool) -> Result<(proc_macro2::TokenStream, String), String> {
    let mut k = k.clone();
    let mut errors = Errors::default();
    if !check::check(&mut k, &mut errors) {
        return Err(errors.messages().join("; "));
    }
    let typed = |k: &ir::Kernel| {
        // An adjoint that calls a `kernel!` function's partial has no
        // partials of its own: that function's second derivative is not
        // generated (`Elementwise::map_partial` says so if called).
        if codegen::calls_partials(k) {
            return codegen::kernel_type(&diff::share_common(k), &[]);
        }
        let partials: Vec<ir::Kernel> = (0..k.params.len()).map(|p| diff::share_common(&diff::partial(k, p))).collect();
        codegen::kernel_type(&diff::share_common(k), &partials)
    };
    let mut items = typed(&k)?;
    let mut w = wgsl::Wgsl::new(&k.name);
    codegen::wgsl_fn(&diff::share_common(&k), &k.name, &mut w);
    let wgsl = w.finish();
    if adjoints {
        for i in 0..k.params.len() {
            let adjoint = adjoint(&k, i);
            let body = typed(&adjoint)?;
            let module = quote::format_ident!("Adjoint{}", i);
            items.extend(quote::quote! {
                #[doc(hidden)]
                pub mod #module {
                    // What the group's module sees (`kernel!` functions it calls).
                    #[allow(unused_imports)]
                    use super::*;
                    #body
                }
            });
        }
    }
    Ok((items, wgsl))
}

/// `g * ∂k/∂a_i` as a kernel of `k`'s parameters and `g`.
fn adjoint(k: &ir::Kernel, i: usize) -> ir::Kernel {
    times_g(diff::partial(k, i), format!("{}_adjoint{i}", k.name))
}

/// The kernel `g * partial`, named `name`: `partial`'s bindings, then its
/// result times one more parameter, `g`.
fn times_g(mut partial: ir::Kernel, name: String) -> ir::Kernel {
    partial.name = name;
    let index = partial.params.len();
    let g = partial.declare("g".into(), ir::Ty::F32, ir::Kind::Element { index });
    partial.params.push(g);
    let span = partial.span;
    let factor = partial.result.take().unwrap_or_else(|| ir::Expr::new(ir::ExprKind::Float(0.0), span));
    partial.result = Some(ir::Expr::new(
        ir::ExprKind::Binary(ir::Bin::Mul, Box::new(ir::Expr::new(ir::ExprKind::Var(g), span)), Box::new(factor)),
        span,
    ));
    partial
}

/// Expands `kernel! { fn .. }`. Every error is a spanned compile error.
pub fn expand(input: TokenStream) -> TokenStream {
    let item: syn::ItemFn = match syn::parse2(input) {
        Ok(f) => f,
        Err(e) => {
            let msg =
                format!("{e}; `kernel!` takes one function: `kernel! {{ pub fn name(x: f32, ..) -> f32 {{ .. }} }}`");
            return syn::Error::new(e.span(), msg).to_compile_error();
        }
    };
    let mut errors = Errors::default();
    if let Some(workgroup) = general::workgroup_attr(&item, &mut errors) {
        return general::expand(&item, workgroup, errors);
    }
    let mut kernel = lower::lower(&item, &mut errors);
    let checked = kernel.as_mut().is_some_and(|k| check::check(k, &mut errors));
    match kernel {
        Some(k) if checked && errors.is_empty() => {
            let partials: Vec<ir::Kernel> =
                (0..k.params.len()).map(|p| diff::share_common(&diff::partial(&k, p))).collect();
            codegen::generate(&item, &diff::share_common(&k), &partials)
        }
        _ => errors.to_compile_error(),
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    fn expand_str(input: TokenStream) -> String {
        let out = std::panic::catch_unwind(|| super::expand(input.clone()).to_string());
        assert!(out.is_ok(), "kernel! panicked on {input}");
        out.unwrap_or_default()
    }

    #[test]
    fn a_valid_kernel_expands_and_its_wgsl_validates() {
        let out = expand_str(quote!(
            pub fn soft(x: f32, t: f32) -> f32 {
                let m = max(x, 0.0);
                m + log(1.0 + exp(-abs(x) / t)) * t
            }
        ));
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("fn soft_d_x") && out.contains("fn soft_d_t"), "{out}");
    }

    #[test]
    fn naga_rejects_what_the_gpu_would() {
        assert!(super::wgsl::validate("fn f(a: f32) -> f32 { return a; }").is_ok());
        let err = super::wgsl::validate("fn f(a: f32) -> f32 { return b; }").unwrap_err();
        assert!(err.contains("no definition in scope for identifier: `b`"), "{err}");
        assert!(super::wgsl::validate("fn f(a: f32) -> f32 { return a && true; }").is_err());
    }

    #[test]
    fn odd_input_reports_instead_of_panicking() {
        let cases = [
            quote!(),
            quote!(
                struct S;
            ),
            quote!(
                fn f() -> f32 {
                    1.0
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {}
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    x;
                }
            ),
            quote!(
                fn f(self, x: f32) -> f32 {
                    x
                }
            ),
            quote!(
                fn f((a, b): f32) -> f32 {
                    a
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    let (a, b) = x;
                    a
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    let y: f32 = x;
                    y
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    let y;
                    x
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    if x > 0.0 {
                        x
                    }
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    if x { x } else { 0.0 }
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    x > 0.0
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    -(x > 0.0)
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    !x
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    x << 1.0
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    "x"
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    foo::bar(x)
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    (x)(x)
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    [x][0]
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    return;
                }
            ),
            quote!(
                fn f(a: f32, b: f32, c: f32, d: f32, e: f32, g: f32, h: f32, i: f32, j: f32) -> f32 {
                    a
                }
            ),
            quote!(
                unsafe fn f(x: f32) -> f32 {
                    x
                }
            ),
            quote!(
                fn f(x: f32) -> f32 {
                    select(x > 0.0, x > 1.0, 0.0)
                }
            ),
            quote!(
                #[workgroup]
                fn g(a: &mut [f32]) {
                    a[0] = 1.0;
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    a = 1.0;
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    a[0] = a;
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    let b = a[0];
                    b[1] = 2.0;
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    for i in 0..=3 {
                        a[i] = 0.0;
                    }
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    for i in v {
                        a[i] = 0.0;
                    }
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    #[shared]
                    let t: [f32; 0];
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    #[shared]
                    let t: [f32; 4] = 0.0;
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    let x = barrier();
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    local_id();
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    g(a);
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    a[0] = -1;
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32], n: u32) {
                    a[0] = (n as bool) as f32;
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    {
                        a[0] = 1.0;
                    }
                }
            ),
            quote!(
                #[workgroup(4)]
                fn g(a: &mut [f32]) {
                    #[shared]
                    let t: [f32; 4000];
                    #[shared]
                    let u: [f32; 100];
                }
            ),
        ];
        for case in cases {
            let out = expand_str(case.clone());
            assert!(out.contains("compile_error"), "expected an error for {case}, got {out}");
        }
    }
}
