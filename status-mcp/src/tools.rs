//! The MCP server's tools and resources: every one reads, none writes (no tool that changes
//! anything is registered, so none can be called).

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{prompt_handler, tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};

use crate::answer::{answer, json, refusal};
use crate::diagnose::{self, Access};
use crate::params::{
    IncidentsParams, MaintenancesParams, SlosParams, Sources, UptimeParams, WhyParams,
};
use crate::why;

/// One MCP server over [`Sources`]; cheap to clone (a request of the stateless transport
/// gets its own).
#[derive(Clone)]
pub(crate) struct Server {
    sources: Arc<Sources>,
    /// Built once: a request clones the pointer, not the tools' schemas.
    tool_router: Arc<ToolRouter<Self>>,
    /// The prompts ([`crate::prompts`]), built once too.
    prompt_router: Arc<PromptRouter<Self>>,
}

/// The caller's access, as the guard put it on the HTTP request (read-only when absent).
fn access(parts: &Parts) -> Access {
    parts
        .extensions
        .get::<Access>()
        .copied()
        .unwrap_or(Access::Read)
}

#[tool_router]
impl Server {
    pub(crate) fn new(sources: Arc<Sources>) -> Self {
        Self {
            sources,
            tool_router: Arc::new(Self::tool_router()),
            prompt_router: Arc::new(Self::prompt_router()),
        }
    }

    /// What the tools read.
    pub(crate) fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The answer of `summary`, for the tool, the `status://summary` resource and the
    /// prompts.
    pub(crate) fn summary_for(&self, access: Access) -> diagnose::Summary {
        let facts = self.sources.registry.facts();
        let features = self.sources.registry.features();
        let readiness = self.sources.probes.ready(false);
        diagnose::summary(&facts, &features, &readiness, access)
    }

    /// The answer of `why`, for the tool and the `status://dependencies/{id}` resources.
    async fn why_answer(&self, id: &str, access: Access) -> Option<why::Why> {
        let facts = self.sources.registry.facts();
        let features = self.sources.registry.features();
        let infos = self.sources.registry.dependencies();
        let mut answer = why::why(&facts, &features, &infos, id, access)?;
        answer.transitions = crate::read::transitions(&self.sources, id, access).await;
        #[cfg(feature = "fleet")]
        if let Some(fleet) = &self.sources.fleet {
            answer.fleet = Some(fleet.word(id, answer.level));
        }
        Some(answer)
    }

    #[tool(
        output_schema = crate::outputs::summary(),
        description = "The system's condition now: what fails, each failure's root causes and \
                       what each takes down (dependencies, features off, groups failing), \
                       readiness, and what is muted or in maintenance. Start here.",
        annotations(
            title = "What is down",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn summary(&self, Extension(parts): Extension<Parts>) -> CallToolResult {
        let summary = self.summary_for(access(&parts));
        answer(summary.line(), &summary)
    }

    #[tool(
        output_schema = crate::outputs::why(),
        description = "One dependency: its level and since when, its check's message, its \
                       failing ancestors up to the root causes, its dependents, what it takes \
                       down, its recent transitions, and the fleet's word on it (shared across \
                       the data center, or this instance's own).",
        annotations(
            title = "Why is it down",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn why(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(WhyParams { id }): Parameters<WhyParams>,
    ) -> CallToolResult {
        match self.why_answer(&id, access(&parts)).await {
            Some(why) => answer(why.line(), &why),
            None => refusal(crate::read::unknown(&self.sources.registry, &id)),
        }
    }

    #[tool(
        output_schema = crate::outputs::uptime(),
        description = "Uptime and SLA of a dependency, a probe group or the system over a \
                       window back from now (time in each level, checks, failures), from the \
                       durable history.",
        annotations(
            title = "Uptime",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn uptime(&self, Parameters(params): Parameters<UptimeParams>) -> CallToolResult {
        crate::read::uptime(&self.sources, params).await
    }

    #[tool(
        output_schema = crate::outputs::slos(),
        description = "Service level objectives from the durable history: each one's \
                       objective and window, bad and observed time, its error budget left, \
                       burn rates over 5m to 3d, and the SRE workbook's page and ticket \
                       alerts firing.",
        annotations(
            title = "Objectives",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn slos(&self, Parameters(params): Parameters<SlosParams>) -> CallToolResult {
        crate::slos::slos(&self.sources, params).await
    }

    #[tool(
        output_schema = crate::outputs::incidents(),
        description = "Incidents open, and those resolved in the last days, the latest first, \
                       each with its root causes, what it affected, and its updates.",
        annotations(
            title = "Incidents",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn incidents(&self, Parameters(params): Parameters<IncidentsParams>) -> CallToolResult {
        crate::read::incidents(&self.sources, params).await
    }

    #[tool(
        output_schema = crate::outputs::maintenances(),
        description = "Maintenances operators announced: in progress, ahead, or ended in the \
                       last days, called off or not, the soonest first, each with its \
                       dependencies, its window and its message.",
        annotations(
            title = "Maintenances",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn maintenances(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(params): Parameters<MaintenancesParams>,
    ) -> CallToolResult {
        crate::maintenances::maintenances(&self.sources, params, access(&parts)).await
    }

    #[tool(
        output_schema = crate::outputs::fleet(),
        description = "What fails where across the fleet: each data center's failing \
                       dependencies, how many of its fresh instances fail each, and whether \
                       the failure is shared (the data center's) or an instance's own.",
        annotations(
            title = "Across the fleet",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn fleet(&self) -> CallToolResult {
        crate::read::fleet(&self.sources)
    }
}

/// The summary's resource.
pub(crate) const SUMMARY_URI: &str = "status://summary";
/// The prefix of each dependency's resource.
pub(crate) const DEPENDENCY_URI: &str = "status://dependencies/";

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_instructions(format!(
            "Dependency health of {} (read-only). Call `summary` first: it names what fails \
             and the root causes; then `why` with a dependency's id. The prompts `triage` and \
             `explain` lay the steps out.",
            self.sources.registry.appname()
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let json = "application/json";
        let mut resources = vec![Resource::new(SUMMARY_URI, "summary")
            .with_description("The system's condition, root causes and what they take down")
            .with_mime_type(json)];
        resources.extend(self.sources.registry.dependencies().iter().map(|d| {
            Resource::new(format!("{DEPENDENCY_URI}{}", d.id()), d.id().to_string())
                .with_description(format!("Why {} is at its level", d.id()))
                .with_mime_type(json)
        }));
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let access = context
            .extensions
            .get::<Parts>()
            .map_or(Access::Read, access);
        let uri = request.uri.as_str();
        let body = if uri == SUMMARY_URI {
            json(&self.summary_for(access))
        } else if let Some(id) = uri.strip_prefix(DEPENDENCY_URI) {
            match self.why_answer(id, access).await {
                Some(why) => json(&why),
                None => {
                    return Err(ErrorData::resource_not_found(
                        crate::read::unknown(&self.sources.registry, id),
                        None,
                    ))
                }
            }
        } else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {uri}: {SUMMARY_URI} or {DEPENDENCY_URI}{{id}}"),
                None,
            ));
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(body, uri).with_mime_type("application/json")
        ])
        .into())
    }
}
