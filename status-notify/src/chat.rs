//! Chat sinks beside Slack: Microsoft Teams, an Adaptive Card posted to a Workflows URL (the
//! Office 365 connectors' payloads fail since their retirement), and Discord, its webhook's
//! embeds. Both say what the webhook's JSON says, in the words of a chat: a title coloured by
//! how bad it is, the sentence, the application, host and time, and the incident's link.

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};
use status_core::{CheckStatus, Error};

use crate::sink::{client, endpoint, post, Message, Sink, SinkError};
use crate::Notice;

/// How bad a notice is, as a chat colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tone {
    /// An outage or a major failure, a page.
    Bad,
    /// A minor failure, flapping, a ticket, refused calls.
    Warn,
    /// Recovered, an alert ended.
    Good,
    /// An operator's act.
    Plain,
}

fn tone(notice: &Notice) -> Tone {
    let of = |level: CheckStatus| match level {
        CheckStatus::Ok => Tone::Good,
        CheckStatus::Minor => Tone::Warn,
        _ => Tone::Bad,
    };
    match notice {
        Notice::Changed { to, .. } | Notice::System { to, .. } => of(*to),
        Notice::Resolved { .. } => Tone::Good,
        Notice::Slo(alert) if !alert.firing => Tone::Good,
        Notice::Slo(alert) if alert.severity == "page" => Tone::Bad,
        Notice::Flapping { .. } | Notice::Refused { .. } | Notice::Slo(_) => Tone::Warn,
        Notice::Digest { notices, .. } => notices
            .iter()
            .map(tone)
            .min_by_key(|t| match t {
                Tone::Bad => 0,
                Tone::Warn => 1,
                Tone::Good => 2,
                Tone::Plain => 3,
            })
            .unwrap_or(Tone::Plain),
        _ => Tone::Plain,
    }
}

/// The message's title: the application, and what happened in a few words.
fn title(message: &Message) -> String {
    let what = match &message.notice {
        Notice::Changed { id, to, .. } => format!("{id} is {to}"),
        Notice::Resolved { id, .. } => format!("{id} is OK again"),
        Notice::Flapping { id } => format!("{id} is flapping"),
        Notice::System { to, .. } => format!("the system is {to}"),
        Notice::Audit { action, .. } => format!("an operator: {action}"),
        Notice::Refused { action, .. } => format!("calls refused: {action}"),
        Notice::Slo(alert) if alert.firing => format!("{} is burning its budget", alert.slo),
        Notice::Slo(alert) => format!("{} burns its budget no more", alert.slo),
        Notice::Digest { notices, omitted } => {
            format!("{} changes", notices.len() as u64 + omitted)
        }
    };
    format!("{}: {what}", message.appname)
}

/// The message's facts, each a name and a value: where, when, the fleet's figures.
fn facts(message: &Message) -> Vec<(&'static str, String)> {
    let mut facts = vec![
        ("Application", message.appname.clone()),
        ("Host", message.hostname.clone()),
        (
            "At",
            message
                .at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        ),
    ];
    if let Some(fleet) = &message.fleet {
        facts.push(("Fleet", fleet.figures.clone()));
    }
    if let Some(incident) = &message.incident {
        facts.push(("Incident", incident.id.clone()));
    }
    facts
}

/// Text as Markdown shows it literally: a name or a reason cannot make a link, a heading
/// or a mention.
fn literal(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '`' | '~' | '[' | ']' | '(' | ')' | '#' | '>' | '<' | '|' | '@'
        ) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// At most `max` characters of `text`, an ellipsis marking a cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(max.saturating_sub(1)).collect();
    kept.push('…');
    kept
}

/// A chat's incoming URL and the client that posts to it (its address never shown).
struct Endpoint {
    url: reqwest::Url,
    client: reqwest::Client,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint").finish_non_exhaustive()
    }
}

impl Endpoint {
    fn new(url: &str) -> Result<Self, Error> {
        Ok(Self {
            url: endpoint(url)?,
            client: client(),
        })
    }

    fn post(&self, body: &Value, timeout: Duration) -> BoxFuture<'_, Result<(), SinkError>> {
        let body = serde_json::to_vec(body).map_err(|e| SinkError(e.to_string()));
        Box::pin(async move { post(&self.client, &self.url, body?, None, timeout).await })
    }
}

/// A Microsoft Teams channel, through a Workflows URL ("Post to a channel when a webhook
/// request is received"): each message a bare Adaptive Card (version 1.4).
#[derive(Debug)]
pub struct Teams(Endpoint);

impl Teams {
    /// A Teams Workflows URL.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URL that does not parse, or is not http(s).
    pub fn new(url: &str) -> Result<Self, Error> {
        Endpoint::new(url).map(Self)
    }

    /// The body posted for `message`: a `message` whose one attachment is the card.
    #[must_use]
    pub fn body(message: &Message) -> Value {
        let color = match tone(&message.notice) {
            Tone::Bad => "Attention",
            Tone::Warn => "Warning",
            Tone::Good => "Good",
            Tone::Plain => "Default",
        };
        let facts: Vec<Value> = facts(message)
            .into_iter()
            .map(|(name, value)| json!({ "title": name, "value": literal(&value) }))
            .collect();
        let mut card = json!({
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": [
                {
                    "type": "TextBlock",
                    "text": literal(&title(message)),
                    "weight": "Bolder",
                    "size": "Medium",
                    "color": color,
                    "wrap": true,
                },
                { "type": "TextBlock", "text": literal(&message.text), "wrap": true },
                { "type": "FactSet", "facts": facts },
            ],
        });
        if let Some(url) = message.incident.as_ref().and_then(|i| i.url.as_ref()) {
            card["actions"] = json!([
                { "type": "Action.OpenUrl", "title": "Open the incident", "url": url }
            ]);
        }
        json!({
            "type": "message",
            "attachments": [{
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": null,
                "content": card,
            }],
        })
    }
}

impl Sink for Teams {
    fn name(&self) -> &str {
        "teams"
    }

    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        self.0.post(&Self::body(message), timeout)
    }
}

/// Discord's limits on an embed (its documentation's "Embed Limits").
pub mod discord_limits {
    /// An embed's title.
    pub const TITLE: usize = 256;
    /// An embed's description.
    pub const DESCRIPTION: usize = 4096;
    /// A field's name.
    pub const FIELD_NAME: usize = 256;
    /// A field's value.
    pub const FIELD_VALUE: usize = 1024;
    /// Fields in an embed.
    pub const FIELDS: usize = 25;
    /// A footer's text.
    pub const FOOTER: usize = 2048;
    /// Every text of a message's embeds together.
    pub const TOTAL: usize = 6000;
    /// Embeds in a message.
    pub const EMBEDS: usize = 10;
}

/// A Discord channel, through its webhook: each message one embed, coloured by how bad it
/// is, that mentions no one (`allowed_mentions` empty).
#[derive(Debug)]
pub struct Discord(Endpoint);

impl Discord {
    /// A Discord webhook's URL.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URL that does not parse, or is not http(s).
    pub fn new(url: &str) -> Result<Self, Error> {
        Endpoint::new(url).map(Self)
    }

    /// The body posted for `message`, within Discord's limits.
    #[must_use]
    pub fn body(message: &Message) -> Value {
        use discord_limits as max;
        let color = match tone(&message.notice) {
            Tone::Bad => 0x00D1_3438,
            Tone::Warn => 0x00FF_B900,
            Tone::Good => 0x0010_7C10,
            Tone::Plain => 0x0060_5E5C,
        };
        let fields: Vec<Value> = facts(message)
            .into_iter()
            .take(max::FIELDS)
            .map(|(name, value)| {
                json!({
                    "name": cut(name, max::FIELD_NAME),
                    "value": cut(&literal(&value), max::FIELD_VALUE),
                    "inline": true,
                })
            })
            .collect();
        // The whole stays under the total: the description gives way first.
        let title = cut(&literal(&title(message)), max::TITLE);
        let footer = cut(&format!("status · {}", message.id), max::FOOTER);
        let others: usize = title.chars().count()
            + footer.chars().count()
            + fields
                .iter()
                .map(|f| {
                    f["name"].as_str().map_or(0, |s| s.chars().count())
                        + f["value"].as_str().map_or(0, |s| s.chars().count())
                })
                .sum::<usize>();
        let room = max::TOTAL.saturating_sub(others).min(max::DESCRIPTION);
        let mut embed = json!({
            "title": title,
            "description": cut(&literal(&message.text), room),
            "color": color,
            "timestamp": message.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "fields": fields,
            "footer": { "text": footer },
        });
        if let Some(url) = message.incident.as_ref().and_then(|i| i.url.as_ref()) {
            embed["url"] = json!(url);
        }
        json!({
            "username": cut(&message.appname, 80),
            "embeds": [embed],
            "allowed_mentions": { "parse": [] },
        })
    }
}

impl Sink for Discord {
    fn name(&self) -> &str {
        "discord"
    }

    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        self.0.post(&Self::body(message), timeout)
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use status_core::{CheckStatus, DependencyId};

    use super::{discord_limits as max, literal, Discord, Teams};
    use crate::{IncidentLink, Message, Notice};

    fn message(notice: Notice, text: &str) -> Message {
        Message {
            version: 1,
            id: "m-1".into(),
            at: Utc::now(),
            appname: "shop".into(),
            hostname: "web-1".into(),
            text: text.into(),
            notice,
            incident: Some(IncidentLink {
                id: "42".into(),
                url: Some("https://status.shop.example/status/page".into()),
            }),
            fleet: None,
        }
    }

    fn changed(to: CheckStatus) -> Notice {
        Notice::Changed {
            id: DependencyId::new("primary-db").unwrap(),
            from: CheckStatus::Ok,
            to,
            also_affected: Vec::new(),
        }
    }

    #[test]
    fn a_teams_card_is_coloured_by_how_bad_and_links_its_incident() {
        let outage = Teams::body(&message(
            changed(CheckStatus::Outage),
            "primary-db is OUTAGE",
        ));
        assert_eq!(outage["type"], "message");
        let card = &outage["attachments"][0]["content"];
        assert_eq!(card["type"], "AdaptiveCard");
        assert_eq!(card["body"][0]["color"], "Attention");
        assert_eq!(card["body"][0]["text"], "shop: primary-db is OUTAGE");
        assert_eq!(
            card["actions"][0]["url"],
            "https://status.shop.example/status/page"
        );
        let minor = Teams::body(&message(changed(CheckStatus::Minor), "x"));
        assert_eq!(
            minor["attachments"][0]["content"]["body"][0]["color"],
            "Warning"
        );
        let resolved = Notice::Resolved {
            id: DependencyId::new("primary-db").unwrap(),
            from: CheckStatus::Outage,
        };
        let good = Teams::body(&message(resolved, "x"));
        assert_eq!(
            good["attachments"][0]["content"]["body"][0]["color"],
            "Good"
        );
        let digest = Notice::Digest {
            notices: vec![changed(CheckStatus::Minor), changed(CheckStatus::Outage)],
            omitted: 3,
        };
        let worst = Teams::body(&message(digest, "x"));
        assert_eq!(
            worst["attachments"][0]["content"]["body"][0]["color"],
            "Attention"
        );
        assert_eq!(
            worst["attachments"][0]["content"]["body"][0]["text"],
            "shop: 5 changes"
        );
    }

    #[test]
    fn a_discord_embed_keeps_within_discords_limits_and_mentions_no_one() {
        let huge = "@everyone ".repeat(2_000);
        let body = Discord::body(&message(changed(CheckStatus::Outage), &huge));
        assert_eq!(body["allowed_mentions"]["parse"], serde_json::json!([]));
        let embeds = body["embeds"].as_array().unwrap();
        assert_eq!(embeds.len(), 1);
        let e = &embeds[0];
        let chars = |v: &serde_json::Value| v.as_str().unwrap().chars().count();
        assert!(chars(&e["title"]) <= max::TITLE);
        assert!(chars(&e["description"]) <= max::DESCRIPTION);
        assert!(
            e["description"].as_str().unwrap().ends_with('…'),
            "cut, and said so"
        );
        let fields = e["fields"].as_array().unwrap();
        let total = chars(&e["title"])
            + chars(&e["description"])
            + chars(&e["footer"]["text"])
            + fields
                .iter()
                .map(|f| chars(&f["name"]) + chars(&f["value"]))
                .sum::<usize>();
        assert!(total <= max::TOTAL, "{total}");
        assert!(e["description"]
            .as_str()
            .unwrap()
            .starts_with("\\@everyone"));
        assert_eq!(e["url"], "https://status.shop.example/status/page");
        assert_eq!(e["color"], 0x00D1_3438);
    }

    #[test]
    fn markdown_in_a_name_or_a_reason_shows_as_written() {
        assert_eq!(
            literal("[click](https://evil) **now** @here"),
            "\\[click\\]\\(https://evil\\) \\*\\*now\\*\\* \\@here"
        );
    }
}
