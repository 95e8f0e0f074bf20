"""A gRPC health server of Python's grpcio-health-checking, for scripts/grpc-health to point
status-grpc's GrpcHealthCheck at: `up` SERVING, `down` NOT_SERVING, `unsure` UNKNOWN, the
server itself (``) SERVING. Prints its port, then serves until killed."""

from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
servicer = health.HealthServicer()
servicer.set("", health_pb2.HealthCheckResponse.SERVING)
servicer.set("up", health_pb2.HealthCheckResponse.SERVING)
servicer.set("down", health_pb2.HealthCheckResponse.NOT_SERVING)
servicer.set("unsure", health_pb2.HealthCheckResponse.UNKNOWN)
health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
print(port, flush=True)
server.wait_for_termination()
