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
/// and the core's `AdjointTable` and `ModuleTable`) whose entries reach a
/// model only as a trait object (`module::ModuleTensors`) or as plain
/// storages. A backend crate compiles all of them once, for its type, with
/// `blaze_train::precompile!(MyBackend)`, which sets [`Self::AHEAD`] and
/// lists the tables in a `static`; a user's crate then calls through their
/// pointers and compiles none of them. (This replaces the one table,
/// `Compiled<B>`, that a backend once kept in a `static` and returned
/// from `Precompiled::compiled`.)
///
/// Backends that keep the default (`impl Precompiled for MyBackend {}`)
/// work the same, each table compiled where it is used; so do generic
/// backends (`Autodiff<B>`, `HostFallback<D, H>`, and with it wgpu), which
/// no crate can compile ahead for every type they take. Only the build
/// time differs.
pub trait Precompiled: Sized + 'static {
    /// True when [`Self::tables`] lists every table of the runtime. A
    /// constant, so that a build for this backend never compiles the
    /// tables' functions again where they are called.
    const AHEAD: bool = false;

    /// The tables this backend's crate compiled for it.
    fn tables() -> &'static [&'static AnyTable] {
        &[]
    }
}

/// Table `T` of backend `B`, from those its crate compiled ([`Precompiled::AHEAD`]).
///
/// Panics when `B`'s crate does not list it: its `precompile!` is from
/// another release of the runtime's crates.
pub fn precompiled<B: Backend, T: Any>() -> &'static T {
    B::tables().iter().find_map(|t| t.downcast_ref::<T>()).unwrap_or_else(|| {
        panic!("{}: the backend's crate compiled no {} (see Precompiled)", B::name(), std::any::type_name::<T>())
    })
}

/// Declares a crate's table of functions compiled once per backend: the
/// struct, with each field's function given as it is declared, `new`
/// (a `const fn`, for a backend crate's `static`), and `of`, which returns
/// backend `B`'s table: the one its crate compiled ([`precompiled`]) when
/// it compiled them ahead, else one compiled in the caller's crate.
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
            /// the one compiled in the caller's crate. `AHEAD` is a
            /// constant, so a build for a backend that compiled its tables
            /// does not compile this one's functions.
            pub(crate) fn of() -> &'static Self {
                if <$b as $crate::Precompiled>::AHEAD {
                    $crate::precompiled::<$b, Self>()
                } else {
                    &Self::TABLE
                }
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
