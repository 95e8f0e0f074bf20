//! Every fuzz target, replayed in the ordinary suite: the inputs kept under
//! `fuzz/regressions/TARGET/` (crashes found and fixed), the local corpus under
//! `fuzz/corpus/TARGET/` when there is one (it is not committed), and a few thousand inputs
//! of a seeded generator, each decoded as `cargo fuzz` decodes it (`arbitrary`). Not
//! coverage-guided (that is `scripts/fuzz`, with the sanitizer); what it keeps is that no
//! target panics on what it was ever given, at every run of the test command, in seconds.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use arbitrary::{Arbitrary, Unstructured};
use status_core::Rng;

/// The longest input the generator makes, in bytes.
const MAX_LEN: u64 = 600;

/// The files of `fuzz/DIR/TARGET/`, sorted; none when it does not exist.
fn files(dir: &str, target: &str) -> Vec<(String, Vec<u8>)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(dir)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&path) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .filter_map(|e| {
            let bytes = std::fs::read(e.path()).ok()?;
            Some((e.path().display().to_string(), bytes))
        })
        .collect();
    files.sort();
    files
}

/// What `target` is given: its regressions, its corpus, then `random` seeded inputs.
fn inputs(target: &str, random: usize) -> Vec<(String, Vec<u8>)> {
    let mut inputs = files("regressions", target);
    inputs.extend(files("corpus", target));
    let mut rng = Rng::new(7).derive(target);
    for i in 0..random {
        let len = rng.below(MAX_LEN + 1);
        let mut bytes = Vec::new();
        while (bytes.len() as u64) < len {
            bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        bytes.truncate(usize::try_from(len).unwrap_or(0));
        // Some short and printable, as text-shaped targets (a topology, a query) want.
        if i % 3 == 0 {
            for b in &mut bytes {
                *b = b' ' + *b % 95;
            }
        }
        inputs.push((format!("seeded input {i}"), bytes));
    }
    inputs
}

/// Replays `target` over its inputs; a panic names the input that made it.
macro_rules! replay {
    ($target:ident: $input:ty, $random:expr) => {
        #[test]
        fn $target() {
            let inputs = inputs(stringify!($target), $random);
            let mut ran = 0;
            for (name, bytes) in &inputs {
                let decoded = <$input>::arbitrary_take_rest(Unstructured::new(bytes));
                let Ok(input) = decoded else { continue };
                ran += 1;
                let run = catch_unwind(AssertUnwindSafe(|| {
                    status_fuzz_targets::$target(input);
                }));
                assert!(
                    run.is_ok(),
                    "{}: {name} ({} bytes: {:02x?})",
                    stringify!($target),
                    bytes.len(),
                    &bytes[..bytes.len().min(64)]
                );
            }
            // Most inputs make it through the decoding: the target really ran.
            eprintln!(
                "{}: {ran} of {} inputs ran",
                stringify!($target),
                inputs.len()
            );
            assert!(ran * 3 >= $random, "{ran} of {} inputs ran", inputs.len());
        }
    };
}

replay!(admin_json: (u8, bool, &[u8]), 2_000);
replay!(fleet_record: status_fuzz_targets::FleetRecordInput<'_>, 20_000);
replay!(grpc_service: &[u8], 20_000);
replay!(mute_window: (bool, u64, i64, i64, String, Option<String>), 20_000);
replay!(query_string: (u8, &[u8]), 5_000);
replay!(store_records: status_fuzz_targets::StoreRecordsInput<'_>, 20_000);
replay!(topology: &str, 20_000);
