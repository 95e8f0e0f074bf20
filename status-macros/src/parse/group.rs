//! `group!`: a probe group's name, members and rule.

// The parsing helpers, as parse/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

/// A validated `group!`.
pub(crate) struct GroupDef {
    pub(crate) name: String,
    pub(crate) dependencies: Vec<String>,
    pub(crate) tags: Vec<LitStr>,
    pub(crate) fails_on: Option<&'static str>,
    pub(crate) rotation: Option<bool>,
    pub(crate) startup: Option<bool>,
}

fn flag(expr: &Expr, key: &Ident) -> syn::Result<bool> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` takes true or false"),
        )),
    }
}

impl Parse for GroupDef {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut def = GroupDef {
            name: String::new(),
            dependencies: Vec::new(),
            tags: Vec::new(),
            fails_on: None,
            rotation: None,
            startup: None,
        };
        def.name = named_arguments(input, "group", |key, input| {
            match key.to_string().as_str() {
                "dependencies" => {
                    for id in lit_strs(&input.parse()?, key)? {
                        let id_text = validate::id(&id)?;
                        if def.dependencies.contains(&id_text) {
                            return Err(syn::Error::new_spanned(&id, "named twice"));
                        }
                        def.dependencies.push(id_text);
                    }
                }
                "tags" => {
                    for tag in lit_strs(&input.parse()?, key)? {
                        if tag.value().trim().is_empty() {
                            return Err(syn::Error::new_spanned(&tag, "a blank tag"));
                        }
                        if def.tags.iter().any(|t| t.value() == tag.value()) {
                            return Err(syn::Error::new_spanned(&tag, "named twice"));
                        }
                        def.tags.push(tag);
                    }
                }
                "fails_on" => {
                    let status: Ident = input.parse()?;
                    let checked = validate::status(&status)?;
                    if checked == "Ok" {
                        return Err(syn::Error::new_spanned(
                            &status,
                            "a group that fails on OK would never pass",
                        ));
                    }
                    def.fails_on = Some(checked);
                }
                "rotation" => def.rotation = Some(flag(&input.parse()?, key)?),
                "startup" => def.startup = Some(flag(&input.parse()?, key)?),
                other => {
                    return Err(syn::Error::new_spanned(
                        key,
                        format!(
                            "unknown argument `{other}`: expected name, dependencies, tags, \
                             fails_on, rotation or startup"
                        ),
                    ))
                }
            }
            Ok(())
        })?;
        if def.dependencies.is_empty() && def.tags.is_empty() {
            return Err(syn::Error::new(
                proc_macro2::Span::call_site(),
                "a group names `dependencies = [...]`, `tags = [...]`, or both",
            ));
        }
        Ok(def)
    }
}

/// Parses `group! { ... }`.
pub(crate) fn group(input: TokenStream) -> syn::Result<GroupDef> {
    syn::parse2(input)
}
