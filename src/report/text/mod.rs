//! The report as terminal text: a run's summary (`show`, and the lines after a run), and a
//! label against a baseline (`compare`, with its `--fail-if` conditions and its noise by class).

pub mod compare;
pub mod compare_noise;
pub mod show;
pub mod watched;
