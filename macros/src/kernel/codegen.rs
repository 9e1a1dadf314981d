//! Emits an elementwise kernel: a Rust loop body generic over the float
//! type for the CPU, WGSL for the GPU (validated with naga here, so a
//! kernel that would not compile on the GPU fails the Rust build), and the
//! user-facing function. Kernels arrive through `diff::share_common`, so
//! every binding they hold is read.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::{Bin, ExprIr, ExprKind, Intrinsic, Kernel, Var};
use super::plain;
use super::wgsl::{Wgsl, validate};

fn param_ident(k: &Kernel, i: usize) -> syn::Ident {
    format_ident!("a_{}", plain(&k.params[i]))
}

fn let_ident(i: usize) -> syn::Ident {
    format_ident!("l{}", i)
}

/// A Rust expression over `T: KernelFloat`.
fn rust_expr(e: &ExprIr, k: &Kernel) -> TokenStream {
    let kf = quote!(::blaze::runtime::kernel::KernelFloat);
    match &e.kind {
        ExprKind::Float(v) => quote!(<T as #kf>::lit(#v)),
        ExprKind::Bool(b) => quote!(#b),
        ExprKind::Var(Var::Param(i)) => {
            let id = param_ident(k, *i);
            quote!(#id)
        }
        ExprKind::Var(Var::Let(i)) => {
            let id = let_ident(*i);
            quote!(#id)
        }
        ExprKind::Neg(x) => {
            let x = rust_expr(x, k);
            quote!((-#x))
        }
        ExprKind::Not(x) => {
            let x = rust_expr(x, k);
            quote!((!#x))
        }
        ExprKind::Binary(Bin::Rem, a, b) => {
            let (a, b) = (rust_expr(a, k), rust_expr(b, k));
            quote!(<T as #kf>::wgsl_rem(#a, #b))
        }
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (rust_expr(a, k), rust_expr(b, k));
            let op = op.tokens();
            quote!((#a #op #b))
        }
        ExprKind::Call(Intrinsic::Select, args) => {
            let (c, a, b) = (rust_expr(&args[0], k), rust_expr(&args[1], k), rust_expr(&args[2], k));
            quote!((if #c { #a } else { #b }))
        }
        ExprKind::Call(f, args) => {
            let name = format_ident!("{}", f.name());
            let args = args.iter().map(|a| rust_expr(a, k));
            quote!(<T as #kf>::#name(#(#args),*))
        }
    }
}

/// The body of a loop over `i`: the value of `k` at element `i`.
fn rust_loop(k: &Kernel) -> TokenStream {
    let params: Vec<syn::Ident> = (0..k.params.len()).map(|i| param_ident(k, i)).collect();
    let inputs: Vec<syn::Ident> = (0..k.params.len()).map(|i| format_ident!("in_{}", i)).collect();
    let idx: Vec<usize> = (0..k.params.len()).collect();
    let lets = k.lets.iter().enumerate().map(|(i, l)| {
        let (name, value) = (let_ident(i), rust_expr(&l.value, k));
        quote!(let #name = #value;)
    });
    let result = rust_expr(&k.result, k);
    quote! {
        let n = out.len();
        #(let #inputs = &args[#idx][..n];)*
        for i in 0..n {
            #(let #params = #inputs[i];)*
            #(#lets)*
            out[i] = ::core::mem::MaybeUninit::new(#result);
        }
    }
}

/// WGSL for an expression.
fn wgsl_expr(e: &ExprIr, k: &Kernel, out: &mut Wgsl) {
    match &e.kind {
        ExprKind::Float(v) => out.float(*v),
        ExprKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        ExprKind::Var(Var::Param(i)) => out.push_str(&format!("a_{}", plain(&k.params[*i]))),
        ExprKind::Var(Var::Let(i)) => out.push_str(&format!("l{i}")),
        ExprKind::Neg(x) => {
            out.push_str("(-");
            wgsl_expr(x, k, out);
            out.push(')');
        }
        ExprKind::Not(x) => {
            out.push_str("(!");
            wgsl_expr(x, k, out);
            out.push(')');
        }
        ExprKind::Binary(op, a, b) => {
            out.binary(*op, is_float(a, k), |out| wgsl_expr(a, k, out), |out| wgsl_expr(b, k, out))
        }
        ExprKind::Call(f, args) => out.call(*f, |i, out| wgsl_expr(&args[i], k, out)),
    }
}

/// Whether `e` is an f32 (else a bool), for the comparisons WGSL needs
/// helpers for.
fn is_float(e: &ExprIr, k: &Kernel) -> bool {
    match &e.kind {
        ExprKind::Float(_) | ExprKind::Var(Var::Param(_)) | ExprKind::Neg(_) => true,
        ExprKind::Bool(_) | ExprKind::Not(_) => false,
        ExprKind::Var(Var::Let(i)) => k.lets.get(*i).is_none_or(|l| is_float(&l.value, k)),
        ExprKind::Binary(op, _, _) => op.is_arithmetic(),
        ExprKind::Call(Intrinsic::Select, args) => is_float(&args[1], k),
        ExprKind::Call(..) => true,
    }
}

/// `k` as a WGSL function named `name`.
pub(super) fn wgsl_fn(k: &Kernel, name: &str, out: &mut Wgsl) {
    out.push_str(&format!("fn {name}("));
    for (i, p) in k.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("a_{}: f32", plain(p)));
    }
    out.push_str(") -> f32 {\n");
    for (i, l) in k.lets.iter().enumerate() {
        out.push_str(&format!("    let l{i} = "));
        wgsl_expr(&l.value, k, out);
        out.push_str(";\n");
    }
    out.push_str("    return ");
    wgsl_expr(&k.result, k, out);
    out.push_str(";\n}\n");
}

/// Everything `kernel!` emits for a checked kernel and its partials (one
/// per parameter).
pub fn generate(item: &syn::ItemFn, k: &Kernel, partials: &[Kernel]) -> TokenStream {
    // The emitted items take their names from the user's tokens.
    let name = &item.sig.ident;
    let params: Vec<&syn::Ident> = item
        .sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            syn::FnArg::Typed(p) => match &*p.pat {
                syn::Pat::Ident(pi) => Some(&pi.ident),
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let vis = &item.vis;
    let docs: Vec<&syn::Attribute> = item.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    let name_str = k.name.clone();

    let mut w = Wgsl::new(&name_str);
    wgsl_fn(k, &name_str, &mut w);
    for (i, p) in partials.iter().enumerate() {
        w.push('\n');
        wgsl_fn(p, &format!("{name_str}_d_{}", plain(&k.params[i])), &mut w);
    }
    let wgsl = w.finish();
    if let Err(e) = validate(&wgsl) {
        let msg = format!("kernel `{name_str}` produced WGSL that naga rejects:\n{e}\n{wgsl}");
        return syn::Error::new(k.span, msg).to_compile_error();
    }

    // As the WGSL names the partials: `{kernel}_d_{arg}`.
    let arg_names: Vec<&str> = k.params.iter().map(|p| plain(p)).collect();
    let body = rust_loop(k);
    let partial_arms = partials.iter().enumerate().map(|(i, p)| {
        let body = rust_loop(p);
        quote!(#i => { #body })
    });
    let rt = quote!(::blaze::runtime);
    let fn_doc = format!(
        "Elementwise kernel `{name_str}` over tensors and scalars: tensor arguments broadcast against each other. \
         Generated by `kernel!`; differentiable under `Autodiff`."
    );
    let mod_doc = format!("The kernel `{name_str}` as a type, with its WGSL (`{name_str}::WGSL`).");
    let arity = params.len();
    quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #fn_doc]
        #vis fn #name<'a, B: #rt::Backend, const D: usize>(
            #(#params: impl ::core::convert::Into<#rt::kernel::Arg<'a, B, D>>),*
        ) -> #rt::Tensor<B, D> {
            #rt::kernel::call::<#name::Kernel, B, D>(&[#(::core::convert::Into::into(#params)),*])
        }

        #[doc = #mod_doc]
        #[allow(non_snake_case)]
        #vis mod #name {
            /// The kernel's type, implementing `Elementwise`.
            #[derive(Clone, Copy, Debug, Default)]
            pub struct Kernel;

            /// The kernel and its partial derivatives as WGSL functions,
            /// validated by naga when the kernel compiled.
            pub const WGSL: &str = #wgsl;

            impl #rt::kernel::Elementwise for Kernel {
                const NAME: &'static str = #name_str;
                const ARGS: &'static [&'static str] = &[#(#arg_names),*];
                const WGSL: &'static str = WGSL;

                #[inline(always)]
                #[allow(unused_parens, clippy::all)]
                fn map<T: #rt::kernel::KernelFloat>(args: &[&[T]], out: &mut [::core::mem::MaybeUninit<T>]) {
                    #body
                }

                #[inline(always)]
                #[allow(unused_parens, unused_variables, clippy::all)]
                fn map_partial<T: #rt::kernel::KernelFloat>(arg: usize, args: &[&[T]], out: &mut [::core::mem::MaybeUninit<T>]) {
                    match arg {
                        #(#partial_arms)*
                        _ => panic!("{}: no argument {} (it has {})", #name_str, arg, #arity),
                    }
                }
            }
        }
    }
}
