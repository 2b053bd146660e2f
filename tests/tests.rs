//! rrr's integration tests: one test binary (one link, one place for the
//! harness in [`util`]), each module a part of the product, every test
//! running the real `rrr` binary on temp trees, against a real
//! `rsync --daemon` on 127.0.0.1 where it mirrors, and against the real
//! YAML::Syck where it checks Perl fidelity.

mod util;

mod cli;
mod convergence;
mod demo;
mod fetch_progress;
mod first_attempt;
mod fleet;
mod format;
mod freshness;
mod harness;
mod human_output;
mod locks;
mod metrics_http;
mod mixed_writers;
mod names;
mod names_bytes;
mod operator;
mod operator_logs;
mod origin;
mod origin_hash;
mod packaging;
mod patterns;
mod perl_entry;
mod perl_reference;
mod perl_reference_trust;
mod pins_mirror;
mod probe;
mod props;
mod retry_drops;
mod rmirror_basic;
mod rmirror_bytes;
mod rmirror_connections;
mod rmirror_deletes;
mod rmirror_failures;
mod rmirror_hostile;
mod rmirror_interrupts;
mod rmirror_loop;
mod rmirror_mass_deletes;
mod rmirror_missing;
mod rmirror_ownership;
mod rmirror_principal_forms;
mod rmirror_quarantine;
mod rrrgo;
mod sys_layer;
mod textfile_warnings;
mod traces;
mod trigger;
mod trust;
mod trust_files;
mod trust_mirror;
mod upstreams;
mod verify;
mod visible;
mod watch;
mod watch_hook;
mod watch_storm;
