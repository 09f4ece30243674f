//! The runtime's integration tests, one binary (cargo's `tests/it/`
//! pattern): each former test file is a module, so the runtime and its
//! dependencies are linked once, not once per file.

mod columnar;
mod e2e;
mod parallel;
mod quantile;
mod rows;
mod selection;
mod top;
