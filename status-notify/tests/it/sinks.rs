//! Hostile receivers: one delivery attempt against a raw socket that redirects, drips its
//! answer, claims or sends an endless body, or closes mid-request. Each is a failed attempt,
//! bounded in time and in what is read, and a redirect is never followed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use status_core::{CheckStatus, DependencyId};
use status_notify::{Message, Notice, Sink, Slack, Webhook, MAX_ANSWER};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a scripted receiver answers.
#[derive(Clone, Copy, Debug)]
enum Script {
    /// `204`.
    Ok,
    /// A redirect with this code to the decoy.
    Redirect(u16),
    /// A status line, then one header byte every 100 ms, forever.
    Drip,
    /// `200` claiming a 10 GB body, then a little of it.
    Claims10Gb,
    /// `200`, chunked, 100 MB of body.
    Sends100Mb,
    /// Reads part of the request, then closes.
    Closes,
}

/// A receiver on a free port: its URL, and how many connections it accepted.
async fn receiver(script: Script, decoy: Option<String>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(answer(stream, script, decoy.clone()));
        }
    });
    (url, accepted)
}

/// Reads a request's head and its body (by `Content-Length`), then plays `script`.
async fn answer(mut stream: TcpStream, script: Script, decoy: Option<String>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    if let Script::Closes = script {
        let _ = stream.read(&mut buf).await;
        return; // dropped: closed mid-request
    }
    loop {
        let Ok(n) = stream.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        request.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&request);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                break;
            }
        }
    }
    let w = &mut stream;
    let _ = match script {
        Script::Ok => w.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await,
        Script::Redirect(code) => {
            let to = decoy.unwrap_or_default();
            w.write_all(
                format!("HTTP/1.1 {code} Moved\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n")
                    .as_bytes(),
            )
            .await
        }
        Script::Drip => {
            let _ = w.write_all(b"HTTP/1.1 200 OK\r\nX-Drip: ").await;
            loop {
                if w.write_all(b"a").await.is_err() {
                    break Ok(());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Script::Claims10Gb => {
            let _ = w
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n")
                .await;
            let _ = w.write_all(&[b'x'; 1024]).await;
            std::future::pending::<()>().await;
            Ok(())
        }
        Script::Sends100Mb => {
            let _ = w
                .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await;
            let chunk = vec![b'x'; 64 * 1024];
            let header = format!("{:x}\r\n", chunk.len());
            for _ in 0..1600 {
                if w.write_all(header.as_bytes()).await.is_err()
                    || w.write_all(&chunk).await.is_err()
                    || w.write_all(b"\r\n").await.is_err()
                {
                    break;
                }
            }
            w.write_all(b"0\r\n\r\n").await
        }
        Script::Closes => Ok(()),
    };
}

fn message() -> Message {
    Message {
        version: 1,
        id: "test-1".to_owned(),
        at: Utc::now(),
        appname: "shop".to_owned(),
        hostname: "web-1".to_owned(),
        text: "db is OUTAGE (was OK)".to_owned(),
        notice: Notice::Changed {
            id: DependencyId::new("db").unwrap(),
            from: CheckStatus::Ok,
            to: CheckStatus::Outage,
            also_affected: Vec::new(),
        },
        incident: None,
        fleet: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_a_failed_attempt_and_never_followed() {
    for code in [301, 302, 303, 307, 308] {
        let (decoy, reached) = receiver(Script::Ok, None).await;
        let (url, _) = receiver(Script::Redirect(code), Some(decoy.clone())).await;
        for sink in [
            Box::new(Webhook::new(&url).unwrap().secret("s")) as Box<dyn Sink>,
            Box::new(Slack::new(&url).unwrap()),
        ] {
            let err = sink
                .deliver(&message(), Duration::from_secs(2))
                .await
                .unwrap_err();
            assert!(err.0.contains(&code.to_string()), "{code}: {err}");
            assert!(
                !err.0.contains(&decoy) && !err.0.contains("127.0.0.1"),
                "the Location is not told: {err}"
            );
        }
        // Give a follower time to have reached the decoy: nothing did.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(reached.load(Ordering::SeqCst), 0, "{code} was followed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_answers_are_bounded_failed_attempts() {
    let timeout = Duration::from_millis(800);
    for script in [
        Script::Drip,
        Script::Claims10Gb,
        Script::Sends100Mb,
        Script::Closes,
    ] {
        let (url, _) = receiver(script, None).await;
        let sink = Webhook::new(&url).unwrap();
        let started = Instant::now();
        let outcome = sink.deliver(&message(), timeout).await;
        let took = started.elapsed();
        let err = outcome.expect_err(&format!("{script:?} is not a delivery"));
        // Bounded in time: the attempt's timeout and a margin for a loaded machine.
        assert!(
            took < timeout + Duration::from_secs(2),
            "{script:?}: {took:?}"
        );
        match script {
            Script::Drip => assert_eq!(err.0, "timed out"),
            Script::Claims10Gb | Script::Sends100Mb => assert_eq!(
                err.0,
                format!("the answer is over {MAX_ANSWER} bytes"),
                "{script:?}"
            ),
            _ => assert!(!err.0.is_empty()),
        }
    }
    // And a well-behaved receiver still gets it.
    let (url, reached) = receiver(Script::Ok, None).await;
    Webhook::new(&url)
        .unwrap()
        .deliver(&message(), timeout)
        .await
        .unwrap();
    assert_eq!(reached.load(Ordering::SeqCst), 1);
}
