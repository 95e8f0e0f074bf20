//! The simulator's topology language: any text either builds, into any simulation, or is
//! refused with an error that names the whole topology or a word that is in it.
#![no_main]

// The body is status_fuzz_targets::topology (fuzz-targets/), which the ordinary suite replays.
libfuzzer_sys::fuzz_target!(|input: &str| status_fuzz_targets::topology(input));
