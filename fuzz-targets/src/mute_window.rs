//! Mute windows from outside: any window, reason and actor either makes a mute that starts
//! before it ends and ends within the bound, or is refused as invalid with nothing kept.

use std::time::Duration;

use chrono::{DateTime, Utc};
use status_core::{Dependency, Registry};
use status_core::{MuteWindow, MAX_MUTE_AHEAD};

/// One input (see the module).
pub fn mute_window(input: (bool, u64, i64, i64, String, Option<String>)) {
    let (between, ttl_ms, start_ms, end_ms, reason, actor) = input;
    let registry = Registry::new();
    registry
        .add_passive(Dependency::passive("db").build_info().expect("valid"))
        .expect("registered");
    let window = if between {
        let at = |ms: i64| DateTime::<Utc>::from_timestamp_millis(ms);
        let (Some(start), Some(end)) = (at(start_ms), at(end_ms)) else {
            return;
        };
        MuteWindow::Between { start, end }
    } else {
        MuteWindow::For(Duration::from_millis(ttl_ms))
    };
    match registry.mute("db", window, &reason, actor.as_deref()) {
        Ok(mute) => {
            assert!(mute.start < mute.until, "{mute:?}");
            assert!(mute.start >= mute.set_at, "{mute:?}");
            let ahead = (mute.until - mute.set_at)
                .to_std()
                .expect("ends after it is set");
            assert!(ahead <= MAX_MUTE_AHEAD, "{mute:?}");
            assert!(!mute.reason.trim().is_empty());
            assert_eq!(registry.mutes().len(), 1);
        }
        Err(error) => {
            assert!(error.is_invalid(), "{error}");
            assert!(registry.mutes().is_empty(), "a refused mute is not kept");
        }
    }
}
