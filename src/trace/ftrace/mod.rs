//! The ftrace base: instances of rtbench's own ([`instance`]), written in a journal before they
//! exist ([`journal`], [`owned`]) so a killed run's are removed by the next command, and the
//! text of their events parsed ([`parse`]).

pub mod instance;
pub mod journal;
pub mod owned;
pub mod parse;
