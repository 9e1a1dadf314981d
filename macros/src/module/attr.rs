//! Parsing and the rules of `#[derive(Module)]`. Each field is read by a
//! darling receiver (`FieldReceiver`) and its `#[module(...)]` attributes
//! by another (`ModuleArgs`); the struct's shape and generics are checked
//! on syn's tree, so that those errors point at `enum`, `union` or the
//! parameter.

use darling::{Error, FromField, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{GenericParam, Ident, Meta, Type};

use crate::meta::{self, Given, Unclaimed};
use crate::model::PLAIN_TYPES;
use blaze_kernel_dsl::errors::Errors;

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
        // A field whose `#[module]` is wrong is left out, and the others kept.
        let f = match FieldReceiver::from_field(f) {
            Ok(f) if f.attrs.skip => continue,
            Ok(f) => f,
            Err(e) => {
                errors.push(e.into());
                continue;
            }
        };
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
        fields.push(Field { member, name, ty: f.ty });
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

/// A field of the struct, with what its `#[module(...)]` attributes say.
#[derive(FromField)]
#[darling(forward_attrs(module))]
struct FieldReceiver {
    ident: Option<Ident>,
    ty: Type,
    #[darling(with = ModuleOptions::from_attrs)]
    attrs: ModuleOptions,
}

/// One `#[module(...)]` attribute.
#[derive(FromMeta)]
struct ModuleArgs {
    /// `multiple`, so that a second `skip` is worded by [`meta::once`].
    #[darling(multiple)]
    skip: Vec<Given<Skip>>,
    #[darling(flatten)]
    unclaimed: Unclaimed,
}

/// What a field's `#[module(...)]` attributes say, all of them together.
#[derive(Default)]
struct ModuleOptions {
    /// The field holds no parameters: it is not visited.
    skip: bool,
}

impl ModuleOptions {
    const EXAMPLE: &str = "#[module(skip)]";
    const SYNTAX: meta::Syntax = meta::Syntax { item: "an option name", example: Self::EXAMPLE };

    /// Reads every `#[module]` attribute of a field (darling forwards
    /// them), reporting all their mistakes.
    fn from_attrs(attrs: Vec<syn::Attribute>) -> darling::Result<Self> {
        let mut errors = Error::accumulator();
        let mut options = ModuleOptions::default();
        for attr in &attrs {
            let Meta::List(list) = &attr.meta else {
                let message = format!("expected an option in parentheses: {}", Self::EXAMPLE);
                errors.push(Error::custom(message).with_span(&attr.meta));
                continue;
            };
            let Some(items) = meta::items(list.tokens.clone(), &Self::SYNTAX, &mut errors) else { continue };
            let Some(args) = errors.handle(ModuleArgs::from_list(&items)) else { continue };
            options.skip |= meta::once(args.skip, &mut errors).is_some();
            args.unclaimed.report(&mut errors, |key| {
                let hint = if blaze_kernel_dsl::errors::closest(key, ["skip"]).is_some() {
                    "; did you mean `skip`?"
                } else {
                    ""
                };
                format!("unknown option `{key}`: `#[module]` takes `skip`{hint}")
            });
        }
        errors.finish_with(options)
    }
}

/// `skip`, a word.
struct Skip;

impl FromMeta for Skip {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let message = format!("write `{}`, without a value", ModuleOptions::EXAMPLE);
        match item {
            Meta::Path(_) => Ok(Skip),
            Meta::NameValue(nv) => Err(Error::custom(message).with_span(&nv.value)),
            Meta::List(_) => Err(Error::custom(message).with_span(item)),
        }
    }
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

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    use super::*;

    /// Whether the field written as `field` is skipped, or every error.
    fn skip(field: TokenStream) -> Result<bool, Vec<String>> {
        let s: syn::ItemStruct = syn::parse_quote!(struct S { #field });
        let f = s.fields.iter().next().expect("one field");
        FieldReceiver::from_field(f)
            .map(|f| f.attrs.skip)
            .map_err(|e| syn::Error::from(e).into_iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn module_options_parse() {
        assert_eq!(skip(quote!(#[module(skip)] a: u32)), Ok(true));
        assert_eq!(skip(quote!(a: u32)), Ok(false));
        assert_eq!(skip(quote!(#[doc = "x"] #[module()] a: u32)), Ok(false));
        assert_eq!(skip(quote!(#[module(skip)] #[module(skip)] a: u32)), Ok(true));
    }

    #[test]
    fn each_mistake_in_module_options_has_its_message() {
        let unknown = |k: &str, hint: &str| format!("unknown option `{k}`: `#[module]` takes `skip`{hint}");
        let cases: Vec<(TokenStream, Vec<String>)> = vec![
            (quote!(#[module(skp)] a: u32), vec![unknown("skp", "; did you mean `skip`?")]),
            (quote!(#[module(skip = 1)] a: u32), vec!["write `#[module(skip)]`, without a value".into()]),
            (quote!(#[module(skip(x))] a: u32), vec!["write `#[module(skip)]`, without a value".into()]),
            (quote!(#[module(skip, skip)] a: u32), vec!["`skip` is given twice".into()]),
            (quote!(#[module] a: u32), vec!["expected an option in parentheses: #[module(skip)]".into()]),
            (quote!(#[module = 1] a: u32), vec!["expected an option in parentheses: #[module(skip)]".into()]),
            (quote!(#[module(1)] a: u32), vec!["expected an option name, e.g. #[module(skip)]".into()]),
            // Every attribute's mistakes, together.
            (
                quote!(#[module(skip, colour)] #[module(size = 2)] a: u32),
                vec![unknown("colour", ""), unknown("size", "")],
            ),
        ];
        for (field, expected) in cases {
            assert_eq!(skip(field.clone()), Err(expected), "{field}");
        }
    }
}
