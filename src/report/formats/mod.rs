//! The report in other tools' formats: a run exported (JSON, CSV, HdrHistogram, cyclictest's,
//! the raw samples), and `compare`'s checks for CI (JUnit XML, LAVA test cases).

pub mod export;
pub mod junit;
pub mod lava;
