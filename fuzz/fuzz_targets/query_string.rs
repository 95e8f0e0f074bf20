//! Query strings from outside, on every route that reads one: the probes' `?format=`,
//! `?exclude=`, `?strict=`, the dashboard's filter, uptime windows, the month report, the
//! audit trail's pages, the history pages. Whatever the query, the answer is never a 5xx, and
//! a refusal is a 400 with a JSON error saying why.
#![no_main]

// The body is status_fuzz_targets::query_string (fuzz-targets/), which the ordinary suite replays.
libfuzzer_sys::fuzz_target!(|input: (u8, &[u8])| status_fuzz_targets::query_string(input));
