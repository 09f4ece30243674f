//! # dpplan-review — what a reviewer signs off, and what a change does
//!
//! Plain data built from the checker's [`dpplan_check::CheckedPlan`] (never
//! a second derivation), and one renderer per format, each a pure function
//! to `String`; the CLI prints. Modules:
//!
//! * [`report`] — `dpplan report`: the contract in words, per-query
//!   sensitivity, noise, schedule and accuracy, figures, negative controls.
//! * [`averaging`] — the std of an average of r fresh releases against its
//!   ε (read by `dpplan account` and the report).
//! * [`diff`] — `dpplan diff`: two checked plans compared query by query,
//!   and the guarantee before and after under the same accountant.
//! * [`dp_event`] — `dpplan export`: the accounted schedule as a
//!   dp_accounting `DpEvent` tree.
#![forbid(unsafe_code)]

pub mod averaging;
pub mod diff;
pub mod dp_event;
pub mod report;
