//! The fuzz targets' bodies: each takes one input, as `cargo fuzz` hands it (decoded by
//! `arbitrary`), and asserts what must hold of anything from outside. `fuzz/` runs them
//! under libFuzzer (`scripts/fuzz`, coverage-guided, with the sanitizer); the ordinary suite
//! replays them (`tests/replay.rs`): every kept regression, the local corpus when there is
//! one, and a few thousand seeded inputs each, in seconds and with the workspace's own build.

mod common;

pub mod admin_json;
pub mod fleet_record;
pub mod grpc_service;
pub mod mute_window;
pub mod query_string;
pub mod store_records;
pub mod topology;

pub use self::admin_json::admin_json;
pub use self::fleet_record::{fleet_record, FleetRecordInput};
pub use self::grpc_service::grpc_service;
pub use self::mute_window::mute_window;
pub use self::query_string::query_string;
pub use self::store_records::{store_records, StoreRecordsInput};
pub use self::topology::topology;
