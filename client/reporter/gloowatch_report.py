#!/usr/bin/python3
"""Reports training step and communication time to the local gloowatchd.

    from gloowatch_report import StepReporter
    rep = StepReporter(job="llm")          # rank etc. from torchrun's env
    for batch in data:
        with rep.step():
            loss = model(batch).sum(); loss.backward()
            with rep.comm():                  # time spent in collectives
                for p in model.parameters():
                    dist.all_reduce(p.grad)
            opt.step()

Or with no change to the loop at all:

    gloowatch_report.instrument(job="llm")   # wraps torch.distributed's calls
    GLOOWATCH_JOB=llm torchrun --no_python ... gloowatch-report run train.py ARGS

A finished step only appends a tuple to a bounded in-memory queue; a
background thread sends the queue in batches (Status.ReportSteps) every
`flush_interval`. A step never waits on the network: when the daemon is
dead, hung or slow the queue fills and further reports are dropped,
counted in `dropped` and logged once. The message classes come from the
package (/usr/share/gloowatch/python, generated at build time, so an
installed helper needs no protoc); from a source tree they are generated at
first use from proto/gloowatch.proto with protoc (/usr/bin/protoc, else
grpc_tools) into a private temp dir.

Also a CLI (one synchronous ReportStep):
  gloowatch_report.py --job J --rank R --step N --step-seconds S
  --comm-seconds C [--daemon host:port] [--tls_ca F --tls_cert F --tls_key F]
and a launcher that instruments a script:  gloowatch_report.py run SCRIPT ARGS
"""

import argparse
import atexit
import collections
import contextlib
import functools
import importlib
import logging
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref

_STUBS = None
_STUBS_LOCK = threading.Lock()
_LOG = logging.getLogger("gloowatch_report")


def _proto_path():
    here = os.path.dirname(os.path.realpath(__file__))
    for cand in (os.environ.get("GLOOWATCH_PROTO"),
                 os.path.join(here, "..", "..", "proto", "gloowatch.proto"),  # a source tree
                 os.path.join(here, "..", "share", "gloowatch", "proto", "gloowatch.proto"),
                 "/usr/share/gloowatch/proto/gloowatch.proto"):
        if cand and os.path.isfile(cand):
            return os.path.realpath(cand)
    raise FileNotFoundError("gloowatch.proto not found; set GLOOWATCH_PROTO")


def _installed_stubs_dir():
    """Where the package put the generated classes, or None (a source tree)."""
    here = os.path.dirname(os.path.realpath(__file__))
    for cand in (os.environ.get("GLOOWATCH_STUBS_DIR"),
                 os.path.join(here, "..", "share", "gloowatch", "python"),
                 "/usr/share/gloowatch/python"):
        if cand and os.path.isfile(os.path.join(cand, "proto", "gloowatch_pb2.py")):
            return os.path.realpath(cand)
    return None


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

    Only message classes are generated; the RPCs are called through
    channel.unary_unary, so no grpc plugin is needed."""
    global _STUBS
    with _STUBS_LOCK:
        if _STUBS is not None:
            return _STUBS
        installed = None if proto else _installed_stubs_dir()
        if installed:
            sys.path.insert(0, installed)
            try:
                _STUBS = importlib.import_module("proto.gloowatch_pb2")
            finally:
                sys.path.remove(installed)
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
REPORT_STEPS_METHOD = "/gloowatch.v1.Status/ReportSteps"
MAX_BATCH = 1024  # the daemon's limit per ReportSteps call
DEFAULT_DAEMON = "127.0.0.1:7601"


def _env_int(name):
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError("%s=%r is not an integer" % (name, v)) from None


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError("%s %s: %s" % (what, path, e.strerror)) from None


def make_channel(daemon, tls_ca=None, tls_cert=None, tls_key=None):
    """A gRPC channel like the CLI's: plaintext, or mutual TLS with all three
    files (a CA that signed the daemon, our certificate and its key)."""
    import grpc
    files = (tls_ca, tls_cert, tls_key)
    # Loopback/local daemon: never go through an http_proxy.
    options = [("grpc.enable_http_proxy", 0)]
    if not any(files):
        return grpc.insecure_channel(daemon, options=options)
    if not all(files):
        raise ValueError("give all of tls_ca, tls_cert and tls_key, or none")
    creds = grpc.ssl_channel_credentials(_read(tls_ca, "tls_ca"), _read(tls_key, "tls_key"),
                                         _read(tls_cert, "tls_cert"))
    return grpc.secure_channel(daemon, creds, options=options)


_IDENTITY = (0, 0)


def _process_identity():
    """(pid, start time in clock ticks since boot from /proc/self/stat), read
    again after a fork; (pid, 0) where /proc cannot tell."""
    global _IDENTITY
    pid = os.getpid()
    if _IDENTITY[0] != pid:
        start = 0
        try:
            with open("/proc/self/stat") as f:
                start = int(f.read().rsplit(")", 1)[1].split()[19])
        except (OSError, ValueError, IndexError):
            pass
        _IDENTITY = (pid, start)
    return _IDENTITY


MAX_SOCKETS = 4096            # the daemon's limit per report
SOCKETS_REFRESH_SECONDS = 2.0  # how often the background thread lists them again
SOCKETS_RECHECK_SECONDS = 30.0  # how often every descriptor is read again


def _socket_inodes(known=None):
    """Inodes of this process's sockets, from /proc/self/fd ("socket:[N]"):
    the daemon finds the job's connections (Gloo pairs, the store) in the
    kernel's socket table by them. No privilege needed. Returns (inodes,
    table): `table` maps each descriptor to its inode (None: not a socket);
    given the previous table as `known`, only new descriptors are read (a
    readlink costs ~25 us, listing them ~0.3 ms). (None, {}) where /proc
    cannot tell."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None, {}
    known = known or {}
    table = {}
    for name in names:
        if name in known:
            table[name] = known[name]
            continue
        try:
            link = os.readlink("/proc/self/fd/" + name)
        except OSError:
            continue  # closed meanwhile, or the listing's own fd
        inode = None
        if link.startswith("socket:[") and link.endswith("]"):
            try:
                inode = int(link[8:-1])
            except ValueError:
                pass
        table[name] = inode
    return sorted({i for i in table.values() if i is not None})[:MAX_SOCKETS], table


class ReportError(RuntimeError):
    """strict=True: reports were dropped or rejected."""


class StepReporter:
    """Times steps and the collectives inside them; reports them in batches.

    rank, local_rank and world_size default to torchrun's RANK, LOCAL_RANK and
    WORLD_SIZE; daemon to $GLOOWATCH_DAEMON or 127.0.0.1:7601; the TLS files to
    $GLOOWATCH_TLS_CA, _CERT, _KEY. Counters (read them any time): steps,
    step_seconds_total, comm_seconds_total (this process's own timing),
    accepted (by the daemon), rejected (refused by it, reason in last_error),
    dropped (queue full, or the daemon unreachable / too slow)."""

    def __init__(self, job, rank=None, daemon=None, timeout=2.0, strict=False, proto=None,
                 clock=time.perf_counter, local_rank=None, world_size=None, queue_size=4096,
                 batch_size=256, flush_interval=0.5, tls_ca=None, tls_cert=None, tls_key=None):
        env = os.environ
        self.job = job
        rank = rank if rank is not None else _env_int("RANK")
        if rank is None:
            raise ValueError("rank: not given and RANK is not set (torchrun sets it)")
        self.rank = int(rank)
        self.local_rank = local_rank if local_rank is not None else _env_int("LOCAL_RANK")
        self.world_size = world_size if world_size is not None else _env_int("WORLD_SIZE")
        self.daemon = daemon or env.get("GLOOWATCH_DAEMON") or DEFAULT_DAEMON
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError("batch_size: %r not in [1, %d]" % (batch_size, MAX_BATCH))
        if queue_size < 1:
            raise ValueError("queue_size: %r < 1" % (queue_size,))
        self.timeout, self.strict, self._clock = timeout, strict, clock
        self.queue_size, self.batch_size, self.flush_interval = queue_size, batch_size, flush_interval
        self._pb2 = load_stubs(proto)
        self._channel = make_channel(self.daemon, tls_ca or env.get("GLOOWATCH_TLS_CA"),
                                     tls_cert or env.get("GLOOWATCH_TLS_CERT"),
                                     tls_key or env.get("GLOOWATCH_TLS_KEY"))
        pb2 = self._pb2
        self._report_steps = self._channel.unary_unary(
            REPORT_STEPS_METHOD, request_serializer=pb2.ReportStepsRequest.SerializeToString,
            response_deserializer=pb2.ReportStepsResponse.FromString)
        self._report_step = self._channel.unary_unary(
            REPORT_STEP_METHOD, request_serializer=pb2.ReportStepRequest.SerializeToString,
            response_deserializer=pb2.ReportStepResponse.FromString)
        self.steps = 0
        self.step_seconds_total = 0.0
        self.comm_seconds_total = 0.0
        self.last_step_seconds = None
        self.last_comm_seconds = None
        self.accepted = 0
        self.rejected = 0
        # Two counters, each written by one thread only: no lost updates.
        self._dropped_full = 0   # the training thread: queue full
        self._dropped_sent = 0   # the sender: daemon unreachable / too slow
        self.last_error = None
        self._in_step = False
        self._comm = 0.0
        self._explicit_steps = False  # once step() is used, no interval steps
        self._window_start = None     # interval steps (instrument without step())
        self._window_comm = 0.0
        self._window_seq = 0
        # Hang attribution: the instrumented call this rank is inside, as
        # (op, seq, group, bytes, entered_at) or None; replaced whole (one
        # attribute store) so the sender thread reads a consistent tuple.
        self._current = None
        self._seq = 0            # instrumented calls so far
        self._last_group = ""
        self.collective_errors = 0
        # The process's socket inodes, listed again every
        # SOCKETS_REFRESH_SECONDS by the sender thread (never by a step).
        self._sockets = None
        self._sockets_listed_at = None
        self._fd_table = {}  # descriptor -> socket inode (None: not a socket)
        self._fds_read_at = None
        try:  # the store's port, to tell its connection from the pairs
            self._store_port = _env_int("MASTER_PORT") or 0
        except ValueError:
            self._store_port = 0
        # The hot path only appends to (and checks the length of) this deque;
        # both are atomic under the GIL, so it needs no lock.
        self._queue = collections.deque()
        self._enqueued = 0
        self._settled = 0   # accepted + rejected + dropped after enqueueing
        self._logged_drop = False
        self._batch_rpc = True
        self._cv = threading.Condition()
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._send_loop, name="gloowatch-report",
                                        daemon=True)
        self._thread.start()
        # Interpreter exit flushes what is queued, for a second at most: a
        # hung daemon must not hold the job's exit up.
        ref = weakref.ref(self)
        self._atexit = lambda: ref() is not None and ref().close(1.0)
        atexit.register(self._atexit)

    @property
    def dropped(self):
        """Reports lost on the way: queue full, or the daemon did not take them."""
        return self._dropped_full + self._dropped_sent

    @property
    def errors(self):
        """Reports that did not reach the daemon's totals (dropped + rejected)."""
        return self.dropped + self.rejected

    @property
    def communication_share(self):
        """The job's own share over all measured steps (None before any)."""
        if self.step_seconds_total <= 0:
            return None
        return self.comm_seconds_total / self.step_seconds_total

    # --- timing -----------------------------------------------------------

    @contextlib.contextmanager
    def comm(self):
        start = self._clock()
        try:
            yield
        finally:
            self.add_comm(self._clock() - start)

    def add_comm(self, seconds, now=None):
        """Counts `seconds` of communication: into the current step, or, when
        step() is not used, into the current reporting interval."""
        if self._in_step:
            self._comm += seconds
            return
        if self._explicit_steps:
            return  # between steps: not part of any step
        now = self._clock() if now is None else now
        if self._window_start is None:
            self._window_start = now - seconds
        self._window_comm += seconds
        elapsed = now - self._window_start
        if elapsed >= self.flush_interval:
            self.report(self._window_seq, elapsed, min(self._window_comm, elapsed))
            self._window_seq += 1
            self._window_start, self._window_comm = now, 0.0

    @contextlib.contextmanager
    def step(self, step=None):
        if self._in_step:
            raise RuntimeError("StepReporter.step() does not nest")
        self._explicit_steps = True
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
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.comm():
                return fn(*args, **kwargs)
        return wrapper

    def report(self, step, step_seconds, comm_seconds):
        """Queues one step; returns False when the queue is full (dropped).
        Never blocks and never raises."""
        self.steps += 1
        self.step_seconds_total += step_seconds
        self.comm_seconds_total += comm_seconds
        self.last_step_seconds, self.last_comm_seconds = step_seconds, comm_seconds
        q = self._queue
        if len(q) >= self.queue_size or self._closed:
            self._dropped_full += 1
            if not self._logged_drop:
                self._log_drop("queue full (%d reports)" % self.queue_size)
            return False
        q.append((step, step_seconds, comm_seconds))
        self._enqueued += 1
        if len(q) >= self.batch_size:
            self._wake.set()
        return True

    # --- delivery (background thread) ------------------------------------

    def _log_drop(self, why):
        self._logged_drop = True
        _LOG.warning("gloowatch_report: daemon %s: %s; dropping reports (counted in "
                     "StepReporter.dropped), the job is not slowed down", self.daemon, why)

    def _request(self, item):
        step, step_s, comm_s = item
        r = self._pb2.ReportStepRequest(job=self.job, rank=self.rank, step=int(step),
                                        step_seconds=float(step_s),
                                        communication_seconds=float(comm_s))
        if self.local_rank is not None:
            r.local_rank = int(self.local_rank)
        if self.world_size is not None:
            r.world_size = int(self.world_size)
        return r

    def _collective_report(self):
        """Where this rank stands in its collectives; None before the first."""
        if self._seq == 0:
            return None
        cur = self._current
        pb2 = self._pb2
        if cur is None:
            state = pb2.CollectiveState(seq=self._seq, group=self._last_group)
        else:
            op, seq, group, nbytes, entered = cur
            state = pb2.CollectiveState(op=op, seq=seq, group=group, bytes=nbytes,
                                        inside_seconds=max(0.0, self._clock() - entered))
        report = pb2.CollectiveReport(job=self.job, rank=self.rank, state=state)
        # Our process, so the daemon can tell a stopped rank from a gone one
        # (messages from an older proto have no such fields).
        pid, start = _process_identity()
        fields = pb2.CollectiveReport.DESCRIPTOR.fields_by_name
        if pid and "pid" in fields:
            report.pid, report.start_time_ticks = pid, start
        # Our sockets, so the daemon can read the job's links (pairs come
        # and go: listed again every few seconds).
        if pid and "sockets" in fields:
            now = time.monotonic()
            if self._sockets_listed_at is None or \
                    now - self._sockets_listed_at >= SOCKETS_REFRESH_SECONDS:
                # New descriptors every time; every one now and then, in
                # case a closed descriptor's number came back as a new socket.
                if self._fds_read_at is None or now - self._fds_read_at >= SOCKETS_RECHECK_SECONDS:
                    self._fd_table, self._fds_read_at = {}, now
                self._sockets, self._fd_table = _socket_inodes(self._fd_table)
                self._sockets_listed_at = now
            if self._sockets is not None:
                report.sockets.inodes.extend(self._sockets)
                if 0 < self._store_port <= 65535:
                    report.store_port = self._store_port
        return report

    def _send(self, items, collective=None):
        """Sends one batch; returns (accepted, rejected, dropped)."""
        import grpc
        reqs = [self._request(x) for x in items]
        try:
            if self._batch_rpc:
                req = self._pb2.ReportStepsRequest(steps=reqs)
                if collective is not None:
                    req.collective.CopyFrom(collective)
                resp = self._report_steps(req, timeout=self.timeout)
                if resp.rejected:
                    self.last_error = resp.rejected[0].error
                if resp.collective_error:
                    self.collective_errors += 1
                    self.last_error = resp.collective_error
                return resp.accepted, len(resp.rejected), 0
            accepted = rejected = 0
            for r in reqs:  # a daemon older than ReportSteps
                try:
                    self._report_step(r, timeout=self.timeout)
                    accepted += 1
                except grpc.RpcError as e:
                    if e.code() not in (grpc.StatusCode.INVALID_ARGUMENT,
                                        grpc.StatusCode.RESOURCE_EXHAUSTED):
                        raise
                    rejected += 1
                    self.last_error = e.details()
            return accepted, rejected, 0
        except grpc.RpcError as e:
            if self._batch_rpc and e.code() == grpc.StatusCode.UNIMPLEMENTED:
                self._batch_rpc = False  # no collective reports to such a daemon
                return self._send(items)
            self.last_error = "%s: %s" % (e.code().name, e.details())
            if not self._logged_drop:
                self._log_drop(self.last_error)
            return 0, 0, len(items)

    def _send_loop(self):
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            # Each round also says where the rank stands (a heartbeat).
            collective = self._collective_report() if self._batch_rpc else None
            while self._queue or collective is not None:
                batch = []
                while self._queue and len(batch) < self.batch_size:
                    batch.append(self._queue.popleft())
                accepted, rejected, dropped = self._send(batch, collective)
                collective = None
                with self._cv:
                    self.accepted += accepted
                    self.rejected += rejected
                    self._dropped_sent += dropped
                    self._settled += len(batch)
                    self._cv.notify_all()
            if self._closed:
                return

    def flush(self, timeout=None):
        """Waits (at most `timeout`, default the RPC timeout plus a second)
        until everything queued so far was sent. True when nothing was dropped
        or rejected so far; strict=True raises ReportError instead of False."""
        target = self._enqueued
        timeout = self.timeout + 1.0 if timeout is None else timeout
        self._wake.set()
        with self._cv:
            self._cv.wait_for(lambda: self._settled >= target or not self._thread.is_alive(),
                              timeout)
            done = self._settled >= target
        ok = done and self.errors == 0
        if not ok and self.strict:
            raise ReportError("gloowatch_report: %d dropped, %d rejected, %d unsent; last error: %s"
                              % (self.dropped, self.rejected, target - self._settled,
                                 self.last_error))
        return ok

    def close(self, timeout=None):
        """Flushes (bounded), stops the sender and closes the channel."""
        if self._closed:
            return
        atexit.unregister(self._atexit)
        if not self._explicit_steps and self._window_start is not None:
            elapsed = self._clock() - self._window_start
            if elapsed > 0:  # the last, partial interval
                self.report(self._window_seq, elapsed, min(self._window_comm, elapsed))
                self._window_start = None
        try:
            self.flush(timeout)
        finally:
            self._closed = True
            self._wake.set()
            self._thread.join(0.1)
            if not self._thread.is_alive():
                self._channel.close()
            # A sender stuck in an RPC to a hung daemon is a daemon thread:
            # it dies with the process and holds nothing the job needs.

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- instrumentation without code changes -------------------------------

# torch.distributed's collectives and point-to-point calls, present in torch
# 1.13 and current releases (missing names are skipped).
INSTRUMENTED_OPS = (
    "all_reduce", "all_reduce_coalesced", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "_all_gather_base", "all_gather_coalesced", "gather", "scatter",
    "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all",
    "all_to_all_single", "barrier", "monitored_barrier", "send", "recv", "isend", "irecv",
    "batch_isend_irecv", "all_gather_object", "broadcast_object_list", "gather_object",
    "scatter_object_list")

_INSTRUMENTED = {}  # name -> original function
_ACTIVE = None      # the StepReporter the wrappers report to


class _TimedWork:
    """An async work handle whose wait() counts as communication (and as
    being inside call `seq`); everything else is the handle's own."""
    __slots__ = ("_work", "_rep", "_call")

    def __init__(self, work, rep, call):
        self._work, self._rep, self._call = work, rep, call  # call: (op, seq, group, bytes)

    def wait(self, *args, **kwargs):
        rep = self._rep
        clock = rep._clock
        start = clock()
        rep._current = self._call + (start,)
        try:
            return self._work.wait(*args, **kwargs)
        finally:
            rep._current = None
            now = clock()
            rep.add_comm(now - start, now)

    def __getattr__(self, name):
        return getattr(self._work, name)


_GROUP_NAMES = {}  # id(process group) -> label


def _group_label(group):
    """"world" for the default group, else the group's name, label-safe."""
    if group is None:
        return "world"
    name = _GROUP_NAMES.get(id(group))
    if name is None:
        import torch.distributed as dist
        c10d = dist.distributed_c10d
        if group is getattr(c10d, "_get_default_group", lambda: None)():
            name = "world"
        else:  # torch >= 2: group_name; 1.13: the module's _pg_names
            raw = getattr(group, "group_name", None) or getattr(c10d, "_pg_names", {}).get(group)
            name = "".join(c if c.isalnum() or c in "_.:-" else "_" for c in str(raw or "group"))
            name = name[:64]
        _GROUP_NAMES[id(group)] = name
    return name


def _nbytes(args):
    """Bytes of the first tensor argument (or tensor list); 0 when none."""
    if not args:
        return 0
    a = args[0]
    try:
        if isinstance(a, (list, tuple)):
            return sum(t.element_size() * t.nelement() for t in a)
        return a.element_size() * a.nelement()
    except (AttributeError, TypeError):
        return 0  # not tensors (the *_object collectives, batch_isend_irecv)


def _wrap(name, fn, work_type):
    depth = threading.local()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        rep = _ACTIVE
        # Nested calls (an *_object collective built on another) count once.
        if rep is None or getattr(depth, "n", 0):
            return fn(*args, **kwargs)
        clock = rep._clock
        depth.n = 1
        rep._seq += 1
        group = _group_label(kwargs.get("group"))
        rep._last_group = group
        call = (name, rep._seq, group, _nbytes(args))
        start = clock()
        rep._current = call + (start,)
        try:
            result = fn(*args, **kwargs)
        finally:
            rep._current = None
            depth.n = 0
            now = clock()
            rep.add_comm(now - start, now)
        if result is None:
            return None
        if isinstance(result, work_type):
            return _TimedWork(result, rep, call)
        if isinstance(result, list) and result and isinstance(result[0], work_type):
            return [_TimedWork(w, rep, call) for w in result]
        return result

    wrapper.__gloowatch_original__ = fn
    return wrapper


def instrument(job=None, reporter=None, **reporter_args):
    """Wraps torch.distributed's collectives and point-to-point calls (and the
    wait() of their async handles) so their time counts as communication of
    the returned StepReporter. Inside rep.step() it goes to that step;
    without step() every `flush_interval` of wall time is reported as one
    step. job defaults to $GLOOWATCH_JOB, then torchrun's TORCHELASTIC_RUN_ID.
    Code that imported a function by name before this call keeps the
    original. Calling it again switches to the new reporter."""
    global _ACTIVE
    import torch.distributed as dist
    if reporter is None:
        job = job or os.environ.get("GLOOWATCH_JOB") or os.environ.get("TORCHELASTIC_RUN_ID")
        if not job:
            raise ValueError("instrument: no job given and GLOOWATCH_JOB is not set")
        if "flush_interval" not in reporter_args and os.environ.get("GLOOWATCH_FLUSH_INTERVAL"):
            reporter_args["flush_interval"] = float(os.environ["GLOOWATCH_FLUSH_INTERVAL"])
        reporter = StepReporter(job, **reporter_args)
    work_type = dist.Work
    for name in INSTRUMENTED_OPS:
        fn = getattr(dist, name, None)
        if fn is None or name in _INSTRUMENTED or hasattr(fn, "__gloowatch_original__"):
            continue
        _INSTRUMENTED[name] = fn
        setattr(dist, name, _wrap(name, fn, work_type))
    _ACTIVE = reporter
    return reporter


def uninstrument():
    """Puts torch.distributed's own functions back; returns the reporter."""
    global _ACTIVE
    import torch.distributed as dist
    for name, fn in _INSTRUMENTED.items():
        setattr(dist, name, fn)
    _INSTRUMENTED.clear()
    rep, _ACTIVE = _ACTIVE, None
    return rep


def active_reporter():
    return _ACTIVE


def _instrument_from_env():
    """GLOOWATCH_INSTRUMENT=1: instrument as soon as this module is imported."""
    if os.environ.get("GLOOWATCH_INSTRUMENT", "") not in ("", "0") and _ACTIVE is None:
        try:
            instrument()
        except Exception as e:  # never break the job for its monitoring
            _LOG.warning("gloowatch_report: GLOOWATCH_INSTRUMENT set but not instrumenting: %s", e)


def run(argv):
    """`gloowatch-report run SCRIPT ARGS` / `-m MODULE ARGS`: runs the training
    script with torch.distributed instrumented (job from GLOOWATCH_JOB)."""
    if not argv:
        print("usage: gloowatch-report run SCRIPT [ARGS...] | run -m MODULE [ARGS...]",
              file=sys.stderr)
        return 64
    # The script's `import gloowatch_report` must find this module, not a
    # second copy with its own reporter.
    sys.modules.setdefault("gloowatch_report", sys.modules[__name__])
    try:
        rep = _ACTIVE or instrument()
    except ValueError as e:
        print("gloowatch-report run: %s" % e, file=sys.stderr)
        return 64
    try:
        if argv[0] == "-m" and len(argv) > 1:
            sys.argv = argv[1:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path.insert(0, os.path.dirname(os.path.realpath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        rep.close()
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        return run(argv[1:])
    p = argparse.ArgumentParser(description="Send one ReportStep to gloowatchd.")
    p.add_argument("--daemon", default=os.environ.get("GLOOWATCH_DAEMON", DEFAULT_DAEMON),
                   help="the daemon's gRPC address, HOST:PORT ($GLOOWATCH_DAEMON, else %s)"
                   % DEFAULT_DAEMON)
    p.add_argument("--job", required=True, help="the training job's name")
    p.add_argument("--rank", type=int, required=True, help="the reporting rank")
    p.add_argument("--step", type=int, required=True, help="the step's number")
    p.add_argument("--step-seconds", type=float, required=True,
                   help="the step's wall time in seconds")
    p.add_argument("--comm-seconds", type=float, required=True,
                   help="of that, the time spent communicating, in seconds")
    for name, what in (("ca", "CA file: talk TLS to the daemon"),
                       ("cert", "client certificate for mutual TLS"),
                       ("key", "its private key")):
        env = "GLOOWATCH_TLS_" + name.upper()
        p.add_argument("--tls_" + name, default=os.environ.get(env), help="%s ($%s)" % (what, env))
    a = p.parse_args(argv)
    pb2 = load_stubs()
    try:
        channel = make_channel(a.daemon, a.tls_ca, a.tls_cert, a.tls_key)
    except ValueError as e:
        print("gloowatch-report: %s" % e, file=sys.stderr)
        return 64
    call = channel.unary_unary(REPORT_STEP_METHOD,
                               request_serializer=pb2.ReportStepRequest.SerializeToString,
                               response_deserializer=pb2.ReportStepResponse.FromString)
    req = pb2.ReportStepRequest(job=a.job, rank=a.rank, step=a.step, step_seconds=a.step_seconds,
                                communication_seconds=a.comm_seconds)
    try:
        call(req, timeout=5.0)
    except Exception as e:
        code = e.code() if hasattr(e, "code") else None
        details = e.details() if hasattr(e, "details") else str(e)
        print("gloowatch-report: %s: %s" % (a.daemon, details), file=sys.stderr)
        return 65 if code is not None and code.name in ("INVALID_ARGUMENT",
                                                          "RESOURCE_EXHAUSTED") else 69
    finally:
        channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
else:
    _instrument_from_env()
