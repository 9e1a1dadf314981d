//! The one op IR of `#[model]`: a model's forward pass as a list of ops in
//! SSA form, each value with its per-sample shape (symbolic dims
//! included). In `blaze-macros`, a forward body lowers to it
//! (`graph/lower/`), and so do a sequential model's fields
//! (`model/lower.rs`); fusion (`fuse.rs`) rewrites it, differentiation
//! (`diff.rs`) and the passes' printers (`emit/`) read the rewritten ops,
//! the export, the decode check and the precision plan the ops before.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

use blaze_spec::rules::Extent;

/// A per-sample dim: the spec's monomial over the model's symbols (by
/// index into `symbols`): `64` is `{64, []}`, `T` is `{1, [T]}`, a
/// flattened `[T, 64]` is `{64, [T]}`.
pub type Dim = blaze_spec::dim::Dim<usize>;

/// What the macro does with a dim beyond the spec's arithmetic: build it
/// from a size, print it with the model's symbols, evaluate it at run time.
pub trait SampleDim {
    /// A known size.
    fn size(n: usize) -> Dim;
    /// The dim written with the model's symbol names: `64*T`.
    fn shown(&self, symbols: &[String]) -> String;
    /// The dim's size at run time, as a `usize` expression.
    fn tokens(&self) -> TokenStream;
    /// The factor before its symbols.
    fn factor(&self) -> usize;
}

impl SampleDim for Dim {
    fn size(n: usize) -> Dim {
        // Every size the lowering builds is a literal it checked against
        // MAX_SIZE, a layer's size (which the spec bounds), a fixed dim's
        // factor, or a sum of a call's pieces of such sizes.
        Dim::known(i64::try_from(n).expect("sizes are bounded by MAX_SIZE"))
    }

    fn shown(&self, symbols: &[String]) -> String {
        self.show(|&k| symbols[k].clone())
    }

    fn tokens(&self) -> TokenStream {
        let c = self.factor();
        let syms = self.syms.iter().map(|&k| sym_ident(k));
        quote!((#c #(* #syms)*))
    }

    fn factor(&self) -> usize {
        // Dims are built from sizes and symbols by products (saturating)
        // and exact quotients, so no factor is negative.
        usize::try_from(self.coef).expect("a per-sample dim's factor is not negative")
    }
}

pub fn sym_ident(k: usize) -> syn::Ident {
    quote::format_ident!("__sym{}", k)
}

pub fn show(shape: &[Dim], symbols: &[String]) -> String {
    blaze_spec::dim::show(shape, |&k| symbols[k].clone())
}

/// Who a call goes to: a field, or entry `i` of an array field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Callee {
    pub field: usize,
    pub index: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
}

/// `x op s` (or `s op x` for the reversed forms) with a scalar `s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarOp {
    Add,
    Sub,
    Mul,
    Div,
    RSub,
    RDiv,
    /// Another op of two tensors of the op table with a number as its
    /// second (`x.powf(s)`, `x.clamp_min(s)`), run as its `with_number`
    /// method.
    Table(&'static blaze_spec::ops::Binary),
}

/// One argument of a `kernel!` call.
#[derive(Debug, Clone)]
pub enum KernelArg {
    /// Index into the node's `args`.
    Tensor(usize),
    Number(TokenStream),
}

#[derive(Debug, Clone)]
pub enum Op {
    Input,
    Layer(Callee),
    Nested(Callee),
    /// A layer that attends (`Layer::attends`) called on a query, keys and
    /// values, and maybe a key-padding mask: its arguments in that order.
    Attend(Callee),
    /// An op of the op table, run as its tensor method; its adjoint reads
    /// the output or the input, as the table's derivative does.
    Unary(&'static blaze_spec::ops::Unary),
    Bin(Bin),
    /// Another op of two tensors of the op table (`maximum`, `pow`), run
    /// as its tensor method; its adjoint is the tape's, from the table's
    /// partials.
    Binary(&'static blaze_spec::ops::Binary),
    Scalar(ScalarOp, TokenStream),
    Neg,
    Matmul,
    Transpose(usize, usize),
    Permute(Vec<usize>),
    Reshape(Vec<Dim>),
    /// `len` entries of `dim` from `start`; a negative `start` counts from
    /// the end (a symbolic dim's size is known only when the model runs).
    Narrow {
        dim: usize,
        start: i64,
        len: usize,
    },
    Cat(usize),
    Softmax(usize),
    LogSoftmax(usize),
    Reduce {
        dim: usize,
        mean: bool,
    },
    CausalFill {
        t: Dim,
        value: TokenStream,
    },
    Kernel {
        path: TokenStream,
        args: Vec<KernelArg>,
    },
    Positions(Dim),
    /// Fused group `g`'s kernel (`fuse.rs`), on the group's tensor
    /// arguments in order: made by fusion, which takes the group's ops out.
    Fused(usize),
    /// Softmax fold `s` (`fuse.rs`) on the value its scale and mask were
    /// applied to: made by fusion, which takes those ops out.
    SoftmaxWith(usize),
    /// A `Dropout` field that a fused group runs: in training, where it
    /// draws its seed (the draws keep the body's order). Made by fusion;
    /// it has no arguments, and its value is a new one nothing reads.
    Seed(Callee),
}

// The kinds of op, as patterns: a pass's match names every op by naming
// the kinds it treats alike and the ops it treats apart, so an op added
// to `Op` joins a kind here or breaks every match until each pass decides.

/// Ops computed from their operands element by element.
macro_rules! elementwise_ops {
    () => {
        Op::Unary(_) | Op::Bin(_) | Op::Binary(_) | Op::Scalar(..) | Op::Neg | Op::CausalFill { .. } | Op::Kernel { .. }
    };
}

/// Ops that move elements: views and copies.
macro_rules! movement_ops {
    () => {
        Op::Transpose(..) | Op::Permute(_) | Op::Reshape(_) | Op::Narrow { .. } | Op::Cat(_)
    };
}

/// Ops along one dim of each row: softmaxes and reductions.
macro_rules! row_ops {
    () => {
        Op::Softmax(_) | Op::LogSoftmax(_) | Op::Reduce { .. }
    };
}

/// Ops that fusion makes (`fuse.rs`): no pass before it sees them.
macro_rules! fused_ops {
    () => {
        Op::Fused(_) | Op::SoftmaxWith(_) | Op::Seed(_)
    };
}

pub(crate) use {elementwise_ops, fused_ops, movement_ops, row_ops};

impl Op {
    /// The field the op calls: a layer, an attending layer or a nested
    /// model.
    pub fn callee(&self) -> Option<Callee> {
        match self {
            Op::Layer(c) | Op::Nested(c) | Op::Attend(c) | Op::Seed(c) => Some(*c),
            Op::Fused(_)
            | Op::SoftmaxWith(_)
            | Op::Input
            | Op::Positions(_)
            | Op::Matmul
            | elementwise_ops!()
            | movement_ops!()
            | row_ops!() => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub op: Op,
    pub args: Vec<usize>,
    pub out: usize,
    pub span: Span,
    /// The field whose call the op is, where a field stands for an op of
    /// the op table (`act: Relu` called as `self.act(h)`): the plan names
    /// the op after it.
    pub field: Option<Callee>,
}

/// One SSA value.
#[derive(Debug, Clone)]
pub struct Val {
    pub shape: Vec<Dim>,
    /// A shape known only to the compiler (after a field of a sequential
    /// model the macro cannot see): a const `StaticShape` expression, with
    /// `shape` empty. Only a sequential model's ops read such a value:
    /// calls of fields and the elementwise ops its fields stand for.
    pub opaque: Option<TokenStream>,
    /// False for values built from constants alone: their batch dim is 1.
    pub batched: bool,
    /// Depends on an input or a parameter (needs a gradient in `backward`).
    pub grad: bool,
    /// Depends on a parameter (needs a gradient in `backward_params`).
    pub params: bool,
}

impl Val {
    /// The rank with the batch dim.
    pub fn rank(&self) -> Rank {
        match &self.opaque {
            Some(e) => Rank::Const(e.clone()),
            None => Rank::Known(self.shape.len() + 1),
        }
    }

    /// The per-sample shape as a `StaticShape` expression (symbols as
    /// `blaze_spec::symbol`; product dims as 0, which no caller's dim
    /// equals).
    pub fn static_shape(&self) -> TokenStream {
        if let Some(e) = &self.opaque {
            return e.clone();
        }
        let dims = self.shape.iter().map(|d| match (d.fixed(), d.name()) {
            (Some(n), _) => n,
            (None, Some(&k)) => blaze_spec::symbol(k),
            (None, None) => 0,
        });
        quote!(::blaze::nn::StaticShape::new(&[#(#dims),*]))
    }

    /// The per-sample shape as a `&str` expression, for the summary.
    pub fn shape_text(&self, symbols: &[String]) -> TokenStream {
        match &self.opaque {
            Some(e) => quote!(&*::std::format!("{:?}", #e)),
            None => {
                let text = show(&self.shape, symbols);
                quote!(#text)
            }
        }
    }

    /// Whether two values have one shape (a compile-time one by its
    /// expression).
    pub fn same_shape(&self, other: &Val) -> bool {
        self.shape == other.shape
            && self.opaque.as_ref().map(ToString::to_string) == other.opaque.as_ref().map(ToString::to_string)
    }
}

/// A value's rank with the batch dim, as its tensor type writes it: a
/// number, or after a field the macro cannot see, a const expression.
#[derive(Debug, Clone)]
pub enum Rank {
    Known(usize),
    /// `(shape).rank + 1` of this `StaticShape` expression.
    Const(TokenStream),
}

impl Rank {
    /// The rank of a softmax's value, which a forward body computes (a
    /// compile-time shape comes from a sequential model's fields, and a
    /// softmax field is a layer call there, whose rank is never asked).
    pub fn known(&self) -> usize {
        match self {
            Rank::Known(r) => *r,
            Rank::Const(_) => unreachable!("a softmax op belongs to a forward body, whose dims are known"),
        }
    }
}

impl PartialEq for Rank {
    fn eq(&self, other: &Rank) -> bool {
        match (self, other) {
            (Rank::Known(a), Rank::Known(b)) => a == b,
            (Rank::Const(a), Rank::Const(b)) => a.to_string() == b.to_string(),
            (Rank::Known(_), Rank::Const(_)) | (Rank::Const(_), Rank::Known(_)) => false,
        }
    }
}

impl ToTokens for Rank {
    fn to_tokens(&self, out: &mut TokenStream) {
        out.extend(match self {
            Rank::Known(r) => quote!(#r),
            Rank::Const(e) => quote!({ (#e).rank + 1 }),
        });
    }
}

/// A lowered forward pass.
#[derive(Debug)]
pub struct Lowered {
    pub vals: Vec<Val>,
    pub nodes: Vec<Node>,
    pub inputs: Vec<usize>,
    pub output: usize,
    pub symbols: Vec<String>,
    /// Const assertions (nested model calls).
    pub asserts: Vec<TokenStream>,
    /// For each field, the value its first call makes (for the summary).
    pub first_output: Vec<Option<usize>>,
}

impl Lowered {
    /// How many times each value is read: by the ops, and the output once
    /// more (the caller reads it).
    pub fn uses(&self) -> Vec<usize> {
        let mut uses = vec![0usize; self.vals.len()];
        for node in &self.nodes {
            for &a in &node.args {
                uses[a] += 1;
            }
        }
        uses[self.output] += 1;
        uses
    }
}
