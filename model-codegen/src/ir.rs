//! The model IR: what `blaze-macros` parses (`model/attr.rs`) and checks (`model/check.rs`). Every node
//! keeps the span of the tokens it came from, so errors point there.

use blaze_spec::Layer;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

/// A parsed `#[model]` struct.
#[derive(Debug)]
pub struct Model {
    pub vis: syn::Visibility,
    pub ident: Ident,
    /// Attributes on the struct other than `#[model]` (docs, derives).
    pub attrs: Vec<syn::Attribute>,
    /// Per-sample input shape, each dim with its span.
    pub input: Vec<(usize, Span)>,
    pub fields: Vec<Field>,
    /// No `input` on the struct: the model's passes come from a
    /// `#[model(input = ..)] impl` with a `forward` body (`blaze-macros`' `graph/`).
    pub graph: bool,
    /// False under `#[model(input = [..], fuse = false)]`: a sequential
    /// model runs each field on its own but for an activation in its
    /// layer's bias pass.
    pub fuse: bool,
    /// `precision = bf16` on a sequential model: the precision its passes
    /// set for their products (a graph model's is on its impl).
    pub precision: Option<Precision>,
}

/// One field: a layer.
#[derive(Debug)]
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
    /// `#[load(..)]`: where its tensors come from in a checkpoint that
    /// names them its own way.
    pub load: Vec<LoadEntry>,
}

/// One entry of `#[load(..)]`.
#[derive(Clone, Debug)]
pub enum LoadEntry {
    /// `"transformer.h.{i}"`: the field's tensors under this name (`{i}`
    /// an array field's index) instead of the field's.
    Prefix(String, Span),
    /// `in_proj_weight = transposed("attn.c_attn.weight")`: one tensor of
    /// the field from a name of its own, stored transposed or not.
    Param { name: String, from: String, transposed: bool, span: Span },
}

/// A field's layer: a built-in one, as the spec (`blaze_spec`) describes
/// it, with its literal sizes; or any other type (a nested `#[model]` or
/// a user layer), checked by const assertions instead.
#[derive(Clone, Debug)]
pub enum LayerKind {
    Builtin {
        layer: Layer,
        /// Its const-generic sizes, as many as `layer.generics()` names.
        sizes: Vec<usize>,
        /// `Map<K>`'s kernel type `K`, and that type as written.
        kernel: Option<(TokenStream, String)>,
    },
    /// A type the macro cannot see: its path (without the last segment's
    /// generics) and its own generic arguments; the backend goes first.
    Opaque { path: TokenStream, extra: TokenStream, name: String },
}

impl LayerKind {
    /// The type's name as written (`Conv2d<1, 6, 5>`), for messages.
    pub fn display(&self) -> String {
        match self {
            LayerKind::Builtin { layer, sizes, kernel } => {
                layer.display(sizes, kernel.as_ref().map_or("", |(_, name)| name))
            }
            LayerKind::Opaque { name, .. } => name.clone(),
        }
    }

    /// The built-in layer and its sizes, if it is one.
    pub fn builtin(&self) -> Option<(Layer, &[usize])> {
        match self {
            LayerKind::Builtin { layer, sizes, .. } => Some((*layer, sizes)),
            LayerKind::Opaque { .. } => None,
        }
    }

    /// For an opaque type, the type with `backend` as its first generic
    /// argument; for a built-in, an empty stream (callers ask only for
    /// opaque kinds).
    pub fn opaque_ty(&self, backend: &TokenStream) -> TokenStream {
        match self {
            LayerKind::Opaque { path, extra, .. } => quote::quote!(#path<#backend #extra>),
            LayerKind::Builtin { .. } => TokenStream::new(),
        }
    }

    /// Whether the layer holds tensors (parameters, statistics, or a
    /// nested model's): its type names the backend and its gradients are
    /// not `()`.
    pub fn has_params(&self) -> bool {
        match self {
            LayerKind::Builtin { layer, .. } => layer.holds_tensors(),
            LayerKind::Opaque { .. } => true,
        }
    }

    /// The `#[layer]` keys this kind accepts.
    pub fn keys(&self) -> Vec<&'static str> {
        match self {
            LayerKind::Builtin { layer, .. } => layer.keys().iter().map(|k| k.name()).collect(),
            LayerKind::Opaque { .. } => vec!["output"],
        }
    }
}

/// One `key = value` of `#[layer(...)]`.
#[derive(Debug)]
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
    /// A string (`mode = "bilinear"`).
    Str(String),
    /// A per-sample shape, `[T, 10]` (a nested model's output in a forward body).
    Shape(Vec<syn::Expr>),
}

/// Resolved options of one layer: the spec's, with defaults filled in,
/// and a nested model's stated output (forward bodies only).
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub spec: blaze_spec::Options,
    pub output: Option<Vec<syn::Expr>>,
}

impl Options {
    /// The spec's options as a const expression.
    pub fn spec_tokens(&self) -> TokenStream {
        let blaze_spec::Options {
            stride,
            padding,
            dilation,
            groups,
            bias,
            p,
            negative_slope,
            eps,
            momentum,
            alpha,
            beta,
            threshold,
            dim,
            elementwise_affine,
            scale_factor,
            mode,
            output_padding,
            causal,
            num_layers,
            bidirectional,
            align_corners,
            ceil_mode,
        } = self.spec;
        let mode = syn::Ident::new(&format!("{mode:?}"), proc_macro2::Span::call_site());
        let stride = match stride {
            Some(s) => quote!(::core::option::Option::Some(#s)),
            None => quote!(::core::option::Option::None),
        };
        quote!(::blaze::spec::Options {
            stride: #stride, padding: #padding, dilation: #dilation, groups: #groups, bias: #bias,
            p: #p, negative_slope: #negative_slope, eps: #eps, momentum: #momentum,
            alpha: #alpha, beta: #beta, threshold: #threshold, dim: #dim, elementwise_affine: #elementwise_affine,
            scale_factor: #scale_factor, mode: ::blaze::spec::Interpolation::#mode, output_padding: #output_padding,
            causal: #causal, num_layers: #num_layers, bidirectional: #bidirectional,
            align_corners: #align_corners, ceil_mode: #ceil_mode,
        })
    }
}

/// `layer` as an expression of the generated code.
pub fn layer_tokens(layer: blaze_spec::Layer) -> TokenStream {
    match layer {
        blaze_spec::Layer::Unary(op) => {
            let i = blaze_spec::ops::UNARY.iter().position(|u| u == op).expect("an op of the table");
            quote!(::blaze::spec::Layer::Unary(&::blaze::spec::ops::UNARY[#i]))
        }
        layer => {
            let name = format_ident!("{}", layer.name());
            quote!(::blaze::spec::Layer::#name)
        }
    }
}

/// Trainable scalars of a built-in layer (`None` for one the macro cannot see).
pub fn count_params(kind: &LayerKind, o: &Options) -> Option<usize> {
    kind.builtin().map(|(layer, sizes)| layer.num_params(sizes, &o.spec))
}

/// `precision = bf16`, `f16` or `f32`: the variant of `blaze::Precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Precision(pub &'static str);

impl Precision {
    /// The names users write, and the variants they stand for.
    pub const NAMES: [(&str, &str); 3] = [("f32", "F32"), ("bf16", "Bf16"), ("f16", "F16")];
    pub const EXPECTED: &str = "`precision` is `bf16`, `f16` or `f32`";

    /// The name users write (`bf16`).
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, v)| *v == self.0).map_or("f32", |(n, _)| n)
    }

    /// Whether products round: not under `f32`.
    pub fn rounds(self) -> bool {
        self.0 != "F32"
    }
}
