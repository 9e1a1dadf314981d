//! General kernels: `#[workgroup(N)]` functions over `f32` buffers with
//! invocation ids, workgroup-shared arrays, barriers, loops and branches.
//! Lowered to the kernel IR (`../ir.rs`) by `lower.rs`, checked by the
//! checker both forms share (types, writes to inputs, barriers in
//! divergent control flow), then emitted as a WGSL compute shader
//! (`wgsl.rs`, validated with naga) and as Rust that runs a workgroup's
//! invocations in lockstep between barriers (`rust.rs`); both print
//! expressions with the printers elementwise kernels use.

mod lower;
pub(crate) mod rust;
mod wgsl;

pub use self::wgsl::shader;

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;

use self::lower::Lower;
use super::check::check;
use super::ir::{Home, Kernel};
use super::wgsl::validate;
use crate::errors::Errors;

const SUPPORTED: &str = "general kernels support `let` and `let mut`, `#[shared] let name: [f32; N];`, \
                         assignments (also compound ones such as `+=` and `<<=`), indexing buffers and shared arrays, \
                         integer bit operations (`<<` `>>` `&` `|` `^`), `if`/`else`, `while`, `for i in a..b`, \
                         `barrier()`, `let t = workgroup_sum(v);` and `workgroup_max`, `as` casts, `global_id()` `local_id()` \
                         `workgroup_id()` `num_workgroups()`, and the intrinsics";

/// Workgroup memory, in f32, that every WebGPU device offers (16 KiB).
const SHARED_F32_MAX: usize = 4096;

fn err(span: Span, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, msg)
}

/// The size in `#[workgroup(N)]`, when the attribute is present.
pub fn workgroup_attr(f: &syn::ItemFn, errors: &mut Errors) -> Option<usize> {
    let attr = f.attrs.iter().find(|a| a.path().is_ident("workgroup"))?;
    match attr.parse_args::<syn::LitInt>().and_then(|l| l.base10_parse::<usize>()) {
        Ok(n) if (1..=256).contains(&n) => Some(n),
        _ => {
            errors.push(err(attr.span(), "write the workgroup size as `#[workgroup(N)]`, N from 1 to 256"));
            Some(1)
        }
    }
}

/// General kernel `f` (workgroup size `workgroup`) lowered and checked,
/// to be emitted at `home`, with its WGSL (validated by naga); or the
/// errors, as compile errors.
pub(crate) fn lowered(
    f: &syn::ItemFn,
    workgroup: usize,
    home: Home,
    mut errors: Errors,
) -> Result<(Kernel, String), TokenStream> {
    let mut k = Kernel::new(f.sig.ident.to_string(), f.sig.ident.span(), Some(workgroup));
    k.home = home;
    let body = {
        let mut lower = Lower::new(&mut k, &mut errors);
        lower.signature(f);
        lower.block(&f.block.stmts)
    };
    k.body = body;
    if errors.is_empty() {
        check(&mut k, &mut errors);
    }
    if !errors.is_empty() {
        return Err(errors.to_compile_error());
    }
    let wgsl = shader(&k);
    if let Err(e) = validate(&wgsl) {
        let msg = format!("kernel `{}` produced WGSL that naga rejects:\n{e}\n{wgsl}", k.name);
        return Err(err(k.span, msg).to_compile_error());
    }
    Ok((k, wgsl))
}

/// Expands a general kernel.
pub fn expand(f: &syn::ItemFn, workgroup: usize, errors: Errors) -> TokenStream {
    match lowered(f, workgroup, Home::Facade, errors) {
        Ok((k, wgsl)) => rust::rust(f, &k, &wgsl),
        Err(e) => e,
    }
}
