//! What Redis and etcd hand back, as raw bytes: a record either validates or is skipped with
//! a reason the metrics count; nothing listed has an id or data center no store would write;
//! a page's cursor is its last member; every line of what fails is a row or counted forged.
#![no_main]

// The body is status_fuzz_targets::store_records (fuzz-targets/), which the ordinary suite replays.
libfuzzer_sys::fuzz_target!(|input: status_fuzz_targets::StoreRecordsInput<'_>| {
    status_fuzz_targets::store_records(input)
});
