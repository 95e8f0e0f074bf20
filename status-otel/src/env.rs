//! The `OTEL_*` environment variables the builder reads: which exporters are wanted, the
//! headers that cannot be sent, the timeout.

use std::time::Duration;

use crate::{Error, ErrorKind};

/// Whether a signal's `OTEL_*_EXPORTER` asks for it: unset, empty or `otlp` yes, `none` no.
///
/// # Errors
///
/// Any other exporter (`console`, `prometheus`, …): this crate sends OTLP only.
pub(crate) fn exporter_wanted(var: &str) -> Result<bool, Error> {
    let Ok(value) = std::env::var(var) else {
        return Ok(true);
    };
    let mut wanted = value.trim().is_empty();
    for exporter in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match exporter {
            "otlp" => wanted = true,
            "none" => {}
            other => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("{var}={value}: only otlp (or none) is built in, not {other}"),
                ))
            }
        }
    }
    Ok(wanted)
}

/// The names of the headers in an `OTEL_EXPORTER_OTLP_*HEADERS` value (`name=value` pairs
/// apart by commas, values percent-encoded) that cannot be sent: a name or a value HTTP does
/// not allow (a line break, a control character), or a pair without `=`.
pub(crate) fn refused_headers(value: &str) -> Vec<String> {
    value
        .split(',')
        .filter(|pair| !pair.trim().is_empty())
        .filter_map(|pair| {
            let Some((name, value)) = pair.split_once('=') else {
                return Some(pair.trim().chars().take(64).collect());
            };
            let name = name.trim();
            let decoded = percent_decode(value.trim());
            let sendable = http::HeaderName::from_bytes(name.as_bytes()).is_ok()
                && http::HeaderValue::from_bytes(&decoded).is_ok();
            (!sendable).then(|| name.escape_debug().take(64).collect())
        })
        .collect()
}

/// `%XX` sequences decoded; anything else kept as it is.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// `OTEL_EXPORTER_OTLP_TIMEOUT` in milliseconds, 10 s when unset or unreadable.
pub(crate) fn env_timeout() -> Duration {
    std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::refused_headers;

    #[test]
    fn headers_that_cannot_be_sent_are_named() {
        assert!(refused_headers("api-key=abc,x-tenant=shop%20one").is_empty());
        assert_eq!(
            refused_headers("api-key=abc%0D%0AX-Evil: 1,ok=1"),
            ["api-key"]
        );
        assert_eq!(refused_headers("bad name=1"), ["bad name"]);
        assert_eq!(refused_headers("novalue"), ["novalue"]);
        assert!(refused_headers("").is_empty());
    }
}
