//! `events/header_page` and the ring-buffer pages `per_cpu/cpuN/trace_pipe_raw` returns.
//!
//! A page (sub-buffer) is a `u64` base timestamp, a commit word whose low 27 bits count
//! the bytes of data, then records, each behind a 32-bit header of `type_len:5` and
//! `time_delta:27` (`events/header_event`). Layout and rules follow the kernel's
//! `kernel/trace/ring_buffer.c` and libtraceevent's `kbuffer-parse.c`. Headers and
//! numbers are in the host's byte order: pages are decoded on the machine that wrote them.

use crate::format::parse_field;
use crate::TraceError;

/// Bits of the commit word that count the bytes of data (`COMMIT_MASK` in kbuffer).
const COMMIT_LENGTH_MASK: u64 = (1 << 27) - 1;
/// Events were lost between the previous page and this one.
const MISSED_EVENTS: u64 = 1 << 31;
/// The number lost is stored right after the data.
const MISSED_STORED: u64 = 1 << 30;
/// `type_len` values above the data range.
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// Width of `time_delta`; a time extend carries the bits above it.
const TIME_DELTA_BITS: u32 = 27;
/// An absolute timestamp holds 59 bits; the top 5 come from the page (`TS_MSB`).
const TIMESTAMP_HIGH_BITS: u64 = 0x1f << 59;

/// Where a page keeps its timestamp, commit word and data, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the `u64` base timestamp.
    pub timestamp_offset: usize,
    /// Offset of the commit word.
    pub commit_offset: usize,
    /// Size of the commit word (8 on 64-bit kernels, 4 on 32-bit).
    pub commit_size: usize,
    /// Offset of the first record.
    pub data_offset: usize,
    /// Bytes of data a page can hold; the page size is `data_offset + data_size`.
    pub data_size: usize,
}

impl PageLayout {
    /// Parses the text of `events/header_page`.
    pub fn parse(text: &str) -> Result<PageLayout, TraceError> {
        let problem = |problem: String| TraceError::Description {
            file: "header_page".to_owned(),
            problem,
        };
        let mut fields = Vec::new();
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("field:"))
        {
            fields.push(parse_field(line).map_err(problem)?);
        }
        let find = |name: &str| {
            fields
                .iter()
                .find(|field| field.name == name)
                .ok_or_else(|| problem(format!("no field {name:?}")))
        };
        let (timestamp, commit, data) = (find("timestamp")?, find("commit")?, find("data")?);
        if timestamp.size != 8 || !matches!(commit.size, 4 | 8) {
            return Err(problem(format!(
                "timestamp of {} bytes or commit of {} bytes; expected 8 and 4 or 8",
                timestamp.size, commit.size
            )));
        }
        Ok(PageLayout {
            timestamp_offset: timestamp.offset,
            commit_offset: commit.offset,
            commit_size: commit.size,
            data_offset: data.offset,
            data_size: data.size,
        })
    }

    /// Bytes in one page, the unit `trace_pipe_raw` is read in.
    pub fn page_size(&self) -> usize {
        self.data_offset + self.data_size
    }
}

/// One record of a page: its timestamp and payload (the event's bytes, `common_type` first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// Timestamp in the instance's `trace_clock` (ns for `mono`, `local`, `global`).
    pub timestamp: u64,
    /// The record's bytes; may be longer than the event's fields (rounded to 4 bytes).
    pub payload: &'a [u8],
}

/// A decoded page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<'a> {
    /// The page's base timestamp, which the first record's delta is added to.
    pub timestamp: u64,
    /// Events were lost (overwritten) before this page.
    pub missed_events: bool,
    /// How many, when the kernel stored the count; unknown otherwise.
    pub missed_count: Option<u64>,
    /// The data records in order, timestamps cumulated; padding and time records removed.
    pub records: Vec<RawRecord<'a>>,
}

/// Decodes one page of `trace_pipe_raw`.
pub fn decode_page<'a>(layout: &PageLayout, page: &'a [u8]) -> Result<Page<'a>, TraceError> {
    let base = read_u64(page, layout.timestamp_offset)
        .ok_or_else(|| TraceError::Page(format!("{} bytes hold no header", page.len())))?;
    let commit = read_uint(page, layout.commit_offset, layout.commit_size)
        .ok_or_else(|| TraceError::Page(format!("{} bytes hold no commit word", page.len())))?;
    let length = usize::try_from(commit & COMMIT_LENGTH_MASK).unwrap_or(usize::MAX);
    let end = layout.data_offset.saturating_add(length);
    if end > page.len() {
        return Err(TraceError::Page(format!(
            "commit says {length} bytes of data but the page holds {}",
            page.len().saturating_sub(layout.data_offset)
        )));
    }
    let missed_events = commit & MISSED_EVENTS != 0;
    let missed_count = if commit & MISSED_STORED != 0 {
        read_uint(page, end, layout.commit_size)
    } else {
        None
    };
    let records = decode_records(&page[layout.data_offset..end], base)?;
    Ok(Page {
        timestamp: base,
        missed_events,
        missed_count,
        records,
    })
}

fn decode_records(data: &[u8], base: u64) -> Result<Vec<RawRecord<'_>>, TraceError> {
    let mut records = Vec::new();
    let mut timestamp = base;
    let mut at = 0;
    while at + 4 <= data.len() {
        let header = read_u32(data, at).unwrap_or_default();
        let type_len = header & 0x1f;
        let time_delta = u64::from(header >> 5);
        let array0 = || {
            read_u32(data, at + 4).ok_or_else(|| {
                TraceError::Page(format!("record at data byte {at} lacks its length word"))
            })
        };
        // Each arm yields the payload's range within `data` (empty for non-data).
        let (start, size) = match type_len {
            TYPE_PADDING if time_delta == 0 => break, // the rest of the page is empty
            TYPE_PADDING => (at + 4, array0()? as usize), // a discarded event; no time
            TYPE_TIME_EXTEND => {
                timestamp += (u64::from(array0()?) << TIME_DELTA_BITS) + time_delta;
                (at + 8, 0)
            }
            TYPE_TIME_STAMP => {
                let absolute = (u64::from(array0()?) << TIME_DELTA_BITS) | time_delta;
                timestamp = with_page_high_bits(absolute, timestamp);
                (at + 8, 0)
            }
            0 => {
                timestamp += time_delta;
                // array[0] counts itself, then the payload.
                let counted = array0()? as usize;
                (at + 8, counted.saturating_sub(4))
            }
            data_words => {
                timestamp += time_delta;
                (at + 4, data_words as usize * 4)
            }
        };
        let stop = start + size;
        if stop > data.len() {
            return Err(TraceError::Page(format!(
                "record at data byte {at} (type_len {type_len}) runs {} bytes past the data",
                stop - data.len()
            )));
        }
        if type_len < TYPE_PADDING {
            records.push(RawRecord {
                timestamp,
                payload: &data[start..stop],
            });
        }
        at = stop.next_multiple_of(4);
    }
    Ok(records)
}

/// `rb_fix_abs_ts`: an absolute stamp lacks the top 5 bits, which the running time has.
fn with_page_high_bits(absolute: u64, running: u64) -> u64 {
    if running & TIMESTAMP_HIGH_BITS == 0 {
        return absolute;
    }
    let fixed = absolute | (running & TIMESTAMP_HIGH_BITS);
    if fixed < running {
        fixed.wrapping_add(1 << 59)
    } else {
        fixed
    }
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

fn read_uint(bytes: &[u8], at: usize, size: usize) -> Option<u64> {
    match size {
        4 => read_u32(bytes, at).map(u64::from),
        _ => read_u64(bytes, at),
    }
}
