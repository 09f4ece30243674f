//! Cutting a CSV into chunks at record boundaries, for parallel parsing.
//!
//! The header record is read first ([`read_header`]); the rest is read in
//! blocks, and each block is cut after its last complete record
//! ([`Chunks`]). A chunk therefore always starts at a record boundary, so
//! a fresh CSV reader parses it exactly as the single reader of the whole
//! file would parse those bytes:
//!
//! * a block without a quote character: no field can be quoted, so every
//!   `\n` ends a record (or an empty line, which the reader skips) — the
//!   cut is after the last `\n` (found with `memrchr`); a lone `\r` ends a
//!   record too, and a chunk that starts with the `\n` of a cut `\r\n`
//!   starts with an empty line, skipped as the whole-file reader skips it;
//! * a block with a quote (a quoted field may hold newlines, `""`, or a
//!   quote in the middle of an unquoted field, which is literal): the
//!   block is scanned with `csv_core`, the state machine the `csv` crate
//!   itself runs, from the block's start (a record boundary), and the cut
//!   is after the last record it completes. Quote parity alone would be
//!   wrong on a stray quote inside an unquoted field.
//!
//! A record longer than a block makes the block grow until it holds one
//! complete record; at the end of the data the rest is the last chunk
//! (with or without a final newline).

use std::io::{self, Read};

/// Reads until `buf` is full or the data ends; the bytes read.
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The header record, as `csv` reads it, and the bytes read after it
/// (which start at a record boundary); true when the data ended. Reads
/// in steps of at most 64 KiB (a block of a gigabyte is not zeroed to
/// read a header line).
pub(super) fn read_header<R: Read>(
    reader: &mut R,
    block: usize,
) -> io::Result<(csv::ByteRecord, Vec<u8>, bool)> {
    let mut buf: Vec<u8> = Vec::new();
    let mut eof = false;
    let step = block.clamp(1, 1 << 16);
    loop {
        let start = buf.len();
        buf.resize(start + step, 0);
        let n = read_full(reader, &mut buf[start..])?;
        buf.truncate(start + n);
        eof = eof || n == 0;
        let mut rdr = csv::ReaderBuilder::new()
            .flexible(true)
            .has_headers(false)
            .from_reader(buf.as_slice());
        let mut header = csv::ByteRecord::new();
        // reading a slice cannot fail
        let _ = rdr
            .read_byte_record(&mut header)
            .map_err(io::Error::other)?;
        let end = rdr.position().byte() as usize;
        // a header that reaches the end of what was read may go on
        if eof || end < buf.len() {
            let rest = buf.split_off(end.min(buf.len()));
            return Ok((header, rest, eof));
        }
    }
}

/// Where to cut `buf` (which starts at a record boundary): after its last
/// complete record; `None` when it holds none.
pub(super) fn cut(buf: &[u8]) -> Option<usize> {
    if memchr::memchr(b'"', buf).is_none() {
        return memchr::memrchr(b'\n', buf).map(|i| i + 1);
    }
    // the same state machine (and the same defaults: `,`, `"`, doubled
    // quotes, no escape, no comments, CR/LF/CRLF terminators) as the reader
    let mut core = csv_core::Reader::new();
    let mut out = vec![0u8; 1 << 16];
    let mut ends = [0usize; 256];
    let (mut pos, mut last) = (0, None);
    while pos < buf.len() {
        let (res, nin, _, _) = core.read_record(&buf[pos..], &mut out, &mut ends);
        pos += nin;
        match res {
            csv_core::ReadRecordResult::Record => last = Some(pos),
            csv_core::ReadRecordResult::OutputFull | csv_core::ReadRecordResult::OutputEndsFull => {
            }
            csv_core::ReadRecordResult::InputEmpty | csv_core::ReadRecordResult::End => break,
        }
    }
    last.filter(|&c| c > 0)
}

/// The data after the header, in chunks that start and end at record
/// boundaries.
pub(super) struct Chunks<R> {
    reader: R,
    carry: Vec<u8>,
    block: usize,
    eof: bool,
    /// Buffers of chunks already parsed, to read into again.
    spare: Vec<Vec<u8>>,
}

impl<R: Read> Chunks<R> {
    /// `first`: the bytes already read after the header; `eof`: whether
    /// the data ended there.
    pub(super) fn new(reader: R, first: Vec<u8>, eof: bool, block: usize) -> Self {
        Chunks {
            reader,
            carry: first,
            block: block.max(1),
            eof,
            spare: Vec::new(),
        }
    }

    /// Gives back the buffer of a chunk that was parsed (no new allocation,
    /// no page faults for the next one).
    pub(super) fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.spare.len() < 4 {
            buf.clear();
            self.spare.push(buf);
        }
    }

    /// The next chunk; `None` at the end of the data.
    pub(super) fn next_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if self.eof {
                let rest = std::mem::take(&mut self.carry);
                return Ok((!rest.is_empty()).then_some(rest));
            }
            let mut buf = match self.spare.pop() {
                Some(mut b) => {
                    b.extend_from_slice(&self.carry);
                    self.carry.clear();
                    b
                }
                None => std::mem::take(&mut self.carry),
            };
            let start = buf.len();
            buf.reserve(self.block);
            // reads into the spare capacity (no zeroing), retrying when
            // interrupted
            let n = (&mut self.reader)
                .take(self.block as u64)
                .read_to_end(&mut buf)?;
            debug_assert_eq!(buf.len(), start + n);
            if n == 0 {
                self.eof = true;
                self.carry = buf;
                continue;
            }
            match cut(&buf) {
                Some(c) => {
                    self.carry.extend_from_slice(&buf[c..]);
                    buf.truncate(c);
                    return Ok(Some(buf));
                }
                None => self.carry = buf,
            }
        }
    }
}

/// A chunk as a fresh CSV reader must see it to read it as the whole-file
/// reader does: that reader strips a UTF-8 byte order mark only at the very
/// start of the file, a fresh one at the start of its input, so a chunk that
/// starts with one gets an empty line (which the reader skips) before it.
pub(super) fn for_csv_reader(chunk: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if chunk.starts_with(b"\xef\xbb\xbf") {
        let mut v = Vec::with_capacity(chunk.len() + 1);
        v.push(b'\n');
        v.extend_from_slice(chunk);
        std::borrow::Cow::Owned(v)
    } else {
        std::borrow::Cow::Borrowed(chunk)
    }
}

/// A record of a chunk without any quote character: the line, and where
/// each of its fields ends.
pub(super) struct PlainRecord<'c> {
    line: &'c [u8],
    ends: Vec<usize>,
}

impl super::layout::Fields for PlainRecord<'_> {
    #[inline]
    fn field(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] + 1 };
        Some(&self.line[start..end])
    }
}

/// The records of a chunk that holds no quote character, exactly as the
/// `csv` reader reads them after the header: a record ends at `\n` or `\r`
/// (so `\r\n` ends one record, and an empty line is skipped as the reader
/// skips it), fields are split at every `,`, and no other byte is special
/// (a byte order mark is data there). A plain scan instead of the reader's
/// state machine and its copy of every field.
pub(super) struct PlainRecords<'c> {
    chunk: &'c [u8],
    pos: usize,
}

impl<'c> PlainRecords<'c> {
    /// `chunk` must hold no `"`.
    pub(super) fn new(chunk: &'c [u8]) -> Self {
        debug_assert!(memchr::memchr(b'"', chunk).is_none());
        PlainRecords { chunk, pos: 0 }
    }

    /// An empty record to read into.
    pub(super) fn record(&self) -> PlainRecord<'c> {
        PlainRecord {
            line: &[],
            ends: Vec::with_capacity(16),
        }
    }

    /// Reads the next record into `rec`; false at the end of the chunk.
    #[inline]
    pub(super) fn read(&mut self, rec: &mut PlainRecord<'c>) -> bool {
        let chunk = self.chunk;
        loop {
            let start = self.pos;
            if start >= chunk.len() {
                return false;
            }
            rec.ends.clear();
            let mut i = start;
            while i < chunk.len() {
                match chunk[i] {
                    b',' => rec.ends.push(i - start),
                    b'\n' | b'\r' => break,
                    _ => {}
                }
                i += 1;
            }
            self.pos = i + 1;
            if i > start {
                rec.line = &chunk[start..i];
                rec.ends.push(i - start);
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `data` as the whole-file reader reads it.
    fn records(data: &[u8]) -> Vec<Vec<Vec<u8>>> {
        let mut rdr = csv::ReaderBuilder::new()
            .flexible(true)
            .has_headers(false)
            .from_reader(data);
        let mut rec = csv::ByteRecord::new();
        let mut out = Vec::new();
        while rdr.read_byte_record(&mut rec).unwrap() {
            out.push(rec.iter().map(<[u8]>::to_vec).collect());
        }
        out
    }

    /// The header and every record, read chunk by chunk.
    fn chunked(data: &[u8], block: usize) -> Vec<Vec<Vec<u8>>> {
        let mut reader = data;
        let (header, rest, eof) = read_header(&mut reader, block).unwrap();
        let mut out = Vec::new();
        if !(header.is_empty() && eof && rest.is_empty()) {
            out.push(header.iter().map(<[u8]>::to_vec).collect());
        }
        let mut chunks = Chunks::new(reader, rest, eof, block);
        while let Some(c) = chunks.next_chunk().unwrap() {
            assert!(!c.is_empty());
            out.extend(records(&for_csv_reader(&c)));
        }
        out
    }

    #[test]
    fn chunks_hold_the_same_records_at_every_block_size() {
        let cases: Vec<&[u8]> = vec![
            b"",
            b"a,b",
            b"a,b\n",
            b"a,b\r\n",
            b"\xef\xbb\xbfa,b\n1,2\n",
            b"a,b\n1,2",
            b"a,b\n1,2\n3,4\n",
            b"a,b\r\n1,2\r\n3,4\r\n",
            b"a,b\r1,2\r3,4",
            b"a,b\n\n\n1,2\n\n3,4\n\n",
            b"\"a\nx\",b\n\"1\n\n2\",\"x\"\"y\"\n3,\"4\r\n\"\n",
            b"a,b\n1,x\"y\n\"q\"r,s\"\n2,\"\"\n\"unterminated,\n5,6\n",
            b"\"h,1\",\"h\n2\"\n\"\",\"\"\"\"\n,\n\"a\"\"\nb\",c\n",
            b"a,b\n1,2,3,4\n5\n\"6\",\"7\"x,y\n",
            b"a,b\n\xef\xbb\xbf1,2\n\xef\xbb\xbf\"3\",4\n\xef\xbb\xbf",
        ];
        for data in cases {
            let want = records(data);
            for block in [1, 2, 3, 4, 5, 7, 8, 13, 64, 1 << 20] {
                assert_eq!(
                    chunked(data, block),
                    want,
                    "{:?} block {block}",
                    String::from_utf8_lossy(data)
                );
            }
        }
    }

    /// Negative control: cutting at every newline (ignoring quotes)
    /// changes the records of a quoted field that holds a newline.
    #[test]
    fn cutting_inside_a_quoted_field_would_change_the_records() {
        let data: &[u8] = b"a,b\n\"x\ny\",1\n";
        let naive: Vec<Vec<Vec<u8>>> = data
            .split_inclusive(|&b| b == b'\n')
            .flat_map(records)
            .collect();
        assert_ne!(naive, records(data));
        assert_eq!(chunked(data, 1), records(data));
    }

    /// Every record of a quote-free chunk through [`PlainRecords`].
    fn plain(data: &[u8]) -> Vec<Vec<Vec<u8>>> {
        use super::super::layout::Fields;
        let mut records = PlainRecords::new(data);
        let mut rec = records.record();
        let mut out = Vec::new();
        while records.read(&mut rec) {
            out.push(
                (0..)
                    .map_while(|i| rec.field(i).map(<[u8]>::to_vec))
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn quote_free_chunks_read_like_the_csv_reader() {
        let cases: Vec<&[u8]> = vec![
            b"",
            b"\n",
            b"\r\n\r\n",
            b"a",
            b"a,b",
            b"a,b\n",
            b",",
            b",,\n,\r\n",
            b"a,\n,b\n",
            b"a\rb\r\nc\n\rd",
            b"\n\na,b\n\n\nc\n",
            b" , \t,x y\n",
            b"\xef\xbb\xbfu1,a,1\n",
            b"\x00,\xff\n",
            b"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s\n1\n",
        ];
        // a chunk is read as the whole-file reader reads it after the
        // header: a byte order mark there is data
        let whole = |data: &[u8]| records(&[b"\n", data].concat());
        for data in cases {
            let what = String::from_utf8_lossy(data);
            assert_eq!(plain(data), whole(data), "{what:?}");
        }
        let mut x: u64 = 5;
        let pieces: [&[u8]; 8] = [b"a", b",", b"\n", b"\r\n", b"\r", b"xy", b"1.5", b" "];
        for _ in 0..200 {
            let mut data = Vec::new();
            for _ in 0..(x % 300) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                data.extend_from_slice(pieces[(x % 8) as usize]);
            }
            let what = String::from_utf8_lossy(&data);
            assert_eq!(plain(&data), whole(&data), "{what:?}");
            x ^= 0x9e37_79b9;
        }
    }

    #[test]
    fn generated_quoted_data_splits_like_the_whole() {
        let mut x: u64 = 99;
        let mut data = Vec::new();
        let pieces: [&[u8]; 10] = [
            b"a",
            b",",
            b"\n",
            b"\r\n",
            b"\"",
            b"\"\"",
            b"\r",
            b"xy",
            b"\"q,\n\"",
            b"1",
        ];
        for _ in 0..4000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.extend_from_slice(pieces[(x % 10) as usize]);
        }
        let want = records(&data);
        for block in [1, 3, 17, 100, 1000] {
            assert_eq!(chunked(&data, block), want, "block {block}");
        }
    }
}
