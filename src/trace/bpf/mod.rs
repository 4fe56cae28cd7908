//! The BPF base the instruments' programs stand on: an assembler for the few instructions they
//! use ([`asm`]), the kernel's BTF, for the offsets of the structures they read ([`btf`]), and
//! where their records go ([`records`]). Loading, maps and the ring's memory are in `crate::sys`.

pub mod asm;
pub mod btf;
pub mod records;
