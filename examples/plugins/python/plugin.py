#!/usr/bin/python3
"""A tenxgraph tool provider plugin in Python: toolprovider.v1 over gRPC,
served the way hashicorp/go-plugin expects, with Debian's python3-grpcio and
python3-protobuf. docs/plugins.md ("Plugins in other languages") explains
each step."""
import datetime
import json
import os
import struct
import sys
import threading
import time
import zlib
from concurrent import futures

import grpc

sys.dont_write_bytecode = True  # the plugin's folder may be read-only to it
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolprovider.v1 import toolprovider_pb2 as pb  # noqa: E402

PARAMS = {"type": "object", "properties": {"text": {"type": "string", "description": "the text to count"}},
          "required": ["text"], "additionalProperties": False}
SWATCH_PARAMS = {"type": "object", "properties": {
    "color": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$", "description": "the colour, as #rrggbb"}},
    "required": ["color"], "additionalProperties": False}
# The options schema: what 10xgraph.json may set under the plugin's
# "options". The host checks the config against it before Configure, so
# `tenxgraph validate` reports plugins[0].options.swatch_size: ... with its
# path, and configure() sees only options it allows.
OPTIONS = {"type": "object", "additionalProperties": False, "properties": {
    "swatch_size": {"type": "integer", "minimum": 1, "maximum": 256, "default": 16,
                    "description": "the side of the swatch image, in pixels"}}}
options = {"swatch_size": 16}
stopping = threading.Event()


def log(level, message, **fields):
    # JSON lines on stderr: the host files them under the plugin's name, at
    # their level. The timestamp is RFC 3339: 2026-05-01T12:00:00.123456+00:00.
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")
    print(json.dumps({"@level": level, "@message": message, "@timestamp": now, **fields}),
          file=sys.stderr, flush=True)


def word_count(req, progress):
    """The tool: counts the words of its text, reporting each line."""
    text = json.loads(req.arguments_json or b"{}")["text"]
    lines = text.splitlines() or [""]
    words = 0
    for i, line in enumerate(lines, 1):
        words += len(line.split())
        progress(pb.CallTool.Progress(progress=i, total=len(lines), message="counting"))
    log("info", "counted", tool=req.name, call_id=req.call_id, words=words)
    return pb.CallTool.Response(content_json=json.dumps({"words": words}).encode())


def png(width, height, rgb):
    """A PNG of one colour, written with the standard library alone."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))  # each row: filter 0, then RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def swatch(req, progress):
    """The tool: an image of a colour, returned as an attachment (its bytes
    beside the JSON content, not base64 inside it), which the model sees."""
    color = json.loads(req.arguments_json or b"{}")["color"]
    size = options["swatch_size"]
    image = png(size, size, bytes.fromhex(color[1:]))
    return pb.CallTool.Response(
        content_json=json.dumps({"color": color, "width": size, "height": size}).encode(),
        attachments=[pb.CallTool.Attachment(mime_type="image/png", filename="swatch.png", data=image)])


TOOLS = {"word_count": word_count, "swatch": swatch}


def call(req, progress):
    if req.name not in TOOLS:
        return pb.CallTool.Response(content_json=json.dumps(f"no tool {req.name!r}").encode(), is_error=True)
    return TOOLS[req.name](req, progress)


def get_metadata(req, ctx):
    return pb.GetMetadata.Response(name="wordcount", version="1.0.0", capabilities=["progress"], tools=[
        pb.ToolSpec(name="word_count", description="Count the words of a text.", parameters_json=json.dumps(PARAMS).encode()),
        pb.ToolSpec(name="swatch", description="Show a colour: a square image of it.", parameters_json=json.dumps(SWATCH_PARAMS).encode())],
        options_schema_json=json.dumps(OPTIONS).encode())


def configure(req, ctx):
    # The host has checked the options against OPTIONS; it calls Configure
    # once, before any tool call, with {} when the config sets none.
    options.update(json.loads(req.options_json or b"{}"))
    return pb.Configure.Response()


def call_tool(req, ctx):
    return call(req, lambda p: None)


def call_tool_stream(req, ctx):
    events = []
    resp = call(req, lambda p: events.append(pb.CallTool.Event(progress=p)))
    yield from events
    yield pb.CallTool.Event(response=resp)


def watch(req, ctx):
    # The host's lifeline: an empty first event says it is open. When it
    # breaks and the host did not ask us to stop, the host is gone: exit.
    def lost():
        if not stopping.is_set():
            log("warn", "the host is gone; exiting")
            os._exit(0)
    ctx.add_callback(lost)
    yield pb.Watch.Event()
    while ctx.is_active():
        time.sleep(0.5)


def shutdown(req, ctx):
    stopping.set()
    return pb.Shutdown.Response()


def stop_soon(server):
    stopping.set()
    threading.Thread(target=lambda: server.stop(grace=1)).start()


def unary(fn, req_type, resp_type):
    return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req_type.FromString,
                                               response_serializer=resp_type.SerializeToString)


def stream(fn, req_type, resp_type):
    return grpc.unary_stream_rpc_method_handler(fn, request_deserializer=req_type.FromString,
                                                response_serializer=resp_type.SerializeToString)


def main():
    if os.environ.get("TENXGRAPH_PLUGIN") != "tool-provider.v1":
        print("This is a tenxgraph plugin: list it under plugins in 10xgraph.json; it is not run by hand.", file=sys.stderr)
        sys.exit(1)
    if "1" not in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", "1").split(","):
        print("the host speaks no protocol version this plugin knows (1)", file=sys.stderr)
        sys.exit(1)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=[
        ("grpc.max_receive_message_length", 256 << 20), ("grpc.max_send_message_length", 256 << 20)])
    server.add_generic_rpc_handlers([
        grpc.method_handlers_generic_handler("toolprovider.v1.ToolProvider", {
            "GetMetadata": unary(get_metadata, pb.GetMetadata.Request, pb.GetMetadata.Response),
            "CallTool": unary(call_tool, pb.CallTool.Request, pb.CallTool.Response),
            "CallToolStream": stream(call_tool_stream, pb.CallTool.Request, pb.CallTool.Event),
            "Watch": stream(watch, pb.Watch.Request, pb.Watch.Event),
            "Shutdown": unary(shutdown, pb.Shutdown.Request, pb.Shutdown.Response),
            "Configure": unary(configure, pb.Configure.Request, pb.Configure.Response),
        }),
        # go-plugin's health check, and its way to stop a plugin. Both
        # messages are tiny: encoded by hand (status SERVING = field 1, 1).
        grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": grpc.unary_unary_rpc_method_handler(lambda req, ctx: b"\x08\x01")}),
        grpc.method_handlers_generic_handler("plugin.GRPCController", {
            "Shutdown": grpc.unary_unary_rpc_method_handler(lambda req, ctx: stop_soon(server) or b"")}),
    ])
    sock_dir = os.environ.get("PLUGIN_UNIX_SOCKET_DIR")
    if sock_dir:
        addr = os.path.join(sock_dir, f"plugin-{os.getpid()}.sock")
        server.add_insecure_port("unix:" + addr)
        network = "unix"
    else:
        addr = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
        network = "tcp"
    server.start()
    # The handshake: CORE-PROTOCOL|APP-PROTOCOL|NETWORK|ADDRESS|PROTOCOL.
    print(f"1|1|{network}|{addr}|grpc", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
