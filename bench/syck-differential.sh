#!/usr/bin/env bash
# The YAML::Syck differential tests of tests/format.rs with many more
# generated names than CI draws (CI: about 5,000 names, under a second).
# Needs perl and YAML::Syck 1.34 (apt-get install libyaml-syck-perl).
#
#   bench/syck-differential.sh [RANDOM_NAMES]   (default 200000)
#
# 200000 random draws give about 150,000 distinct names; the run takes
# about 15 s after the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
RRR_SYCK_CASES="${1:-200000}" cargo test --release --locked --test integration \
    format::emitter_quotes_every_generated_name_as_yaml_syck_does \
    -- --exact --nocapture
RRR_SYCK_CASES="${1:-200000}" cargo test --release --locked --test integration \
    format::yaml_syck_loads_what_rrr_writes_and_rrr_reads_what_yaml_syck_writes \
    -- --exact --nocapture
