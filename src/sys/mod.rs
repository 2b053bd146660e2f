//! The system layer: what rrr asks of the operating system beyond plain
//! files, each in one place: reading `/proc` (`proc`), running child
//! processes (`child`) and rsync (`rsync`), paths of any length below a
//! root (`tree`), SIGINT/SIGTERM/SIGUSR1/SIGHUP ([`signals`]), the one
//! clock ([`clock`], `--now`, and local time as libc breaks it down),
//! returning freed heap (`memory`), sd_notify (`notify`) and the bytes
//! a process received from the network (`netbytes`).
//!
//! `unsafe_code` is denied in the whole workspace (Cargo.toml's
//! `[workspace.lints]`, tests included); the modules of this layer that
//! call libc where neither std nor `nix` offers the call are the only
//! exceptions, each allowed below with its reason, and each `unsafe` block
//! in them says why it holds. The rest of rrr calls the operating system
//! through std and `nix`, or through the safe functions here.
//!
//! Linux only, as rrr is (inotify, `/proc`, `PR_SET_PDEATHSIG`).

// Code between fork and exec (Command::pre_exec) for the guard process:
// std has no safe way to run it; async-signal-safe system calls only.
#[allow(unsafe_code)]
pub(crate) mod child;
// localtime_r: the local time as libc breaks it down (nix has no wrapper).
#[allow(unsafe_code)]
pub mod clock;
// malloc_trim: glibc only, no wrapper.
#[allow(unsafe_code)]
pub(crate) mod memory;
// socket/setsockopt/send/recv of a netlink sock_diag socket (nix lacks the family).
#[allow(unsafe_code)]
pub(crate) mod netbytes;
pub(crate) mod notify;
pub(crate) mod proc;
pub(crate) mod rsync;
// sigaction with handlers that only touch atomics and errno and call kill(2).
#[allow(unsafe_code)]
pub mod signals;
pub(crate) mod tree;
