"""Helpers of the deploy tests that start a server (Prometheus, Alertmanager)
on loopback: a free port (tests/support/free_port.py), and stopping it
without leaving it behind."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from free_port import free_port  # noqa: E402,F401  (the deploy tests import it from here)


def stop(proc):
    """SIGTERM, then SIGKILL if it has not exited within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
