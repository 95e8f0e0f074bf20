//! The ceiling a body's size puts on a route, for `scripts/bench-http`'s `public` section: a
//! bare axum server whose only work per request is to hand out a constant body, `/bytes/{n}`
//! for each size `n` named (a route each, no extractor: the first `n` bytes of a mebibyte made
//! at start), against its own `/hello`. What a route of `n` bytes can reach against `/hello` on
//! this machine, whatever it does to make them.
//!
//! ```sh
//! cargo run --release -p status-http --example bytes-ceiling -- --port 18091 --sizes 189,5503
//! ```

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

/// The largest body served.
const MAX: usize = 1 << 20;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut port, mut sizes) = (18091u16, Vec::new());
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--port" => {
                port = value
                    .parse()
                    .map_err(|_| std::io::Error::other("--port takes a port"))?;
            }
            "--sizes" => {
                sizes = value
                    .split(',')
                    .map(|n| n.trim().parse::<usize>().map(|n| n.min(MAX)))
                    .collect::<Result<_, _>>()
                    .map_err(|_| std::io::Error::other("--sizes takes sizes in bytes, a,b,c"))?;
            }
            _ => return Err(std::io::Error::other(format!("unknown argument {arg}"))),
        }
    }
    let all = Bytes::from(vec![b'x'; MAX]);
    let mut app = Router::new()
        .route("/hello", get(|| async { "Hello, World!" }))
        // Ready at once (the bench waits for a startup probe).
        .route("/healthcheck/startup", get(|| async { "ok" }));
    for n in sizes {
        let body = all.slice(..n);
        app = app.route(
            &format!("/bytes/{n}"),
            get(move || {
                let body = body.clone();
                async move { ([(CONTENT_TYPE, "application/json")], body).into_response() }
            }),
        );
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            axum::serve(listener, app).await
        })
}
