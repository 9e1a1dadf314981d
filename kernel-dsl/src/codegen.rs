//! Emits an elementwise kernel: a Rust loop body generic over the float
//! type for the CPU, WGSL for the GPU (validated with naga here, so a
//! kernel that would not compile on the GPU fails the Rust build), and the
//! user-facing function. Kernels arrive through `diff::share_common`, so
//! every binding they hold is read.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::{Expr, ExprKind, Extern, Home, Kernel};
use super::wgsl::{Wgsl, validate};
use super::{onnx, plain, rust, wgsl};

/// The body of a loop over `i`: the value of `k` at element `i`.
fn rust_loop(k: &Kernel) -> TokenStream {
    let params: Vec<TokenStream> = k.params.iter().map(|&p| rust::var(k, p)).collect();
    let inputs: Vec<syn::Ident> = (0..k.params.len()).map(|i| format_ident!("in_{}", i)).collect();
    let idx: Vec<usize> = (0..k.params.len()).collect();
    let (lets, result) = (rust_lets(k), k.result.iter().map(|r| rust::expr(k, r)));
    quote! {
        let n = out.len();
        #(let #inputs = &args[#idx][..n];)*
        for i in 0..n {
            #(let #params = #inputs[i];)*
            #lets
            #(out[i] = ::core::mem::MaybeUninit::new(#result);)*
        }
    }
}

/// The value of `k` at one point whose arguments are `args[0..]`: what a
/// fused group calling `k` inlines into its own loop.
fn rust_point(k: &Kernel) -> TokenStream {
    let params: Vec<TokenStream> = k.params.iter().map(|&p| rust::var(k, p)).collect();
    let idx: Vec<usize> = (0..k.params.len()).collect();
    let lets = rust_lets(k);
    let result = match &k.result {
        Some(r) => rust::expr(k, r),
        None => {
            let rt = k.home.runtime();
            quote!(<T as #rt::kernel::KernelFloat>::lit(0.0))
        }
    };
    quote! {
        #(let #params = args[#idx];)*
        #lets
        #result
    }
}

/// `k`'s bindings as `let` statements.
fn rust_lets(k: &Kernel) -> TokenStream {
    k.bindings()
        .map(|(v, value)| {
            let (name, value) = (rust::var(k, v), rust::expr(k, value));
            quote!(let #name = #value;)
        })
        .collect()
}

/// The `kernel!` functions (and partials) that `kernels` call, each once,
/// with their arities.
pub(super) fn externs<'a>(kernels: impl Iterator<Item = &'a Kernel>) -> Vec<(Extern, usize)> {
    fn walk(e: &Expr, out: &mut Vec<(Extern, usize)>) {
        match &e.kind {
            ExprKind::Extern(f, args) => {
                if !out.iter().any(|(g, _)| g.wgsl_name() == f.wgsl_name()) {
                    out.push(((**f).clone(), args.len()));
                }
                args.iter().for_each(|a| walk(a, out));
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
            ExprKind::Binary(_, a, b) => {
                walk(a, out);
                walk(b, out);
            }
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Cast(x, _) | ExprKind::Index(_, x) => walk(x, out),
            ExprKind::Float(_) | ExprKind::Int(..) | ExprKind::Bool(_) | ExprKind::Var(_) | ExprKind::Id(_) => {}
        }
    }
    let mut out = Vec::new();
    for k in kernels {
        k.bindings().for_each(|(_, e)| walk(e, &mut out));
        if let Some(r) = &k.result {
            walk(r, &mut out);
        }
    }
    out
}

/// Whether `k` calls a partial derivative of a `kernel!` function.
pub(super) fn calls_partials(k: &Kernel) -> bool {
    externs(std::iter::once(k)).iter().any(|(f, _)| f.partial.is_some())
}

/// `k` as a WGSL function named `name`.
pub(super) fn wgsl_fn(k: &Kernel, name: &str, out: &mut Wgsl) {
    out.push_str(&format!("fn {name}("));
    for (i, &p) in k.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("{}: f32", wgsl::name(k, p)));
    }
    out.push_str(") -> f32 {\n");
    for (v, value) in k.bindings() {
        out.push_str(&format!("    let {} = ", wgsl::name(k, v)));
        wgsl::expr(k, value, out);
        out.push_str(";\n");
    }
    if let Some(r) = &k.result {
        out.push_str("    return ");
        wgsl::expr(k, r, out);
        out.push_str(";\n");
    }
    out.push_str("}\n");
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
    let kernel = match kernel_type(k, partials) {
        Ok(kernel) => kernel,
        Err(msg) => return syn::Error::new(k.span, msg).to_compile_error(),
    };
    let rt = quote!(::blaze::runtime);
    let fn_doc = format!(
        "Elementwise kernel `{name_str}` over tensors and scalars: tensor arguments broadcast against each other. \
         Generated by `kernel!`; differentiable under `Autodiff`."
    );
    let mod_doc = format!("The kernel `{name_str}` as a type, with its WGSL (`{name_str}::WGSL`).");
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
            #kernel
        }
    }
}

/// The items of kernel `k` as a type: `pub struct Kernel` implementing
/// `Elementwise` with `partials` (one per parameter), and `pub const
/// WGSL`, validated with naga here; `Err` with the message when naga
/// rejects it. `kernel!` and the fused groups of `#[model]` both emit
/// kernels through this.
pub fn kernel_type(k: &Kernel, partials: &[Kernel]) -> Result<TokenStream, String> {
    let name_str = k.name.clone();
    let mut w = Wgsl::new(&name_str);
    wgsl_fn(k, &name_str, &mut w);
    for (i, p) in partials.iter().enumerate() {
        w.push('\n');
        let named = format!("{name_str}_d_{}", plain(&k.vars[k.params[i]].name));
        wgsl_fn(p, &named, &mut w);
        // By position too, as a fused group calling this kernel names it.
        let params: Vec<String> = (0..k.params.len()).map(|j| format!("a{j}")).collect();
        let typed: Vec<String> = params.iter().map(|p| format!("{p}: f32")).collect();
        w.push_str(&format!(
            "fn {name_str}_d{i}({}) -> f32 {{\n    return {named}({});\n}}\n",
            typed.join(", "),
            params.join(", ")
        ));
    }
    let wgsl = w.finish();
    // The kernels it calls are compiled before it on a device: naga checks
    // it against their signatures.
    let externs = externs(std::iter::once(k).chain(partials));
    let stubs: String = externs
        .iter()
        .map(|(f, arity)| {
            let typed: Vec<String> = (0..*arity).map(|j| format!("a{j}: f32")).collect();
            format!("fn {}({}) -> f32 {{\n    return 0.0;\n}}\n", f.wgsl_name(), typed.join(", "))
        })
        .collect();
    if let Err(e) = validate(&format!("{stubs}{wgsl}")) {
        return Err(format!("kernel `{name_str}` produced WGSL that naga rejects:\n{e}\n{wgsl}"));
    }
    let mut deps: Vec<(String, &TokenStream)> = Vec::new();
    for (f, _) in &externs {
        if !deps.iter().any(|(n, _)| *n == f.name) {
            deps.push((f.name.clone(), &f.path));
        }
    }
    let rt = k.home.runtime();
    let dep_paths: Vec<&TokenStream> = deps.iter().map(|(_, p)| *p).collect();
    let dep_items = (!deps.is_empty()).then(|| {
        quote! {
            const DEPS: &'static [&'static str] = &[#(<#dep_paths::Kernel as #rt::kernel::Elementwise>::WGSL),*];
        }
    });
    // As the WGSL names the partials: `{kernel}_d_{arg}`.
    let arg_names: Vec<&str> = k.params.iter().map(|&p| plain(&k.vars[p].name)).collect();
    let body = rust_loop(k);
    let partial_arms = partials.iter().enumerate().map(|(i, p)| {
        let body = rust_loop(p);
        quote!(#i => { #body })
    });
    let point = rust_point(k);
    let point_arms = partials.iter().enumerate().map(|(i, p)| {
        let body = rust_point(p);
        quote!(#i => { #body })
    });
    let no_partials = (partials.len() < k.params.len()).then(|| {
        let msg = format!(
            "{name_str}: no partial derivatives: it calls a `kernel!` function's derivative, whose own \
             derivative is not generated (a second derivative through a fused group)"
        );
        quote!(panic!(#msg);)
    });
    let arity = k.params.len();
    let onnx_body = onnx::body(k)?;
    let onnx_arms = partials
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let body = onnx::body(p)?;
            Ok(quote!(#i => { #body }))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let (cube_items, cube_device) = match k.home {
        Home::Facade => super::cube::elementwise(k, partials),
        // The CubeCL backend holds the table's launchers (see `Home`).
        Home::Runtime | Home::Cube => (TokenStream::new(), quote!(::core::option::Option::None)),
    };
    Ok(quote! {
        #cube_items

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
            #dep_items
            const DEVICE: ::core::option::Option<&'static (dyn ::core::any::Any + Send + Sync)> = #cube_device;

            #[inline(always)]
            #[allow(unused_parens, clippy::all)]
            fn map<T: #rt::kernel::KernelFloat>(args: &[&[T]], out: &mut [::core::mem::MaybeUninit<T>]) {
                #body
            }

            #[inline(always)]
            #[allow(unused_parens, unused_variables, clippy::all)]
            fn map_partial<T: #rt::kernel::KernelFloat>(arg: usize, args: &[&[T]], out: &mut [::core::mem::MaybeUninit<T>]) {
                #no_partials
                #[allow(unreachable_code)]
                match arg {
                    #(#partial_arms)*
                    _ => panic!("{}: no argument {} (it has {})", #name_str, arg, #arity),
                }
            }

            #[allow(unused_variables, clippy::all)]
            fn onnx<G: #rt::kernel::OnnxExpr>(g: &mut G, args: &[G::Value]) -> G::Value {
                #onnx_body
            }

            #[allow(unused_variables, clippy::all)]
            fn onnx_partial<G: #rt::kernel::OnnxExpr>(g: &mut G, arg: usize, args: &[G::Value]) -> G::Value {
                #no_partials
                #[allow(unreachable_code)]
                match arg {
                    #(#onnx_arms)*
                    _ => panic!("{}: no argument {} (it has {})", #name_str, arg, #arity),
                }
            }

            #[inline(always)]
            #[allow(unused_parens, clippy::all)]
            fn at<T: #rt::kernel::KernelFloat>(args: &[T]) -> T {
                #point
            }

            #[inline(always)]
            #[allow(unused_parens, unused_variables, clippy::all)]
            fn partial_at<T: #rt::kernel::KernelFloat>(arg: usize, args: &[T]) -> T {
                #no_partials
                #[allow(unreachable_code)]
                match arg {
                    #(#point_arms)*
                    _ => panic!("{}: no argument {} (it has {})", #name_str, arg, #arity),
                }
            }
        }
    })
}
