//! The typed run model: what a run is, as the runner writes it and the store, the report and
//! the exports read it. Nothing here measures, parses flags or touches SQLite, so every side
//! of the data path can depend on it and on nothing of each other. It depends on `stats` and
//! `units` alone (a test in `layers.rs` holds it to that).

mod audit;
mod breach;
mod classes;
mod collector;
mod envelope;
mod interference;
mod kind;
mod label;
mod load;
mod metric;
mod op_group;
mod params;
mod pingpong_params;
mod probe_params;
mod run;
mod sections;
mod status;
mod system;
mod timerlat_aa;

pub use audit::{Evidence, Finding, Severity};
pub use breach::{event_field, unseen as breach_unseen, Breach, Cause, CauseKind, TraceEvent};
pub use classes::{
    ClassInterval, ClassTotal, ClassifyRecord, Interference, InterferenceNs, LongGap, NoiseClass, ThreadClasses, Unseen,
};
pub use collector::{CollectorChoice, CollectorRecord};
pub use envelope::EnvPoint;
pub use interference::{attribute, stolen, worst_intervals, CpuInterval, StealFinding, WorstInterval};
pub use kind::{ForkImage, RunKind, SysbenchOpParams, SysbenchTotalParams};
pub use label::{check_label, check_label_filter, LabelFault, LABEL_MAX_CHARS};
pub use load::{Activity, GeneratorReport, LoadFlags, LoadPlan, LoadRecord, LoadReport};
pub use metric::{Better, Metric, Unit};
pub use op_group::{op_shown, OpGroup};
pub use params::{
    placement, BreachRecord, ImportedParams, Lacked, MeasuredParams, Policy, RunParams, ShieldRecord, SplitRecord,
    ThreadRan, ToolSummary,
};
pub use probe_params::{
    Absent, DeadlineParams, GtodParams, IpcParams, IpcVia, Lateness, MigrateParams, NoiseParams, Period, PiParams,
    PingpongParams, ProbeParams, RanInstead, ResponseParams, RoundTripsApart, SyntheticParams, ThreadNoise,
    ThreadRoundTrips, TimerParams, Transport, Warmup, WatchParams,
};
pub use run::{Gap, IrqSplit, Run, RunHeader, ThreadResult, ThreadSamples, WindowMax};
pub use sections::{path as section_path, Sections};
pub use status::RunStatus;
pub use system::{Preemption, RtThrottling, SystemSnapshot, VmPlacement, EMULATED_WARNING};
pub use timerlat_aa::{AnalysisInterference, AnalysisTask, TimerlatAnalysis};
