//! The ring buffer as the kernel hands it to a binary reader (`per_cpu/cpuN/trace_pipe_raw`,
//! what rtla and trace-cmd read): a page a read, no text made of it. A page is a header (the
//! time stamp its events count from, and its committed length with flags in the high bits:
//! events were lost before it), then the events, each behind a 32-bit word of `type_len` (low 5
//! bits on a little-endian machine) and `time_delta` (the other 27):
//!
//! - `type_len` 1–28: a record of `type_len` × 4 bytes; 0: a record whose length (plus the 4
//!   bytes of the length itself) is the next word;
//! - 29: padding: with no delta, the rest of the page; else a discarded record, length next;
//! - 30: the next word holds bits 27 and up of a longer delta;
//! - 31: an absolute time stamp, its top 5 bits taken from the time so far.
//!
//! Where the header's fields and an event's fields sit comes from the kernel's own description
//! of them (`events/header_page`, an event's `format`), not from constants.

use std::path::Path;

/// Where one field sits in a page or a record: its offset and size in bytes.
pub type Field = (usize, usize);

/// Fields by name as a `format` file (or `events/header_page`) lists them, and the event's id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pub id: Option<u16>,
    fields: Vec<(String, Field)>,
}

impl Format {
    /// The format at `path`, e.g. tracefs's `events/ftrace/timerlat/format`.
    pub fn read(path: &Path) -> Result<Format, String> {
        let text = read_large(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Format::parse(&text).ok_or_else(|| format!("{} lists no fields", path.display()))
    }

    /// Lines such as `field:unsigned int seqnum; offset:8; size:4; signed:0;` (tabs between
    /// the parts) and `ID: 14`.
    pub fn parse(text: &str) -> Option<Format> {
        let mut format = Format { id: None, fields: Vec::new() };
        for line in text.lines().map(str::trim) {
            if let Some(id) = line.strip_prefix("ID:") {
                format.id = id.trim().parse().ok();
            }
            let Some(decl) = line.strip_prefix("field:") else { continue };
            let parts: Vec<&str> = decl.split(';').map(str::trim).collect();
            let name = parts.first()?.split_whitespace().last()?.split('[').next()?.to_string();
            let number =
                |key: &str| parts.iter().find_map(|p| p.strip_prefix(key)).and_then(|v| v.parse::<usize>().ok());
            let (offset, size) = (number("offset:")?, number("size:")?);
            format.fields.push((name, (offset, size)));
        }
        (!format.fields.is_empty()).then_some(format)
    }

    pub fn field(&self, name: &str) -> Option<Field> {
        self.fields.iter().find(|(n, _)| n == name).map(|&(_, f)| f)
    }
}

/// A tracefs file read in reads of 64 KB: 6.1's `events/header_page` makes its text anew at
/// each read, and a first read as small as `read_to_string`'s gets nothing after its start.
fn read_large(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let (mut file, mut text, mut buf) = (std::fs::File::open(path)?, Vec::new(), vec![0u8; 1 << 16]);
    loop {
        match file.read(&mut buf)? {
            0 => return Ok(String::from_utf8_lossy(&text).into_owned()),
            n => text.extend_from_slice(&buf[..n]),
        }
    }
}

/// An unsigned field of 1, 2, 4 or 8 bytes in the machine's order; `None` past the end.
pub fn uint(data: &[u8], (offset, size): Field) -> Option<u64> {
    let bytes = data.get(offset..offset.checked_add(size)?)?;
    Some(match size {
        1 => bytes[0] as u64,
        2 => u16::from_ne_bytes(bytes.try_into().ok()?) as u64,
        4 => u32::from_ne_bytes(bytes.try_into().ok()?) as u64,
        8 => u64::from_ne_bytes(bytes.try_into().ok()?),
        _ => return None,
    })
}

/// A page's header as `events/header_page` describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    timestamp: Field,
    commit: Field,
    /// Where the events begin, and the most bytes of them a page holds.
    data: Field,
}

/// One page's records: each its time stamp (in the instance's clock) and its bytes.
#[derive(Debug)]
pub struct Page<'p> {
    pub records: Vec<(u64, &'p [u8])>,
    /// Events were lost before this page (the buffer was full).
    pub lost: bool,
}

/// The committed length's flags: events were lost before this page (and their count is
/// stored after its data).
const MISSED_EVENTS: u64 = 1 << 31;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const TS_SHIFT: u32 = 27;
/// The bits of the time an absolute stamp does not hold.
const TS_MSB: u64 = 0xf8 << 56;

impl PageLayout {
    pub fn read(root: &Path) -> Result<PageLayout, String> {
        let path = root.join("events/header_page");
        PageLayout::of(&Format::read(&path)?).ok_or_else(|| format!("{} does not describe a page", path.display()))
    }

    pub fn of(f: &Format) -> Option<PageLayout> {
        Some(PageLayout { timestamp: f.field("timestamp")?, commit: f.field("commit")?, data: f.field("data")? })
    }

    /// Bytes in one page as a read gives it.
    pub fn page_size(&self) -> usize {
        self.data.0 + self.data.1
    }

    /// The records of one page in order, each with its time stamp, and whether events were
    /// lost before the page.
    pub fn records<'p>(&self, page: &'p [u8]) -> Result<Page<'p>, String> {
        let broken = |what: &str| format!("a page of the trace buffer is broken: {what}");
        let commit = uint(page, self.commit).ok_or_else(|| broken("no header"))?;
        let mut ts = uint(page, self.timestamp).ok_or_else(|| broken("no header"))?;
        let len = ((commit & COMMIT_MASK) as usize).min(self.data.1);
        let data = page.get(self.data.0..self.data.0 + len).ok_or_else(|| broken("shorter than it says"))?;
        let word = |at: usize| data.get(at..at + 4).map(|b| u32::from_ne_bytes(b.try_into().unwrap_or_default()));
        let (mut at, mut out) = (0, Vec::new());
        while let Some(head) = word(at) {
            let (kind, delta) = (head & 0x1f, (head >> 5) as u64);
            let next = || word(at + 4).map(|w| w as usize).ok_or_else(|| broken("an event cut off"));
            // Each arm gives where the next event begins, always past this one's header.
            at = match kind {
                29 if delta == 0 => break,
                // A discarded record: its delta is not the time's.
                29 => at + 4 + next()?,
                30 => {
                    ts += ((next()? as u64) << TS_SHIFT) | delta;
                    at + 8
                }
                31 => {
                    ts = ((next()? as u64) << TS_SHIFT | delta) | (ts & TS_MSB);
                    at + 8
                }
                0 => {
                    ts += delta;
                    let len = next()?.max(4);
                    out.push((ts, data.get(at + 8..at + 4 + len).ok_or_else(|| broken("a record past its end"))?));
                    at + 4 + len
                }
                n => {
                    ts += delta;
                    let end = at + 4 + n as usize * 4;
                    out.push((ts, data.get(at + 4..end).ok_or_else(|| broken("a record past its end"))?));
                    end
                }
            };
        }
        Ok(Page { records: out, lost: commit & MISSED_EVENTS != 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `events/header_page` as the RT guest printed it (tests/fixtures/README.md).
    const HEADER_PAGE: &str = include_str!("../../../tests/fixtures/header_page");

    fn layout() -> PageLayout {
        PageLayout::of(&Format::parse(HEADER_PAGE).unwrap()).unwrap()
    }

    /// A page of `words` (events as the writer lays them out) from time `ts`, `flags` in its
    /// committed length's high bits.
    fn page(ts: u64, words: &[u32], flags: u64) -> Vec<u8> {
        let mut p = vec![0u8; layout().page_size()];
        p[0..8].copy_from_slice(&ts.to_ne_bytes());
        p[8..16].copy_from_slice(&((words.len() as u64 * 4) | flags).to_ne_bytes());
        for (i, w) in words.iter().enumerate() {
            p[16 + 4 * i..20 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        p
    }

    fn head(kind: u32, delta: u32) -> u32 {
        kind | delta << 5
    }

    #[test]
    fn each_kind_of_event_moves_the_time_as_the_kernel_does() {
        assert_eq!(layout().page_size(), 4096);
        let words = [
            head(2, 10),
            0xaaaa,
            0xbbbb, // a record of 8 bytes, 10 ns after the page's time
            head(30, 5),
            3, // a delta of 3 << 27 | 5, no record
            head(0, 7),
            4 + 12,
            1,
            2,
            3, // a record whose length is given: 12 bytes
            head(29, 99),
            8,
            0xdead, // a discarded record: skipped, its delta not the time's
            head(31, 40),
            1, // an absolute stamp: 1 << 27 | 40, the top bits of the time so far
            head(1, 0),
            0xcccc,
            head(29, 0), // the rest is padding
            head(1, 1),
            0xeeee,
        ];
        let top = 0x08u64 << 56;
        let p = page(top | 1_000, &words, 0);
        let Page { records, lost } = layout().records(&p).unwrap();
        assert!(!lost);
        let got: Vec<(u64, usize)> = records.iter().map(|&(ts, d)| (ts, d.len())).collect();
        let after_extend = top | (1_000 + 10 + (3 << 27) + 5);
        assert_eq!(
            got,
            [(top | 1_010, 8), (after_extend + 7, 12), (top | (1 << 27 | 40), 4)],
            "nothing after the padding that ends the page"
        );
        assert_eq!(u32::from_ne_bytes(records[0].1[..4].try_into().unwrap()), 0xaaaa);
        assert_eq!(u32::from_ne_bytes(records[1].1[8..12].try_into().unwrap()), 3);
    }

    #[test]
    fn lost_events_are_said_and_a_broken_page_is_refused() {
        let words = [head(1, 1), 7];
        let p = page(0, &words, MISSED_EVENTS);
        let Page { records, lost } = layout().records(&p).unwrap();
        assert!(lost);
        assert_eq!(records.len(), 1);
        // A record whose length runs past the committed data, and one cut after its header.
        for words in [&[head(3, 1), 7][..], &[head(0, 1)][..], &[head(0, 1), 64, 1][..]] {
            let err = layout().records(&page(0, words, 0)).unwrap_err();
            assert!(err.starts_with("a page of the trace buffer is broken"), "{err}");
        }
        // A page shorter than its header.
        assert!(layout().records(&[0u8; 12]).is_err());
    }

    #[test]
    fn fields_are_found_by_name_with_their_offsets_and_sizes() {
        let f = Format::parse("name: x\nID: 14\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n").unwrap();
        assert_eq!(
            (f.id, f.field("common_type"), f.field("comm"), f.field("pid")),
            (Some(14), Some((0, 2)), Some((8, 16)), None)
        );
        assert_eq!(Format::parse("name: x\nID: 3\n"), None, "no fields");
        assert_eq!(uint(&[1, 2, 3], (1, 2)), Some(u16::from_ne_bytes([2, 3]) as u64));
        assert_eq!(uint(&[1, 2, 3], (2, 2)), None, "past the end");
        assert_eq!(uint(&[1, 2, 3], (0, 3)), None, "no such width");
    }
}
