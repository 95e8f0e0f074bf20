//! The admin API's bodies from outside: whatever is sent to a mute, a drain or an override,
//! with the token or without, the answer is never a 5xx; a refusal is a JSON error and
//! changes nothing (the mutes, the holds and the features read the same after).
#![no_main]

// The body is status_fuzz_targets::admin_json (fuzz-targets/), which the ordinary suite replays.
libfuzzer_sys::fuzz_target!(|input: (u8, bool, &[u8])| status_fuzz_targets::admin_json(input));
