//! Parsing and validating the macros' input.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{
    Expr, ExprArray, ExprLit, Ident, ItemFn, Lit, LitInt, LitStr, MetaNameValue, ReturnType, Token,
    Type,
};

use crate::validate;

mod group;

pub(crate) use self::group::{group, GroupDef};

/// What a check function returns, which decides its kind.
pub(crate) enum Kind {
    /// `Result<T, E>`.
    Ping,
    /// `CheckStatus`, `(CheckStatus, message)` or `CheckOutcome`.
    Tiered,
}

/// A validated `#[dependency]`.
pub(crate) struct DependencyDef {
    pub(crate) function: ItemFn,
    pub(crate) kind: Kind,
    pub(crate) id: String,
    pub(crate) urgency: &'static str,
    pub(crate) texts: Vec<(&'static str, LitStr)>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) period_ms: Option<u64>,
    pub(crate) tags: Vec<LitStr>,
    pub(crate) parents: Vec<String>,
    pub(crate) counts: Vec<(&'static str, u32)>,
}

const TEXTS: [&str; 4] = ["description", "kind", "service_pool", "documentation_url"];
const COUNTS: [&str; 2] = ["failures_before_outage", "successes_before_recovery"];

fn lit_str(expr: &Expr, key: &Ident) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` takes a string literal"),
        )),
    }
}

fn lit_strs(expr: &Expr, key: &Ident) -> syn::Result<Vec<LitStr>> {
    match expr {
        Expr::Array(ExprArray { elems, .. }) => elems.iter().map(|e| lit_str(e, key)).collect(),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` takes an array of string literals, e.g. [\"a\", \"b\"]"),
        )),
    }
}

fn count(expr: &Expr, key: &Ident) -> syn::Result<u32> {
    let int: &LitInt = match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i,
        other => {
            return Err(syn::Error::new_spanned(
                other,
                format!("`{key}` takes an integer"),
            ))
        }
    };
    match int.base10_parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(syn::Error::new_spanned(
            int,
            format!("`{key}` must be at least 1"),
        )),
    }
}

fn kind_of(function: &ItemFn) -> syn::Result<Kind> {
    let wrong = |span: &dyn quote::ToTokens| {
        syn::Error::new_spanned(
            span,
            "a dependency check must return `Result<T, E>` (a ping), or `CheckStatus`, \
             `(CheckStatus, message)` or `CheckOutcome` (a tiered check)",
        )
    };
    let ReturnType::Type(_, ty) = &function.sig.output else {
        return Err(wrong(&function.sig));
    };
    let last_ident = |ty: &Type| match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    match &**ty {
        Type::Tuple(tuple)
            if tuple.elems.len() == 2
                && last_ident(&tuple.elems[0]).as_deref() == Some("CheckStatus") =>
        {
            Ok(Kind::Tiered)
        }
        other => match last_ident(other).as_deref() {
            Some("Result") => Ok(Kind::Ping),
            Some("CheckStatus" | "CheckOutcome") => Ok(Kind::Tiered),
            _ => Err(wrong(ty)),
        },
    }
}

/// Parses `#[dependency(args)] item`.
pub(crate) fn dependency(args: TokenStream, item: TokenStream) -> syn::Result<DependencyDef> {
    let function: ItemFn = syn::parse2(item)?;
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            sig.fn_token,
            "#[dependency] goes on an `async fn`",
        ));
    }
    for input in &sig.inputs {
        let plain = match input {
            syn::FnArg::Typed(arg) => {
                matches!(&*arg.pat, syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none())
            }
            syn::FnArg::Receiver(_) => false,
        };
        if !plain {
            return Err(syn::Error::new_spanned(
                input,
                "a dependency check's arguments must be plain `name: Type` (cloned into each run)",
            ));
        }
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "a dependency check cannot be generic",
        ));
    }
    let kind = kind_of(&function)?;

    let pairs = Punctuated::<MetaNameValue, Token![,]>::parse_terminated.parse2(args)?;
    let mut def = DependencyDef {
        id: sig.ident.to_string().replace('_', "-"),
        function,
        kind,
        urgency: "Required",
        texts: Vec::new(),
        timeout_ms: None,
        period_ms: None,
        tags: Vec::new(),
        parents: Vec::new(),
        counts: Vec::new(),
    };
    let mut seen: Vec<String> = Vec::new();
    let mut id_given = false;
    for pair in &pairs {
        let Some(key) = pair.path.get_ident() else {
            return Err(syn::Error::new_spanned(&pair.path, "expected a plain name"));
        };
        let name = key.to_string();
        if seen.contains(&name) {
            return Err(syn::Error::new_spanned(
                key,
                format!("`{name}` is given twice"),
            ));
        }
        seen.push(name.clone());
        let value = &pair.value;
        match name.as_str() {
            "id" => {
                def.id = validate::id(&lit_str(value, key)?)?;
                id_given = true;
            }
            "urgency" => def.urgency = validate::urgency(&lit_str(value, key)?)?,
            "timeout" => def.timeout_ms = Some(validate::duration(&lit_str(value, key)?)?),
            "period" => def.period_ms = Some(validate::duration(&lit_str(value, key)?)?),
            "tags" => def.tags = lit_strs(value, key)?,
            "depends_on" => {
                for parent in lit_strs(value, key)? {
                    def.parents.push(validate::id(&parent)?);
                }
            }
            text if TEXTS.contains(&text) => {
                let index = TEXTS.iter().position(|t| *t == text).unwrap_or(0);
                def.texts.push((TEXTS[index], lit_str(value, key)?));
            }
            c if COUNTS.contains(&c) => {
                let index = COUNTS.iter().position(|t| *t == c).unwrap_or(0);
                def.counts.push((COUNTS[index], count(value, key)?));
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    key,
                    format!(
                        "unknown argument `{name}`: expected id, urgency, description, kind, \
                         service_pool, documentation_url, timeout, period, tags, depends_on, \
                         failures_before_outage or successes_before_recovery"
                    ),
                ))
            }
        }
    }
    if !id_given {
        let ident = &def.function.sig.ident;
        let lit = LitStr::new(&def.id, ident.span());
        validate::id(&lit).map_err(|_| {
            syn::Error::new_spanned(
                ident,
                "the function's name does not make a valid id: give one with `id = \"...\"`",
            )
        })?;
    }
    if def.parents.contains(&def.id) {
        return Err(syn::Error::new_spanned(
            &def.function.sig.ident,
            format!("dependency {:?} cannot depend on itself", def.id),
        ));
    }
    Ok(def)
}

/// A validated `feature!`.
pub(crate) struct FeatureDef {
    pub(crate) name: String,
    pub(crate) description: Option<LitStr>,
    pub(crate) requires: Vec<(String, &'static str)>,
    pub(crate) requires_system: Option<&'static str>,
}

struct Requirement {
    id: LitStr,
    status: Ident,
}

impl Parse for Requirement {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let id = input.parse()?;
        input.parse::<Token![:]>()?;
        let status = input.parse()?;
        Ok(Self { id, status })
    }
}

/// Parses `key = value, …` until the end of `input`, handing each key (the value still to
/// parse) to `each`; then the `name` every such macro needs, for `what`.
fn named_arguments(
    input: ParseStream<'_>,
    what: &str,
    mut each: impl FnMut(&Ident, ParseStream<'_>) -> syn::Result<()>,
) -> syn::Result<String> {
    let mut name = None;
    while !input.is_empty() {
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        if key == "name" {
            name = Some(validate::id(&input.parse()?)?);
        } else {
            each(&key, input)?;
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    name.ok_or_else(|| {
        syn::Error::new(
            proc_macro2::Span::call_site(),
            format!("a {what} needs `name = \"...\"`"),
        )
    })
}

impl Parse for FeatureDef {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut def = FeatureDef {
            name: String::new(),
            description: None,
            requires: Vec::new(),
            requires_system: None,
        };
        def.name = named_arguments(input, "feature", |key, input| {
            match key.to_string().as_str() {
                "description" => def.description = Some(input.parse()?),
                "requires" => {
                    let content;
                    syn::braced!(content in input);
                    let list = Punctuated::<Requirement, Token![,]>::parse_terminated(&content)?;
                    for r in list {
                        def.requires
                            .push((validate::id(&r.id)?, validate::status(&r.status)?));
                    }
                }
                "requires_system" => {
                    def.requires_system = Some(validate::status(&input.parse()?)?);
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        key,
                        format!(
                            "unknown argument `{other}`: expected name, description, requires \
                             or requires_system"
                        ),
                    ))
                }
            }
            Ok(())
        })?;
        Ok(def)
    }
}

/// Parses `feature! { ... }`.
pub(crate) fn feature(input: TokenStream) -> syn::Result<FeatureDef> {
    syn::parse2(input)
}
