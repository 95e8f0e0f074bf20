"""Drives the quickstart's gRPC health service with grpcio, a client nobody here wrote.

Usage: grpc-health-client.py GRPC_ADDR HTTP_BASE ADMIN_TOKEN SERVER_PID

Check, List, Watch through a chaos change (the probe services too), an unknown service, a bad name and a shutdown,
against grpc.health.v1.Health as grpcio-health-checking's generated stubs speak it.
"""

import json
import os
import queue
import signal
import sys
import threading
import time
import urllib.request

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
NAMES = {v: k for k, v in health_pb2.HealthCheckResponse.ServingStatus.items()}


def fail(message):
    print(f"grpc health: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def expect(condition, message):
    if not condition:
        fail(message)


def check(stub, service):
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def until(what, predicate, deadline=20):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    fail(f"not within {deadline} s: {what}")


class Watcher:
    """A Watch call read on a thread, its messages in a queue; None once it ends."""

    def __init__(self, stub, service):
        self.call = stub.Watch(health_pb2.HealthCheckRequest(service=service))
        self.messages = queue.Queue()
        self.error = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for response in self.call:
                self.messages.put(response.status)
        except grpc.RpcError as e:
            self.error = e
        self.messages.put(None)

    def next(self, timeout=20):
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            fail(f"no Watch message within {timeout} s")

    def wait_for(self, status, timeout=20):
        end = time.monotonic() + timeout
        seen = []
        while time.monotonic() < end:
            got = self.next(max(0.1, end - time.monotonic()))
            seen.append(NAMES.get(got, got))
            if got == status:
                return
            expect(got is not None, f"the stream ended before {NAMES[status]}: {seen}")
        fail(f"no {NAMES[status]} within {timeout} s: {seen}")


def chaos(base, token, dependency, mode):
    request = urllib.request.Request(
        f"{base}/demo/chaos/{dependency}",
        data=json.dumps({"mode": mode}).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        expect(answer.status == 200, f"chaos {dependency} {mode}: {answer.status}")


def main():
    address, base, token, pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=30)
    stub = health_pb2_grpc.HealthStub(channel)

    until("the instance SERVING once started", lambda: check(stub, "") == SERVING)
    # Each dependency's first check may land after the system's first answer (a slow one on a
    # busy machine): each service is SERVING within the same bound, not at the same instant.
    for service in ["ready", "cache", "feature/checkout", "feature/search-box"]:
        until(f"{service} is SERVING", lambda: check(stub, service) == SERVING)
    try:
        check(stub, "no-such-service")
        fail("an unknown service answered")
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.NOT_FOUND, f"unknown service: {e.code()}")
    try:
        check(stub, "x" * 300)
        fail("a 300-byte name answered")
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"long name: {e.code()}")
    print("grpc health: Check ok")

    listed = stub.List(health_pb2.HealthListRequest(), timeout=5).statuses
    names = sorted(listed.keys())
    expect(
        names
        == [
            "",
            "cache",
            "feature/checkout",
            "feature/recommendations-widget",
            "feature/search-box",
            "probe/live",
            "probe/ready",
            "probe/startup",
            "ready",
        ],
        f"List: {names}",
    )
    expect(all(s.status == SERVING for s in listed.values()), f"List: {listed}")
    print("grpc health: List ok")

    watch = Watcher(stub, "")
    expect(watch.next() == SERVING, "Watch starts with the status now")
    ready = Watcher(stub, "ready")
    expect(ready.next() == SERVING, "the ready group starts SERVING")
    probe_ready = Watcher(stub, "probe/ready")
    expect(probe_ready.next() == SERVING, "probe/ready starts SERVING")
    chaos(base, token, "primary-db", "outage")
    watch.wait_for(NOT_SERVING)
    ready.wait_for(NOT_SERVING)
    probe_ready.wait_for(NOT_SERVING)
    expect(check(stub, "feature/checkout") == SERVING, "checkout needs payments, not the db")
    # Liveness and startup as their HTTP routes: a database down restarts nothing.
    expect(check(stub, "probe/live") == SERVING, "probe/live holds through an outage")
    expect(check(stub, "probe/startup") == SERVING, "probe/startup holds through an outage")
    chaos(base, token, "primary-db", "ok")
    watch.wait_for(SERVING)
    print("grpc health: Watch through a chaos change ok")

    unknown = Watcher(stub, "no-such-service")
    expect(unknown.next() == SERVICE_UNKNOWN, "an unknown service is SERVICE_UNKNOWN")
    try:
        more = unknown.messages.get(timeout=1.5)
        fail(f"the unknown service's stream did not stay open quietly: {more}")
    except queue.Empty:
        pass
    print("grpc health: Watch on an unknown service ok")

    os.kill(pid, signal.SIGTERM)
    watch.wait_for(NOT_SERVING)
    end = watch.next(timeout=30)
    expect(end is None, f"the stream ends at the end of the grace, not {end}")
    print("grpc health: shutdown ok")


if __name__ == "__main__":
    main()
