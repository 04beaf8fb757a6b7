#!/usr/bin/env python3
"""Dashboard stream subscribers for bench/http/stream.sh: N clients of /floodgate/stream.

Usage: stream_clients.py ADMIN_PORT N SECONDS
Each client reads its events as they come; after SECONDS it prints one line:
"<clients answered 200> <events received in all> <bytes received in all>".
"""
import selectors
import socket
import sys
import time


def main():
    port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    sel = selectors.DefaultSelector()
    state = {}
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /floodgate/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        state[s] = bytearray()
    events = 0
    received = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.2):
            data = key.fileobj.recv(1 << 16)
            if not data:
                sel.unregister(key.fileobj)
                continue
            received += len(data)
            events += data.count(b"data: ")
            head = state[key.fileobj]
            if len(head) < 16:
                head.extend(data[:16])
    ok = sum(1 for head in state.values() if head.startswith(b"HTTP/1.1 200"))
    print(ok, events, received)


if __name__ == "__main__":
    main()
