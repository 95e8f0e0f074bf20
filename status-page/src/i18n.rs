//! The public page's languages: one Fluent file each (`web/locales/<tag>/statuspage.ftl`,
//! compiled in by the build script, so that a translator adds a language with a file and no
//! code), chosen by `?lang=` or else by `Accept-Language`; English when nothing matches, and
//! for any message a translation lacks.

use std::sync::LazyLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use unic_langid::LanguageIdentifier;

include!(concat!(env!("OUT_DIR"), "/locales.rs"));

/// One language: its tag, the key its rendered page is kept under, its messages.
pub(crate) struct Locale {
    tag: &'static str,
    key: &'static str,
    id: LanguageIdentifier,
    bundle: FluentBundle<FluentResource>,
}

impl std::fmt::Debug for Locale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locale").field("tag", &self.tag).finish()
    }
}

/// Every language compiled in; English first.
static ALL: LazyLock<Vec<Locale>> = LazyLock::new(|| {
    let mut all: Vec<Locale> = LOCALES
        .iter()
        .filter_map(|(tag, key, source)| {
            let id: LanguageIdentifier = tag.parse().ok()?;
            let resource = match FluentResource::try_new((*source).to_owned()) {
                Ok(r) => r,
                Err((r, errors)) => {
                    tracing::warn!(
                        language = tag,
                        "the status page's messages have errors: {errors:?}"
                    );
                    r
                }
            };
            let mut bundle = FluentBundle::new_concurrent(vec![id.clone()]);
            // No Unicode isolation marks: the page is HTML, its values are plain words.
            bundle.set_use_isolating(false);
            if let Err(errors) = bundle.add_resource(resource) {
                tracing::warn!(
                    language = tag,
                    "the status page's messages clash: {errors:?}"
                );
            }
            Some(Locale {
                tag,
                key,
                id,
                bundle,
            })
        })
        .collect();
    all.sort_by_key(|l| l.tag != "en");
    all
});

/// The language `lang` names (`?lang=de`), or else the best of `accept`
/// (`Accept-Language: de-CH, de;q=0.9, en;q=0.5`); English when none matches.
pub(crate) fn negotiate(lang: Option<&str>, accept: Option<&str>) -> &'static Locale {
    let all = &*ALL;
    let english = &all[0];
    let requested: Vec<LanguageIdentifier> = match lang.filter(|l| !l.trim().is_empty()) {
        Some(lang) => lang.parse().into_iter().collect(),
        None => accept.map_or_else(Vec::new, weighed),
    };
    let available: Vec<LanguageIdentifier> = all.iter().map(|l| l.id.clone()).collect();
    let chosen = fluent_langneg::negotiate_languages(
        &requested,
        &available,
        Some(&english.id),
        fluent_langneg::NegotiationStrategy::Lookup,
    );
    chosen
        .first()
        .and_then(|id| all.iter().find(|l| l.id == **id))
        .unwrap_or(english)
}

/// The most entries of an `Accept-Language` read: a header of thousands costs no more.
const MAX_ACCEPTED: usize = 32;

/// The languages `Accept-Language` names, the most wanted first (RFC 9110 §12.5.4: by their
/// `q`, 1 when not given, in the header's order among equals); those weighed 0, `*` and tags
/// that are not ones are left out.
fn weighed(accept: &str) -> Vec<LanguageIdentifier> {
    let mut entries: Vec<(f32, LanguageIdentifier)> = accept
        .split(',')
        .take(MAX_ACCEPTED)
        .filter_map(|entry| {
            let mut parts = entry.split(';').map(str::trim);
            let tag = parts.next().filter(|t| !t.is_empty() && *t != "*")?;
            let q = parts
                .find_map(|p| {
                    let (key, value) = p.split_once('=')?;
                    key.trim()
                        .eq_ignore_ascii_case("q")
                        .then(|| value.trim().parse::<f32>().ok())
                })
                .unwrap_or(Some(1.0))?;
            (q > 0.0 && q <= 1.0).then_some(())?;
            Some((q, tag.parse().ok()?))
        })
        .collect();
    // Stable: equal weights keep the header's order.
    entries.sort_by(|a, b| b.0.total_cmp(&a.0));
    entries.into_iter().map(|(_, id)| id).collect()
}

/// Every language, for the page's switcher: its tag and its own name.
pub(crate) fn languages() -> Vec<(&'static str, String)> {
    ALL.iter()
        .map(|l| (l.tag, l.text("language-name", &[])))
        .collect()
}

impl Locale {
    /// Its tag: `en`, `de`.
    pub(crate) fn tag(&self) -> &'static str {
        self.tag
    }

    /// The key its rendered page is kept under.
    pub(crate) fn key(&self) -> &'static str {
        self.key
    }

    /// Message `id` with `args`; the English one when this language lacks it, and the id
    /// itself when no language has it (never a panic on a page).
    pub(crate) fn text(&self, id: &str, args: &[(&str, FluentValue<'_>)]) -> String {
        let english = &ALL[0];
        for locale in [self, english] {
            let Some(pattern) = locale.bundle.get_message(id).and_then(|m| m.value()) else {
                continue;
            };
            let mut fluent_args = FluentArgs::new();
            for (name, value) in args {
                fluent_args.set(*name, value.clone());
            }
            let mut errors = Vec::new();
            let text = locale
                .bundle
                .format_pattern(pattern, Some(&fluent_args), &mut errors);
            return text.into_owned();
        }
        id.to_owned()
    }

    /// A share as a percentage with three decimals, in this language's way: `99.950 %`,
    /// `99,950 %`.
    pub(crate) fn percent(&self, share: f64) -> String {
        let text = format!("{:.3} %", share * 100.0);
        let separator = self.text("decimal-separator", &[]);
        if separator == "." {
            text
        } else {
            text.replace('.', &separator)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_language_is_chosen_by_lang_then_accept_language_then_english() {
        assert_eq!(negotiate(Some("de"), Some("en")).tag(), "de");
        assert_eq!(
            negotiate(None, Some("de-CH, de;q=0.9, en;q=0.5")).tag(),
            "de"
        );
        assert_eq!(negotiate(None, Some("fr, en;q=0.3")).tag(), "en");
        assert_eq!(negotiate(Some("xx"), Some("de")).tag(), "en");
        assert_eq!(negotiate(None, None).tag(), "en");
        assert_eq!(negotiate(Some("not a tag!"), None).tag(), "en");
    }

    #[test]
    fn accept_language_is_read_by_its_weights() {
        assert_eq!(negotiate(None, Some("en;q=0.1, de;q=0.9")).tag(), "de");
        assert_eq!(negotiate(None, Some("de;q=0, en")).tag(), "en");
        assert_eq!(negotiate(None, Some("de;q=0")).tag(), "en", "refused");
        assert_eq!(negotiate(None, Some("fr, de;q=0.5, en;q=0.4")).tag(), "de");
        assert_eq!(
            negotiate(None, Some("de;q=0.5, en;q=0.5")).tag(),
            "de",
            "in order"
        );
        assert_eq!(
            negotiate(None, Some("de;q=x, en;q=0.2")).tag(),
            "en",
            "no weight"
        );
        assert_eq!(negotiate(None, Some("*;q=1, de;q=0.1")).tag(), "de");
        // Past the first 32 entries, nothing is read.
        let long = format!("{}de", "xx;q=0.9, ".repeat(40));
        assert_eq!(negotiate(None, Some(&long)).tag(), "en");
    }

    #[test]
    fn every_language_has_every_message_english_has() {
        let english = &ALL[0];
        for locale in ALL.iter() {
            for entry in english.bundle_ids() {
                assert!(
                    locale.bundle.has_message(&entry),
                    "{} lacks {entry}",
                    locale.tag
                );
            }
        }
        let de = negotiate(Some("de"), None);
        assert_eq!(
            de.text("incident-outage", &[("what", "Online-Shop".into())]),
            "Ausfall: Online-Shop"
        );
        assert_eq!(de.percent(0.9995), "99,950 %");
        assert_eq!(de.text("no-such-message", &[]), "no-such-message");
    }

    impl Locale {
        fn bundle_ids(&self) -> Vec<String> {
            LOCALES
                .iter()
                .find(|(tag, ..)| *tag == self.tag)
                .map(|(.., source)| {
                    source
                        .lines()
                        .filter_map(|l| l.split_once(" = ").map(|(id, _)| id.trim().to_owned()))
                        .filter(|id| !id.starts_with('#') && !id.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        }
    }
}
