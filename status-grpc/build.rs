//! Generates the gRPC health protocol's messages and service from its `.proto`, with a
//! `protoc` from a crate (no system package needed).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/grpc/health/v1/health.proto");
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .codec_path("crate::codec::HealthCodec")
        .compile_with_config(config, &["proto/grpc/health/v1/health.proto"], &["proto"])?;
    Ok(())
}
