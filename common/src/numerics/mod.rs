//! Layer 2, numerics: the f64 reference, the verdict and its limits, and cuBLAS (the baselines,
//! and DGEMM for the reference). Depends on data.

pub mod cublas;
pub mod integer_rounding;
pub mod reference;
pub mod verify;
