"""The one free-port helper of the Python tests (free_port.h is the C++ one),
for a server that must be told its port before it starts."""
import random
import socket


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_handed_out = set()


def free_port():
    """A port on 127.0.0.1 nobody listened on a moment ago, taken below the
    kernel's ephemeral range so that no Gloo pair or outgoing connection is
    given it meanwhile. Still racy against another program picking ports the
    same way, so a caller that can tell (port_taken) starts the server again
    on a new one."""
    high = _ephemeral_low()
    low = high // 2
    if high - low >= 1024:
        start = random.randrange(high - low)
        for i in range(high - low):
            port = low + (start + i) % (high - low)
            if port in _handed_out:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_taken(log_text):
    """Whether a server's log says its port was taken."""
    return "already in use" in log_text.lower()
