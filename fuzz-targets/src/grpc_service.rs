//! gRPC health checking's requests from outside, as wire bytes: a request that decodes asks
//! about a service; a name that is not UTF-8 or is too long is INVALID_ARGUMENT, an unknown
//! one NOT_FOUND, a known one answered with the status `HealthService::status` gives (the
//! core's verdict), never anything else.

use crate::common;

use std::sync::OnceLock;

use prost::Message;
use status_grpc::pb::health_server::Health;
use status_grpc::pb::HealthCheckRequest;
use status_grpc::{HealthService, MAX_SERVICE_NAME};

fn service() -> &'static HealthService {
    static SERVICE: OnceLock<HealthService> = OnceLock::new();
    SERVICE.get_or_init(|| HealthService::new(&common::registry_with_writes()))
}

/// One input (see the module).
pub fn grpc_service(wire: &[u8]) {
    let Ok(request) = HealthCheckRequest::decode(wire) else {
        return;
    };
    let name = request.service.clone();
    let service = service();
    let answer = common::runtime().block_on(service.check(tonic::Request::new(request)));
    match (std::str::from_utf8(&name), answer) {
        (Ok(name), Ok(response)) => {
            assert!(name.len() <= MAX_SERVICE_NAME);
            let known = service.status(name).expect("answered, so known");
            assert_eq!(response.into_inner().status, known as i32, "{name:?}");
        }
        (Ok(name), Err(status)) if name.len() <= MAX_SERVICE_NAME => {
            assert_eq!(status.code(), tonic::Code::NotFound, "{name:?}: {status:?}");
            assert!(service.status(name).is_none(), "{name:?} known yet refused");
        }
        (_, Err(status)) => assert_eq!(status.code(), tonic::Code::InvalidArgument),
        (Err(_), Ok(_)) => panic!("a name that is not UTF-8 was answered"),
    }
}
