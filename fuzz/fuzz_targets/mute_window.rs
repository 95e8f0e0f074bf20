//! Mute windows from outside: any window, reason and actor either makes a mute that starts
//! before it ends and ends within the bound, or is refused as invalid with nothing kept.
#![no_main]

// The body is status_fuzz_targets::mute_window (fuzz-targets/), which the ordinary suite replays.
libfuzzer_sys::fuzz_target!(|input: (bool, u64, i64, i64, String, Option<String>)| {
    status_fuzz_targets::mute_window(input)
});
