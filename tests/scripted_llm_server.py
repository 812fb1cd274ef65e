"""An OpenAI-compatible server process that fails on cue, for the tests of a watched LLM server.

    python tests/scripted_llm_server.py --port PORT --fail sigill --after 0

answers ``GET /v1/models`` and chat completions (streamed or not) with ``--reply``; after ``--after``
completions, the next one makes it fail as ``--fail`` says: ``sigill`` (the process kills itself with
SIGILL, as a CPU trap does), ``hang`` (the request is never answered), ``exit`` (answers it, then exits
with code 7: a server that dies between two questions), or ``none``. ``--seconds S`` makes each completion
take S seconds (a CPU server reading a prompt); ``GET /stats`` says how many completions were answered and
the most that were ever in progress at once (a single-slot server must never see two). Standard library
only: it starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("--reply", default="[1]")
    parser.add_argument("--fail", choices=("none", "sigill", "hang", "exit"), default="none")
    parser.add_argument("--after", type=int, default=0, help="completions answered before the failure")
    parser.add_argument("--seconds", type=float, default=0.0, help="how long each completion takes")
    parser.add_argument(
        "--chunk-seconds", type=float, default=0.0, help="a streamed reply: one character at a time, this far apart"
    )
    parser.add_argument("--slow-after", type=int, default=1, help="completions streamed at once first (the warm-up)")
    args = parser.parse_args()
    answered = 0
    in_flight = most_in_flight = 0
    streams_cut = 0
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: object) -> None:
            pass

        def _json(self, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def do_GET(self) -> None:
            if self.path.endswith("/stats"):
                self._json({"completions": answered, "most_in_flight": most_in_flight, "streams_cut": streams_cut})
                return
            self._json({"object": "list", "data": [{"id": args.model, "object": "model", "owned_by": "tests"}]})

        def do_POST(self) -> None:
            nonlocal in_flight, most_in_flight
            if not self.path.endswith("/chat/completions"):  # a token count, say: no prompt to answer
                self._answer()
                return
            with lock:
                in_flight += 1
                most_in_flight = max(most_in_flight, in_flight)
            try:
                self._answer()
            finally:
                with lock:
                    in_flight -= 1

        def _answer(self) -> None:
            nonlocal answered
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            with lock:
                failing = args.fail != "none" and answered >= args.after
                answered += 1
            if failing and args.fail == "sigill":
                # To this thread, as a trapping instruction is: it ends here, no reply goes out.
                signal.pthread_kill(threading.get_ident(), signal.SIGILL)
            if failing and args.fail == "hang":
                time.sleep(3600)
            time.sleep(args.seconds)
            self._complete(request)
            if failing and args.fail == "exit":
                os._exit(7)

        def _complete(self, request: dict) -> None:
            if not request.get("stream"):
                message = {"role": "assistant", "content": args.reply}
                choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
                self._json({"id": "x", "object": "chat.completion", "created": 0, "model": args.model,
                            "choices": [choice]})  # fmt: skip
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            slow = args.chunk_seconds > 0 and answered > args.slow_after
            if slow and not self._slowly(args.reply):
                return
            for content, finish in (() if slow else ((args.reply, None),)) + (("", "stop"),):
                chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": args.model,
                         "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}  # fmt: skip
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _slowly(self, reply: str) -> bool:
            """The reply a character at a time; False when the client closed the stream on the way."""
            nonlocal streams_cut
            try:
                for character in reply:
                    delta = {"index": 0, "delta": {"content": character}, "finish_reason": None}
                    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": args.model,
                             "choices": [delta]}  # fmt: skip
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(args.chunk_seconds)
            except (BrokenPipeError, ConnectionResetError):
                with lock:
                    streams_cut += 1
                return False
            return True

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
