#!/usr/bin/python3
"""Reports training step and communication time to the local gloowatchd.

    from gloowatch_report import StepReporter
    rep = StepReporter(job="llm", rank=dist.get_rank())   # daemon 127.0.0.1:7601
    for batch in data:
        with rep.step():
            loss = model(batch).sum(); loss.backward()
            with rep.comm():                  # time spent in collectives
                for p in model.parameters():
                    dist.all_reduce(p.grad)
            opt.step()

Each finished step sends Status.ReportStep (job, rank, step, step_seconds,
communication_seconds). The message classes are generated at first use from
proto/gloowatch.proto with protoc (/usr/bin/protoc, else grpc_tools) into a
private temp dir: no build step, nothing generated to keep in sync. Reporting never
raises into the training loop unless strict=True; failures are counted in
`errors` and the last one kept in `last_error`.

Also a CLI:  gloowatch_report.py --job J --rank R --step N --step-seconds S
--comm-seconds C [--daemon host:port]
"""

import argparse
import contextlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

_STUBS = None
_STUBS_LOCK = threading.Lock()


def _proto_path():
    here = os.path.dirname(os.path.realpath(__file__))
    for cand in (os.environ.get("GLOOWATCH_PROTO"),
                 os.path.join(here, "..", "proto", "gloowatch.proto"),
                 os.path.join(here, "..", "share", "gloowatch", "proto", "gloowatch.proto"),
                 "/usr/share/gloowatch/proto/gloowatch.proto"):
        if cand and os.path.isfile(cand):
            return os.path.realpath(cand)
    raise FileNotFoundError("gloowatch.proto not found; set GLOOWATCH_PROTO")


def _run_protoc(args):
    # System protoc first: Debian 12's grpc_tools bundles a protoc too old for
    # proto3 `optional` (it rejects the proto outright).
    exe = os.environ.get("GLOOWATCH_PROTOC") or shutil.which("protoc")
    if exe:
        return subprocess.run([exe] + args, check=False).returncode
    from grpc_tools import protoc
    return protoc.main(["protoc"] + args)


def load_stubs(proto=None):
    """Returns the generated gloowatch_pb2 module, generating it once.

    Only message classes are generated; the two RPCs are called through
    channel.unary_unary, so no grpc plugin is needed."""
    global _STUBS
    with _STUBS_LOCK:
        if _STUBS is not None:
            return _STUBS
        proto = os.path.realpath(proto or _proto_path())
        root = os.path.dirname(os.path.dirname(proto))  # .../proto/gloowatch.proto
        out = tempfile.mkdtemp(prefix="gloowatch_stubs_")
        if _run_protoc(["-I" + root, "--python_out=" + out, os.path.relpath(proto, root)]) != 0:
            raise RuntimeError("protoc failed for " + proto)
        sys.path.insert(0, out)
        try:
            _STUBS = importlib.import_module("proto.gloowatch_pb2")
        finally:
            sys.path.remove(out)
        return _STUBS


REPORT_STEP_METHOD = "/gloowatch.v1.Status/ReportStep"


class StepReporter:
    """Times steps and the collectives inside them; reports each step."""

    def __init__(self, job, rank, daemon="127.0.0.1:7601", timeout=2.0, strict=False,
                 proto=None, clock=time.perf_counter):
        import grpc
        self.job, self.rank, self.daemon = job, int(rank), daemon
        self.timeout, self.strict, self._clock = timeout, strict, clock
        self._pb2 = load_stubs(proto)
        # Loopback/local daemon: never go through an http_proxy.
        self._channel = grpc.insecure_channel(daemon, options=[("grpc.enable_http_proxy", 0)])
        self._report_step = self._channel.unary_unary(
            REPORT_STEP_METHOD,
            request_serializer=self._pb2.ReportStepRequest.SerializeToString,
            response_deserializer=self._pb2.ReportStepResponse.FromString)
        self.steps = 0
        self.step_seconds_total = 0.0
        self.comm_seconds_total = 0.0
        self.last_step_seconds = None
        self.last_comm_seconds = None
        self.errors = 0
        self.last_error = None
        self._in_step = False
        self._comm = 0.0

    @property
    def communication_share(self):
        """The job's own share over all reported steps (None before any)."""
        if self.step_seconds_total <= 0:
            return None
        return self.comm_seconds_total / self.step_seconds_total

    @contextlib.contextmanager
    def comm(self):
        start = self._clock()
        try:
            yield
        finally:
            self._comm += self._clock() - start

    @contextlib.contextmanager
    def step(self, step=None):
        if self._in_step:
            raise RuntimeError("StepReporter.step() does not nest")
        self._in_step, self._comm = True, 0.0
        start = self._clock()
        try:
            yield self
        finally:
            elapsed = self._clock() - start
            self._in_step = False
            self.report(step if step is not None else self.steps, elapsed, min(self._comm, elapsed))

    def timed_comm(self, fn):
        """Decorator/wrapper: fn's run time counts as communication."""
        def wrapper(*args, **kwargs):
            with self.comm():
                return fn(*args, **kwargs)
        return wrapper

    def report(self, step, step_seconds, comm_seconds):
        """Sends one ReportStep; returns True when the daemon accepted it."""
        req = self._pb2.ReportStepRequest(job=self.job, rank=self.rank, step=int(step),
                                          step_seconds=float(step_seconds),
                                          communication_seconds=float(comm_seconds))
        try:
            self._report_step(req, timeout=self.timeout)
        except Exception as e:  # grpc.RpcError and friends
            self.errors += 1
            self.last_error = e
            if self.strict:
                raise
            return False
        self.steps += 1
        self.step_seconds_total += step_seconds
        self.comm_seconds_total += comm_seconds
        self.last_step_seconds, self.last_comm_seconds = step_seconds, comm_seconds
        return True

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main(argv=None):
    p = argparse.ArgumentParser(description="Send one ReportStep to gloowatchd.")
    p.add_argument("--daemon", default="127.0.0.1:7601")
    p.add_argument("--job", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--step", type=int, required=True)
    p.add_argument("--step-seconds", type=float, required=True)
    p.add_argument("--comm-seconds", type=float, required=True)
    a = p.parse_args(argv)
    with StepReporter(a.job, a.rank, a.daemon, strict=True) as r:
        try:
            r.report(a.step, a.step_seconds, a.comm_seconds)
        except Exception as e:
            code = getattr(e, "code", lambda: None)()
            print("gloowatch-report: %s: %s" % (a.daemon, getattr(e, "details", lambda: e)()),
                  file=sys.stderr)
            return 65 if code is not None and code.name in ("INVALID_ARGUMENT",
                                                              "RESOURCE_EXHAUSTED") else 69
    return 0


if __name__ == "__main__":
    sys.exit(main())
