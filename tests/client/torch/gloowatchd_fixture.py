"""A real gloowatchd on loopback for the Python tests: free ports, a config
with no peers, started in its own session so teardown can end it and its
transport child together. Needs GLOOWATCH_BIN_DIR (the build directory)."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from free_port import free_port, port_taken  # noqa: E402  (free_port: tests import it from here)

JOB_LABEL = "training_job"
# Fresh ports this often when another process took ours between free_port()
# and the daemon's bind.
PORT_ATTEMPTS = 3


class Daemon:
    def __init__(self, node="node-py", extra_yaml=""):
        bin_dir = os.environ.get("GLOOWATCH_BIN_DIR")
        if not bin_dir:
            raise RuntimeError("GLOOWATCH_BIN_DIR is not set (the build directory)")
        self.exe = os.path.join(bin_dir, "gloowatchd")
        self.node = node
        self.extra_yaml = extra_yaml
        self.dir = tempfile.TemporaryDirectory(prefix="gloowatchd_py_")
        self.config = os.path.join(self.dir.name, "gloowatchd.yaml")
        self._new_ports()
        self.log = open(os.path.join(self.dir.name, "gloowatchd.log"), "w+")
        self.proc = None

    def _new_ports(self):
        self.grpc_port, self.metrics_port = free_port(), free_port()
        with open(self.config, "w") as f:
            f.write("node: %s\ngrpc_listen: 127.0.0.1:%d\nmetrics_listen: 127.0.0.1:%d\n"
                    "gloo:\n  address: 127.0.0.1\n  timeout: 2s\n%speers:\n"
                    % (self.node, self.grpc_port, self.metrics_port, self.extra_yaml))

    @property
    def grpc(self):
        return "127.0.0.1:%d" % self.grpc_port

    def _spawn(self):
        self.proc = subprocess.Popen([self.exe, "--config", self.config], stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def start(self, timeout=30):
        self._spawn()
        deadline = time.monotonic() + timeout
        attempts = 1
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if attempts < PORT_ATTEMPTS and port_taken(self.logs()):
                    attempts += 1
                    self._new_ports()
                    self._spawn()
                    continue
                raise RuntimeError("gloowatchd exited %d: %s" % (self.proc.returncode, self.logs()))
            try:
                self.scrape()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("gloowatchd did not serve /metrics in %ds: %s" % (timeout, self.logs()))

    def logs(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]

    def scrape(self):
        url = "http://127.0.0.1:%d/metrics" % self.metrics_port
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=5) as r:
            return r.read().decode()

    def training(self, name, job, rank):
        """The value of a training series, or None."""
        pat = re.compile(r'^%s\{([^}]*)\} (\S+)$' % re.escape(name), re.M)
        for labels, value in pat.findall(self.scrape()):
            if (re.search(r'(^|,)%s="%s"' % (JOB_LABEL, re.escape(job)), labels)
                    and ('rank="%d"' % rank) in labels):
                return float(value)
        return None

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGCONT)
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        except ProcessLookupError:
            pass
        try:  # the transport child, should it outlive the daemon
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc = None
        self.log.close()
        self.dir.cleanup()
