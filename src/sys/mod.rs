//! The system edges: the tree walk and the one ignore set (`tree`),
//! SIGINT/SIGTERM ([`signals`]), the one clock ([`clock`], `--now`) and
//! sd_notify (`notify`).

pub mod clock;
pub(crate) mod notify;
pub mod signals;
pub(crate) mod tree;
