//! The third printer: a kernel as CubeCL `#[cube]` code for the CubeCL
//! backend (`blaze-cubecl`), both forms. The items go through the facade's
//! `__cube!` macro, which keeps them only when the `blaze` crate's
//! `cubecl` feature is on, so a user's crate needs no CubeCL dependency
//! and builds without it otherwise; the kernel's `DEVICE` constant comes
//! from `__cube_device!` the same way.
//!
//! Expressions compute what the WGSL printer makes every adapter compute:
//! NaN-aware comparisons, `min`, `max` and `clamp`, integer division and
//! remainder defined at zero, shift amounts masked to five bits,
//! saturating float-to-integer casts (the helpers live in
//! `blaze_cubecl::__private::dsl`). CubeCL lacks `exp2`, `log2` and
//! `sign`: they are written from `exp`, `ln` and `select`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::ir::{Bin, Expr, ExprKind, Home, Id, Intrinsic, Kernel, Kind, Stmt, Ty};

/// The Rust name of variable `v` in the `#[cube]` code.
fn var(v: usize) -> TokenStream {
    let id = format_ident!("v{}", v);
    quote!(#id)
}

fn ty(t: Ty) -> TokenStream {
    t.rust()
}

/// A float literal. `#[cube]` keeps a bare literal a device value, but
/// folds a negated one to a host constant that a later assignment cannot
/// replace: a negative one is written as a difference.
fn float_lit(v: f32) -> TokenStream {
    if v.is_sign_negative() && v != 0.0 {
        let m = -v;
        quote!((0.0f32 - #m))
    } else {
        quote!(#v)
    }
}

/// An integer literal of type `t`, negative ones as for [`float_lit`].
fn int_lit(v: i64, t: Ty) -> TokenStream {
    match t {
        Ty::I32 => {
            let v = v as i32;
            if v < 0 {
                // Two steps, so that `i32::MIN`'s magnitude is never a literal.
                let m = (v + 1).unsigned_abs() as i32;
                quote!((0i32 - #m - 1i32))
            } else {
                quote!(#v)
            }
        }
        _ => {
            let v = v as u32;
            quote!(#v)
        }
    }
}

/// `e` as a `#[cube]` expression.
fn expr(k: &Kernel, e: &Expr) -> TokenStream {
    let dsl = quote!(__dsl);
    match &e.kind {
        ExprKind::Float(v) => float_lit(*v as f32),
        ExprKind::Int(v, t, _) => int_lit(*v, t.get()),
        ExprKind::Bool(b) => quote!(#b),
        ExprKind::Var(v) => var(*v),
        ExprKind::Index(v, i) => {
            let (id, i) = (var(*v), expr(k, i));
            quote!(#id[(#i) as usize])
        }
        ExprKind::Neg(x) => match &x.kind {
            ExprKind::Float(v) => float_lit(-(*v as f32)),
            ExprKind::Int(v, t, _) if t.get() == Ty::I32 => int_lit(-*v, Ty::I32),
            _ => {
                let x = expr(k, x);
                quote!((-#x))
            }
        },
        ExprKind::Not(x) => {
            let x = expr(k, x);
            quote!((!#x))
        }
        ExprKind::Binary(op, a, b) => binary(*op, k.ty(a), expr(k, a), expr(k, b)),
        ExprKind::Call(f, args) => {
            let a: Vec<TokenStream> = args.iter().map(|a| expr(k, a)).collect();
            match f {
                Intrinsic::Exp => quote!(f32::exp(#(#a)*)),
                Intrinsic::Exp2 => quote!(f32::exp(#(#a)* * 0.693_147_2f32)),
                Intrinsic::Log => quote!(f32::ln(#(#a)*)),
                Intrinsic::Log2 => quote!((f32::ln(#(#a)*) * 1.442_695f32)),
                Intrinsic::Sqrt => quote!(f32::sqrt(#(#a)*)),
                Intrinsic::Rsqrt => quote!(f32::inverse_sqrt(#(#a)*)),
                Intrinsic::Tanh => quote!(#dsl::tanh(#(#a)*)),
                Intrinsic::Sin => quote!(f32::sin(#(#a)*)),
                Intrinsic::Cos => quote!(f32::cos(#(#a)*)),
                Intrinsic::Pow => quote!(#dsl::pow(#(#a),*)),
                Intrinsic::Abs => quote!(f32::abs(#(#a)*)),
                Intrinsic::Sign => quote!(#dsl::sign(#(#a)*)),
                Intrinsic::Min => quote!(#dsl::min(#(#a),*)),
                Intrinsic::Max => quote!(#dsl::max(#(#a),*)),
                Intrinsic::Clamp => quote!(#dsl::clamp(#(#a),*)),
                Intrinsic::Floor => quote!(f32::floor(#(#a)*)),
                Intrinsic::Ceil => quote!(f32::ceil(#(#a)*)),
                Intrinsic::Fma => {
                    let (x, y, z) = (&a[0], &a[1], &a[2]);
                    quote!((#x * #y + #z))
                }
                Intrinsic::Select => {
                    let (c, x, y) = (&a[0], &a[1], &a[2]);
                    quote!(select(#c, #x, #y))
                }
                Intrinsic::Erf => quote!(#dsl::erf(#(#a)*)),
            }
        }
        // Through the alias `elementwise` imports: `#[cube]` gives the
        // call a scope argument spanned like the path, which from a
        // user's macro would not see the function's own.
        ExprKind::Extern(f, args) => {
            let (alias, args) = (extern_alias(f), args.iter().map(|a| expr(k, a)));
            quote!(#alias(#(#args),*))
        }
        ExprKind::Id(id) => match id {
            Id::Global => quote!((ABSOLUTE_POS as u32)),
            Id::Local => quote!(UNIT_POS),
            Id::Workgroup => quote!((CUBE_POS as u32)),
            Id::Workgroups => quote!((CUBE_COUNT as u32)),
        },
        ExprKind::Cast(x, t) => {
            let from = k.ty(x);
            let x = expr(k, x);
            match (from, t) {
                (Ty::F32, Ty::I32) => quote!(#dsl::f32_to_i32(#x)),
                (Ty::F32, Ty::U32) => quote!(#dsl::f32_to_u32(#x)),
                (a, b) if a == *b => x,
                _ => {
                    let t = ty(*t);
                    quote!(#t::cast_from(#x))
                }
            }
        }
    }
}

/// `a op b` with `a` of type `t`, as the WGSL printer defines it.
fn binary(op: Bin, t: Ty, a: TokenStream, b: TokenStream) -> TokenStream {
    let dsl = quote!(__dsl);
    match (op, t) {
        (Bin::Lt, Ty::F32) => quote!(#dsl::lt(#a, #b)),
        (Bin::Le, Ty::F32) => quote!(#dsl::le(#a, #b)),
        (Bin::Gt, Ty::F32) => quote!(#dsl::gt(#a, #b)),
        (Bin::Ge, Ty::F32) => quote!(#dsl::ge(#a, #b)),
        (Bin::Eq, Ty::F32) => quote!(#dsl::eq(#a, #b)),
        (Bin::Ne, Ty::F32) => quote!(#dsl::ne(#a, #b)),
        (Bin::Rem, Ty::F32) => quote!(#dsl::rem_f32(#a, #b)),
        (Bin::Div, Ty::I32) => quote!(#dsl::div_i32(#a, #b)),
        (Bin::Rem, Ty::I32) => quote!(#dsl::rem_i32(#a, #b)),
        (Bin::Div, Ty::U32) => quote!(#dsl::div_u32(#a, #b)),
        (Bin::Rem, Ty::U32) => quote!(#dsl::rem_u32(#a, #b)),
        (Bin::Shl | Bin::Shr, _) => {
            // The amount in the shifted value's type, masked to five bits.
            let (t, op) = (ty(t), op.tokens());
            quote!((#a #op #t::cast_from(u32::cast_from(#b) & 31u32)))
        }
        _ => {
            let op = op.tokens();
            quote!((#a #op #b))
        }
    }
}

fn block(k: &Kernel, stmts: &[Stmt]) -> TokenStream {
    stmts.iter().map(|s| stmt(k, s)).collect()
}

fn stmt(k: &Kernel, s: &Stmt) -> TokenStream {
    match s {
        Stmt::Let(v, e) => {
            // Literals carry their type, so `let` needs no annotation
            // (which `#[cube]` would read as the host type).
            let (id, e) = (var(*v), expr(k, e));
            if matches!(k.vars[*v].kind, Kind::Local { mutable: true }) {
                // Declared from a bare literal, then assigned: `#[cube]`
                // makes a variable whose first value is a constant
                // expression (`-3e38`) a host constant, which later
                // assignments of device values cannot replace.
                let zero = k.vars[*v].ty.zero();
                quote!(let mut #id = #zero; #id = #e;)
            } else {
                quote!(let #id = #e;)
            }
        }
        Stmt::Assign(v, index, op, e, _) => {
            let id = var(*v);
            let target = match index {
                Some(i) => {
                    let i = expr(k, i);
                    quote!(#id[(#i) as usize])
                }
                None => id,
            };
            let t = if index.is_some() { Ty::F32 } else { k.vars[*v].ty };
            let value = match op {
                Some(op) => binary(*op, t, target.clone(), expr(k, e)),
                None => expr(k, e),
            };
            quote!(#target = #value;)
        }
        Stmt::If(c, a, b) => {
            let (c, a, b) = (expr(k, c), block(k, a), block(k, b));
            if b.is_empty() { quote!(if #c { #a }) } else { quote!(if #c { #a } else { #b }) }
        }
        Stmt::While(c, body) => {
            let (c, body) = (expr(k, c), block(k, body));
            quote!(while #c { #body })
        }
        Stmt::For(v, a, b, body) => {
            let (id, a, b, body) = (var(*v), expr(k, a), expr(k, b), block(k, body));
            quote!(for #id in #a..#b { #body })
        }
        Stmt::Barrier(..) => quote!(sync_cube();),
    }
}

/// An elementwise kernel's function (`name`) of its parameters.
fn point(k: &Kernel, name: &syn::Ident) -> TokenStream {
    let params = k.params.iter().map(|&p| var(p));
    let lets = k.bindings().map(|(v, value)| {
        let (id, value) = (var(v), expr(k, value));
        quote!(let #id = #value;)
    });
    let result = k.result.as_ref().map_or_else(|| quote!(0.0f32), |r| expr(k, r));
    quote! {
        #[cube]
        pub fn #name(#(#params: f32),*) -> f32 {
            #(#lets)*
            #result
        }
    }
}

/// The path of the CubeCL backend's private items (CubeCL itself, the
/// `dsl` helpers, the op table's `#[cube]` functions) from `home`.
pub(super) fn private(home: Home) -> TokenStream {
    match home {
        Home::Facade | Home::Runtime => quote!(::blaze::cubecl::__private),
        Home::Cube => quote!(crate::__private),
    }
}

/// What a module needs to hold `#[cube]` code: the kernel module's names
/// (the `kernel!` functions a fused group calls), CubeCL through the
/// facade (or from the CubeCL backend itself), and the helpers.
fn prelude(home: Home) -> TokenStream {
    let private = private(home);
    quote! {
        #[allow(unused_imports)]
        use super::*;
        #[allow(unused_imports)]
        use #private::{cubecl, dsl as __dsl};
        #[allow(unused_imports)]
        use #private::cubecl::prelude::*;
        // By name, so that they win over the user's names of the same
        // spelling (`Tensor`) that `super::*` brings.
        #[allow(unused_imports)]
        use #private::cubecl::prelude::{
            ABSOLUTE_POS, BufferArg, CUBE_COUNT, CUBE_POS, Cast, Client, CubeCount, CubeDim, Shared, Tensor,
            TensorArg, UNIT_POS, comptime, cube, select, sync_cube, terminate,
        };
    }
}

/// The local name of a `kernel!` function (or partial) a fused group calls.
fn extern_alias(f: &super::ir::Extern) -> syn::Ident {
    format_ident!("__ext_{}", super::plain(&f.wgsl_name()))
}

/// The `#[cube]` items of elementwise kernel `k` and its `partials`, and
/// the expression of its `DEVICE` constant.
pub fn elementwise(k: &Kernel, partials: &[Kernel]) -> (TokenStream, TokenStream) {
    let value = point(k, &format_ident!("value"));
    let ds = partials.iter().enumerate().map(|(i, p)| point(p, &format_ident!("d{}", i)));
    let n = k.params.len();
    let xs: Vec<syn::Ident> = (0..n).map(|i| format_ident!("x{}", i)).collect();
    let avs: Vec<syn::Ident> = (0..n).map(|i| format_ident!("a{}", i)).collect();
    let arms = partials.iter().enumerate().map(|(i, _)| {
        let (which, d) = (i as u32 + 1, format_ident!("d{}", i));
        quote!(if comptime!(which == #which) { y = #d(#(#avs),*); })
    });
    let expects = (0..n).map(|_| quote!(args.next().expect("one tensor per argument")));
    let prelude = prelude(k.home);
    let private = private(k.home);
    let externs = crate::ir::externs(std::iter::once(k).chain(partials)).into_iter().map(|(f, _)| {
        let alias = extern_alias(&f);
        let func = match f.partial {
            None => format_ident!("value"),
            Some(i) => format_ident!("d{}", i),
        };
        // An op of the table has its `#[cube]` functions in the CubeCL
        // backend, under the op's name (`unary::sigmoid`, `binary::pow`).
        let path = match (f.table, f.name.strip_prefix(crate::ir::BINARY_PREFIX)) {
            (true, Some(op)) => {
                let op = format_ident!("{}", op);
                quote!(#private::binary::#op)
            }
            (true, None) => {
                let op = format_ident!("{}", f.name.trim_start_matches(crate::ir::PREFIX));
                quote!(#private::unary::#op)
            }
            (false, _) => f.path.clone(),
        };
        quote!(#[allow(unused_imports)] use #path::__cube::#func as #alias;)
    });
    let cube_crate = match k.home {
        Home::Facade | Home::Runtime => quote!(::blaze::cubecl),
        Home::Cube => quote!(crate),
    };
    let items = quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, unused_parens, unused_mut, unused_variables, missing_docs, clippy::all)]
        pub mod __cube {
            #prelude
            #(#externs)*

            #value
            #(#ds)*

            #[cube(launch)]
            pub fn run(#(#xs: &Tensor<f32>,)* out: &mut Tensor<f32>, #[comptime] which: u32) {
                if ABSOLUTE_POS >= out.len() {
                    terminate!();
                }
                #(let #avs = #xs[__dsl::offset_in(ABSOLUTE_POS, #xs)];)*
                let mut y = 0.0f32;
                if comptime!(which == 0) {
                    y = value(#(#avs),*);
                }
                #(#arms)*
                out[ABSOLUTE_POS] = y;
            }

            fn launch(client: &Client, count: CubeCount, dim: CubeDim, args: ::std::vec::Vec<TensorArg>, out: TensorArg, which: u32) {
                let mut args = args.into_iter();
                run::launch(client, count, dim, #(#expects,)* out, which);
            }

            /// The launcher the CubeCL backend runs.
            pub const TABLE: #cube_crate::CubeElementwise = #cube_crate::CubeElementwise { launch };
        }
    };
    match k.home {
        Home::Facade | Home::Runtime => {
            (quote!(::blaze::__cube! { #items }), quote!(::blaze::__cube_device!(__cube::TABLE)))
        }
        Home::Cube => (items, quote!(::core::option::Option::Some(&__cube::TABLE))),
    }
}

/// The `#[cube]` items of general kernel `k` (workgroup size `workgroup`)
/// and the expression of its `DEVICE` constant.
pub fn general(k: &Kernel, workgroup: usize) -> (TokenStream, TokenStream) {
    let mut params = Vec::new();
    let mut args = Vec::new();
    for &p in &k.params {
        let v = &k.vars[p];
        let id = var(p);
        match v.kind {
            Kind::Buffer { output: false, .. } => {
                params.push(quote!(#id: &[f32]));
                args.push(quote!(buffers.next().expect("one buffer per parameter")));
            }
            Kind::Buffer { output: true, .. } => {
                params.push(quote!(#id: &mut [f32]));
                args.push(quote!(buffers.next().expect("one buffer per parameter")));
            }
            Kind::Scalar { index } => {
                let t = ty(v.ty);
                params.push(quote!(#id: #t));
                let get = match v.ty {
                    Ty::F32 => quote!(scalar_f32),
                    Ty::I32 => quote!(scalar_i32),
                    _ => quote!(scalar_u32),
                };
                args.push(quote!(__dsl::#get(&scalars[#index])));
            }
            _ => {}
        }
    }
    let shared = k.vars.iter().enumerate().filter_map(|(i, v)| match v.kind {
        Kind::Shared { len } => {
            let id = var(i);
            Some(quote!(let mut #id = Shared::<[f32]>::new_slice(#len);))
        }
        _ => None,
    });
    let body = block(k, &k.body);
    let wg = workgroup as u32;
    let prelude = prelude(k.home);
    let rt = k.home.runtime();
    let cube_crate = match k.home {
        Home::Facade | Home::Runtime => quote!(::blaze::cubecl),
        Home::Cube => quote!(crate),
    };
    let items = quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, unused_parens, unused_mut, unused_variables, missing_docs, clippy::all)]
        pub mod __cube {
            #prelude

            #[cube(launch)]
            pub fn run(#(#params),*) {
                #(#shared)*
                #body
            }

            fn launch(client: &Client, groups: u32, buffers: ::std::vec::Vec<BufferArg>, scalars: &[#rt::kernel::ScalarArg]) {
                let mut buffers = buffers.into_iter();
                run::launch(client, CubeCount::Static(groups, 1, 1), CubeDim::new_1d(#wg), #(#args),*);
            }

            /// The launcher the CubeCL backend runs.
            pub const TABLE: #cube_crate::CubeWorkgroups = #cube_crate::CubeWorkgroups { launch };
        }
    };
    match k.home {
        Home::Facade => (quote!(::blaze::__cube! { #items }), quote!(::blaze::__cube_device!(__cube::TABLE))),
        // The runtime's row kernels: the CubeCL backend prints their
        // `#[cube]` code itself, from the same source.
        Home::Runtime => (TokenStream::new(), quote!(::core::option::Option::None)),
        Home::Cube => (items, quote!(::core::option::Option::Some(&__cube::TABLE))),
    }
}
