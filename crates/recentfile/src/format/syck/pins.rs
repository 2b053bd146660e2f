//! Pins of `syck.rs`, the port of the Perl and Syck scalar rules rrr needs
//! to read and write as the Perl tools do (Perl's `looks_like_number`,
//! `grok_infnan`, Syck's implicit types). Expectations come from perl 5.36
//! and YAML::Syck 1.34, run on this machine.
