//! The BPF base the instruments' programs stand on: an assembler for the few instructions they
//! use ([`asm`]) and the kernel's BTF, for the offsets of the structures they read ([`btf`]).
//! Loading, maps and queues are system calls, in `crate::sys`.

pub mod asm;
pub mod btf;
