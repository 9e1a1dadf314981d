//! Parsing and the rules of `#[derive(Module)]`.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{GenericParam, Ident, Type};

use crate::model::PLAIN_TYPES;
use crate::model::errors::Errors;

/// A struct that derives `Module`.
pub struct Derive {
    pub ident: Ident,
    pub vis: syn::Visibility,
    pub generics: syn::Generics,
    /// The backend type parameter.
    pub backend: Ident,
    pub fields: Vec<Field>,
    pub tuple: bool,
}

/// A field that holds parameters.
pub struct Field {
    /// The member (`name` or `0`).
    pub member: syn::Member,
    /// The name parameters get under it.
    pub name: String,
    pub ty: Type,
}

/// Non-plain types that never hold parameters.
const NOT_MODULES: &[&str] = &["Rng", "Duration", "Instant", "PathBuf"];

/// Why a struct was refused, and what of it still derives: the fields that
/// parsed, when the generics are sound and one field is left. Emitting the
/// impl for those keeps uses of the struct free of follow-on errors.
pub struct Refused {
    pub error: syn::Error,
    pub partial: Option<Box<Derive>>,
}

impl From<syn::Error> for Refused {
    fn from(error: syn::Error) -> Self {
        Refused { error, partial: None }
    }
}

pub fn parse(input: TokenStream) -> Result<Derive, Refused> {
    let input: syn::DeriveInput = syn::parse2(input)?;
    let data = match input.data {
        syn::Data::Struct(s) => s,
        syn::Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span(),
                "derive(Module) needs a struct; an enum's parameters would change with its variant",
            )
            .into());
        }
        syn::Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span(),
                "derive(Module) needs a struct; a union's fields cannot be visited safely",
            )
            .into());
        }
    };
    let mut errors = Errors::default();
    let mut backend = None;
    for p in &input.generics.params {
        match p {
            GenericParam::Type(t) if backend.is_none() => backend = Some(t.ident.clone()),
            GenericParam::Type(t) => errors.push(syn::Error::new(
                t.ident.span(),
                format!(
                    "derive(Module) handles one type parameter, the backend (`{}`); `{}` is another",
                    backend.as_ref().map(ToString::to_string).unwrap_or_default(),
                    t.ident
                ),
            )),
            GenericParam::Lifetime(l) => errors.push(syn::Error::new(
                l.span(),
                "derive(Module) does not handle lifetime parameters: a module owns its parameters",
            )),
            GenericParam::Const(_) => {}
        }
    }
    let backend = backend.ok_or_else(|| {
        syn::Error::new(
            input.ident.span(),
            "derive(Module) needs the backend as a type parameter, e.g. `struct Net<B: Backend>`",
        )
    });
    let backend = match backend {
        Ok(b) => Some(b),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let generics_sound = errors.is_empty() && backend.is_some();
    let tuple = matches!(data.fields, syn::Fields::Unnamed(_));
    let mut fields = Vec::new();
    for (i, f) in data.fields.iter().enumerate() {
        match skipped(f) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => {
                errors.push(e);
                continue;
            }
        }
        let (member, name) = match &f.ident {
            Some(id) => (syn::Member::Named(id.clone()), id.to_string()),
            None => (syn::Member::Unnamed(syn::Index::from(i)), i.to_string()),
        };
        if let Some(what) = holds_no_parameters(&f.ty) {
            errors.push(syn::Error::new_spanned(
                &f.ty,
                format!("field `{name}: {what}` holds no parameters; mark it `#[module(skip)]`"),
            ));
            continue;
        }
        fields.push(Field { member, name, ty: f.ty.clone() });
    }
    let partial_ok = generics_sound && !fields.is_empty();
    let derive =
        |backend| Derive { ident: input.ident, vis: input.vis, generics: input.generics, backend, fields, tuple };
    match (errors.finish(), backend) {
        (Ok(()), Some(backend)) => Ok(derive(backend)),
        (Err(error), Some(backend)) if partial_ok => Err(Refused { error, partial: Some(Box::new(derive(backend))) }),
        (Err(error), _) => Err(error.into()),
        (Ok(()), None) => Err(syn::Error::new(Span::call_site(), "derive(Module) found no backend parameter").into()),
    }
}

/// Whether the field carries `#[module(skip)]`.
fn skipped(f: &syn::Field) -> syn::Result<bool> {
    let mut skip = false;
    for a in f.attrs.iter().filter(|a| a.path().is_ident("module")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("skip") {
                if !m.input.is_empty() && !m.input.peek(syn::Token![,]) {
                    return Err(m.error("write `#[module(skip)]`, without a value"));
                }
                skip = true;
                Ok(())
            } else {
                let key = m.path.to_token_stream().to_string();
                let hint = if crate::model::closest(&key, ["skip"]).is_some() { "; did you mean `skip`?" } else { "" };
                Err(m.error(format!("unknown option `{key}`: `#[module]` takes `skip`{hint}")))
            }
        })?;
    }
    Ok(skip)
}

/// The type, when it can never hold parameters (a number, a string, ...).
fn holds_no_parameters(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => {
            let name = p.path.segments.last()?.ident.to_string();
            (PLAIN_TYPES.contains(&name.as_str()) || NOT_MODULES.contains(&name.as_str()))
                .then(|| ty.to_token_stream().to_string().replace(' ', ""))
        }
        Type::Reference(_) | Type::Ptr(_) | Type::FnPtr(_) => Some(ty.to_token_stream().to_string()),
        Type::Tuple(t) if t.elems.is_empty() => Some("()".into()),
        _ => None,
    }
}
