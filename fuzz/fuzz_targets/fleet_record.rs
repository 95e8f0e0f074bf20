//! What a fleet's store hands back is not trusted: any bytes read as a summary give at most
//! 32 valid, distinct failing dependencies; any counts, once sanitized, excuse nobody beyond
//! the fresh instances, and sanitizing again changes nothing.
#![no_main]

// The body is status_fuzz_targets::fleet_record (fuzz-targets/), which the ordinary suite replays.
libfuzzer_sys::fuzz_target!(|input: status_fuzz_targets::FleetRecordInput<'_>| {
    status_fuzz_targets::fleet_record(input)
});
