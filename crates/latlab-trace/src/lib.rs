//! Decoding of ftrace's binary ring buffer, as read from tracefs.
//!
//! The text `trace` file rounds timestamps to microseconds, hashes pointers and costs
//! the kernel a `printf` per event; `per_cpu/cpuN/trace_pipe_raw` hands out the ring
//! buffer's own pages instead. Reading them needs three descriptions the kernel
//! publishes beside them, each decoded here:
//!
//! - [`EventFormat`]: an event's `events/<sys>/<name>/format` (id, fields with offset,
//!   size and signedness, `__data_loc` strings);
//! - [`PageLayout`]: `events/header_page`, where a page's timestamp, commit word and
//!   data sit;
//! - [`decode_page`]: one page's 32-bit event headers (data, padding, time extend,
//!   absolute timestamp) into timestamped records, which an [`EventTable`] turns into
//!   [`Event`]s whose fields are looked up by name.
//!
//! Nothing here opens tracefs: callers read the files and pages, so the decoder is
//! tested on bytes captured once and committed.

#![deny(missing_docs)]

mod attribute;
mod error;
mod event;
mod format;
mod page;
mod records;

pub use attribute::{attribute, SpikeOf, SpikeWindow};
pub use error::TraceError;
pub use event::{Event, EventTable, Value};
pub use format::{EventFormat, Field, FieldKind};
pub use page::{decode_page, Page, PageLayout, RawRecord};
pub use records::{
    softirq_name, Comm, PageSummary, Record, RecordDecoder, Task, What, SOFTIRQ_NAMES,
};
