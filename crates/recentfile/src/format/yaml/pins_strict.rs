//! Pins of the YAML readers that work item by item without a YAML parser:
//! the strict path, the two-thread split, the outline and the item scanner
//! (`yaml.rs` up to `utf8_prefix`). Expectations come from YAML::Syck 1.34
//! where a byte layout is in question.
