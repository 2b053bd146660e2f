//! Freshness for the tools mirror networks already run (issue 35): Debian
//! ftpsync traces ([`trace`], pure, and [`trace_write`], the files),
//! Prometheus metrics over HTTP ([`metrics_http`]) and `rrr probe`'s
//! survey of mirrors ([`probe`]).

pub mod metrics_http;
pub mod probe;
pub mod trace;
pub mod trace_write;
