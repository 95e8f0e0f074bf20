//! The export as a collector sees it: a receiver on loopback that decodes every request with
//! the protocol's own definitions (`opentelemetry-proto`), and can hang as a dead collector
//! does. These run on real time: the SDK's reader and the queues' threads keep their own.

mod collector;
mod export;
mod outage;
#[cfg(feature = "history")]
mod slos;
