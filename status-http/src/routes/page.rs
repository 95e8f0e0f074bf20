//! The builder's settings of the public status page: where it is read, which groups it
//! shows, when an incident is public, and its subscribers.

use super::Routes;

impl Routes {
    /// Where the public status page is read from outside (`https://status.example.com`): the
    /// `url` and incidents' `shortlink` of the Statuspage JSON say it.
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

    /// Lets visitors of the public status page subscribe (`POST /status/page/subscriptions`):
    /// by webhook, and by mail once [`Subscriptions::smtp`](crate::Subscriptions::smtp) and
    /// [`mail_from`](crate::Subscriptions::mail_from) are set; they are told each public
    /// incident's opening, updates, resolution and postmortem, and each announced
    /// maintenance. Needs a [`history`](Self::history) (where subscribers are kept) and a
    /// [`status_page_url`](Self::status_page_url) (the links in mails); the teller runs on
    /// the runtime the routes are built on.
    #[cfg(feature = "subscribers")]
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
