//! The outbox of a local SQLite store: the runs it holds for a central store that could
//! not be reached when they were written, each with that store's URL (without its
//! password), until `latlab push` has sent them.

use super::{classify, SqliteStore};
use crate::StoreError;
use latlab_model::stamp::rfc3339;
use rusqlite::params;
use std::time::SystemTime;

/// Schema version 5: the outbox.
pub(crate) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS outbox (
         id TEXT PRIMARY KEY,
         push_to TEXT NOT NULL,
         owed_since TEXT NOT NULL
     );";

/// A run owed to a central store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    /// The run's id in the local store.
    pub id: String,
    /// The central store's URL, without its password.
    pub push_to: String,
    /// Since when (RFC 3339 UTC).
    pub owed_since: String,
}

impl SqliteStore {
    /// Marks run `id` as owed to the central store at `push_to` (a URL without its
    /// password); marking it again keeps the first time.
    pub fn owe(&mut self, id: &str, push_to: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO outbox (id, push_to, owed_since) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO UPDATE SET push_to = excluded.push_to",
                params![id, push_to, rfc3339(SystemTime::now())],
            )
            .map_err(|e| classify(&self.path, e))?;
        Ok(())
    }

    /// Every run owed to a central store, oldest first.
    pub fn owed(&self) -> Result<Vec<Owed>, StoreError> {
        if self.version < 5 {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare("SELECT id, push_to, owed_since FROM outbox ORDER BY owed_since, id")?;
        let rows = stmt.query_map([], |r| {
            Ok(Owed {
                id: r.get(0)?,
                push_to: r.get(1)?,
                owed_since: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Run `id` is in its central store for good: no longer owed.
    pub fn settle(&mut self, id: &str) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM outbox WHERE id = ?1", [id])
            .map_err(|e| classify(&self.path, e))?;
        Ok(())
    }
}
