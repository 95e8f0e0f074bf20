//! Where the cause is: one log line per change of level, with the root of the error chain,
//! and the same root in the text views.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use status_core::{check, CheckStatus, Dependency, Urgency};

use crate::support::{registry, Logged};

/// An error whose cause says what happened, as a client's does.
#[derive(Debug)]
struct Request(std::io::Error);

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("error sending request for url")
    }
}

impl std::error::Error for Request {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[tokio::test(start_paused = true)]
async fn a_change_of_level_is_one_line_with_its_cause_and_text_views_show_the_root() {
    let (logged, _guard) = Logged::capture();
    let registry = registry();
    let up = Arc::new(Mutex::new(true));
    let state = Arc::clone(&up);
    registry
        .add(
            Dependency::builder(
                "payments",
                check::ping(move || {
                    let up = *state.lock().unwrap();
                    async move {
                        if up {
                            Ok(())
                        } else {
                            Err(Request(std::io::Error::other("Connection refused")))
                        }
                    }
                }),
            )
            .urgency(Urgency::Required)
            .period(Duration::from_secs(3600))
            .failures_before_outage(1)
            .build()
            .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    assert!(
        !logged.text().contains("payments is"),
        "a first OK is no change: {}",
        logged.text()
    );
    *up.lock().unwrap() = false;
    registry.refresh("payments").await.unwrap();
    registry.refresh("payments").await.unwrap();
    let lines: Vec<String> = logged
        .text()
        .lines()
        .filter(|l| l.contains("payments is"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one line per change, not per check: {lines:?}"
    );
    assert!(
        lines[0].contains("ERROR")
            && lines[0].contains(
                "payments is OUTAGE (was OK): error sending request for url: Connection refused"
            ),
        "{}",
        lines[0]
    );
    // The text view says the root too.
    let verbose = registry.report().verbose();
    assert!(
        verbose.contains("[-]payments failed: error sending request for url: Connection refused"),
        "{verbose}"
    );
    *up.lock().unwrap() = true;
    registry.refresh("payments").await.unwrap();
    let recovered: Vec<String> = logged
        .text()
        .lines()
        .filter(|l| l.contains("payments is OK again"))
        .map(str::to_owned)
        .collect();
    assert_eq!(recovered.len(), 1, "{}", logged.text());
    assert!(recovered[0].contains("INFO"), "{}", recovered[0]);
    assert_eq!(registry.condition(), CheckStatus::Ok);
}
