"""The one free-port helper of the Python tests (free_port.h is the C++ one),
for a server that must be told its port before it starts."""
import socket


def free_port():
    """A port on 127.0.0.1 nobody listened on a moment ago. Racy: another
    process may take it before the server it is meant for binds it, so a
    caller that can tell (port_taken) starts the server again on a new one."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_taken(log_text):
    """Whether a server's log says its port was taken."""
    return "already in use" in log_text.lower()
