//! The run store: one SQLite file (WAL), written at checkpoints by the runner and read by
//! everything else; and beside it, when a run asks, its raw sample log ([`samplelog`]).

mod absent;
mod merge;
mod place;
mod resume;
mod retention;
pub mod samplelog;
mod schema;
mod side;
mod update;
mod windows;
mod writer;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use rusqlite::{params, Connection, OptionalExtension};

pub use absent::Absent;
pub use place::default_path;
pub use schema::SCHEMA_VERSION;
pub use side::SideBySide;
pub use windows::WINDOW_PARAM;
pub use writer::{Checkpoint, Found, RunHead, RunWriter, RAW_IN_STORE};

use crate::error::InputError;
use crate::model::{
    Breach, ClassInterval, CpuInterval, EnvPoint, IrqSplit, LoadRecord, Metric, NoiseClass, Run, RunHeader, RunKind,
    RunParams, RunStatus, ThreadResult, ThreadSamples,
};
use crate::stats::Stats;

/// Raw samples of one thread, numbered from `first_seq`.
pub struct RawBatch<'a> {
    pub thread: u32,
    pub first_seq: u64,
    pub samples: &'a [(u64, u64)],
    /// `--split`: the samples' IRQ latencies, in the same order; empty when not split.
    pub irq: &'a [Option<u64>],
}

/// How long a store operation waits for another writer's lock.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// Puts the store in WAL mode (kept in the file: a no-op once it is). SQLite refuses the switch
/// at once, without waiting, while another connection's switch holds the file: tried again
/// until the lock wait is over.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let until = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            done => return done,
        }
    }
}

impl Store {
    /// Opens (creating if needed) the store at `path` and migrates it. Reading never changes a
    /// run: a command that writes runs calls [`Store::recover_abandoned`] first.
    pub fn open(path: &Path) -> Result<Store> {
        let bad = |reason: String| InputError::Database { path: path.display().to_string(), reason };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create its directory: {e}")))?;
        }
        if path.is_dir() {
            return Err(bad("is a directory, expected an SQLite file".into()).into());
        }
        let conn = Connection::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
        // From the first statement on: another command opening the store at the same moment
        // holds its lock while it switches the journal or migrates.
        conn.busy_timeout(LOCK_WAIT).map_err(|e| bad(e.to_string()))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| bad(format!("not a readable rtbench database ({e})")))?;
        if version > SCHEMA_VERSION {
            return Err(bad(format!(
                "schema version {version} is newer than this rtbench understands ({SCHEMA_VERSION}); use a newer rtbench"
            ))
            .into());
        }
        wal(&conn).map_err(|e| bad(format!("cannot enable WAL ({e})")))?;
        conn.pragma_update(None, "foreign_keys", true).map_err(|e| bad(e.to_string()))?;
        // A database of another program is refused before any migration touches it.
        if version > 0 {
            let has_runs: bool = conn
                .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'runs'", [], |r| r.get::<_, i64>(0))
                .map(|n| n == 1)
                .map_err(|e| bad(e.to_string()))?;
            if !has_runs {
                return Err(bad("is not an rtbench database (no runs table)".into()).into());
            }
        }
        let mut store = Store { conn, path: path.to_path_buf() };
        store.migrate(version).map_err(|e| bad(format!("cannot migrate ({e:#})")))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Caps this connection's page cache at `kib` KiB. A run that checkpoints for hours appends
    /// pages it never reads again; SQLite's default cache would grow the process by 2 MiB of them.
    pub fn limit_page_cache(&self, kib: u32) {
        let _ = self.conn.pragma_update(None, "cache_size", -i64::from(kib));
    }

    /// How long operations wait for another writer's lock from now on.
    pub fn set_busy_timeout(&self, wait: std::time::Duration) {
        let _ = self.conn.busy_timeout(wait);
    }

    fn migrate(&mut self, from: i64) -> Result<()> {
        if from >= SCHEMA_VERSION {
            return Ok(());
        }
        // Two rtbench commands may open a new store at once: the write lock makes one migrate
        // and the other see the result.
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(now as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", i as i64 + 1)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores as `aborted` every `running` run of this host whose process no longer exists (it
    /// was killed), keeping its last checkpoint. Readers already see such runs as aborted;
    /// this makes it so for good. Returns how many runs it marked.
    pub fn recover_abandoned(&mut self) -> Result<usize> {
        let abandoned: Vec<RunHeader> = self.runs()?.into_iter().filter(|h| h.status == RunStatus::Aborted).collect();
        let mut marked = 0;
        for h in abandoned {
            marked += self.conn.execute(
                "UPDATE runs SET status = 'aborted', end = ?2, warnings = ?3 WHERE id = ?1 AND status = 'running'",
                params![h.id, h.end, serde_json::to_string(&h.warnings)?],
            )?;
        }
        Ok(marked)
    }

    /// Creates a run in status `running` and returns its id.
    fn begin(&self, run: &RunHead) -> Result<i64> {
        let pid = std::process::id();
        self.conn.execute(
            "INSERT INTO runs (label, probe, params, load, command_line, tool_version, schema_version, start, status,
                               rt_priority, warnings, system, envelope_ns, host, pid, pid_start, unit, better, kind)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running', ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
            params![
                run.label,
                run.probe,
                serde_json::to_string(&run.params)?,
                serde_json::to_string(&run.load)?,
                run.command_line,
                env!("CARGO_PKG_VERSION"),
                SCHEMA_VERSION,
                crate::timefmt::now_rfc3339(),
                run.rt_priority,
                serde_json::to_string(&run.warnings)?,
                serde_json::to_string(&run.system)?,
                run.envelope_ns as i64,
                crate::sysinfo::hostname(),
                pid,
                crate::sysinfo::process_start(pid),
                run.metric.names().0,
                run.metric.names().1,
                run.kind.as_str(),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Writes the cumulative per-thread results, the new envelope points and the new raw samples
    /// in one transaction.
    fn checkpoint(
        &mut self,
        id: i64,
        threads: &[ThreadResult],
        envelope: &[(u32, EnvPoint)],
        raw: &[RawBatch],
        activity: &[CpuInterval],
        noise: &[ClassInterval],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            put_threads(&tx, id, threads)?;
            put_noise(&tx, id, noise)?;
            let mut env = tx.prepare_cached(
                "INSERT OR REPLACE INTO envelope (run_id, thread, idx, min_ns, max_ns, sum_ns, count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for (thread, p) in envelope {
                env.execute(params![
                    id,
                    thread,
                    p.index as i64,
                    p.min as i64,
                    p.max as i64,
                    p.sum as i64,
                    p.count as i64
                ])?;
            }
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO samples (run_id, thread, seq, t_ns, latency_ns, irq_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for b in raw {
                for (i, (t, lat)) in b.samples.iter().enumerate() {
                    let irq = b.irq.get(i).copied().flatten().map(|ns| ns as i64);
                    put.execute(params![id, b.thread, (b.first_seq + i as u64) as i64, *t as i64, *lat as i64, irq])?;
                }
            }
            let mut act = tx.prepare_cached(
                "INSERT OR REPLACE INTO cpu_activity (run_id, cpu, idx, steal_ns, irq_ns, softirq_ns, interrupts, context_switches)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for a in activity {
                act.execute(params![
                    id,
                    a.cpu,
                    a.index as i64,
                    a.steal_ns as i64,
                    a.irq_ns as i64,
                    a.softirq_ns as i64,
                    a.interrupts as i64,
                    a.context_switches.map(|n| n as i64)
                ])?;
            }
            tx.execute("UPDATE runs SET checkpoint = ?2 WHERE id = ?1", params![id, crate::timefmt::now_rfc3339()])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Ends a run with its final status and warnings.
    fn finish(&self, id: i64, status: RunStatus, warnings: &[String]) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, end = ?3, warnings = ?4 WHERE id = ?1",
            params![id, status.as_str(), crate::timefmt::now_rfc3339(), serde_json::to_string(warnings)?],
        )?;
        Ok(())
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunHeader>> {
        let mut stmt = self.conn.prepare(&format!("{HEADER_SELECT} ORDER BY id"))?;
        let here = crate::sysinfo::hostname();
        let rows = stmt.query_map([], |r| header_from_row(r, &here))?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// One run's header; a clear error when there is no such run.
    pub fn header(&self, id: i64) -> Result<RunHeader> {
        self.conn
            .query_row(&format!("{HEADER_SELECT} WHERE id = ?1"), [id], |r| {
                header_from_row(r, &crate::sysinfo::hostname())
            })
            .optional()?
            .ok_or_else(|| InputError::NoSuchRun(id).into())
    }

    /// One run: its header, per-thread results and their merge.
    pub fn run(&self, id: i64) -> Result<Run> {
        let (breaches, gaps, noise) = (self.breaches(id)?, self.gaps(id)?, self.noise_classes(id)?);
        Ok(Run { breaches, gaps, noise, ..Run::new(self.header(id)?, self.threads(id)?) })
    }

    /// One run's per-thread results, by thread number.
    pub fn threads(&self, id: i64) -> Result<Vec<ThreadResult>> {
        let mut stmt = self.conn.prepare(
            "SELECT thread, cpu, count, overruns, min_ns, max_ns, sum_ns, sumsq_ns, histogram FROM threads WHERE run_id = ?1 ORDER BY thread",
        )?;
        let mut rows = stmt.query([id])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let thread: u32 = r.get(0)?;
            let mut stats = stats_from(r, id, thread)?;
            stats.overruns = r.get::<_, i64>(3)? as u64;
            out.push(ThreadResult { thread, cpu: r.get(1)?, stats, irq: None });
        }
        let mut stmt = self.conn.prepare(
            "SELECT thread, unmatched, count, 0, min_ns, max_ns, sum_ns, sumsq_ns, histogram FROM irq WHERE run_id = ?1",
        )?;
        let mut rows = stmt.query([id])?;
        while let Some(r) = rows.next()? {
            let thread: u32 = r.get(0)?;
            let split = IrqSplit { stats: stats_from(r, id, thread)?, unmatched: r.get::<_, i64>(1)? as u64 };
            if let Some(t) = out.iter_mut().find(|t| t.thread == thread) {
                t.irq = Some(split);
            }
        }
        Ok(out)
    }

    /// `--split`: one run's stored raw samples' IRQ latencies per thread, in the order of
    /// [`Store::raw_samples`] (None: not matched, or the run was not split).
    pub fn raw_irq(&self, id: i64) -> Result<Vec<(u32, Vec<Option<u64>>)>> {
        let mut stmt =
            self.conn.prepare("SELECT thread, irq_ns FROM samples WHERE run_id = ?1 ORDER BY thread, seq")?;
        let mut rows = stmt.query([id])?;
        let mut out: Vec<(u32, Vec<Option<u64>>)> = Vec::new();
        while let Some(r) = rows.next()? {
            let (thread, irq): (u32, Option<i64>) = (r.get(0)?, r.get(1)?);
            match out.last_mut() {
                Some((last, v)) if *last == thread => v.push(irq.map(|n| n as u64)),
                _ => out.push((thread, vec![irq.map(|n| n as u64)])),
            }
        }
        Ok(out)
    }

    /// One run's stored raw samples (time offset, latency) per thread, in order.
    pub fn raw_samples(&self, id: i64) -> Result<Vec<ThreadSamples>> {
        let mut stmt =
            self.conn.prepare("SELECT thread, t_ns, latency_ns FROM samples WHERE run_id = ?1 ORDER BY thread, seq")?;
        let mut rows = stmt.query([id])?;
        let mut out: Vec<ThreadSamples> = Vec::new();
        while let Some(r) = rows.next()? {
            let (thread, t, lat): (u32, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
            match out.last_mut() {
                Some((last, v)) if *last == thread => v.push((t as u64, lat as u64)),
                _ => out.push((thread, vec![(t as u64, lat as u64)])),
            }
        }
        Ok(out)
    }

    /// Stores traced breaches (in one transaction: all or none).
    fn add_breaches(&mut self, id: i64, breaches: &[Breach]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO breaches (run_id, seq, latency_ns, verdict, breach) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for b in breaches {
                put.execute(params![id, b.seq, b.latency_ns as i64, b.verdict, serde_json::to_string(b)?])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// A run's traced breaches, in the order they were taken.
    pub fn breaches(&self, id: i64) -> Result<Vec<Breach>> {
        let mut stmt = self.conn.prepare("SELECT breach FROM breaches WHERE run_id = ?1 ORDER BY seq")?;
        let rows = stmt.query_map([id], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
        rows.iter()
            .map(|j| {
                serde_json::from_str(j).map_err(|e| anyhow::anyhow!("a stored breach of run {id} is damaged: {e}"))
            })
            .collect()
    }

    /// What happened on a run's measured CPUs, per CPU, in time order.
    pub fn cpu_activity(&self, id: i64) -> Result<Vec<CpuInterval>> {
        let mut stmt = self.conn.prepare(
            "SELECT cpu, idx, steal_ns, irq_ns, softirq_ns, interrupts, context_switches FROM cpu_activity
             WHERE run_id = ?1 ORDER BY cpu, idx",
        )?;
        let rows = stmt
            .query_map([id], |r| {
                Ok(CpuInterval {
                    cpu: r.get(0)?,
                    index: r.get::<_, i64>(1)? as u64,
                    steal_ns: r.get::<_, i64>(2)? as u64,
                    irq_ns: r.get::<_, i64>(3)? as u64,
                    softirq_ns: r.get::<_, i64>(4)? as u64,
                    interrupts: r.get::<_, i64>(5)? as u64,
                    context_switches: r.get::<_, Option<i64>>(6)?.map(|n| n as u64),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// `noise --classify`: a run's gaps per thread, interval and class, in that order.
    pub fn noise_classes(&self, id: i64) -> Result<Vec<ClassInterval>> {
        let mut stmt =
            self.conn.prepare("SELECT thread, idx, class, count, ns FROM noise_classes WHERE run_id = ?1")?;
        let rows = stmt
            .query_map([id], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get(3)?, r.get(4)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (thread, index, class, count, ns): (u32, i64, String, i64, i64) = row?;
            let class = NoiseClass::from_key(&class)
                .ok_or_else(|| anyhow::anyhow!("run {id} has a noise class '{class}' this rtbench does not know"))?;
            out.push(ClassInterval { thread, index: index as u64, class, count: count as u64, ns: ns as u64 });
        }
        out.sort_by_key(|c| (c.thread, c.index, c.class));
        Ok(out)
    }

    /// One run's envelope, per thread, in time order.
    pub fn envelope(&self, id: i64) -> Result<Vec<(u32, EnvPoint)>> {
        let mut stmt = self.conn.prepare(
            "SELECT thread, idx, min_ns, max_ns, sum_ns, count FROM envelope WHERE run_id = ?1 ORDER BY thread, idx",
        )?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    EnvPoint {
                        index: r.get::<_, i64>(1)? as u64,
                        min: r.get::<_, i64>(2)? as u64,
                        max: r.get::<_, i64>(3)? as u64,
                        sum: r.get::<_, i64>(4)? as u64,
                        count: r.get::<_, i64>(5)? as u64,
                    },
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

/// Each thread's statistics, and their IRQ part when the run was split (`--split`).
fn put_threads(tx: &rusqlite::Transaction, id: i64, threads: &[ThreadResult]) -> Result<()> {
    let mut up = tx.prepare_cached(
        "INSERT OR REPLACE INTO threads (run_id, thread, cpu, count, overruns, min_ns, max_ns, sum_ns, sumsq_ns, histogram)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let mut irq = tx.prepare_cached(
        "INSERT OR REPLACE INTO irq (run_id, thread, count, unmatched, min_ns, max_ns, sum_ns, sumsq_ns, histogram)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for t in threads {
        let (s, [min, max, sum, sumsq, blob]) = (&t.stats, stats_columns(&t.stats)?);
        up.execute(params![id, t.thread, t.cpu, s.count as i64, s.overruns as i64, min, max, sum, sumsq, blob])?;
        if let Some(x) = &t.irq {
            let [min, max, sum, sumsq, blob] = stats_columns(&x.stats)?;
            let (count, unmatched) = (x.stats.count as i64, x.unmatched as i64);
            irq.execute(params![id, t.thread, count, unmatched, min, max, sum, sumsq, blob])?;
        }
    }
    Ok(())
}

/// Adds gaps per class and interval: a gap is classified once its trace has been read, so an
/// interval's gaps may reach the store over several checkpoints.
fn put_noise(tx: &rusqlite::Transaction, id: i64, noise: &[ClassInterval]) -> Result<()> {
    let mut add = tx.prepare_cached(
        "INSERT INTO noise_classes (run_id, thread, idx, class, count, ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (run_id, thread, idx, class) DO UPDATE SET count = count + excluded.count, ns = ns + excluded.ns",
    )?;
    for c in noise {
        add.execute(params![id, c.thread, c.index as i64, c.class.key(), c.count as i64, c.ns as i64])?;
    }
    Ok(())
}

/// Statistics as the `threads` and `irq` tables hold them: min, max, sum, sum of squares and
/// the encoded histogram.
fn stats_columns(s: &Stats) -> Result<[rusqlite::types::Value; 5]> {
    thread_local! {
        // Its buffer is 9 bytes a bucket up to the largest value's (~130 KB at a few ms): one
        // made per histogram was a fresh mapping, faulted in, at every checkpoint of every thread.
        static SERIALIZER: std::cell::RefCell<V2Serializer> = std::cell::RefCell::new(V2Serializer::new());
    }
    let mut blob = Vec::new();
    SERIALIZER.with_borrow_mut(|v2| v2.serialize(&s.hist, &mut blob)).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let min = if s.count == 0 { 0 } else { s.min as i64 };
    Ok([min.into(), (s.max as i64).into(), s.sum.to_string().into(), s.sumsq.to_string().into(), blob.into()])
}

/// Statistics from a row of (thread, _, count, _, min, max, sum, sumsq, histogram); the
/// overruns are the caller's.
fn stats_from(r: &rusqlite::Row, id: i64, thread: u32) -> Result<Stats> {
    let blob: Vec<u8> = r.get(8)?;
    let hist = Deserializer::new()
        .deserialize(&mut blob.as_slice())
        .map_err(|e| anyhow::anyhow!("run {id} thread {thread}: stored histogram is corrupt ({e:?})"))?;
    let parse = |s: String| s.parse::<u128>().with_context(|| format!("run {id}: corrupt sum"));
    Ok(Stats {
        count: r.get::<_, i64>(2)? as u64,
        overruns: 0,
        min: r.get::<_, i64>(4)? as u64,
        max: r.get::<_, i64>(5)? as u64,
        sum: parse(r.get(6)?)?,
        sumsq: parse(r.get(7)?)?,
        hist: std::sync::Arc::new(hist),
    })
}

const HEADER_SELECT: &str = "SELECT id, label, probe, status, start, end, params, load, system, rt_priority, warnings,
    command_line, tool_version, envelope_ns, unit, better, host, pid, pid_start, checkpoint, kind FROM runs";

/// How the warning of a run stopped by a signal begins (the runner says the rest).
pub const INTERRUPTED: &str = "interrupted by signal";

/// Says why a run reads as aborted when its process is gone.
const ABANDONED: &str =
    "the run's process ended without finishing (killed or crashed); results are those of its last checkpoint";

/// A header from a row of [`HEADER_SELECT`]. A `running` run of this host (`here`) whose process
/// is gone reads as `aborted`, ending at its last checkpoint. A JSON column that does not parse
/// reads as empty rather than hiding the run.
fn header_from_row(r: &rusqlite::Row, here: &str) -> rusqlite::Result<RunHeader> {
    fn json<T: serde::de::DeserializeOwned + Default>(r: &rusqlite::Row, i: usize) -> rusqlite::Result<T> {
        let s: String = r.get(i)?;
        Ok(serde_json::from_str(&s).unwrap_or_default())
    }
    let status: String = r.get(3)?;
    let params: String = r.get(6)?;
    let mut h = RunHeader {
        id: r.get(0)?,
        label: r.get(1)?,
        probe: r.get(2)?,
        // The schema's CHECK admits only the kinds this rtbench knows.
        kind: RunKind::parse(&r.get::<_, String>(20)?).unwrap_or_default(),
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
        start: r.get(4)?,
        end: r.get(5)?,
        params: serde_json::from_str(&params).unwrap_or(RunParams::Unknown(serde_json::Value::Null)),
        load: serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or_else(|_| LoadRecord::idle()),
        system: json(r, 8)?,
        rt_priority: r.get(9)?,
        warnings: json(r, 10)?,
        command_line: r.get(11)?,
        tool_version: r.get(12)?,
        envelope_ns: r.get::<_, i64>(13)? as u64,
        metric: Metric::from_names(&r.get::<_, String>(14)?, &r.get::<_, String>(15)?).unwrap_or_default(),
    };
    if h.status == RunStatus::Running && r.get::<_, String>(16)? == here {
        let (pid, pid_start): (u32, String) = (r.get(17)?, r.get(18)?);
        let alive = crate::sysinfo::same_process(pid, &pid_start);
        if !alive {
            h.status = RunStatus::Aborted;
            h.end = Some(r.get::<_, Option<String>>(19)?.unwrap_or_else(|| h.start.clone()));
            h.warnings.push(ABANDONED.into());
        }
    }
    Ok(h)
}

#[cfg(test)]
pub(crate) mod tests;
