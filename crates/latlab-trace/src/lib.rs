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
//! On top of them, what `latlab run --explain` needs:
//!
//! - [`RecordDecoder`]: pages straight into compact, owned [`Record`]s of the events
//!   explanations use (scheduler, IRQs, softirqs, x86 vectors, NMIs, idle, hrtimers,
//!   workqueues, markers, stacks), fields resolved once per event;
//! - [`attribute`]: one late wake-up's window of a CPU's records split into the parts
//!   of `latlab_model::explain`, every nanosecond given to one cause or left
//!   unexplained.
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
