//! The per-interval envelope of a thread's samples: what long runs are drawn from.

/// What one thread saw during one interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvPoint {
    /// Interval number since the start of the run (time offset / envelope interval).
    pub index: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub count: u64,
}

impl EnvPoint {
    /// An interval with no sample yet.
    pub fn empty(index: u64) -> Self {
        EnvPoint { index, min: u64::MAX, max: 0, sum: 0, count: 0 }
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}
