//! What an objective is about, as written (`system`, `dependency:ID`, `group:NAME`), and
//! whether a registry knows it.

use status_core::Registry;

use super::Objective;
use crate::model::Series;
use crate::Error;

/// The target as written: `system`, `dependency:ID` or `group:NAME`.
#[must_use]
pub fn target_text(series: &Series) -> String {
    match series {
        Series::System => "system".to_owned(),
        Series::Dependency(id) => format!("dependency:{id}"),
        Series::Group(name) => format!("group:{name}"),
    }
}

/// Reads a target as written: `system`, `dependency:ID` or `group:NAME`.
///
/// # Errors
///
/// [`Error::is_invalid`] for anything else.
pub fn parse_target(text: &str) -> Result<Series, Error> {
    let text = text.trim();
    let named = |name: &str| (!name.is_empty()).then(|| name.to_owned());
    match text.split_once(':') {
        None if text == "system" => Some(Series::System),
        Some(("dependency", id)) => named(id).map(Series::Dependency),
        Some(("group", name)) => named(name).map(Series::Group),
        _ => None,
    }
    .ok_or_else(|| {
        let shown: String = text.chars().take(64).collect();
        Error::invalid(format!(
            "a target is `system`, `dependency:ID` or `group:NAME`; not {shown:?}"
        ))
    })
}

/// Checks that every objective's target is known to `registry`: a dependency registered, a
/// group added (the system always is). Call it at a start, after registering: an objective on
/// a name nobody reports would report nothing, forever.
///
/// # Errors
///
/// [`Error::is_invalid`], naming the objective and its target, for the first one unknown.
pub fn check(objectives: &[Objective], registry: &Registry) -> Result<(), Error> {
    for o in objectives {
        let known = match o.target() {
            Series::System => true,
            Series::Dependency(id) => registry.contains(id),
            Series::Group(name) => registry.group(name).is_some(),
        };
        if !known {
            return Err(Error::invalid(format!(
                "objective {:?}: its target {} is not registered",
                o.name(),
                target_text(o.target())
            )));
        }
    }
    Ok(())
}
