//! How an answer is sized for a model's context: lists capped, what was left out counted,
//! and a one-line summary before the compact JSON.

use std::collections::BTreeMap;

use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::schemars;
use serde::Serialize;

/// At most this many entries in a list of an answer; the rest are counted ("and N more").
pub(crate) const MAX_ITEMS: usize = 20;

/// How many entries each capped list of an answer left out, by the list's field name.
#[derive(Debug, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub(crate) struct Omitted(
    #[schemars(with = "BTreeMap<String, usize>")] BTreeMap<&'static str, usize>,
);

impl Omitted {
    /// Whether nothing was left out.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many of `list` were left out.
    pub(crate) fn of(&self, list: &str) -> usize {
        self.0.get(list).copied().unwrap_or(0)
    }

    /// ", and N more" when `list` left some out.
    pub(crate) fn more(&self, list: &str) -> Option<String> {
        let n = self.of(list);
        (n > 0).then(|| format!(", and {n} more"))
    }
}

/// `items` cut to [`MAX_ITEMS`], what was cut counted in `omitted` under `list`.
pub(crate) fn capped<T>(mut items: Vec<T>, list: &'static str, omitted: &mut Omitted) -> Vec<T> {
    capped_to(&mut items, MAX_ITEMS, list, omitted);
    items
}

/// `items` cut to `max`, what was cut counted in `omitted` under `list`.
pub(crate) fn capped_to<T>(
    items: &mut Vec<T>,
    max: usize,
    list: &'static str,
    omitted: &mut Omitted,
) {
    if items.len() > max {
        omitted.0.insert(list, items.len() - max);
        items.truncate(max);
    }
}

/// Counts `n` more left out of `list`.
#[cfg(feature = "history")]
pub(crate) fn count(omitted: &mut Omitted, list: &'static str, n: usize) {
    *omitted.0.entry(list).or_default() += n;
}

/// A tool's answer: its structured content (as its output schema describes it), and for
/// clients that read only text the line first, then the same JSON (compact, one text block
/// each).
pub(crate) fn answer(line: String, body: &impl Serialize) -> CallToolResult {
    let value = serde_json::to_value(body).unwrap_or_default();
    let mut result = CallToolResult::success(vec![
        ContentBlock::text(line),
        ContentBlock::text(value.to_string()),
    ]);
    result.structured_content = Some(value);
    result
}

/// A tool's refusal the model can read (an unknown name, a window not kept): `isError`.
pub(crate) fn refusal(why: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(why.into())])
}

/// `body` as compact JSON.
pub(crate) fn json(body: &impl Serialize) -> String {
    // Our answers are maps and strings: serializing them cannot fail.
    serde_json::to_string(body).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
