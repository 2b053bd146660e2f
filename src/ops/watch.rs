//! `rrr watch`: the origin daemon's options and entry point; the daemon
//! itself is [`crate::origin::watch`].

pub use crate::origin::watch::{run, Options, MAX_BATCH_ENTRIES};
