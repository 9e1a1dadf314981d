//! Reading datasets from disk.

pub mod mnist;
