"""A minimal OTLP/HTTP trace sink for the end-to-end tests: it accepts
ExportTraceServiceRequest protobufs on POST /v1/traces and appends one line
per span to OUT: trace_id span_id duration_ns name (ids in hex). The port it
listens on (127.0.0.1, picked by the system) goes to PORTFILE. Its
OTLPHandler is python/tests/test_otlp.py's receiver too.

Usage: otlpsink.py PORTFILE OUT
"""
import gzip
import http.server
import sys
import threading


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    """(field number, value) of a protobuf message, bytes for length-delimited ones."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, v


def spans(req):
    for f, rs in fields(req):  # ExportTraceServiceRequest.resource_spans
        if f != 1:
            continue
        for f, ss in fields(rs):  # ResourceSpans.scope_spans
            if f != 2:
                continue
            for f, sp in fields(ss):  # ScopeSpans.spans
                if f != 2:
                    continue
                s = dict(fields(sp))
                yield s[1].hex(), s[2].hex(), s.get(8, 0) - s.get(7, 0), s.get(5, b"").decode()


lock = threading.Lock()


class OTLPHandler(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: each POST's body, decompressed, goes to take,
    which returns None to answer 200 (an empty protobuf) or what was wrong
    to answer 400."""

    def take(self, body):
        raise NotImplementedError

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        err = self.take(body)
        if err is not None:
            self.send_error(400, "bad request: %s" % err)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class Handler(OTLPHandler):
    def take(self, body):
        try:
            lines = ["%s %s %d %s\n" % s for s in spans(body)]
        except (ValueError, IndexError, KeyError) as e:
            return e
        with lock, open(OUT, "a") as f:
            f.writelines(lines)
        return None


if __name__ == "__main__":
    PORTFILE, OUT = sys.argv[1], sys.argv[2]
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(PORTFILE + ".tmp", PORTFILE)
    srv.serve_forever()
