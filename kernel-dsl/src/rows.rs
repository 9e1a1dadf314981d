//! The row ops (`blaze_spec::rows`) printed for each crate that runs them:
//! every entry's source is parsed as a `kernel!` general kernel, checked,
//! its WGSL validated, and printed by the printers of user kernels. The
//! runtime gets a module per op with the kernel's type, its WGSL and the
//! CPU code of its workgroups; the CubeCL backend gets the same module's
//! `#[cube]` code and launcher. So both GPU backends run one definition.

use blaze_spec::rows::{ROWS, RowKernel};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::general;
use super::ir::{Home, Kernel};
use crate::errors::Errors;

/// Entry `row` lowered at `home`, with its public function and WGSL; or
/// the compile errors of a source that does not check (the table is ours:
/// `every_row_kernel_checks_for_both_homes` lowers every entry, so these
/// name a mistake in `blaze_spec::rows`, at the macro's call).
fn lowered(row: &RowKernel, home: Home) -> Result<(syn::ItemFn, Kernel, String, usize), TokenStream> {
    let fail = |why: String| {
        let msg = format!("blaze_spec::rows::{}: {why}", row.name.to_uppercase());
        syn::Error::new(proc_macro2::Span::call_site(), msg).to_compile_error()
    };
    let mut f: syn::ItemFn = syn::parse_str(&(row.source)()).map_err(|e| fail(e.to_string()))?;
    f.vis = syn::parse_quote!(pub);
    let mut errors = Errors::default();
    let workgroup = general::workgroup_attr(&f, &mut errors).ok_or_else(|| fail("no #[workgroup(N)]".into()))?;
    let (k, wgsl) = general::lowered(&f, workgroup, home, errors)?;
    Ok((f, k, wgsl, workgroup))
}

/// The runtime's side: `pub mod name { Kernel, WGSL, launch }` per op.
pub fn runtime() -> TokenStream {
    ROWS.iter()
        .map(|row| match lowered(row, Home::Runtime) {
            Ok((f, k, wgsl, _)) => general::rust::rust(&f, &k, &wgsl),
            Err(e) => e,
        })
        .collect()
}

/// The CubeCL backend's side: `pub mod name { __cube::TABLE }` per op,
/// the launcher of the runtime's kernel of that name, and `launcher`,
/// which finds it by the runtime's kernel type.
pub fn cube() -> TokenStream {
    let (modules, arms): (Vec<_>, Vec<_>) = ROWS
        .iter()
        .map(|row| match lowered(row, Home::Cube) {
            Ok((_, k, _, workgroup)) => {
                let (items, _) = super::cube::general(&k, workgroup);
                let m = format_ident!("{}", row.name);
                let arm = quote! {
                    if k == TypeId::of::<::blaze_runtime::rows::#m::Kernel>() {
                        return Some(&#m::__cube::TABLE);
                    }
                };
                (quote!(pub mod #m { #items }), arm)
            }
            Err(e) => (e, quote!()),
        })
        .unzip();
    quote! {
        #(#modules)*

        /// The launcher of `K` if it is a row kernel of the runtime's.
        pub fn launcher<K: ::blaze_runtime::kernel::Workgroups>() -> Option<&'static crate::CubeWorkgroups> {
            use ::core::any::TypeId;
            let k = TypeId::of::<K>();
            #(#arms)*
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_kernel_checks_for_both_homes() {
        for row in ROWS {
            for home in [Home::Runtime, Home::Cube] {
                let Ok((f, k, wgsl, _)) = lowered(row, home) else { panic!("{} does not check", row.name) };
                assert_eq!(f.sig.ident, row.name);
                assert!(wgsl.contains(&format!("fn {}(", row.name)), "{wgsl}");
                assert_eq!(k.home, home);
            }
        }
        assert!(!runtime().is_empty() && !cube().is_empty());
    }

    #[test]
    fn a_row_kernel_that_does_not_check_is_a_compile_error_naming_it() {
        let broken = RowKernel {
            name: "broken",
            source: || "#[workgroup(64)] fn broken(out: &mut [f32]) { out[0] = nope; }".into(),
        };
        let err = lowered(&broken, Home::Runtime).expect_err("refused").to_string();
        assert!(err.contains("compile_error") && err.contains("unknown value `nope`"), "{err}");
        let unparsed = RowKernel { name: "unparsed", source: || "fn (".into() };
        let err = lowered(&unparsed, Home::Cube).expect_err("refused").to_string();
        assert!(err.contains("blaze_spec::rows::UNPARSED"), "{err}");
    }
}
