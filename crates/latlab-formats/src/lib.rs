//! latlab's seams with other tools, above the model: [importers](import) of their
//! result files, whose Runs are sealed like every other, and [exporters](export) of
//! Runs in the formats they read, each checked in the test suite by its real consumer.
//! Only the binary uses them, so an edit here rebuilds nothing below.

pub mod export;
pub mod import;
