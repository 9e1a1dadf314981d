//! Where the code that depends on the backend alone is compiled: each crate
//! above the core keeps such functions in a table of its own, and a backend
//! crate compiles those tables once, for its type ([`Precompiled`]).

use std::any::Any;

use crate::backend::Backend;

/// A table of functions, type-erased: what [`Precompiled::tables`] lists.
pub type AnyTable = dyn Any + Send + Sync;

/// Where the code that depends on the backend and on nothing the user
/// writes is compiled: `fit`'s loop, saving and loading, summaries, the
/// optimizers' update of one parameter, the op table's gradients.
///
/// Why: a release build shares no generic code between crates, so what a
/// user's crate calls generically is compiled and optimised there, again
/// after every edit. Each crate of the runtime therefore keeps those
/// functions in a table (`blaze_nn::Table`, `blaze_train::Table`, ...,
/// and the core's `AdjointTable` and `ModuleTable`) whose entries reach a model only as a
/// trait object (`module::ModuleTensors`) or as plain storages, and calls
/// them through [`precompiled`]. A backend crate lists its tables in a
/// `static`, which compiles them once, there:
///
/// ```ignore
/// static TABLES: [&AnyTable; 2] = [&AdjointTable::<MyBackend>::new(), &blaze_nn::Table::<MyBackend>::new()];
/// impl Precompiled for MyBackend {
///     fn tables() -> &'static [&'static AnyTable] {
///         &TABLES
///     }
/// }
/// ```
///
/// A table a backend does not list is compiled where it is used, as are
/// all of them for backends that keep the default (`impl Precompiled for
/// MyBackend {}`) and for generic backends (`Autodiff<B>`,
/// `HostFallback<D, H>`, and with it wgpu), which no crate can compile
/// ahead for every type they take. Only the build time differs.
pub trait Precompiled: Sized + 'static {
    /// The tables this backend's crate compiled for it.
    fn tables() -> &'static [&'static AnyTable] {
        &[]
    }
}

/// Table `T` of backend `B`: the one `B`'s crate compiled, or else
/// `fallback` (the table compiled here, in the caller's crate).
pub fn precompiled<B: Backend, T: Any>(fallback: &'static T) -> &'static T {
    B::tables().iter().find_map(|t| t.downcast_ref::<T>()).unwrap_or(fallback)
}


/// Declares a crate's table of functions compiled once per backend: the
/// struct, with each field's function given as it is declared, `new`
/// (a `const fn`, for a backend crate's `static`), and `of`, which returns
/// backend `B`'s table wherever it was compiled ([`precompiled`]).
///
/// ```ignore
/// blaze_runtime::precompiled_table! {
///     /// What this crate compiles once per backend.
///     pub struct Table<B> {
///         /// Saves a module.
///         save: fn(&dyn ModuleTensors<B>, &Path) -> Result<(), Error> = save_module::<B>,
///     }
/// }
/// ```
#[macro_export]
macro_rules! precompiled_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$b:ident> {
            $($(#[$field_meta:meta])* $field:ident: $ty:ty = $init:expr,)*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name<$b: $crate::Backend> {
            $($(#[$field_meta])* pub(crate) $field: $ty,)*
        }

        impl<$b: $crate::Backend> $name<$b> {
            /// The table for this backend, to keep in a backend crate's
            /// `static` ([`Precompiled`]($crate::Precompiled)).
            pub const fn new() -> Self {
                $name { $($field: $init,)* }
            }

            /// [`Self::new`] as a constant, which [`Self::of`] borrows for
            /// `'static`.
            const TABLE: Self = Self::new();

            /// This backend's table: the one its crate compiled, or else
            /// the one compiled in the caller's crate.
            #[allow(dead_code)]
            pub(crate) fn of() -> &'static Self {
                $crate::precompiled::<$b, Self>(&Self::TABLE)
            }
        }

        impl<$b: $crate::Backend> ::core::default::Default for $name<$b> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<$b: $crate::Backend> ::core::fmt::Debug for $name<$b> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                write!(f, "{}<{}>", stringify!($name), <$b as $crate::Primitives>::name())
            }
        }
    };
}
