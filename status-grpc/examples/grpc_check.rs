//! Runs `GrpcHealthCheck` once against `URI` for `SERVICE` and prints the outcome's level and
//! message: `scripts/grpc-health` runs it against Python's grpcio health server.
//!
//! Usage: `cargo run -p status-grpc --example grpc_check -- URI [SERVICE]`

use std::time::Duration;

use status_core::check::Check;
use status_grpc::check::GrpcHealthCheck;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let uri = args.next().ok_or("usage: grpc_check URI [SERVICE]")?;
    let service = args.next().unwrap_or_default();
    let check = GrpcHealthCheck::new(&uri, service)?;
    let outcome = tokio::time::timeout(Duration::from_secs(5), check.check()).await?;
    println!("{} {}", outcome.status(), outcome.message());
    Ok(())
}
