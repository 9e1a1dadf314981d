//! The op table's enum-only ops, printed: the comparisons (`CmpOp`) and
//! the reductions (`ReduceOp`), for the runtime and as `#[cube]` code.

use super::*;

/// A table operator (`COMPARE`'s, `REDUCE`'s) as Rust tokens, the same
/// in WGSL and `#[cube]` code. The tables are constants, not user input:
/// that every operator parses is the invariant `operators_parse` checks.
fn operator(symbol: &str) -> TokenStream {
    symbol.parse().expect("the table's operators are Rust's")
}

/// One op of a table's enum: its variant, name (PyTorch's), operator and
/// the variant's doc.
struct EnumOp {
    variant: &'static str,
    name: &'static str,
    symbol: &'static str,
    doc: String,
}

/// A table's op enum `ty` with its methods: `ALL`, `name`, `symbol`
/// (documented by `symbol_doc`), a bool method per entry of `flags`
/// (name, doc, value per op), `index`, and `visit`, which hands a
/// `visitor` the op's module's `Kernel` (the module named after the op).
fn table_enum(
    ty: &str,
    doc: &str,
    what: &str,
    visitor: &str,
    symbol_doc: &str,
    ops: &[EnumOp],
    flags: &[(&str, &str, Vec<bool>)],
) -> TokenStream {
    let (ty, visitor) = (format_ident!("{}", ty), format_ident!("{}", visitor));
    let wild = |op: &EnumOp| {
        let v = format_ident!("{}", op.variant);
        quote!(#ty::#v)
    };
    let variants = ops.iter().map(|op| {
        let (v, doc) = (format_ident!("{}", op.variant), &op.doc);
        quote!(#[doc = #doc] #v)
    });
    let count = ops.len();
    let alls = ops.iter().map(wild);
    let names = ops.iter().map(|op| {
        let (p, name) = (wild(op), op.name);
        quote!(#p => #name)
    });
    let symbols = ops.iter().map(|op| {
        let (p, symbol) = (wild(op), op.symbol);
        quote!(#p => #symbol)
    });
    let indices = ops.iter().enumerate().map(|(i, op)| {
        let (p, code) = (wild(op), i as u32);
        quote!(#p => #code)
    });
    let visits = ops.iter().map(|op| {
        let (p, m) = (wild(op), format_ident!("{}", op.name));
        quote!(#p => v.visit::<#m::Kernel>())
    });
    let flags = flags.iter().map(|(method, doc, values)| {
        let method = format_ident!("{}", method);
        let arms = ops.iter().zip(values).map(|(op, value)| {
            let p = wild(op);
            quote!(#p => #value)
        });
        quote! {
            #[doc = #doc]
            pub fn #method(self) -> bool {
                match self {
                    #(#arms,)*
                }
            }
        }
    });
    let all_doc = format!("Every {what}, in the table's order.");
    let visit_doc = format!("Hands `v` the {what} as a type.");
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum #ty {
            #(#variants,)*
        }

        impl #ty {
            #[doc = #all_doc]
            pub const ALL: [#ty; #count] = [#(#alls),*];

            /// The op's name as it appears in messages.
            pub fn name(self) -> &'static str {
                match self {
                    #(#names,)*
                }
            }

            #[doc = #symbol_doc]
            pub fn symbol(self) -> &'static str {
                match self {
                    #(#symbols,)*
                }
            }

            #(#flags)*

            /// The op's position in the table: its code where a backend
            /// picks the op while compiling a kernel.
            pub fn index(self) -> u32 {
                match self {
                    #(#indices,)*
                }
            }

            #[doc = #visit_doc]
            #[inline]
            pub fn visit<V: #visitor>(self, v: V) -> V::Out {
                match self {
                    #(#visits,)*
                }
            }
        }
    }
}

/// The runtime's side of the comparisons: `CmpOp`, and per op a
/// `Comparison` type whose `holds` is the op's operator.
pub fn compare_runtime() -> TokenStream {
    let ops: Vec<EnumOp> = COMPARE
        .iter()
        .map(|op| EnumOp {
            variant: op.variant,
            name: op.name,
            symbol: op.symbol,
            doc: format!("`a {} b`.", op.symbol),
        })
        .collect();
    let unordered = (
        "unordered",
        "Its value when either operand is NaN (IEEE 754: true for `ne` alone), for shaders that decide NaN by the bits.",
        COMPARE.iter().map(|op| op.unordered).collect(),
    );
    let enumeration = table_enum(
        "CmpOp",
        "Elementwise comparisons, one per entry of the op table (`blaze_spec::ops::COMPARE`); the result is a bool tensor.",
        "comparison",
        "CmpVisitor",
        "The operator, the same in Rust, WGSL and `#[cube]` code.",
        &ops,
        &[unordered],
    );
    let modules = COMPARE.iter().map(|op| {
        let m = format_ident!("{}", op.name);
        let operator = operator(op.symbol);
        let doc = format!("`a {} b` as a type.", op.symbol);
        quote! {
            #[doc = #doc]
            pub mod #m {
                /// The comparison's type.
                pub struct Kernel;

                impl super::Comparison for Kernel {
                    #[inline(always)]
                    fn holds<T: PartialOrd>(a: T, b: T) -> bool {
                        a #operator b
                    }
                }
            }
        }
    });
    quote! {
        #enumeration
        #(#modules)*
    }
}

/// The CubeCL backend's side of the comparisons: `op_f32(a, b, nan,
/// code)` and `op_u32(a, b, code)`, comparison number `code` of the table
/// (`CmpOp::index`), `nan` saying that an operand is NaN.
pub fn compare_cube() -> TokenStream {
    let picks = |float: bool| {
        COMPARE.iter().enumerate().map(move |(i, op)| {
            let code = i as u32;
            let operator = operator(op.symbol);
            let value = match (float, op.unordered) {
                (false, _) => quote!(a #operator b),
                (true, true) => quote!(a #operator b || nan),
                (true, false) => quote!(a #operator b && !nan),
            };
            quote!(if comptime!(code == #code) { r = #value; })
        })
    };
    let (floats, words) = (picks(true), picks(false));
    quote! {
        use ::cubecl::prelude::*;

        /// Comparison number `code` of the table (`CmpOp::index`) of two
        /// floats, `nan` saying that either is NaN.
        #[cube]
        pub fn op_f32(a: f32, b: f32, nan: bool, #[comptime] code: u32) -> bool {
            let mut r = false;
            #(#floats)*
            r
        }

        /// Comparison number `code` of the table of two words.
        #[cube]
        pub fn op_u32(a: u32, b: u32, #[comptime] code: u32) -> bool {
            let mut r = false;
            #(#words)*
            r
        }
    }
}

/// The runtime's side of the reductions: `ReduceOp`, and per op a
/// `Reduction` type whose `step` is the table's fold or selection.
pub fn reduce_runtime() -> TokenStream {
    let parts = |op: &blaze_spec::ops::Reduce| match op.kind {
        ReduceKind::Fold(symbol) => (symbol, false, false),
        ReduceKind::Select { beats, index } => (beats, true, index),
    };
    let ops: Vec<EnumOp> = REDUCE
        .iter()
        .map(|op| {
            let doc = match op.kind {
                ReduceKind::Fold(symbol) => format!("`{symbol}` over the dim, from 0 (floats, i64)."),
                ReduceKind::Select { beats, index: false } => {
                    format!("The value that beats the others by `{beats}`, NaN winning (floats, i64).")
                }
                ReduceKind::Select { beats, index: true } => format!(
                    "The position (i64) of the first value that beats the others by `{beats}`, NaN winning (floats, i64)."
                ),
            };
            EnumOp { variant: op.variant, name: op.name, symbol: parts(op).0, doc }
        })
        .collect();
    let selects = (
        "selects",
        "Whether the op selects one value (max, argmax) rather than folding them all.",
        REDUCE.iter().map(|op| parts(op).1).collect(),
    );
    let position = (
        "position",
        "Whether the result is the winner's position (as i64).",
        REDUCE.iter().map(|op| parts(op).2).collect(),
    );
    let enumeration = table_enum(
        "ReduceOp",
        "Reductions over one dim, one per entry of the op table (`blaze_spec::ops::REDUCE`).",
        "reduction",
        "ReduceVisitor",
        "A fold's operator, or what a selection's winner beats the others by; the same in Rust, WGSL and `#[cube]` code.",
        &ops,
        &[selects, position],
    );
    let modules = REDUCE.iter().map(|op| {
        let (symbol, select, position) = parts(op);
        let m = format_ident!("{}", op.name);
        let operator = operator(symbol);
        let (beats, step) = if select {
            // Non-short-circuit operators: the outcome is data-dependent,
            // and a branch on it mispredicts; these compile to selects.
            (
                quote! {
                    #[allow(clippy::eq_op)]
                    let nan = |x: &T| x != x;
                    !nan(&best) & (nan(&v) | (v #operator best))
                },
                quote!(if Self::beats(v, acc) { v } else { acc }),
            )
        } else {
            (quote!(false), quote!(acc #operator v))
        };
        let doc = format!("`{}` as a type.", op.name);
        quote! {
            #[doc = #doc]
            pub mod #m {
                /// The reduction's type.
                pub struct Kernel;

                impl super::Reduction for Kernel {
                    const SELECTS: bool = #select;
                    const POSITION: bool = #position;

                    #[inline(always)]
                    fn beats<T: PartialOrd>(v: T, best: T) -> bool {
                        #beats
                    }

                    #[inline(always)]
                    fn step<T: Copy + PartialOrd + ::core::ops::Add<Output = T>>(acc: T, v: T) -> T {
                        #step
                    }
                }
            }
        }
    });
    quote! {
        #enumeration
        #(#modules)*
    }
}

/// The CubeCL backend's side of the reductions: `beats(v, j, best, i,
/// code)`, whether value `v` at `j` beats `best` at `i` under selection
/// number `code` of the table (`ReduceOp::index`; NaN wins, then the
/// operator, then the lower position), and `fold(acc, v, code)`.
pub fn reduce_cube() -> TokenStream {
    let mut beats = Vec::new();
    let mut folds = Vec::new();
    for (i, op) in REDUCE.iter().enumerate() {
        let code = i as u32;
        match op.kind {
            ReduceKind::Fold(symbol) => {
                let operator = operator(symbol);
                folds.push(quote!(if comptime!(code == #code) { r = acc #operator v; }));
            }
            ReduceKind::Select { beats: symbol, .. } => {
                let operator = operator(symbol);
                beats.push(quote!(if comptime!(code == #code) { better = v #operator best; }));
            }
        }
    }
    quote! {
        use ::cubecl::prelude::*;

        /// Whether `v` at position `j` beats `best` at `i` under the
        /// selection numbered `code`: a NaN beats numbers (the first NaN
        /// stays), then the table's operator, then the lower position.
        #[cube]
        pub fn beats(v: f32, j: u32, best: f32, i: u32, #[comptime] code: u32) -> bool {
            let (v_nan, best_nan) = (crate::backend::kernels::is_nan(v), crate::backend::kernels::is_nan(best));
            let mut better = false;
            #(#beats)*
            select(best_nan, v_nan && j < i, v_nan || better || (v == best && j < i))
        }

        /// The fold numbered `code` of `acc` and `v`.
        #[cube]
        pub fn fold(acc: f32, v: f32, #[comptime] code: u32) -> f32 {
            let mut r = acc;
            #(#folds)*
            r
        }
    }
}
