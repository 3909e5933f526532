//! The integration tests of the `latlab` binary, one test binary: a module per subject,
//! the helpers they share in `common`. Tests of different modules run concurrently, so
//! every test that measures, or creates or checks machine-wide state (IPC objects,
//! processes, tracefs), holds `common::serial()` for the whole of it.

mod common;

mod attach;
mod attach_fuzz;
mod browser;
mod c_abi;
mod check;
mod checkpoint;
mod cli;
mod compare_gate;
mod consumer_ci;
mod consumer_prometheus;
mod conventions;
mod docs;
mod explain_truth;
mod explain_view;
mod farm_page;
mod farm_views;
mod held;
mod import_report;
mod listen;
mod pg;
mod pg_dashboard;
mod pg_service;
mod pg_stall;
mod pg_store;
mod pg_views;
mod probe_ipc;
mod probe_noise_signal;
mod probe_sched;
mod probes;
mod published_refs;
mod real_tools;
mod rt_lane;
mod run_names;
mod runs_store;
mod schema;
mod spike_rate_truth;
mod telemetry_truth;
mod trust_accounting;
mod trust_figures;
mod trust_input;
mod trust_runs;
mod trust_unprivileged;
mod width;
