//! What rrr shows people: the one channel for messages ([`log`]), progress
//! bars only on a terminal ([`progress`]), times and sizes for people
//! (`human`), help and man page text ([`manual`]), and the Prometheus text
//! format of node-exporter's textfiles (`prometheus`).

pub(crate) mod human;
pub mod log;
pub mod manual;
pub mod progress;
pub(crate) mod prometheus;
