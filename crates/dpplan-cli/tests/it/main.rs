//! The command line's integration tests, one binary (`cargo test -p
//! dpplan-cli --test it`; one file: `--test it run_cli::`): the real
//! `dpplan`, real files, real pipes. `support` is what the files share;
//! `corpus` and `output_formats` are the repository's golden corpus and
//! output snapshots (tests/corpus/, tests/snapshots/ at the root);
//! `architecture` holds ARCHITECTURE.md's crate table against the code.

mod browser;
mod support;

#[path = "../../../../tests/architecture.rs"]
mod architecture;
#[path = "../../../../tests/corpus.rs"]
mod corpus;
#[path = "../../../../tests/output_formats.rs"]
mod output_formats;

mod account_cli;
mod audit_cli;
mod budget_cli;
mod cumulative_cli;
mod diff_cli;
mod distinct_cli;
mod dp_event_cli;
mod factorization_cli;
mod frozen_cli;
mod large_plan_cli;
mod ledger_faults;
mod lint_cli;
mod policy_cli;
mod quantile_cli;
mod release_after_cli;
mod report_browser;
mod report_cli;
mod ride_sharing;
mod run_cli;
mod sampled_cli;
mod schedule_cli;
mod selection_cli;
mod signoff_cli;
mod spark_cli;
mod summary_cli;
mod top_cli;
mod users_per_cell_cron;
mod window_cli;
