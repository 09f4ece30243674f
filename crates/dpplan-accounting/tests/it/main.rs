//! The accountants' integration tests, one binary (`cargo test -p
//! dpplan-accounting --test it`; one file: `--test it kov_long::`).
//! `common` runs the Python (mpmath) references, which stay beside this
//! directory: `tests/<name>/reference.py` (kov_long, laplace_leaf,
//! never_below, rr_leaf); the unit tests of `src/accountants/pld.rs` share
//! `common` too.

mod common;

mod accounting;
mod conformance;
mod exponential;
mod kov_long;
mod lone_laplace;
mod never_below;
mod pld_binomial;
mod pld_dgauss;
mod pld_laplace_shapes;
mod pld_long_laplace;
mod pld_small_delta;
mod sampled;
mod selection;
mod tradeoff;
