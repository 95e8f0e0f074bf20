//! The one bounded server under status-http (HTTP/1) and status-grpc (HTTP/2): what a
//! production listener needs whatever its protocol, kept in one place so that both keep it
//! alike.
//!
//! - **Connection cap**: past it, and whenever `accept` runs out of file descriptors (EMFILE,
//!   ENFILE), the connection that has waited longest without a request in progress is closed
//!   for the new one. A flood of connections that send nothing cannot keep a probe out: the
//!   probe's connection is the newest, answered before newer ones push it out. A connection
//!   answering a request goes only when none is idle: the one longest in its request of the
//!   client holding the most places (a slow body does the least for its place); when each
//!   client holds one, new ones wait in the listen backlog. One client (an IPv4 address, an
//!   IPv6 /64) holds at most its share ([`Bounds::per_client`]): past it each new connection
//!   of its own takes the place of its cheapest, idle first.
//! - **Deadlines** ([`Timeouts`]): a connection's first request must begin within `first` of
//!   its opening; a request's head must arrive whole within `head` of its first byte
//!   (slowloris; HTTP/1, where the head is read before a request exists); a connection with
//!   no request in progress is closed after `idle`. A protocol asks [`Conn::deadline`] and
//!   [`Conn::next_look`]: no request pays for a timer.
//! - **Warnings rate-limited**: a failing `accept` is said at most once every 10 s, with
//!   the count of what was not said ([`Throttled`]).
//! - **Graceful shutdown**: when the signal resolves, the server stops accepting, tells every
//!   connection (its protocol closes an idle one and finishes a busy one: HTTP/1's
//!   keep-alive off, HTTP/2's GOAWAY), waits for them for the grace period, then drops what
//!   is left and returns.
//! - **Counts** ([`ServerStats`]): connections open, closed before a first request, closed
//!   idle, shed, failed accepts.
//!
//! A protocol ([`Protocol`]) serves one connection: status-http's serves HTTP/1 with hyper
//! and axum, status-grpc's HTTP/2 with hyper and tonic. Everything else is here.
//!
//! # The rooms
//!
//! | module | what |
//! |---|---|
//! | `conn` | [`Conn`], [`Busy`], [`Timeouts`] and the table of open connections the cap sheds from |
//! | `body` | [`Tracked`]: a response body that keeps its request [`Busy`] until written whole; [`Watched`]: a socket that tells its connection when a request's bytes begin |
//! | `run` | [`run`]: the accept loop, the cap, out of descriptors, the graceful end; [`Throttled`] |

mod body;
mod conn;
mod run;
mod sync;

pub use self::body::{Tracked, Watched};
pub use self::conn::{Busy, Conn, Timeouts};
pub use self::run::{run, Accepted, Bounds, Protocol, ServerStats, Throttled};
