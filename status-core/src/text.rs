//! Text from operators (reasons, actors): printable, and not blank to the eye.
//!
//! It reaches logs, the verbose probes and the dashboard, so it may not hold control
//! characters (a newline could forge a log line or a `readyz check passed`, an escape could
//! recolour a terminal) nor the bidirectional controls that make text read otherwise than it
//! is. Text made only of invisible characters (zero-width spaces and the like) is blank.

use crate::Error;

/// The longest reason accepted (of an override or a hold), in characters.
pub const MAX_REASON_LEN: usize = 1024;

/// The longest actor kept, in characters; longer ones are cut.
pub const MAX_ACTOR_CHARS: usize = 128;

/// Characters that show nothing: whitespace, zero-width and joiner characters, fillers, the
/// Braille blank, musical formatting, tag characters and variation selectors.
fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2060}'..='\u{2064}'
                | '\u{206A}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{2800}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E007F}'
                | '\u{E0100}'..='\u{E01EF}'
        )
}

/// Control characters (C0, DEL, C1), line and paragraph separators, bidirectional
/// embeddings, overrides and isolates.
fn is_forbidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// Whether `text` shows nothing.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(is_invisible)
}

/// `text` trimmed, if it may be shown as the `what` of an operator's action.
///
/// # Errors
///
/// [`Error::is_invalid`] if it holds a forbidden character, or shows nothing.
pub fn printable<'a>(what: &str, text: &'a str) -> Result<&'a str, Error> {
    if text.chars().any(is_forbidden) {
        return Err(Error::invalid(format!(
            "the {what} must not contain control characters (line breaks, tabs, escapes, \
             bidirectional controls)"
        )));
    }
    if is_blank(text) {
        return Err(Error::invalid(format!("the {what} must not be empty")));
    }
    Ok(text.trim())
}

/// `text` trimmed, with its line breaks as `\n`, if it may be shown as the `what` of an
/// operator's longer writing (a postmortem): line breaks are kept (`\r\n` read as `\n`),
/// every other control character is refused.
///
/// # Errors
///
/// [`Error::is_invalid`] if it holds a forbidden character other than a line break, or
/// shows nothing.
pub fn paragraphs(what: &str, text: &str) -> Result<String, Error> {
    let text = text.replace("\r\n", "\n");
    if text.chars().any(|c| c != '\n' && is_forbidden(c)) {
        return Err(Error::invalid(format!(
            "the {what} must not contain control characters other than line breaks (tabs, \
             escapes, bidirectional controls)"
        )));
    }
    if is_blank(&text.replace('\n', "")) {
        return Err(Error::invalid(format!("the {what} must not be empty")));
    }
    Ok(text.trim().to_owned())
}

/// An optional actor: none when blank, else trimmed and cut to [`MAX_ACTOR_CHARS`].
///
/// # Errors
///
/// [`Error::is_invalid`] if it holds a forbidden character.
pub fn actor(actor: Option<&str>) -> Result<Option<String>, Error> {
    match actor {
        Some(a) if !is_blank(a) => Ok(Some(
            printable("actor", a)?
                .chars()
                .take(MAX_ACTOR_CHARS)
                .collect(),
        )),
        _ => Ok(None),
    }
}

/// The credentials of an `Authorization` header's value when its scheme is `Bearer` (in any
/// case, spaces around trimmed): how status-http's admin routes and status-mcp read a token.
///
/// ```
/// assert_eq!(status_core::text::bearer(" bearer  s3cret "), Some("s3cret"));
/// assert_eq!(status_core::text::bearer("Basic dTpw"), None);
/// assert_eq!(status_core::text::bearer("Bearer"), None);
/// ```
#[must_use]
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, credentials) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim())
}

/// Checks a reason: not blank, printable, at most [`MAX_REASON_LEN`] characters.
pub(crate) fn reason(reason: &str) -> Result<(), Error> {
    printable("reason", reason)?;
    if reason.chars().count() > MAX_REASON_LEN {
        return Err(Error::invalid("the reason must be at most 1024 characters"));
    }
    Ok(())
}

/// A time as the JSON bodies write it: RFC 3339, milliseconds, `Z`.
pub(crate) fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_of_invisible_characters_alone_is_blank() {
        // Tag characters (the ones that spell hidden text), variation selectors, the
        // Braille blank: each shows nothing.
        for text in [
            "\u{E0041}\u{E0042}",
            "\u{E0100}",
            "\u{2800}\u{200B}",
            "\u{1D173}",
            " \u{3164} ",
        ] {
            assert!(is_blank(text), "{text:?}");
            assert!(printable("reason", text).is_err(), "{text:?}");
        }
        assert!(!is_blank("a\u{E0041}"));
        assert!(!is_blank("🏳\u{FE0F}"));
    }

    #[test]
    fn paragraphs_keep_their_line_breaks_and_nothing_else() {
        assert_eq!(
            paragraphs("postmortem", " What happened.\r\n\r\nWhat changes.\n").unwrap(),
            "What happened.\n\nWhat changes."
        );
        for bad in ["tab\there", "\u{1b}[31mred", "bidi\u{202E}", "\n \n", ""] {
            assert!(
                paragraphs("postmortem", bad).unwrap_err().is_invalid(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn control_characters_are_refused() {
        for bad in [
            "deploy\nreadyz check passed",
            "nul\0",
            "\u{1b}[31mred",
            "tab\there",
            "del\u{7f}",
            "c1\u{85}",
            "line\u{2028}sep",
            "evil\u{202E}txt.exe",
            "isolate\u{2066}x",
        ] {
            let e = printable("reason", bad).unwrap_err();
            assert!(e.is_invalid(), "{bad:?}");
            assert!(e.to_string().contains("control characters"), "{e}");
        }
    }

    #[test]
    fn invisible_only_text_is_blank() {
        for blank in [
            "",
            "   ",
            "\u{200B}",
            " \u{FEFF}\u{200D} ",
            "\u{3164}",
            "\u{00AD}",
        ] {
            assert!(is_blank(blank), "{blank:?}");
            assert!(printable("reason", blank).is_err());
            assert_eq!(actor(Some(blank)).unwrap(), None);
        }
    }

    #[test]
    fn ordinary_text_passes_trimmed() {
        assert_eq!(
            printable("reason", "  déploiement 🚀 v2 ").unwrap(),
            "déploiement 🚀 v2"
        );
        assert_eq!(actor(Some(" alice ")).unwrap().as_deref(), Some("alice"));
        assert_eq!(
            actor(Some(&"x".repeat(500))).unwrap().unwrap().len(),
            MAX_ACTOR_CHARS
        );
        assert!(actor(Some("bob\r\n")).is_err());
    }
}
