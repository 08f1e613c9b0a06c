//! The `null` store: every operation succeeds at once, so a run measures
//! the generator, timing and histograms alone.

use super::{Batch, Store, StoreConn, StoreError, Values};

/// Does nothing, successfully.
pub struct NullStore;

/// A connection to nothing.
pub struct NullConn {
    /// Bytes "touched", so the compiler cannot drop the key work.
    pub sink: u64,
}

impl Store for NullStore {
    type Conn = NullConn;
    async fn connect(&self) -> Result<NullConn, StoreError> {
        Ok(NullConn { sink: 0 })
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        Ok(())
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

impl StoreConn for NullConn {
    async fn read(&mut self, key: &str) -> Result<(), StoreError> {
        self.sink = self.sink.wrapping_add(key.len() as u64);
        Ok(())
    }
    async fn update(&mut self, key: &str, field: usize, value: &str) -> Result<(), StoreError> {
        self.sink = self
            .sink
            .wrapping_add((key.len() + field + value.len()) as u64);
        Ok(())
    }
    async fn insert(&mut self, key: &str, values: &Values<'_>) -> Result<(), StoreError> {
        self.sink = self.sink.wrapping_add((key.len() + values.len()) as u64);
        Ok(())
    }
    async fn insert_batch(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        for (key, values) in batch.records() {
            self.sink = self.sink.wrapping_add((key.len() + values.len()) as u64);
        }
        Ok(())
    }
    async fn scan(&mut self, start: &str, count: usize) -> Result<u64, StoreError> {
        self.sink = self.sink.wrapping_add((start.len() + count) as u64);
        Ok(count as u64)
    }
}
