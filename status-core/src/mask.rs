//! Credentials never leave the process through a report: the userinfo of URLs and the values
//! of `password=`-like pairs are masked in every message, in every view.

use std::borrow::Cow;

/// What replaces a masked secret.
pub const MASK: &str = "***";

/// Keys whose values are secrets, matched case-insensitively at the end of a key
/// (`db_password`, `X-Api-Key`, `client_secret` …).
const SECRET_KEYS: [&str; 10] = [
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "access_key",
    "credentials",
];

/// `text` with credentials masked: the userinfo of URLs (`postgres://app:hunter2@db/x` →
/// `postgres://***@db/x`) and the values of pairs whose key names a secret
/// (`password=hunter2`, `"apiKey": "abc"`, `token: abc` → `***`).
///
/// Health endpoints leaking connection strings is a common complaint against health
/// libraries; the engine applies this to every message, error and description it records.
///
/// # Example
///
/// ```
/// use status_core::mask_credentials;
///
/// assert_eq!(
///     mask_credentials("cannot connect to redis://:s3cret@cache:6379/0"),
///     "cannot connect to redis://***@cache:6379/0",
/// );
/// assert_eq!(
///     mask_credentials("host=db user=app password=s3cret sslmode=require"),
///     "host=db user=app password=*** sslmode=require",
/// );
/// assert_eq!(mask_credentials("all good"), "all good");
/// ```
#[must_use]
pub fn mask_credentials(text: &str) -> Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("://") && !SECRET_KEYS.iter().any(|k| lower.contains(k)) {
        return Cow::Borrowed(text);
    }
    let mut spans = userinfo_spans(text);
    spans.extend(secret_value_spans(text, &lower));
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            continue; // overlapping spans: the first one masked it already
        }
        out.push_str(&text[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

fn ends_token(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`')
}

/// The byte spans of the userinfo of every URL in `text`.
fn userinfo_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let authority_end = text[start..]
            .find(|c: char| ends_token(c) || matches!(c, '/' | '?' | '#'))
            .map_or(text.len(), |i| start + i);
        if let Some(at) = text[start..authority_end].rfind('@') {
            if at > 0 {
                spans.push((start, start + at));
            }
        }
        from = start;
    }
    spans
}

/// The byte spans of the values of `key=value` and `key: value` pairs whose key names a
/// secret.
fn secret_value_spans(text: &str, lower: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    for key in SECRET_KEYS {
        let mut from = 0;
        while let Some(found) = lower[from..].find(key) {
            let key_end = from + found + key.len();
            from = key_end;
            // The key must end here: `tokens=3` is not a token.
            if bytes
                .get(key_end)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                continue;
            }
            let mut i = key_end;
            if matches!(bytes.get(i), Some(b'"' | b'\'')) {
                i += 1;
            }
            while bytes.get(i) == Some(&b' ') {
                i += 1;
            }
            if !matches!(bytes.get(i), Some(b'=' | b':')) {
                continue;
            }
            i += 1;
            while bytes.get(i) == Some(&b' ') {
                i += 1;
            }
            let quote = match bytes.get(i) {
                Some(q @ (b'"' | b'\'')) => {
                    i += 1;
                    Some(*q)
                }
                _ => None,
            };
            let rest = &text[i..];
            let len = match quote {
                Some(q) => rest.find(char::from(q)).unwrap_or(rest.len()),
                None => rest
                    .find(|c: char| ends_token(c) || matches!(c, '&' | ';' | ',' | ')' | '}' | ']'))
                    .unwrap_or(rest.len()),
            };
            if len > 0 {
                spans.push((i, i + len));
            }
        }
    }
    spans
}

/// `text` masked, as an owned string (no copy when nothing was masked and it is owned).
pub(crate) fn masked(text: String) -> String {
    match mask_credentials(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(masked) => masked,
    }
}

#[cfg(test)]
mod tests {
    use super::mask_credentials as m;

    #[test]
    fn masks_userinfo_of_urls() {
        assert_eq!(m("postgres://app:pw@db:5432/x"), "postgres://***@db:5432/x");
        assert_eq!(m("http://user@host/a@b"), "http://***@host/a@b");
        assert_eq!(
            m("see https://example.com/x@y"),
            "see https://example.com/x@y"
        );
        assert_eq!(
            m("a redis://:p@h b mysql://u:p@h2"),
            "a redis://***@h b mysql://***@h2"
        );
    }

    #[test]
    fn masks_secret_pairs() {
        assert_eq!(m("password=abc&user=x"), "password=***&user=x");
        assert_eq!(
            m(r#"{"apiKey": "abc", "n": 1}"#),
            r#"{"apiKey": "***", "n": 1}"#
        );
        assert_eq!(m("Token: abc def"), "Token: *** def");
        assert_eq!(m("DB_PASSWORD='a b' ok"), "DB_PASSWORD='***' ok");
        assert_eq!(m("client_secret=s;x=1"), "client_secret=***;x=1");
    }

    #[test]
    fn leaves_harmless_text_alone() {
        for text in [
            "tokens=3",
            "password reset mail sent",
            "secretary",
            "up 3 ms",
            "",
        ] {
            assert!(matches!(m(text), std::borrow::Cow::Borrowed(_)), "{text}");
        }
    }
}
