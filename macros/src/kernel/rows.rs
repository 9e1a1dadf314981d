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

/// Entry `row` lowered at `home`, with its public function and WGSL.
/// Panics on a source that does not check: the table is ours, and
/// `every_row_kernel_checks` lowers every entry.
fn lowered(row: &RowKernel, home: Home) -> (syn::ItemFn, Kernel, String, usize) {
    let mut f: syn::ItemFn = syn::parse_str(row.source).unwrap_or_else(|e| panic!("row kernel `{}`: {e}", row.name));
    f.vis = syn::parse_quote!(pub);
    let mut errors = Vec::new();
    let workgroup = general::workgroup_attr(&f, &mut errors)
        .unwrap_or_else(|| panic!("row kernel `{}` has no #[workgroup(N)]", row.name));
    match general::lowered(&f, workgroup, home, errors) {
        Ok((k, wgsl)) => (f, k, wgsl, workgroup),
        Err(e) => panic!("row kernel `{}` does not check: {e}", row.name),
    }
}

/// The runtime's side: `pub mod name { Kernel, WGSL, launch }` per op.
pub fn runtime() -> TokenStream {
    ROWS.iter()
        .map(|row| {
            let (f, k, wgsl, _) = lowered(row, Home::Runtime);
            general::rust::rust(&f, &k, &wgsl)
        })
        .collect()
}

/// The CubeCL backend's side: `pub mod name { __cube::TABLE }` per op,
/// the launcher of the runtime's kernel of that name.
pub fn cube() -> TokenStream {
    ROWS.iter()
        .map(|row| {
            let (_, k, _, workgroup) = lowered(row, Home::Cube);
            let (items, _) = super::cube::general(&k, workgroup);
            let m = format_ident!("{}", row.name);
            quote!(pub mod #m { #items })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_kernel_checks_for_both_homes() {
        for row in ROWS {
            for home in [Home::Runtime, Home::Cube] {
                let (f, k, wgsl, _) = lowered(row, home);
                assert_eq!(f.sig.ident, row.name);
                assert!(wgsl.contains(&format!("fn {}(", row.name)), "{wgsl}");
                assert_eq!(k.home, home);
            }
        }
        assert!(!runtime().is_empty() && !cube().is_empty());
    }
}
