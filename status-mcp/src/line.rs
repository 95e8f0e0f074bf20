//! The summary in one line, for a model (or a client reading only text) to read first: it
//! says what the structured answer says, groups failing as their group summary answers.

use crate::diagnose::Summary;

impl Summary {
    /// The answer in one line, for a model to read first.
    pub(crate) fn line(&self) -> String {
        let mut line = if self.failing.is_empty() {
            format!(
                "{}: all {} dependencies OK",
                self.condition, self.dependencies
            )
        } else {
            self.failing_line()
        };
        // Failing as `/healthcheck/groups/{name}/summary` answers it (not ready, 503); a
        // group below OK that still serves is degraded, and said apart.
        let names = |ready: bool| -> Vec<&str> {
            self.groups_failing
                .iter()
                .filter(|g| g.ready == ready)
                .map(|g| g.name.as_str())
                .collect()
        };
        let (failing, degraded) = (names(false), names(true));
        if !failing.is_empty() {
            line.push_str(&format!("; groups failing: {}", failing.join(", ")));
        }
        if !degraded.is_empty() {
            line.push_str(&format!(
                "; groups degraded, still ready: {}",
                degraded.join(", ")
            ));
        }
        if !self.failing.is_empty() || !self.readiness.ready {
            line.push_str(if self.readiness.ready {
                "; ready"
            } else {
                "; not ready"
            });
        }
        line
    }

    /// What fails, its root causes and the features it turns off.
    fn failing_line(&self) -> String {
        let roots: Vec<String> = self
            .root_causes
            .iter()
            .map(|r| {
                let mut said = format!("{} {}", r.id, r.level);
                if r.maintenance {
                    said.push_str(" (maintenance)");
                }
                said
            })
            .collect();
        let failing = self.failing.len() + self.omitted.of("failing");
        let mut line = format!(
            "{}: {failing} failing, root cause{} {}",
            self.condition,
            if roots.len() == 1 { "" } else { "s" },
            roots.join(", ")
        );
        if let Some(more) = self.omitted.more("rootCauses") {
            line.push_str(&more);
        }
        if !self.features_off.is_empty() {
            let names: Vec<&str> = self.features_off.iter().map(|f| f.name.as_str()).collect();
            line.push_str(&format!("; features off: {}", names.join(", ")));
        }
        line
    }
}
