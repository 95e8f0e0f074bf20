//! The page's routes in the OpenAPI description, merged into the application's one.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    paths(
        crate::hot::status,
        crate::hot::summary,
        crate::hot::components,
        crate::hot::incidents,
        crate::hot::unresolved,
        crate::hot::maintenances,
        crate::hot::upcoming,
        crate::hot::active,
        crate::hot::widget,
        crate::widget::embed,
        crate::badge::level,
        crate::badge::uptime,
        crate::feed::atom,
        crate::feed::rss,
        crate::admin::list,
        crate::admin::post,
        crate::admin::postmortem,
        crate::announce::announce,
        crate::announce::list,
        crate::announce::cancel
    ),
    tags((name = "status page", description = "What the people who depend on the service read: Statuspage v2 JSON, badges, the public page"))
)]
struct StatusPageDoc;

#[cfg(feature = "html")]
#[derive(OpenApi)]
#[openapi(paths(crate::page::page, crate::page::events))]
struct PageDoc;

#[cfg(feature = "calendar")]
#[derive(OpenApi)]
#[openapi(paths(crate::calendar::ics))]
struct CalendarDoc;

#[cfg(feature = "subscribers")]
#[derive(OpenApi)]
#[openapi(paths(
    crate::subscribe::routes::subscribe,
    crate::subscribe::links::confirm,
    crate::subscribe::links::confirm_post,
    crate::subscribe::links::unsubscribe,
    crate::subscribe::links::unsubscribe_post,
    crate::subscribe::admin::list,
    crate::subscribe::admin::remove
))]
struct SubscribersDoc;

/// The page's routes and the shapes of their bodies, to merge into an application's OpenAPI
/// description (status-http's `/openapi.json` does).
#[must_use]
pub fn openapi() -> utoipa::openapi::OpenApi {
    #[allow(unused_mut)] // merged into with `html`, `calendar` and `subscribers`
    let mut doc = StatusPageDoc::openapi();
    #[cfg(feature = "html")]
    doc.merge(PageDoc::openapi());
    #[cfg(feature = "calendar")]
    doc.merge(CalendarDoc::openapi());
    #[cfg(feature = "subscribers")]
    doc.merge(SubscribersDoc::openapi());
    doc
}
