//! The pages drained from the kernel, held per CPU for a bounded time.
//!
//! Each traced CPU has a ring of pages in the order `trace_pipe_raw` handed them out
//! (oldest first; a partly filled page holds what was committed when it was read, the
//! rest comes in a later page). A page is kept while its newest event is younger than
//! the retention behind the CPU's newest event and the CPU's pages fit in their byte
//! bound; the buffers of evicted pages are reused.

use latlab_trace::{decode_page, EventFormat, PageLayout};
use std::collections::VecDeque;

/// One page as read, with the span of its events on the trace clock.
#[derive(Debug)]
struct HeldPage {
    bytes: Vec<u8>,
    /// The first and last event's timestamps.
    first_ts: u64,
    last_ts: u64,
    /// Events were lost right before this page (the page's `MISSING_EVENTS` flag, or
    /// the kernel's `overrun` grew before the drain that read it).
    lost_before: bool,
}

/// One CPU's pages.
#[derive(Debug)]
struct CpuRing {
    cpu: usize,
    pages: VecDeque<HeldPage>,
    bytes: usize,
    /// Nothing before this instant is held: when tracing began, then the newest event
    /// of the last page evicted.
    held_from: u64,
    /// Every event stamped before this was read: the trace clock when the latest
    /// drain of this CPU began.
    drained_through: u64,
    /// The next page read starts after lost events.
    lost_pending: bool,
}

/// How long pages are kept and how much of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    /// Pages whose newest event is this far behind the CPU's newest are dropped.
    pub(crate) behind_ns: u64,
    /// Bytes of pages held per CPU, at most.
    pub(crate) bytes_per_cpu: usize,
}

/// What a page added to the ring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Added {
    /// Events it held.
    pub(crate) events: u64,
    /// Its oldest event, if it held any.
    pub(crate) oldest_ts: Option<u64>,
    /// It said events were missing before it.
    pub(crate) missing_events: bool,
}

/// The pages the reader holds, for every traced CPU, and how to decode them.
#[derive(Debug)]
pub struct Held {
    layout: PageLayout,
    formats: Vec<EventFormat>,
    rings: Vec<CpuRing>,
    retention: Retention,
    spare: Vec<Vec<u8>>,
}

/// The held pages of one CPU that cover a span of the trace clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldPages<'a> {
    /// Whole pages (decode each with [`latlab_trace::decode_page`]), oldest first:
    /// every held page with an event in the span, and so possibly events outside it.
    pub pages: Vec<&'a [u8]>,
    /// The ring still holds the span's start: no event of the span was evicted (or
    /// came before tracing began).
    pub covered: bool,
    /// Events may be missing inside the span: the kernel overwrote some before they
    /// were read.
    pub lost: bool,
}

impl Held {
    /// An empty hold for `cpus`, tracing since `started_ts` (trace clock).
    pub(crate) fn new(
        layout: PageLayout,
        formats: Vec<EventFormat>,
        cpus: &[usize],
        started_ts: u64,
        retention: Retention,
    ) -> Held {
        let rings = cpus
            .iter()
            .map(|&cpu| CpuRing {
                cpu,
                pages: VecDeque::new(),
                bytes: 0,
                held_from: started_ts,
                drained_through: started_ts,
                lost_pending: false,
            })
            .collect();
        Held {
            layout,
            formats,
            rings,
            retention,
            spare: Vec::new(),
        }
    }

    /// Where a page keeps its timestamp, commit word and data.
    pub fn layout(&self) -> &PageLayout {
        &self.layout
    }

    /// The formats of every event the pages may hold (the enabled events, markers and
    /// kernel stacks).
    pub fn formats(&self) -> &[EventFormat] {
        &self.formats
    }

    /// The traced CPUs.
    pub fn cpus(&self) -> impl Iterator<Item = usize> + '_ {
        self.rings.iter().map(|ring| ring.cpu)
    }

    /// Every event of `cpu` stamped before this instant (trace clock) has been read
    /// (`None`: not a traced CPU).
    pub fn drained_through(&self, cpu: usize) -> Option<u64> {
        self.ring(cpu).map(|ring| ring.drained_through)
    }

    /// The newest event held for `cpu`.
    pub fn newest_ts(&self, cpu: usize) -> Option<u64> {
        self.ring(cpu)?.pages.back().map(|page| page.last_ts)
    }

    /// Bytes of pages held, over every CPU.
    pub fn bytes(&self) -> usize {
        self.rings.iter().map(|ring| ring.bytes).sum()
    }

    /// The pages of `cpu` with events in `[from_ts, to_ts]`, whether the ring still
    /// reaches back to `from_ts`, and whether events were lost inside the span.
    pub fn pages(&self, cpu: usize, from_ts: u64, to_ts: u64) -> HeldPages<'_> {
        let Some(ring) = self.ring(cpu) else {
            return HeldPages {
                pages: Vec::new(),
                covered: false,
                lost: false,
            };
        };
        let mut pages = Vec::new();
        let mut lost = false;
        let mut previous_last = ring.held_from;
        for page in &ring.pages {
            // Events lost before this page fell between the previous page and it.
            if page.lost_before && previous_last <= to_ts && page.first_ts >= from_ts {
                lost = true;
            }
            if page.last_ts >= from_ts && page.first_ts <= to_ts {
                pages.push(page.bytes.as_slice());
            }
            previous_last = page.last_ts;
        }
        HeldPages {
            pages,
            covered: from_ts >= ring.held_from,
            lost,
        }
    }

    fn ring(&self, cpu: usize) -> Option<&CpuRing> {
        self.rings.iter().find(|ring| ring.cpu == cpu)
    }

    /// A page buffer to read into: an evicted page's, or a new one.
    pub(crate) fn spare_page(&mut self) -> Vec<u8> {
        let size = self.layout.page_size();
        let mut page = self.spare.pop().unwrap_or_default();
        page.resize(size, 0);
        page
    }

    /// Keeps a page buffer that was not filled, for the next read.
    pub(crate) fn give_back(&mut self, page: Vec<u8>) {
        self.spare.push(page);
    }

    /// Notes that `cpu` is drained of everything stamped before `now_ts`.
    pub(crate) fn drained(&mut self, cpu: usize, now_ts: u64) {
        if let Some(ring) = self.rings.iter_mut().find(|ring| ring.cpu == cpu) {
            ring.drained_through = ring.drained_through.max(now_ts);
        }
    }

    /// Notes that the kernel overwrote events of `cpu` since its last drain.
    pub(crate) fn overrun(&mut self, cpu: usize) {
        if let Some(ring) = self.rings.iter_mut().find(|ring| ring.cpu == cpu) {
            ring.lost_pending = true;
        }
    }

    /// Adds a page read from `cpu`'s `trace_pipe_raw` (its buffer is kept). A page
    /// that does not decode is dropped, and counted as events lost before the next.
    pub(crate) fn add(&mut self, cpu: usize, page: Vec<u8>) -> Added {
        let Some(index) = self.rings.iter().position(|ring| ring.cpu == cpu) else {
            self.spare.push(page);
            return Added::default();
        };
        let (first_ts, last_ts, added) = match decode_page(&self.layout, &page) {
            Ok(decoded) => {
                let first = decoded.records.first().map(|r| r.timestamp);
                let last = decoded.records.last().map(|r| r.timestamp);
                let added = Added {
                    events: decoded.records.len() as u64,
                    oldest_ts: first,
                    missing_events: decoded.missed_events,
                };
                (first, last, added)
            }
            Err(_) => (None, None, Added::default()),
        };
        let ring = &mut self.rings[index];
        ring.lost_pending |= added.missing_events || first_ts.is_none() && page_has_data(&page);
        let (Some(first_ts), Some(last_ts)) = (first_ts, last_ts) else {
            self.spare.push(page);
            return added;
        };
        ring.bytes += page.len();
        ring.pages.push_back(HeldPage {
            bytes: page,
            first_ts,
            last_ts,
            lost_before: std::mem::take(&mut ring.lost_pending),
        });
        self.evict(index);
        added
    }

    /// Drops the oldest pages of a ring beyond the retention.
    fn evict(&mut self, index: usize) {
        let retention = self.retention;
        let ring = &mut self.rings[index];
        let newest = ring.pages.back().map_or(0, |page| page.last_ts);
        while let Some(oldest) = ring.pages.front() {
            let too_old = oldest.last_ts.saturating_add(retention.behind_ns) < newest;
            let too_much = ring.bytes > retention.bytes_per_cpu && ring.pages.len() > 1;
            if !too_old && !too_much {
                break;
            }
            let Some(page) = ring.pages.pop_front() else {
                break;
            };
            ring.bytes -= page.bytes.len();
            ring.held_from = ring.held_from.max(page.last_ts);
            self.spare.push(page.bytes);
        }
    }
}

/// A page that failed to decode held data (an empty page is no loss).
fn page_has_data(page: &[u8]) -> bool {
    page.get(8..16)
        .and_then(|word| word.try_into().ok())
        .is_some_and(|word: [u8; 8]| u64::from_ne_bytes(word) & ((1 << 27) - 1) != 0)
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

    /// A page of 4-byte records stamped `stamps` (the first from the page's base).
    fn page(stamps: &[u64], missing: bool) -> Vec<u8> {
        let mut data = Vec::new();
        let mut previous = stamps[0];
        for &ts in stamps {
            let delta = (ts - previous) as u32;
            data.extend((1 | delta << 5).to_ne_bytes());
            data.extend([7, 0, 0, 0]);
            previous = ts;
        }
        let flags = if missing { 1 << 31 } else { 0 };
        let mut page = stamps[0].to_ne_bytes().to_vec();
        page.extend((data.len() as u64 | flags).to_ne_bytes());
        page.extend(data);
        page.resize(LAYOUT.page_size(), 0);
        page
    }

    fn held(behind_ns: u64, bytes_per_cpu: usize) -> Held {
        let retention = Retention {
            behind_ns,
            bytes_per_cpu,
        };
        Held::new(LAYOUT, Vec::new(), &[1], 100, retention)
    }

    #[test]
    fn a_span_gets_the_pages_with_events_in_it() {
        let mut held = held(1_000_000, 1 << 20);
        assert_eq!(held.add(1, page(&[110, 120], false)).events, 2);
        held.add(1, page(&[130, 140], false));
        held.add(1, page(&[150, 160], false));
        let span = held.pages(1, 125, 145);
        assert_eq!(span.pages.len(), 1);
        assert!(span.covered && !span.lost);
        assert_eq!(held.pages(1, 115, 155).pages.len(), 3);
        assert!(!held.pages(1, 90, 115).covered, "before tracing began");
        assert!(held.pages(0, 110, 120).pages.is_empty(), "not a traced CPU");
        assert_eq!(held.newest_ts(1), Some(160));
    }

    #[test]
    fn old_pages_go_and_the_span_they_held_is_no_longer_covered() {
        let mut held = held(75, 1 << 20);
        held.add(1, page(&[110, 120], false));
        held.add(1, page(&[130, 140], false));
        held.add(1, page(&[200, 210], false)); // 120 + 75 < 210: the first goes
        assert!(!held.pages(1, 115, 135).covered);
        let kept = held.pages(1, 125, 205);
        assert!(kept.covered);
        assert_eq!(kept.pages.len(), 2);
        assert_eq!(held.spare.len(), 1, "the evicted page's buffer is reused");
        let reused = held.spare_page();
        assert_eq!(reused.len(), LAYOUT.page_size());
    }

    #[test]
    fn the_byte_bound_keeps_the_newest_pages() {
        let mut held = held(u64::MAX / 2, 2 * LAYOUT.page_size());
        for base in [110, 130, 150, 170] {
            held.add(1, page(&[base, base + 5], false));
        }
        assert_eq!(held.bytes(), 2 * LAYOUT.page_size());
        assert!(held.pages(1, 150, 175).covered);
        assert!(!held.pages(1, 130, 175).covered);
    }

    #[test]
    fn lost_events_mark_the_spans_they_fall_in() {
        let mut held = held(1_000_000, 1 << 20);
        held.add(1, page(&[110, 120], false));
        held.add(1, page(&[200, 210], true)); // lost between 120 and 200
        held.add(1, page(&[220, 230], false));
        held.overrun(1);
        held.add(1, page(&[300, 310], false)); // lost between 230 and 300
        assert!(held.pages(1, 150, 160).lost);
        assert!(
            held.pages(1, 110, 125).lost,
            "the gap starts inside the span"
        );
        assert!(!held.pages(1, 205, 225).lost);
        assert!(held.pages(1, 225, 305).lost);
        assert!(!held.pages(1, 305, 310).lost);
    }

    #[test]
    fn an_empty_page_adds_nothing() {
        let mut held = held(1_000_000, 1 << 20);
        let mut empty = vec![0; LAYOUT.page_size()];
        empty[..8].copy_from_slice(&500u64.to_ne_bytes());
        assert_eq!(held.add(1, empty), Added::default());
        assert_eq!(held.bytes(), 0);
        assert!(!held.pages(1, 100, 600).lost);
    }
}
