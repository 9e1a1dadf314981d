//! The Rust that runs a kernel's workgroups on the CPU.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::ir::{Expr, Kernel, Kind, Stmt, Ty};
use crate::rust::{binary, expr};

/// Statements without barriers, for one invocation `lane`.
fn rust_lane(k: &Kernel, stmts: &[Stmt]) -> TokenStream {
    let name = &k.name;
    stmts
        .iter()
        .map(|s| match s {
            Stmt::Let(v, e) => {
                let (id, e) = (format_ident!("v{}", v), expr(k, e));
                quote!(#id[lane] = #e;)
            }
            Stmt::Barrier(..) => quote!(),
            Stmt::Assign(v, index, op, e, _) => {
                let e = expr(k, e);
                let var = &k.vars[*v];
                // Buffer and shared elements are f32; locals have their type.
                let ty = if index.is_some() { Ty::F32 } else { var.ty };
                let value = |current: TokenStream| match op {
                    None => e.clone(),
                    Some(op) => binary(&k.home.runtime(), &quote!(f32), *op, ty, current, e.clone()),
                };
                match (var.kind, index) {
                    (Kind::Buffer { index: b, .. }, Some(i)) => {
                        let i = expr(k, i);
                        let label = format!("{name}: `{}`", var.name);
                        let v = value(quote!(buffers[#b].load(idx, #label)));
                        quote!({ let idx = #i; buffers[#b].store(idx, #v, #label); })
                    }
                    (_, Some(i)) => {
                        let (i, id) = (expr(k, i), format_ident!("v{}", v));
                        let v = value(quote!(#id[idx]));
                        quote!({ let idx = (#i) as usize; #id[idx] = #v; })
                    }
                    (_, None) => {
                        let id = format_ident!("v{}", v);
                        let v = value(quote!(#id[lane]));
                        quote!(#id[lane] = #v;)
                    }
                }
            }
            Stmt::If(c, a, b) => {
                let (c, a, b) = (expr(k, c), rust_lane(k, a), rust_lane(k, b));
                quote!(if #c { #a } else { #b })
            }
            Stmt::While(c, body) => {
                let (c, body) = (expr(k, c), rust_lane(k, body));
                quote!(while #c { #body })
            }
            Stmt::For(v, a, b, body) => {
                let (id, a, b, body) = (format_ident!("v{}", v), expr(k, a), expr(k, b), rust_lane(k, body));
                quote!({ let (start, end) = (#a, #b); for i in start..end { #id[lane] = i; #body } })
            }
        })
        .collect()
}

/// A statement list at workgroup level: barrier-free runs loop over the
/// invocations; control flow holding a barrier is uniform (checked), so it
/// runs once, deciding on invocation 0's values.
fn rust_group(k: &Kernel, stmts: &[Stmt]) -> TokenStream {
    let mut out = TokenStream::new();
    let mut run: Vec<Stmt> = Vec::new();
    let flush = |run: &mut Vec<Stmt>, out: &mut TokenStream| {
        if !run.is_empty() {
            let body = rust_lane(k, run);
            out.extend(quote!(for lane in 0..WORKGROUP as usize { #body }));
            run.clear();
        }
    };
    for s in stmts {
        if !s.has_barrier() {
            run.push(s.clone());
            continue;
        }
        flush(&mut run, &mut out);
        let at0 = |e: &Expr| {
            let e = expr(k, e);
            quote!({ let lane = 0usize; #e })
        };
        out.extend(match s {
            Stmt::Barrier(..) => quote!(),
            Stmt::If(c, a, b) => {
                let (c, a, b) = (at0(c), rust_group(k, a), rust_group(k, b));
                quote!(if #c { #a } else { #b })
            }
            Stmt::While(c, body) => {
                let (c, body) = (at0(c), rust_group(k, body));
                quote!(while #c { #body })
            }
            Stmt::For(v, a, b, body) => {
                let (id, a, b, body) = (format_ident!("v{}", v), at0(a), at0(b), rust_group(k, body));
                quote!({ let (start, end) = (#a, #b); for i in start..end { #id = [i; WORKGROUP as usize]; #body } })
            }
            _ => quote!(),
        });
    }
    flush(&mut run, &mut out);
    out
}

pub(crate) fn rust(f: &syn::ItemFn, k: &Kernel, wgsl: &str) -> TokenStream {
    let rt = k.home.runtime();
    let (name, vis) = (&f.sig.ident, &f.vis);
    let name_str = name.to_string();
    let docs: Vec<&syn::Attribute> = f.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    let workgroup = k.workgroup.unwrap_or(1) as u32;
    let locals = k.vars.iter().enumerate().filter_map(|(i, v)| {
        let id = format_ident!("v{}", i);
        match v.kind {
            Kind::Local { .. } => {
                let z = v.ty.zero();
                Some(quote!(let mut #id = [#z; WORKGROUP as usize];))
            }
            Kind::Shared { len } => Some(quote!(let mut #id = [0.0f32; #len];)),
            _ => None,
        }
    });
    let scalars = k.params.iter().filter_map(|&p| match k.vars[p].kind {
        Kind::Scalar { index } => {
            let id = format_ident!("s{}", index);
            let ty = k.vars[p].ty.rust();
            Some(quote!(let #id: #ty = scalars[#index].into();))
        }
        _ => None,
    });
    let body = rust_group(k, &k.body);

    // The launcher's parameters, in the kernel's order.
    let mut launch_params = Vec::new();
    let mut ranks = Vec::new();
    let mut buffer_args = Vec::new();
    let mut scalar_args = Vec::new();
    let mut param_kinds = Vec::new();
    for &p in &k.params {
        let var = &k.vars[p];
        let id = format_ident!("{}", var.name);
        match var.kind {
            Kind::Buffer { output: false, index } => {
                let r = format_ident!("R{}", index);
                ranks.push(quote!(const #r: usize));
                launch_params.push(quote!(#id: &#rt::Tensor<B, #r>));
                buffer_args.push(quote!(#rt::kernel::LaunchBuffer::Input(#id.storage())));
                param_kinds.push(quote!(#rt::kernel::ParamKind::Input));
            }
            Kind::Buffer { output: true, index } => {
                let r = format_ident!("R{}", index);
                ranks.push(quote!(const #r: usize));
                launch_params.push(quote!(#id: &mut #rt::Tensor<B, #r>));
                buffer_args.push(quote!(#rt::kernel::LaunchBuffer::Output(#id.storage_mut())));
                param_kinds.push(quote!(#rt::kernel::ParamKind::Output));
            }
            Kind::Scalar { .. } => {
                let ty = var.ty.rust();
                launch_params.push(quote!(#id: #ty));
                scalar_args.push(quote!(#rt::kernel::ScalarArg::from(#id)));
                param_kinds.push(match var.ty {
                    Ty::F32 => quote!(#rt::kernel::ParamKind::F32),
                    Ty::I32 => quote!(#rt::kernel::ParamKind::I32),
                    _ => quote!(#rt::kernel::ParamKind::U32),
                });
            }
            _ => {}
        }
    }
    let launch_doc = format!(
        "Runs `{name_str}` over `groups` workgroups of {workgroup} invocations, on the backend of the tensors. \
         Buffers are f32 tensors of any rank, read and written as flat arrays."
    );
    let (cube_items, cube_device) = crate::cube::general(k, workgroup as usize);
    quote! {
        #(#docs)*
        #[allow(non_snake_case)]
        #vis mod #name {
            #cube_items

            /// The kernel's type, implementing `Workgroups`.
            #[derive(Clone, Copy, Debug, Default)]
            pub struct Kernel;

            /// The kernel as a WGSL compute shader, validated by naga when
            /// the kernel compiled.
            pub const WGSL: &str = #wgsl;

            /// Invocations per workgroup.
            pub const WORKGROUP: u32 = #workgroup;

            impl #rt::kernel::Workgroups for Kernel {
                const NAME: &'static str = #name_str;
                const WGSL: &'static str = WGSL;
                const WORKGROUP: u32 = #workgroup;
                const PARAMS: &'static [#rt::kernel::ParamKind] = &[#(#param_kinds),*];
                const DEVICE: ::core::option::Option<&'static (dyn ::core::any::Any + Send + Sync)> = #cube_device;

                #[allow(unused_variables, unused_mut, unused_parens, clippy::all)]
                fn run_workgroup(group: u32, groups: u32, buffers: &[#rt::kernel::RawBuffer], scalars: &[#rt::kernel::ScalarArg]) {
                    #(#scalars)*
                    #(#locals)*
                    #body
                }
            }

            #[doc = #launch_doc]
            pub fn launch<B: #rt::Backend, #(#ranks),*>(groups: u32, #(#launch_params),*) {
                #rt::kernel::launch::<Kernel, B>(groups, &mut [#(#buffer_args),*], &[#(#scalar_args),*]);
            }
        }
    }
}
