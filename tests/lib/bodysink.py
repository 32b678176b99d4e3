"""A stand-in OpenAI-compatible server for tests that need the request
bodies a client sent: every POST to /v1/chat/completions, /v1/responses or
/v1/messages is saved whole as DIR/NNNNNN.json and answered with one token
and usage (streamed when asked). GET /v1/models names model "sink"; any
other path is a 404 (so a client learns prompt lengths from usage). Run
as: bodysink.py DIR --listen 127.0.0.1:0 --port-file FILE (loopback only)."""
import http.server
import json
import os
import sys


def main():
    args = sys.argv[1:]
    out = args[0]
    host, port = args[args.index("--listen") + 1].rsplit(":", 1)
    port_file = args[args.index("--port-file") + 1]
    assert host.startswith("127."), "loopback only"
    count = [0]

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, code, body, ctype="application/json"):
            b = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            if self.path == "/v1/models":
                self.send(200, json.dumps({"object": "list", "data": [{"id": "sink", "object": "model"}]}))
            else:
                self.send(404, '{"error":{"message":"not here"}}')

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            if self.path not in ("/v1/chat/completions", "/v1/responses", "/v1/messages"):
                self.send(404, '{"error":{"message":"not here"}}')
                return
            count[0] += 1
            with open(os.path.join(out, "%06d.json" % count[0]), "wb") as f:
                f.write(body)
            req = json.loads(body)
            usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
            if req.get("stream"):
                chunk = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "length"}]}
                tail = {"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": usage}
                self.send(200, "data: %s\n\ndata: %s\n\ndata: [DONE]\n\n" % (json.dumps(chunk), json.dumps(tail)), "text/event-stream")
            else:
                self.send(200, json.dumps({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "length"}], "usage": usage}))

    srv = http.server.ThreadingHTTPServer((host, int(port)), H)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()


main()
