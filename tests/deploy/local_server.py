"""Helpers of the deploy tests that start a server (Prometheus, Alertmanager)
on loopback: starting it on a free port (tests/support/free_port.py) until it
is ready, and stopping it without leaving it behind."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from free_port import free_port, port_taken  # noqa: E402

# Fresh ports this often when another process took ours between free_port()
# and the server's bind.
PORT_ATTEMPTS = 3


def serve(argv_for_port, log_path, ready, timeout):
    """Runs argv_for_port(port) on a free port, stderr to log_path, until
    ready(port) returns (an OSError means not yet); again on a new port when
    the log says the port was taken. Returns (proc, port); exits the test
    with FAIL when the server exits or is not ready within `timeout` s."""
    deadline = time.monotonic() + timeout
    for _ in range(PORT_ATTEMPTS):
        port = free_port()
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv_for_port(port), stdout=subprocess.DEVNULL, stderr=log)
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                ready(port)
                return proc, port
            except OSError:
                time.sleep(0.2)
        stop(proc)
        if not port_taken(open(log_path).read()):
            break
    raise SystemExit(f"FAIL: {argv_for_port(0)[0]} not ready: {open(log_path).read()[-2000:]}")


def stop(proc):
    """SIGTERM, then SIGKILL if it has not exited within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
