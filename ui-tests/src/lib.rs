//! Holds no code: the cases live in `tensor/`, `pass/` (and one folder per
//! macro), and `tests/ui.rs` runs them with trybuild. Regenerate `.stderr`
//! files with `TRYBUILD=overwrite cargo test -p blaze-ui-tests` and read the
//! diff before committing.
