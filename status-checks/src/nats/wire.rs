//! The NATS protocol as the check speaks it: lines, payloads, PING/PONG, and JetStream's
//! account info, bounded.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{MAX_LINE, MAX_PAYLOAD};

/// A stream the check reads and writes, over TCP or TLS.
pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// A connection: its stream, what was read past the last line, and the server's version.
pub(super) struct Connection {
    pub(super) stream: Box<dyn Stream>,
    pub(super) buffer: Vec<u8>,
    pub(super) version: String,
}

/// Why a run failed: the I/O error, or what the server did that NATS does not (OUTAGE).
pub(super) type Failure = std::io::Error;

/// A failure that is the server's doing, said.
pub(super) fn failure(why: impl Into<String>) -> Failure {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.into())
}

impl Connection {
    /// The next line (`what`, for the error), without its end; at most [`MAX_LINE`] bytes.
    pub(super) async fn line(&mut self, what: &str) -> Result<Vec<u8>, Failure> {
        loop {
            if let Some(at) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                let line = self.buffer[..at].to_vec();
                self.buffer.drain(..at + 2);
                return Ok(line);
            }
            if self.buffer.len() > MAX_LINE {
                return Err(failure(format!(
                    "the server sent more than {} KiB without ending {what}: not a NATS \
                     server, or a hostile one",
                    MAX_LINE / 1024
                )));
            }
            self.fill().await?;
        }
    }

    /// `n` bytes and the line's end after them; `n` at most [`MAX_PAYLOAD`].
    pub(super) async fn payload(&mut self, n: usize) -> Result<Vec<u8>, Failure> {
        if n > MAX_PAYLOAD {
            return Err(failure(format!(
                "the server announced a message of {n} bytes (at most {} KiB is read)",
                MAX_PAYLOAD / 1024
            )));
        }
        while self.buffer.len() < n + 2 {
            self.fill().await?;
        }
        let payload = self.buffer[..n].to_vec();
        self.buffer.drain(..n + 2);
        Ok(payload)
    }

    /// Reads what the server sent next into the buffer.
    pub(super) async fn fill(&mut self) -> Result<(), Failure> {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(failure("the server closed the connection"));
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// Reads operations until a PONG: answers the server's PINGs, skips `+OK` and `INFO`,
    /// fails on `-ERR`; a message is read (bounded) and dropped.
    pub(super) async fn until_pong(&mut self) -> Result<(), Failure> {
        loop {
            match self.op().await? {
                Op::Pong => return Ok(()),
                Op::Message { .. } => {}
            }
        }
    }

    /// The next operation the check cares about (PONG or a message); the rest handled here.
    pub(super) async fn op(&mut self) -> Result<Op, Failure> {
        loop {
            let line = self.line("a line").await?;
            let text = String::from_utf8_lossy(&line);
            let mut words = text.split_ascii_whitespace();
            let verb = words.next().unwrap_or_default().to_ascii_uppercase();
            match verb.as_str() {
                "PONG" => return Ok(Op::Pong),
                "PING" => self.stream.write_all(b"PONG\r\n").await?,
                "+OK" | "INFO" | "" => {}
                "-ERR" => {
                    let why = text[4..].trim().trim_matches('\'');
                    return Err(failure(format!("the server refused: {why}")));
                }
                // MSG subject sid [reply] bytes; HMSG subject sid [reply] header total.
                "MSG" | "HMSG" => {
                    let numbers: Vec<&str> = words.collect();
                    let parse = |s: Option<&&str>| s.and_then(|s| s.parse::<usize>().ok());
                    let total = parse(numbers.last()).ok_or_else(|| bad(&text))?;
                    let headers = if verb == "HMSG" {
                        parse(numbers.get(numbers.len().wrapping_sub(2)))
                            .ok_or_else(|| bad(&text))?
                    } else {
                        0
                    };
                    if headers > total {
                        return Err(bad(&text));
                    }
                    let payload = self.payload(total).await?;
                    let sid = numbers.get(1).copied().unwrap_or_default().to_owned();
                    return Ok(Op::Message {
                        sid,
                        headers: payload[..headers].to_vec(),
                        body: payload[headers..].to_vec(),
                    });
                }
                _ => return Err(bad(&text)),
            }
        }
    }

    /// Asks JetStream for the account's information (`$JS.API.INFO`), read only as far as an
    /// error: the answer's shape changes between server versions; an error or no responder
    /// (JetStream off) is what matters.
    pub(super) async fn jetstream_info(&mut self) -> Result<Result<(), String>, Failure> {
        let inbox = format!(
            "_INBOX.status.{:016x}",
            status_core::Rng::from_entropy().next_u64()
        );
        let ask = format!("SUB {inbox} 1\r\nPUB $JS.API.INFO {inbox} 0\r\n\r\nPING\r\n");
        self.stream.write_all(ask.as_bytes()).await?;
        let mut answer = None;
        let mut ponged = false;
        let wait = async {
            while answer.is_none() || !ponged {
                match self.op().await? {
                    Op::Pong => ponged = true,
                    Op::Message { sid, headers, body } if sid == "1" => {
                        answer = Some((headers, body));
                    }
                    Op::Message { .. } => {}
                }
            }
            Ok::<_, Failure>(())
        };
        // JetStream answers at once, or says it is off at once (no responders); a server
        // too old to say so is given two seconds.
        let waited = tokio::time::timeout(Duration::from_secs(2), wait).await;
        // Unsubscribed whatever came: the next run subscribes sid 1 again.
        self.stream.write_all(b"UNSUB 1\r\n").await?;
        match waited {
            Err(_) => return Ok(Err("no answer within 2 s".to_owned())),
            Ok(Err(failure)) => return Err(failure),
            Ok(Ok(())) => {}
        }
        let (headers, body) = answer.unwrap_or_default();
        // No responders: `NATS/1.0 503` in the headers.
        let status = String::from_utf8_lossy(&headers);
        if status.starts_with("NATS/1.0 503") {
            return Ok(Err("no responders (JetStream is off)".to_owned()));
        }
        let info: serde_json::Value = match serde_json::from_slice(&body) {
            Ok(info) => info,
            Err(e) => return Ok(Err(format!("an answer that is not JSON: {e}"))),
        };
        Ok(match info.get("error") {
            Some(error) => Err(error
                .get("description")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("an error")
                .to_owned()),
            None => Ok(()),
        })
    }
}

/// What the server sent that the check waits for.
pub(super) enum Op {
    Pong,
    Message {
        sid: String,
        headers: Vec<u8>,
        body: Vec<u8>,
    },
}

/// A line the protocol has no place for.
pub(super) fn bad(line: &str) -> Failure {
    let shown: String = line.chars().take(64).filter(|c| !c.is_control()).collect();
    failure(format!("the server sent what NATS does not: {shown:?}"))
}
