//! The engine on every core: the calling thread produces the pieces of
//! the data (a [`Feed`]: a CSV read in blocks and cut at record boundaries
//! by [`super::split`], or a Parquet / Arrow source's row groups and
//! batches by [`crate::native`]); `threads` workers read the pieces' rows
//! (and decode a Parquet piece's row groups themselves).
//!
//! * Row- and event-level units: each worker adds its rows to its own
//!   [`Accumulators`]; they are merged by exact integer addition, so the
//!   result is the same whatever the number of threads or the block size.
//! * User-level units: the units are partitioned by their check hash (a
//!   secret-keyed hash of the id, independent of the table key that places
//!   a unit in its table): worker `p` alone owns the units of partition `p`,
//!   in its own [`Reservoirs`] (no lock anywhere). A worker parses a chunk,
//!   hashes each row's id, and routes the row, already on its grid, to its
//!   owner in batches of [`ROUTE`] rows through a bounded channel. It keeps
//!   the rows routed to it whenever it hands a batch over and while it
//!   waits (for a chunk, or for room in another worker's channel), so no
//!   worker waits for another that is parsing. At the end each worker bounds its own units'
//!   groups and adds them to its accumulators, merged as above.
//!
//! Why the mechanism is the same as on one thread: every row of a unit
//! reaches the one reservoir of that unit (same keyed hash, one owner per
//! unit), and the owner applies Algorithm R to that unit's rows in the
//! order they arrive. Algorithm R keeps a uniformly random subset of
//! min(n, rows_per_unit) of the unit's n rows for *every* arrival order:
//! the i-th row is kept with probability k/i and evicts a uniform kept row,
//! and by induction each k-subset of the first i rows is kept with
//! probability 1/C(i, k). The arrival order depends on thread scheduling,
//! never on the draws that select this unit's rows, which are fresh
//! uniform draws from the owner's generator (a [`SecureRng`] per worker,
//! seeded from the caller's): conditioned on any schedule and on every
//! other unit's draws, the unit's selection is uniform — so it is uniform,
//! and independent of the other units' selections. The group selection at
//! the end takes a unit's kept rows as a set, with fresh draws, as on one
//! thread. The row counts per unit, the grid values and the sums are exact
//! and do not depend on the order either.
//!
//! Memory: at most `2 × threads` chunks wait in the chunk channel (plus one
//! being cut and one being parsed per worker), of about the block size
//! each (a chunk holds at least one record: longer records make it larger);
//! each worker's channel holds at most [`INBOX`] batches of [`ROUTE`] rows
//! and each worker fills at most one batch per owner. The unit tables hold
//! what they hold on one thread, split among the workers: memory stays
//! proportional to the units, not the rows.

use std::io::Read;

use crossbeam_channel::{bounded, Receiver, Select, Sender, TrySendError};
use dpplan_plan::{Bounding, Dataset};

use super::bounding::{Accumulators, Reservoirs, Routed, NO_ID};
use super::hash::IdHasher;
use super::layout::{Fields, Layout, Prepared};
use super::split::{for_csv_reader, Chunks, PlainRecords};
use super::{read_error, EngineError};
use crate::rng::SecureRng;

/// Rows per routed batch.
const ROUTE: usize = 1024;

/// Batches waiting in a worker's channel, at most.
const INBOX: usize = 16;

/// What a worker does with each record of a chunk.
pub(super) trait OnRecord {
    fn on<F: Fields>(&mut self, rec: &F) -> Result<(), EngineError>;
}

/// A piece of the data a worker reads on its own: a CSV chunk cut at
/// record boundaries, or Arrow batches ([`crate::native`]).
pub(super) trait Piece: Send {
    /// Every row of the piece, in order, through `o`.
    fn each_row<O: OnRecord>(&self, dataset: &str, o: &mut O) -> Result<(), EngineError>;
}

impl Piece for Vec<u8> {
    fn each_row<O: OnRecord>(&self, dataset: &str, o: &mut O) -> Result<(), EngineError> {
        each_record(self, dataset, o)
    }
}

/// The pieces of a source, produced in order on the calling thread.
pub(super) trait Feed {
    type Piece: Piece;
    /// The next piece; `None` at the end of the data.
    fn next_piece(&mut self) -> Result<Option<Self::Piece>, EngineError>;
    /// A piece the workers are done with (a CSV chunk's buffer is read
    /// into again).
    fn recycle(&mut self, _piece: Self::Piece) {}
}

/// A CSV's chunks.
pub(super) struct CsvFeed<'d, R> {
    pub(super) chunks: Chunks<R>,
    pub(super) dataset: &'d str,
}

impl<R: Read> Feed for CsvFeed<'_, R> {
    type Piece = Vec<u8>;
    fn next_piece(&mut self) -> Result<Option<Vec<u8>>, EngineError> {
        self.chunks
            .next_chunk()
            .map_err(|e| read_error(self.dataset, csv::Error::from(e)))
    }
    fn recycle(&mut self, piece: Vec<u8>) {
        self.chunks.recycle(piece);
    }
}

/// Every record of a chunk: a chunk without a quote character through
/// [`PlainRecords`], any other through a CSV reader with the options of
/// the whole-file reader, without a header (the chunk starts at a record
/// boundary after it).
fn each_record<O: OnRecord>(chunk: &[u8], dataset: &str, o: &mut O) -> Result<(), EngineError> {
    if memchr::memchr(b'"', chunk).is_none() {
        let mut records = PlainRecords::new(chunk);
        let mut rec = records.record();
        while records.read(&mut rec) {
            o.on(&rec)?;
        }
        return Ok(());
    }
    let chunk = for_csv_reader(chunk);
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(false)
        .from_reader(&chunk[..]);
    let mut rec = csv::ByteRecord::new();
    while rdr
        .read_byte_record(&mut rec)
        .map_err(|e| read_error(dataset, e))?
    {
        o.on(&rec)?;
    }
    Ok(())
}

/// A worker of row- and event-level units: every valid row into its
/// accumulators.
struct RowWorker<'a> {
    layout: &'a Layout,
    prepared: &'a [Prepared],
    acc: Accumulators,
    vals: Vec<f64>,
    cats: Vec<u32>,
}

impl OnRecord for RowWorker<'_> {
    #[inline]
    fn on<F: Fields>(&mut self, rec: &F) -> Result<(), EngineError> {
        if self.layout.parse(rec, &mut self.vals, &mut self.cats) {
            self.acc.add(self.prepared, &self.vals, &self.cats)?;
            if let Some(d) = &self.layout.distinct {
                self.acc.add_distinct(self.prepared, d.key(rec));
            }
        }
        Ok(())
    }
}

/// Sends every chunk to the workers (on the calling thread). Stops early
/// when every worker is gone (one of them failed).
fn feed<F: Feed>(
    chunks: &mut F,
    tx: Sender<F::Piece>,
    parsed: &Receiver<F::Piece>,
) -> Result<(), EngineError> {
    loop {
        while let Ok(buf) = parsed.try_recv() {
            chunks.recycle(buf);
        }
        let Some(chunk) = chunks.next_piece()? else {
            break;
        };
        if tx.send(chunk).is_err() {
            break;
        }
    }
    Ok(())
}

/// The channel of the chunks' buffers back to the reader: a few, never
/// waited for (a worker drops a buffer when it is full).
fn recycling<P>() -> (Sender<P>, Receiver<P>) {
    bounded(4)
}

/// Joins a worker, passing on its panic.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    match h.join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Feeds every chunk to the workers (on the calling thread), then joins
/// them and adds up their accumulators. A worker's error comes first (the
/// reader stops early when the workers are gone), then the reader's.
fn feed_and_merge<'s, F: Feed>(
    chunks: &mut F,
    tx: Sender<F::Piece>,
    parsed: &Receiver<F::Piece>,
    workers: Vec<std::thread::ScopedJoinHandle<'s, Result<Accumulators, EngineError>>>,
    prepared: &[Prepared],
) -> Result<Accumulators, EngineError> {
    let fed = feed(chunks, tx, parsed);
    let mut total = Accumulators::new(prepared);
    let mut failed = None;
    for w in workers {
        match join(w) {
            Ok(acc) => total.merge(acc)?,
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    fed?;
    failed.map_or(Ok(total), Err)
}

/// Row- and event-level units on `threads` workers.
pub(super) fn every_row<F: Feed>(
    mut chunks: F,
    threads: usize,
    dataset: &Dataset,
    layout: &Layout,
    prepared: &[Prepared],
) -> Result<Accumulators, EngineError> {
    let name = dataset.name.as_str();
    let (tx, rx) = bounded::<F::Piece>(2 * threads);
    let (done, parsed) = recycling();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (rx, done) = (rx.clone(), done.clone());
                s.spawn(move || {
                    let (vals, cats) = layout.row_buffers();
                    let mut w = RowWorker {
                        layout,
                        prepared,
                        acc: Accumulators::new(prepared),
                        vals,
                        cats,
                    };
                    for chunk in rx {
                        chunk.each_row(name, &mut w)?;
                        let _ = done.try_send(chunk);
                    }
                    Ok::<_, EngineError>(w.acc)
                })
            })
            .collect();
        drop((rx, done));
        feed_and_merge(&mut chunks, tx, &parsed, workers, prepared)
    })
}

/// One worker of user-level bounding: the owner of partition `me`.
struct Owner<'a> {
    me: usize,
    reservoirs: Reservoirs,
    rng: SecureRng,
    inbox: Receiver<Routed>,
    inbox_open: bool,
    /// The other owners' channels (`None` for this one's own).
    to: Vec<Option<Sender<Routed>>>,
    /// One batch being filled per owner.
    out: Vec<Routed>,
    layout: &'a Layout,
    hashers: (IdHasher, IdHasher),
    /// The unit id's column.
    id: usize,
    /// A row's parsed numbers and category indexes.
    vals: Vec<f64>,
    cats: Vec<u32>,
}

/// The partition of a unit among `n` owners: from the check hash's low 32
/// bits (uniform, and independent of the table key that places the unit in
/// its table).
#[inline]
fn partition(check: u64, n: usize) -> usize {
    (((check & 0xffff_ffff) * n as u64) >> 32) as usize
}

impl Owner<'_> {
    /// The owner's whole run: (1) parse chunks, keeping the rows routed
    /// here; (2) hand the last batches over, then keep this owner's rows
    /// until every other owner is done; (3) bound the groups of this
    /// owner's units into its accumulators.
    fn work<P: Piece>(
        mut self,
        rx: &Receiver<P>,
        done: &Sender<P>,
        dataset: &str,
        prepared: &[Prepared],
        bounding: &Bounding,
        // a sampled dataset's threshold (`bounding::sample_threshold`)
        sample: Option<u64>,
    ) -> Result<Accumulators, EngineError> {
        // 1.
        while let Some(chunk) = self.next_chunk(rx) {
            chunk.each_row(dataset, &mut self)?;
            let _ = done.try_send(chunk);
        }
        // 2.
        for q in 0..self.out.len() {
            self.flush(q);
        }
        self.to.clear();
        while self.inbox_open {
            match self.inbox.recv() {
                Ok(rows) => self.reservoirs.keep_routed(&rows, &mut self.rng),
                Err(_) => self.inbox_open = false,
            }
        }
        // 3.
        let mut acc = Accumulators::new(prepared);
        self.reservoirs.drain(
            self.layout,
            prepared,
            bounding,
            sample,
            &mut acc,
            &mut self.rng,
        )?;
        Ok(acc)
    }

    /// The next chunk to parse, keeping the rows routed here while waiting
    /// for it; `None` when the reader is done.
    fn next_chunk<P>(&mut self, rx: &Receiver<P>) -> Option<P> {
        loop {
            if !self.inbox_open {
                return rx.recv().ok();
            }
            let mut sel = Select::new();
            let c = sel.recv(rx);
            sel.recv(&self.inbox);
            let op = sel.select();
            if op.index() == c {
                return op.recv(rx).ok();
            }
            match op.recv(&self.inbox) {
                Ok(rows) => self.reservoirs.keep_routed(&rows, &mut self.rng),
                Err(_) => self.inbox_open = false,
            }
        }
    }
    /// Keeps the rows routed to this owner that are waiting, if any.
    fn keep_waiting(&mut self) {
        while self.inbox_open {
            match self.inbox.try_recv() {
                Ok(rows) => self.reservoirs.keep_routed(&rows, &mut self.rng),
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                Err(crossbeam_channel::TryRecvError::Disconnected) => self.inbox_open = false,
            }
        }
    }

    /// Hands the batch of owner `q` over: kept here when `q` is this owner,
    /// otherwise sent, keeping this owner's rows while `q`'s channel is
    /// full (so that two owners never wait for each other).
    fn flush(&mut self, q: usize) {
        if self.out[q].len() == 0 {
            return;
        }
        if q == self.me {
            let rows = self.out[q].take();
            self.reservoirs.keep_routed(&rows, &mut self.rng);
            self.out[q] = rows;
            self.out[q].clear();
            return;
        }
        // rows routed here are kept as they come, not only when waiting:
        // otherwise the other owners would wait while this one parses
        self.keep_waiting();
        let Some(to) = self.to[q].clone() else {
            return;
        };
        let mut rows = self.out[q].take();
        loop {
            match to.try_send(rows) {
                Ok(()) => return,
                // its owner stopped (it failed): its error is reported
                Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(back)) => rows = back,
            }
            if !self.inbox_open {
                let _ = to.send(rows);
                return;
            }
            // wait until there is room there or rows here
            let mut sel = Select::new();
            sel.send(&to);
            sel.recv(&self.inbox);
            sel.ready();
            self.keep_waiting();
        }
    }
}

impl OnRecord for Owner<'_> {
    /// Parses a row and routes it to the owner of its unit.
    #[inline]
    fn on<F: Fields>(&mut self, rec: &F) -> Result<(), EngineError> {
        if !self.layout.parse(rec, &mut self.vals, &mut self.cats) {
            return Ok(());
        }
        // `parse` refuses a row without its id
        let unit = rec.field(self.id).unwrap_or_default();
        let key = self.hashers.0.key(unit);
        let check = self.hashers.1.check(unit);
        let q = partition(check, self.out.len());
        let id = (self.layout.distinct.as_ref()).map(|d| d.key(rec).unwrap_or(NO_ID));
        self.out[q].push(self.layout, (key, check), &self.vals, &self.cats, id);
        if self.out[q].len() >= ROUTE {
            self.flush(q);
        }
        Ok(())
    }
}

/// User-level units on `threads` workers: the exact bounded aggregates.
#[allow(clippy::too_many_arguments)]
pub(super) fn per_unit<F: Feed>(
    mut chunks: F,
    threads: usize,
    dataset: &Dataset,
    layout: &Layout,
    prepared: &[Prepared],
    id: usize,
    hashers: (IdHasher, IdHasher),
    rng: &mut SecureRng,
) -> Result<Accumulators, EngineError> {
    let name = dataset.name.as_str();
    let (tx, rx) = bounded::<F::Piece>(2 * threads);
    let (senders, inboxes): (Vec<_>, Vec<_>) =
        (0..threads).map(|_| bounded::<Routed>(INBOX)).unzip();
    let (done, parsed) = recycling();
    let mut owners = Vec::with_capacity(threads);
    for (me, inbox) in inboxes.into_iter().enumerate() {
        let (vals, cats) = layout.row_buffers();
        owners.push(Owner {
            me,
            reservoirs: Reservoirs::new(dataset, layout, hashers.clone())?,
            rng: rng.fork(),
            inbox,
            inbox_open: true,
            to: (0..threads)
                .map(|q| (q != me).then(|| senders[q].clone()))
                .collect(),
            out: (0..threads).map(|_| Routed::new(layout, ROUTE)).collect(),
            layout,
            hashers: hashers.clone(),
            id,
            vals,
            cats,
        });
    }
    drop(senders);
    let sample = super::bounding::sample_threshold(dataset)?;
    std::thread::scope(|s| {
        let workers: Vec<_> = owners
            .into_iter()
            .map(|o| {
                let (rx, done) = (rx.clone(), done.clone());
                s.spawn(move || o.work(&rx, &done, name, prepared, &dataset.bounding, sample))
            })
            .collect();
        drop((rx, done));
        feed_and_merge(&mut chunks, tx, &parsed, workers, prepared)
    })
}
