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
    ///
    /// Read that file in one `read` of a page or more: after a short first read it
    /// reports end of file (seen on 6.x; `read_to_string` starts with 32 bytes).
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

/// Timestamps add with wrapping: a real page never wraps, a corrupt one must not panic.
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
            TYPE_PADDING => {
                // A discarded event: the writer stamped the next record relative to
                // it, so its delta counts (as kbuffer's `update_pointers` does). Its
                // length word counts itself.
                timestamp = timestamp.wrapping_add(time_delta);
                (at + 4, array0()? as usize)
            }
            TYPE_TIME_EXTEND => {
                let delta = (u64::from(array0()?) << TIME_DELTA_BITS) + time_delta;
                timestamp = timestamp.wrapping_add(delta);
                (at + 8, 0)
            }
            TYPE_TIME_STAMP => {
                let absolute = (u64::from(array0()?) << TIME_DELTA_BITS) | time_delta;
                timestamp = with_page_high_bits(absolute, timestamp);
                (at + 8, 0)
            }
            0 => {
                timestamp = timestamp.wrapping_add(time_delta);
                // array[0] counts itself, then the payload.
                let counted = array0()? as usize;
                (at + 8, counted.saturating_sub(4))
            }
            data_words => {
                timestamp = timestamp.wrapping_add(time_delta);
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

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: PageLayout = PageLayout {
        timestamp_offset: 0,
        commit_offset: 8,
        commit_size: 8,
        data_offset: 16,
        data_size: 4080,
    };

    fn header(type_len: u32, time_delta: u32) -> [u8; 4] {
        (type_len | time_delta << 5).to_ne_bytes()
    }

    /// A page of base timestamp `base` holding `data`, with extra commit flag bits.
    fn page(base: u64, flags: u64, data: &[u8]) -> Vec<u8> {
        let mut page = base.to_ne_bytes().to_vec();
        page.extend((data.len() as u64 | flags).to_ne_bytes());
        page.extend(data);
        page.resize(LAYOUT.page_size(), 0);
        page
    }

    #[test]
    fn timestamps_cumulate_through_extends_and_absolute_stamps() {
        let mut data = Vec::new();
        data.extend(header(1, 10)); // a 4-byte record, 10 ns after the page
        data.extend([1, 0, 0, 0]);
        data.extend(header(TYPE_TIME_EXTEND, 5)); // + (2 << 27) + 5
        data.extend(2u32.to_ne_bytes());
        data.extend(header(1, 3));
        data.extend([2, 0, 0, 0]);
        data.extend(header(TYPE_PADDING, 1)); // a discarded event: skipped, its time kept
        data.extend(8u32.to_ne_bytes());
        data.extend([0; 4]);
        data.extend(header(TYPE_TIME_STAMP, 7)); // absolute (1 << 27) + 7
        data.extend(1u32.to_ne_bytes());
        data.extend(header(0, 2)); // long form: array[0] counts itself and 8 bytes
        data.extend(12u32.to_ne_bytes());
        data.extend([3, 0, 0, 0, 9, 9, 9, 9]);
        let page = page(1000, 0, &data);
        let decoded = decode_page(&LAYOUT, &page).unwrap();
        let stamps: Vec<_> = decoded.records.iter().map(|r| r.timestamp).collect();
        let extended = 1010 + (2 << 27) + 5 + 3;
        // The absolute stamp replaces the running time, the padding's 1 ns with it.
        assert_eq!(stamps, [1010, extended, (1 << 27) + 7 + 2]);
        assert_eq!(decoded.records[2].payload, [3, 0, 0, 0, 9, 9, 9, 9]);
        assert_eq!((decoded.missed_events, decoded.missed_count), (false, None));
    }

    #[test]
    fn empty_padding_ends_the_page() {
        let mut data = Vec::new();
        data.extend(header(1, 1));
        data.extend([1, 0, 0, 0]);
        data.extend(header(TYPE_PADDING, 0));
        data.extend(header(1, 1));
        data.extend([2, 0, 0, 0]);
        let page = page(0, 0, &data);
        assert_eq!(decode_page(&LAYOUT, &page).unwrap().records.len(), 1);
    }

    #[test]
    fn stored_missed_count_is_read_after_the_data() {
        let mut data = Vec::new();
        data.extend(header(1, 1));
        data.extend([1, 0, 0, 0]);
        let mut page = page(0, MISSED_EVENTS | MISSED_STORED, &data);
        page[16 + 8..16 + 16].copy_from_slice(&42u64.to_ne_bytes());
        let decoded = decode_page(&LAYOUT, &page).unwrap();
        assert_eq!(
            (decoded.missed_events, decoded.missed_count),
            (true, Some(42))
        );
        let page = self::page(0, MISSED_EVENTS, &data);
        let unstored = decode_page(&LAYOUT, &page).unwrap();
        assert_eq!(
            (unstored.missed_events, unstored.missed_count),
            (true, None)
        );
    }

    #[test]
    fn absolute_stamp_takes_the_top_bits_from_the_running_time() {
        let running = (3 << 59) + 100;
        assert_eq!(with_page_high_bits(200, running), (3 << 59) + 200);
        // Lower than the running time: the top bits rolled over.
        assert_eq!(with_page_high_bits(50, running), (4 << 59) + 50);
        assert_eq!(with_page_high_bits(50, 10), 50);
    }

    #[test]
    fn record_running_past_the_data_is_an_error() {
        let mut data = Vec::new();
        data.extend(header(2, 1)); // claims 8 bytes, has 4
        data.extend([1, 0, 0, 0]);
        let error = decode_page(&LAYOUT, &page(0, 0, &data)).unwrap_err();
        assert!(error.to_string().contains("runs 4 bytes past"), "{error}");
    }

    #[test]
    fn header_page_of_a_32_bit_kernel() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                    \tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\
                    \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
                    \tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
        let layout = PageLayout::parse(text).unwrap();
        assert_eq!(
            (layout.commit_size, layout.data_offset, layout.page_size()),
            (4, 12, 4096)
        );
        let error = PageLayout::parse(&text.replace("commit", "kommit")).unwrap_err();
        assert!(error.to_string().contains("\"commit\""), "{error}");
    }
}
