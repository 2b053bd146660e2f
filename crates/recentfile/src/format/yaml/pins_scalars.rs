//! Pins of the YAML line reader and the scalar decoders (`yaml.rs` from
//! `fast_parse` on): quoted and plain scalars, escapes, and the general
//! parser that takes what the line reader declines. Expectations come from
//! YAML::Syck 1.34 where Syck's reading is in question.
