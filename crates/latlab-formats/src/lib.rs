//! latlab's seams with other tools, above the model: [importers](import) of their
//! result files, whose Runs are sealed like every other, and [exporters](export) of
//! Runs in the formats they read, each checked in the test suite by its real consumer,
//! and the [Prometheus text](metrics) that both the export and `latlab run --listen`
//! write.
//! Nothing below them uses them, so an edit here rebuilds nothing below.

pub mod export;
pub mod import;
pub mod metrics;
