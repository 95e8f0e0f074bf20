//! The public status page: one the application built ([`Routes::status_page`]), or one made
//! of the builder's settings (where it is read, which groups it shows, when an incident is
//! public).

use super::Routes;

impl Routes {
    /// Where the public status page is read from outside (`https://status.example.com`): the
    /// `url` and incidents' `shortlink` of the Statuspage JSON say it, and the feeds and mails
    /// build their links from it. Under a mount prefix, give it with the prefix
    /// (`https://shop.example/ops` for routes nested at `/ops`).
    ///
    /// The public page (`GET /status/page`, feature `dashboard`), Statuspage v2 JSON
    /// (`GET /api/v2/summary.json` and the rest), feeds and badges (`GET /badge/{name}.svg`,
    /// `/badge/{name}/uptime.svg`) are served with any history, and without one, all but
    /// incidents and uptime. Their components are the groups named by
    /// [`public_group`](Self::public_group) and the dependencies tagged `public`; they show
    /// the public view whatever [`public_view`](Self::public_view) says.
    #[cfg(feature = "page")]
    pub fn status_page_url(mut self, url: impl Into<String>) -> Self {
        self.page.url = Some(url.into());
        self
    }

    /// When an incident the engine opened reaches the public page, its JSON and its feeds:
    /// by default once it has lasted two minutes ([`Publication::After`] with
    /// [`DEFAULT_PUBLIC_AFTER`](crate::DEFAULT_PUBLIC_AFTER)), so that a blip is not a public
    /// incident; or only once an operator updates it ([`Publication::Approved`]). An
    /// operator's update publishes an incident at once under either rule. Until then it is on
    /// `/admin/incidents` only.
    ///
    /// [`Publication::After`]: crate::Publication::After
    /// [`Publication::Approved`]: crate::Publication::Approved
    #[cfg(feature = "page")]
    pub fn incident_publication(mut self, publication: crate::Publication) -> Self {
        self.page.publication = publication;
        self
    }

    /// Serves `page`, a public status page the application built (status-page's
    /// [`StatusPage`](crate::StatusPage)), in place of one made of this builder's page
    /// settings ([`status_page_url`](Self::status_page_url),
    /// [`incident_publication`](Self::incident_publication),
    /// [`public_group`](Self::public_group)), which are then not read. Its public routes are
    /// served beside the probes, its admin routes (incidents, maintenances) behind this
    /// router's admin token and in its audit trail, its paths in `/openapi.json`.
    ///
    /// A page that takes subscribers tells them through its
    /// [`teller`](crate::StatusPage::teller), which the application spawns:
    /// [`build`](Self::build) starts no task.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() {
    /// use status_http::{PublicGroup, Routes, StatusPage, StatusPageSettings, Subscriptions};
    ///
    /// let registry = status_core::Registry::builder().appname("shop").build();
    /// let history = status_history::History::sqlite("history.db").open();
    /// history.attach(&registry);
    /// let mut settings = StatusPageSettings::default();
    /// settings.url = Some("https://status.shop.example".into());
    /// settings.public.push(PublicGroup::new("ready", "Online shop"));
    /// settings.subscriptions = Some(Subscriptions::new().smtp("smtp://mail.shop.example:587"));
    /// let page = StatusPage::new(registry.clone(), Some(history.clone()), "shop", settings);
    /// if let Some(teller) = page.teller() {
    ///     tokio::spawn(teller);
    /// }
    /// let app = Routes::new(&registry).history(history).status_page(page).build();
    /// # }
    /// ```
    #[cfg(feature = "page")]
    pub fn status_page(mut self, page: crate::StatusPage) -> Self {
        self.status_page = Some(page);
        self
    }

    /// Lets visitors of the public status page subscribe (`POST /status/page/subscriptions`):
    /// by webhook, and by mail once [`Subscriptions::smtp`](crate::Subscriptions::smtp) and
    /// [`mail_from`](crate::Subscriptions::mail_from) are set; they are told each public
    /// incident's opening, updates, resolution and postmortem, and each announced
    /// maintenance. Needs a [`history`](Self::history) (where subscribers are kept) and a
    /// [`status_page_url`](Self::status_page_url) (the links in mails); the teller is
    /// spawned by [`build`](Self::build) on the runtime the routes are built on.
    #[cfg(feature = "subscribers")]
    #[deprecated(
        since = "0.1.0",
        note = "build a `StatusPage` with `StatusPageSettings::subscriptions`, spawn its `teller()` and mount it with `Routes::status_page`: then `build` starts no task"
    )]
    pub fn subscriptions(mut self, subscriptions: crate::Subscriptions) -> Self {
        self.page.subscriptions = Some(subscriptions);
        self
    }

    /// Shows probe group `group.group()` on the public status page, as `group.name()`, with
    /// its description: a group is public only when named here (its code name is the
    /// operators'), and the dependencies tagged `public` among its members are nested under
    /// it (Statuspage's `group_id`, and the group's `components`). Groups show in the order
    /// given; one named twice is shown once, as first named.
    #[cfg(feature = "page")]
    pub fn public_group(mut self, group: crate::PublicGroup) -> Self {
        if !self.page.public.iter().any(|g| g.group() == group.group()) {
            self.page.public.push(group);
        }
        self
    }
}
