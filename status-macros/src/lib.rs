//! Procedural macros of `status`: declare a dependency or a feature in a line, validated at
//! compile time. Use them through `status_core` with its `macros` feature:
//! `#[status_core::dependency(...)]`, `status_core::feature!{...}` and `status_core::group!{...}`.
//!
//! Parsing and validation live in `parse`, code generation in `expand`; generated code names
//! only `::status_core` paths.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod expand;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// Turns an `async fn` into a function returning a fully described
/// `::status_core::Dependency`, ready to register.
///
/// Arguments (a pool, a client) become the generated function's: each run of the check gets
/// its own clone of them, so they must be `Clone + Send + Sync + 'static`. Returning `Result<T, E>` makes it a ping (`Ok` is OK,
/// `Err` is OUTAGE); returning a `CheckStatus`, a `(CheckStatus, message)` pair or a
/// `CheckOutcome` makes it a tiered check.
///
/// | argument | value | default |
/// |---|---|---|
/// | `id` | `[a-z0-9][a-z0-9._-]*` | the function's name, `_` turned to `-` |
/// | `urgency` | `"required"`, `"strong"`, `"weak"`, `"none"` | `"required"` |
/// | `description`, `kind`, `service_pool`, `documentation_url` | text | |
/// | `timeout`, `period` | `"250ms"`, `"2s"`, `"1m"`, `"1h"` | 10 s, 30 s |
/// | `tags`, `depends_on` | `["a", "b"]` | |
/// | `failures_before_outage`, `successes_before_recovery` | integer ≥ 1 | 3, 1 |
///
/// ```text
/// #[status_core::dependency(id = "primary-db", urgency = "required", timeout = "2s", period = "10s")]
/// async fn primary_db() -> Result<(), std::io::Error> {
///     Ok(())
/// }
///
/// registry.add(primary_db())?;
/// ```
#[proc_macro_attribute]
pub fn dependency(args: TokenStream, item: TokenStream) -> TokenStream {
    parse::dependency(args.into(), item.into())
        .map_or_else(syn::Error::into_compile_error, |dep| {
            expand::dependency(&dep)
        })
        .into()
}

/// Declares a `::status_core::Feature` and its requirements, validated at compile time.
///
/// ```text
/// let checkout = status_core::feature! {
///     name = "checkout",
///     description = "Pay for the cart",
///     requires = { "payments-api": MINOR, "primary-db": MAJOR },
///     requires_system = MAJOR,
/// };
/// registry.add_feature(checkout)?;
/// ```
#[proc_macro]
pub fn feature(input: TokenStream) -> TokenStream {
    parse::feature(input.into())
        .map_or_else(syn::Error::into_compile_error, |f| expand::feature(&f))
        .into()
}

/// Declares a probe `::status_core::Group`, validated at compile time: a valid name, ids and
/// tags each named once, at least one of them, a status it fails on other than OK.
///
/// ```text
/// let cache = status_core::group! {
///     name = "cache",
///     tags = ["cache"],
///     dependencies = ["session-store"],
///     fails_on = MINOR,
///     rotation = false,
/// };
/// registry.add_group(cache)?;
/// ```
#[proc_macro]
pub fn group(input: TokenStream) -> TokenStream {
    parse::group(input.into())
        .map_or_else(syn::Error::into_compile_error, |def| expand::group(&def))
        .into()
}
