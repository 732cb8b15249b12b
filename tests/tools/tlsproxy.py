#!/usr/bin/env python3
"""tlsproxy.py - a TLS front for a plain-HTTP server, for tests of
certificate and host name verification against a real S3 server.

    tlsproxy.py --cert CERT --key KEY --upstream HOST:PORT --portfile FILE

Listens on 127.0.0.1 (a free port, written to FILE once listening),
completes TLS with CERT/KEY, and relays the bytes both ways to the
upstream unchanged (so SigV4 signatures, which cover the Host header the
client sent, still verify).  A failed handshake just closes that
connection.  Runs until killed.
"""
import argparse
import os
import socket
import ssl
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, ctx, upstream):
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        conn.close()
        return
    try:
        up = socket.create_connection(upstream)
    except OSError:
        tls.close()
        return
    t = threading.Thread(target=pump, args=(up, tls), daemon=True)
    t.start()
    pump(tls, up)
    t.join()
    tls.close()
    up.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--portfile", required=True)
    a = ap.parse_args()
    host, port = a.upstream.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    tmp = a.portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, a.portfile)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve, args=(conn, ctx, (host, int(port))),
                         daemon=True).start()


if __name__ == "__main__":
    main()
