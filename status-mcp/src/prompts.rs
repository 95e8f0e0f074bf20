//! The MCP server's prompts: what an agent is handed to triage an outage or explain one
//! dependency, each naming the tools to call and in which order, with the state as it is now
//! (the summary's line, the root causes and the runbooks their dependencies declare).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role};
use rmcp::{prompt, prompt_router, schemars, ErrorData};
use serde::Deserialize;

use crate::diagnose::Access;
use crate::tools::Server;

/// `explain`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ExplainArgs {
    /// The dependency's id, as `summary` names it.
    pub(crate) id: String,
}

/// The runbook a dependency declares, if any.
fn runbook(server: &Server, id: &str) -> Option<String> {
    server
        .sources()
        .registry
        .dependencies()
        .iter()
        .find(|d| d.id().as_str() == id)
        .map(|d| d.documentation_url().to_owned())
        .filter(|url| !url.is_empty())
}

#[prompt_router(vis = "pub(crate)")]
impl Server {
    #[prompt(
        name = "triage",
        description = "Triage what is down now: the root causes, what each takes down, what \
                       changed last and the runbooks, with the tools to call in order."
    )]
    async fn triage(&self) -> Vec<PromptMessage> {
        let summary = self.summary_for(Access::Read);
        let mut roots = String::new();
        for root in &summary.root_causes {
            roots.push_str(&format!("\n- {} ({})", root.id, root.level.as_str()));
            if let Some(url) = runbook(self, &root.id) {
                roots.push_str(&format!(": runbook {url}"));
            }
        }
        let now = if roots.is_empty() {
            format!("Right now: {}.", summary.line())
        } else {
            format!("Right now: {}. Root causes:{roots}", summary.line())
        };
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Triage the current state of {app}'s dependencies. {now}\n\n\
                 1. Call `summary`: what fails, each failure's root causes, and what each takes \
                 down (dependencies, features off, groups failing), readiness, and what is muted.\n\
                 2. For each root cause, call `why` with its id: its message, since when, its \
                 recent transitions, and whether the failure is shared across the fleet.\n\
                 3. Call `incidents` (days 1) for what the page already says, and `fleet` when \
                 the instance is part of one.\n\
                 4. Answer with: what is down and since when, the root causes, what customers \
                 lose, what changed last, and each root cause's runbook. Read only: change \
                 nothing.",
                app = self.sources().registry.appname(),
            ),
        )]
    }

    #[prompt(
        name = "explain",
        description = "Explain one dependency: why it is at its level, what it depends on and \
                       what depends on it, its history, with the tools to call."
    )]
    async fn explain(
        &self,
        Parameters(ExplainArgs { id }): Parameters<ExplainArgs>,
    ) -> Result<Vec<PromptMessage>, ErrorData> {
        if !self.sources().registry.contains(&id) {
            return Err(ErrorData::invalid_params(
                crate::read::unknown(&self.sources().registry, &id),
                None,
            ));
        }
        let runbook =
            runbook(self, &id).map_or_else(String::new, |url| format!(" Its runbook: {url}."));
        Ok(vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Explain the dependency {id}.{runbook}\n\n\
                 1. Call `why` with id {id}: its level and since when, its check's message, \
                 its failing ancestors up to the root causes, its dependents and what it takes \
                 down.\n\
                 2. Call `uptime` with dependency {id} over 24h, then 7d: how often it fails.\n\
                 3. Answer with why it is at its level, what it takes down, how it has been \
                 lately, and what to read or do next. Read only: change nothing."
            ),
        )])
    }
}
