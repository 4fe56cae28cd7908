//! Kernels booted in virtual machines (virtme-ng on QEMU) so that one command compares them:
//! where a kernel comes from ([`cache`]), what its image says ([`image`]), which accelerator
//! can run it ([`accel`]), its guest's processes ([`group`]), one guest's run ([`guest`]) and performance mode
//! ([`perf`]), and the root of a guest of another architecture ([`root`]).

pub mod accel;
pub mod cache;
pub mod group;
pub mod guest;
pub mod image;
pub mod perf;
pub mod root;

/// A stop signal came while a guest or a probe ran: the guest is stopped, the command ends.
#[derive(Debug, thiserror::Error)]
#[error("stopped by signal {0}")]
pub struct Stopped(pub i32);
