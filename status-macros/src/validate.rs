//! Compile-time validation of ids, urgencies, statuses and durations.

use syn::LitStr;

/// Checks `[a-z0-9][a-z0-9._-]*`, at most 128 bytes.
pub(crate) fn id(lit: &LitStr) -> syn::Result<String> {
    let value = lit.value();
    let valid = value.len() <= 128
        && value
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && value.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        });
    if valid {
        Ok(value)
    } else {
        Err(syn::Error::new_spanned(
            lit,
            format!(
                "invalid id {value:?}: use lower-case letters, digits, '.', '_' and '-', \
                 starting with a letter or digit (at most 128 bytes)"
            ),
        ))
    }
}

/// The `Urgency` variant named by `lit`.
pub(crate) fn urgency(lit: &LitStr) -> syn::Result<&'static str> {
    match lit.value().to_ascii_lowercase().as_str() {
        "required" => Ok("Required"),
        "strong" => Ok("Strong"),
        "weak" => Ok("Weak"),
        "none" => Ok("None"),
        other => Err(syn::Error::new_spanned(
            lit,
            format!("unknown urgency {other:?}: expected \"required\", \"strong\", \"weak\" or \"none\""),
        )),
    }
}

/// The `CheckStatus` variant named by an identifier such as `MINOR` or `Minor`.
pub(crate) fn status(ident: &syn::Ident) -> syn::Result<&'static str> {
    match ident.to_string().to_ascii_uppercase().as_str() {
        "OK" => Ok("Ok"),
        "MINOR" => Ok("Minor"),
        "MAJOR" => Ok("Major"),
        "OUTAGE" => Ok("Outage"),
        other => Err(syn::Error::new_spanned(
            ident,
            format!("unknown status {other}: expected OK, MINOR, MAJOR or OUTAGE"),
        )),
    }
}

/// Milliseconds in `"250ms"`, `"2s"`, `"1m"` or `"1h"`; never zero.
pub(crate) fn duration(lit: &LitStr) -> syn::Result<u64> {
    let value = lit.value();
    let error = |why: &str| {
        syn::Error::new_spanned(
            lit,
            format!(
                "invalid duration {value:?}: {why}; write e.g. \"250ms\", \"2s\", \"1m\" or \"1h\""
            ),
        )
    };
    let text = value.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| error("missing unit"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| error("missing number"))?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(error("unknown unit")),
    };
    let millis = number
        .checked_mul(factor)
        .ok_or_else(|| error("too long"))?;
    if millis == 0 {
        return Err(error("it must be longer than zero"));
    }
    Ok(millis)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    fn accepted(id: &str) -> bool {
        super::id(&syn::LitStr::new(id, proc_macro2::Span::call_site())).is_ok()
    }

    proptest! {
        /// The id rule is written twice (a proc-macro crate cannot call the crate that
        /// re-exports it); this pins the two to the same answer.
        #[test]
        fn prop_the_macros_accept_exactly_the_ids_the_core_accepts(
            id in prop_oneof![
                "[a-z0-9._-]{0,130}",
                "[a-zA-Z0-9._ /-]{0,12}",
                any::<String>(),
            ]
        ) {
            prop_assert_eq!(accepted(&id), status_core::DependencyId::new(&id).is_ok(), "{:?}", id);
        }
    }
}
