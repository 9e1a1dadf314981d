//! The model IR: what `attr.rs` parses and `check.rs` validates. Every node
//! keeps the span of the tokens it came from, so errors point there.

use proc_macro2::{Span, TokenStream};
use syn::Ident;

/// A parsed `#[model]` struct.
pub struct Model {
    pub vis: syn::Visibility,
    pub ident: Ident,
    /// Attributes on the struct other than `#[model]` (docs, derives).
    pub attrs: Vec<syn::Attribute>,
    /// Per-sample input shape, each dim with its span.
    pub input: Vec<(usize, Span)>,
    pub fields: Vec<Field>,
    /// No `input` on the struct: the model's passes come from a
    /// `#[model(input = ..)] impl` with a `forward` body (`crate::graph`).
    pub graph: bool,
}

/// One field: a layer.
pub struct Field {
    pub ident: Ident,
    pub vis: syn::Visibility,
    pub attrs: Vec<syn::Attribute>,
    /// The type as the user wrote it.
    pub ty: syn::Type,
    pub kind: LayerKind,
    /// `#[layer(key = value, ...)]` options.
    pub options: Vec<LayerOption>,
    /// `[Layer; N]` (graph models only): `N` layers of this kind.
    pub array: Option<usize>,
}

/// The layer types the macro knows, with their literal const generics, and
/// any other type (a nested `#[model]` or a user layer), checked by const
/// assertions instead.
#[derive(Clone, Debug)]
pub enum LayerKind {
    Linear {
        i: usize,
        o: usize,
    },
    Conv2d {
        cin: usize,
        cout: usize,
        k: usize,
    },
    MaxPool2d {
        k: usize,
    },
    AvgPool2d {
        k: usize,
    },
    GlobalAvgPool,
    Flatten,
    Relu,
    LeakyRelu,
    Gelu,
    Sigmoid,
    Tanh,
    Dropout,
    /// `Map<K>`: a `kernel!` kernel applied elementwise; `kernel` is `K`.
    Map {
        kernel: TokenStream,
        name: String,
    },
    BatchNorm2d {
        c: usize,
    },
    LayerNorm {
        n: usize,
    },
    Embedding {
        v: usize,
        d: usize,
    },
    /// A type the macro cannot see: its path (without the last segment's
    /// generics) and its own generic arguments; the backend goes first.
    Opaque {
        path: TokenStream,
        extra: TokenStream,
        name: String,
    },
}

impl LayerKind {
    /// The type's name as written (`Conv2d<1, 6, 5>`), for messages.
    pub fn display(&self) -> String {
        match self {
            LayerKind::Linear { i, o } => format!("Linear<{i}, {o}>"),
            LayerKind::Conv2d { cin, cout, k } => format!("Conv2d<{cin}, {cout}, {k}>"),
            LayerKind::MaxPool2d { k } => format!("MaxPool2d<{k}>"),
            LayerKind::AvgPool2d { k } => format!("AvgPool2d<{k}>"),
            LayerKind::GlobalAvgPool => "GlobalAvgPool".into(),
            LayerKind::Flatten => "Flatten".into(),
            LayerKind::Relu => "Relu".into(),
            LayerKind::LeakyRelu => "LeakyRelu".into(),
            LayerKind::Gelu => "Gelu".into(),
            LayerKind::Sigmoid => "Sigmoid".into(),
            LayerKind::Tanh => "Tanh".into(),
            LayerKind::Map { name, .. } => format!("Map<{name}>"),
            LayerKind::Dropout => "Dropout".into(),
            LayerKind::BatchNorm2d { c } => format!("BatchNorm2d<{c}>"),
            LayerKind::LayerNorm { n } => format!("LayerNorm<{n}>"),
            LayerKind::Embedding { v, d } => format!("Embedding<{v}, {d}>"),
            LayerKind::Opaque { name, .. } => name.clone(),
        }
    }

    /// For an opaque type, the type with `backend` as its first generic
    /// argument; for a built-in, an empty stream (callers ask only for
    /// opaque kinds).
    pub fn opaque_ty(&self, backend: &TokenStream) -> TokenStream {
        match self {
            LayerKind::Opaque { path, extra, .. } => quote::quote!(#path<#backend #extra>),
            _ => TokenStream::new(),
        }
    }

    /// Whether the layer holds tensors (parameters, statistics, or a
    /// nested model's): its type names the backend and its gradients are
    /// not `()`.
    pub fn has_params(&self) -> bool {
        matches!(
            self,
            LayerKind::Linear { .. }
                | LayerKind::Conv2d { .. }
                | LayerKind::BatchNorm2d { .. }
                | LayerKind::LayerNorm { .. }
                | LayerKind::Embedding { .. }
                | LayerKind::Opaque { .. }
        )
    }

    /// Whether the layer maps each element on its own (activations,
    /// dropout, `Map`): its output has its input's shape, whatever it is.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            LayerKind::Relu
                | LayerKind::LeakyRelu
                | LayerKind::Gelu
                | LayerKind::Sigmoid
                | LayerKind::Tanh
                | LayerKind::Map { .. }
                | LayerKind::Dropout
        )
    }

    /// The `#[layer]` keys this kind accepts.
    pub fn keys(&self) -> &'static [&'static str] {
        match self {
            LayerKind::Linear { .. } => &["bias"],
            LayerKind::Conv2d { .. } => &["stride", "padding", "dilation", "groups", "bias"],
            LayerKind::MaxPool2d { .. } | LayerKind::AvgPool2d { .. } => &["stride", "padding"],
            LayerKind::LeakyRelu => &["negative_slope"],
            LayerKind::Dropout => &["p"],
            LayerKind::BatchNorm2d { .. } => &["eps", "momentum"],
            LayerKind::LayerNorm { .. } => &["eps"],
            LayerKind::Opaque { .. } => &["output"],
            _ => &[],
        }
    }
}

/// One `key = value` of `#[layer(...)]`.
pub struct LayerOption {
    pub key: Ident,
    pub value: OptionValue,
    /// Span of the value, for errors about it.
    pub span: Span,
}

/// A literal option value.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    /// A per-sample shape, `[T, 10]` (a nested model's output in a forward body).
    Shape(Vec<syn::Expr>),
}
