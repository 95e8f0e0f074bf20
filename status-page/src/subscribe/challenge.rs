//! A webhook proves it wants the messages before it is told any, as Slack's URL verification
//! asks: the page posts `{"type": "url_verification", "challenge": "…"}` to it, and the
//! subscription is confirmed only when the answer is a 2xx whose body is the challenge,
//! as plain text or as JSON `{"challenge": "…"}` (the page's own body echoed back is not an
//! answer). A URL that does not answer so (somebody else's server, named by a stranger) is
//! never told anything.

use serde_json::json;
use status_history::Subscriber;

use super::send::{literal_reachable, unsubscribe_link, web_client};
use super::{hash, Door, SEND_DEADLINE};
use crate::StatusPageState;

/// The most of an answer read: a challenge is 32 characters.
const MAX_ANSWER: usize = 4096;

/// The waits before each try of a challenge.
const RETRIES: [std::time::Duration; 3] = [
    std::time::Duration::ZERO,
    std::time::Duration::from_secs(5),
    std::time::Duration::from_secs(30),
];

/// Challenges the webhook `s` (its token `secret`) and confirms it when it answers; after
/// three tries without, says so and lifts its cooldown, so that it may ask again at once.
pub(super) async fn webhook(state: &StatusPageState, door: &Door, s: &Subscriber, secret: &str) {
    let Some(history) = state.history.as_ref() else {
        return;
    };
    let mut challenge = [0u8; 16];
    if getrandom::fill(&mut challenge).is_err() {
        tracing::warn!(subscriber = s.id, "no random challenge can be made");
        return;
    }
    let challenge = super::hex(&challenge);
    let body = json!({
        "type": "url_verification",
        "challenge": challenge,
        "meta": {
            "page": state.name,
            "unsubscribe": unsubscribe_link(state, door, s),
        },
    });
    let web = match web_client(door.config.allow_private_webhooks) {
        Ok(web) => web,
        Err(e) => {
            tracing::warn!(subscriber = s.id, "no webhook can be challenged: {e}");
            return;
        }
    };
    let mut why = String::new();
    for wait in RETRIES {
        tokio::time::sleep(wait).await;
        let answered =
            tokio::time::timeout(SEND_DEADLINE, ask(&web, door, &s.address, &body)).await;
        match answered {
            Ok(Ok(answer)) if answers(&answer, &challenge) => {
                if let Err(e) = history.confirm_subscriber(&hash(secret)).await {
                    tracing::warn!(subscriber = s.id, "a webhook answered, but: {e}");
                }
                return;
            }
            Ok(Ok(_)) => why = "its answer is not the challenge".to_owned(),
            Ok(Err(e)) => why = e,
            Err(_) => why = format!("no answer within {}s", SEND_DEADLINE.as_secs()),
        }
    }
    tracing::warn!(
        subscriber = s.id,
        "a webhook did not answer its challenge, three tries: {why}; it is told nothing, and \
         may ask again at once"
    );
    let unsent = Subscriber {
        confirm_sent: None,
        ..s.clone()
    };
    if let Err(e) = history.subscribe(&unsent).await {
        tracing::warn!(subscriber = s.id, "its cooldown cannot be lifted: {e}");
    }
}

/// Posts the challenge to `url` with `web`: the body of a 2xx answer, at most 4 KiB of it.
async fn ask(
    web: &reqwest::Client,
    door: &Door,
    url: &str,
    body: &serde_json::Value,
) -> Result<Vec<u8>, String> {
    if !door.config.allow_private_webhooks {
        literal_reachable(url)?;
    }
    let mut answer = web
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(body).unwrap_or_default())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !answer.status().is_success() {
        return Err(format!("it answered {}", answer.status()));
    }
    let mut read = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(|e| e.to_string())? {
        if read.len() + chunk.len() > MAX_ANSWER {
            return Err("its answer is longer than 4 KiB".to_owned());
        }
        read.extend_from_slice(&chunk);
    }
    Ok(read)
}

/// Whether `answer` is `challenge`: the text itself, or JSON whose `challenge` it is.
fn answers(answer: &[u8], challenge: &str) -> bool {
    let Ok(text) = std::str::from_utf8(answer) else {
        return false;
    };
    if text.trim() == challenge {
        return true;
    }
    // The challenge's own body sent back (an echo server) proves nothing.
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| {
        v.get("challenge").and_then(|c| c.as_str()) == Some(challenge) && v.get("type").is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::answers;

    #[test]
    fn only_the_challenge_itself_answers_it() {
        let c = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmd";
        assert!(answers(c.as_bytes(), c));
        assert!(answers(format!("{c}\n").as_bytes(), c));
        assert!(answers(format!(r#"{{"challenge":"{c}"}}"#).as_bytes(), c));
        for wrong in [
            String::new(),
            "ok".to_owned(),
            format!(r#"{{"type":"url_verification","challenge":"x","echo":"{c}"}}"#),
            format!("{c}{c}"),
            format!(r#"{{"type":"url_verification","challenge":"{c}"}}"#),
            "\u{fffd}".to_owned(),
        ] {
            assert!(!answers(wrong.as_bytes(), c), "{wrong}");
        }
        assert!(!answers(&[0xff, 0xfe], c));
    }
}
