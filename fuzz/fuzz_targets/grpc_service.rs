//! gRPC health checking's requests from outside, as wire bytes: a request that decodes asks
//! about a service; a name that is not UTF-8 or is too long is INVALID_ARGUMENT, an unknown
//! one NOT_FOUND, a known one answered with the status `HealthService::status` gives (the
//! core's verdict), never anything else.
#![no_main]

// The body is status_fuzz_targets::grpc_service (fuzz-targets/), which the ordinary suite replays.
libfuzzer_sys::fuzz_target!(|input: &[u8]| status_fuzz_targets::grpc_service(input));
