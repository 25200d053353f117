/**
 * @tenxgraph/client — call a tenxgraph server and answer its remote tools.
 *
 * A remote tool is declared on the server and executed here: when the model
 * calls one, the run pauses (`status: "interrupted"`), the client runs the
 * handler registered for it, sends the result on the same thread, and the run
 * resumes. {@link Client.invoke} and {@link Client.stream} do that loop for
 * you until the run completes.
 *
 * No dependencies beyond `fetch`: works in browsers and Node 20+.
 *
 * @example
 * ```ts
 * import { Client } from "@tenxgraph/client";
 * const client = new Client({ baseUrl: "http://127.0.0.1:8123" });
 * client.registerToolHandler("read_clipboard", async () => ({ text: await navigator.clipboard.readText() }));
 * const res = await client.invoke("what is on my clipboard?", { threadId: "t1" });
 * ```
 *
 * @module
 */

// ---------------------------------------------------------------------------
// Wire shapes (docs/api.md)

/** A JSON value: what tool arguments and results are made of. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Who wrote a message. */
export type Role = "user" | "assistant" | "tool" | "system";

/** Text written by a person or the model. */
export interface TextBlock {
  type: "text";
  text: string;
}

/** A tool call the model made. */
export interface ToolCallBlock {
  type: "tool_call";
  id: string;
  name: string;
  arguments: JsonValue;
}

/**
 * The result of one tool call; `is_error` marks a failure the model should
 * see as one. `attachments` are the images and files the tool returned
 * beside its content (a picked file, a screenshot): the model receives them
 * as media, not as base64 text.
 */
export interface ToolResultBlock {
  type: "tool_result";
  tool_call_id: string;
  content: JsonValue;
  is_error?: boolean;
  attachments?: MediaBlock[];
}

/** What a {@link MediaBlock} holds: an image, a file (a PDF, a text) or a sound. */
export type MediaType = "image" | "file" | "audio";

/**
 * An image, a file or a sound: in a user message, or among a tool result's
 * `attachments` (docs/media.md). Sent, it names its bytes by exactly one
 * source: `data` (base64), `url` (https, fetched once by the server) or
 * `blob` (`"sha256:<hex>"`, a blob the same thread already holds). The
 * server checks the bytes against `mime_type`, stores them once, and
 * returns the block with `blob`, `size` and an image's `width` and
 * `height`; read the bytes with {@link Client.getBlob}. A block read from a
 * thread may be sent again as it is: it names its blob, not its bytes.
 */
export interface MediaBlock {
  type: MediaType;
  /** The bytes' media type (`image/png`, `application/pdf`), checked against the bytes. */
  mime_type: string;
  /** The name the bytes came with (at most 255 bytes). */
  filename?: string;
  /** The bytes, base64. */
  data?: string;
  /** An `https://` URL the server fetches. */
  url?: string;
  /** `"sha256:"` and the 64 lowercase hex digits of the bytes' SHA-256. */
  blob?: string;
  /** Set by the server: the bytes' length. */
  size?: number;
  /** Set by the server: an image's pixels. */
  width?: number;
  height?: number;
}

/** Bytes the client reads and sends as base64: a `File` or `Blob`, an `ArrayBuffer`, a typed array (a Node `Buffer`). */
export type Bytes = Blob | ArrayBuffer | ArrayBufferView;

/**
 * A medium to send, described in code: the client reads it into a
 * {@link MediaBlock} (bytes become base64 `data`) when it sends it. Give
 * one of `data`, `url` or `blob`.
 */
export interface MediaInput {
  /** Default: `image` for `image/*`, `audio` for `audio/*`, otherwise `file`. */
  type?: MediaType;
  /** Default: a `Blob`'s own `type`. Required for bytes that have none. */
  mimeType?: string;
  /** Default: a `File`'s `name`. */
  filename?: string;
  /** The bytes, or a base64 string. */
  data?: Bytes | string;
  url?: string;
  blob?: string;
}

/**
 * One part of a message you send: a block, a string (a text block), a
 * `File` or `Blob` (an image, sound or file by its type, read and sent as
 * base64), or a {@link MediaInput}.
 */
export type ContentInput = Block | string | Blob | MediaInput;

/** A call the server hands to the client: the run waits for its result. */
export interface RemoteToolCallBlock {
  type: "remote_tool_call";
  id: string;
  name: string;
  arguments: JsonValue;
  node: string;
  /**
   * When the call expires unanswered (RFC 3339). Past it the server answers
   * the call itself with an error result and the run goes on; a result sent
   * later is refused with a `TenxgraphError` whose code is `expired`.
   */
  expires_at?: string;
}

/** A call that waits for a person's approval before it runs (`require_approval`). */
export interface ApprovalRequestBlock {
  type: "approval_request";
  id: string;
  name: string;
  arguments: JsonValue;
  node: string;
}

/** The answer to an approval request: sent in a `tool` message, like a tool result. */
export interface ApprovalBlock {
  type: "approval";
  tool_call_id: string;
  approved: boolean;
  /** Optional; the model reads it when the call is denied. */
  reason?: string;
}

/** One part of a message's content. */
export type Block = TextBlock | MediaBlock | ToolCallBlock | ToolResultBlock | RemoteToolCallBlock | ApprovalBlock;

/** A message as the server stores and returns it. */
export interface Message {
  id?: string;
  role: Role;
  content: Block[];
}

/**
 * A message you send: `content` may be a plain string, read as one text
 * block, or a list of parts where strings are text and `File`s, `Blob`s
 * and {@link MediaInput}s are media:
 * `{ role: "user", content: ["what is in this picture?", file] }`.
 */
export interface MessageInput {
  id?: string;
  role: Role;
  content: string | ContentInput[];
}

/** A run's outcome: it ended, or it waits for remote tool results. */
export type Status = "completed" | "interrupted";

/** The response of `/v1/graph/invoke`, and the data of a stream's `end` event. */
export interface RunResponse {
  thread_id: string;
  run_id: string;
  status: Status;
  /**
   * The thread's messages, oldest first; with `response: "delta"`, only the
   * messages the run added, which go at index {@link RunResponse.offset}.
   */
  messages: Message[];
  /** The calls the run waits for; empty when completed. */
  remote_tool_calls: RemoteToolCallBlock[];
  /** The calls waiting for approval; absent when there are none. */
  approval_requests?: ApprovalRequestBlock[];
  /**
   * With `response: "delta"`: how many messages the thread held before the
   * run, the index of `messages[0]`. A transcript of `offset` messages
   * appends `messages`; one of another length has missed a turn (read the
   * thread with {@link Client.getThread} and `after`).
   */
  offset?: number;
}

/**
 * Appends a delta response to the transcript the caller keeps and returns
 * it (a new array). Throws when the transcript does not end where the run
 * started (another client ran on the thread in between): read the thread
 * again then.
 */
export function appendDelta(transcript: readonly Message[], res: RunResponse): Message[] {
  if (res.offset === undefined) throw new TypeError("appendDelta: the response has no offset: run with response: \"delta\"");
  if (res.offset !== transcript.length) {
    throw new RangeError(`appendDelta: the run added messages at ${res.offset}, but the transcript holds ${transcript.length}: read the thread again`);
  }
  return [...transcript, ...res.messages];
}

/** A thread as `GET /v1/threads/{id}` returns it. */
export interface Thread {
  thread_id: string;
  status: Status;
  messages: Message[];
  remote_tool_calls: RemoteToolCallBlock[];
  approval_requests?: ApprovalRequestBlock[];
  /** When paged (`after` or `limit`): the index of `messages[0]` in the thread. */
  offset?: number;
  /** When paged: how many messages the thread holds. */
  total?: number;
  /** When paged: more messages follow the page (ask with `after` the page's last id). */
  has_more?: boolean;
}

/** Options of {@link Client.getThread}. */
export interface GetThreadOptions {
  signal?: AbortSignal;
  /** Only the messages after the one with this id. */
  after?: string;
  /** At most this many messages (1 to 1000). */
  limit?: number;
}

// ---------------------------------------------------------------------------
// Stream events

/** Data of `run_started`. */
export interface RunStartedData {
  thread_id: string;
  run_id: string;
  /** True when the run continues a paused thread. */
  resumed: boolean;
}

/** Data of `node_started` and `node_finished`. */
export interface NodeData {
  node: string;
  step: number;
}

/** Data of `text_delta`: a piece of model text. */
export interface TextDeltaData {
  node: string;
  /** The id the finished message will have. */
  message_id: string;
  text: string;
}

/** Data of `tool_started` and `tool_finished`: a server tool call. */
export interface ToolData {
  node: string;
  id: string;
  name: string;
  provider: string;
  is_error?: boolean;
  duration_ns?: number;
}

/** Data of `tool_progress`: what a running server tool reported, between its `tool_started` and `tool_finished`. */
export interface ToolProgressData {
  node: string;
  id: string;
  name: string;
  provider: string;
  /** Goes up with each report. */
  progress: number;
  /** Absent when unknown. */
  total?: number;
  message?: string;
}

/** Data of `tool_ignored`: a per-run tool that was not offered. */
export interface ToolIgnoredData {
  node: string;
  name: string;
  reason: string;
}

/** Data of `config_ignored`: a config key the server dropped. */
export interface ConfigIgnoredData {
  key: string;
  reason: string;
}

/** Data of `interrupted`: the calls the paused run waits for. */
export interface InterruptedData {
  remote_tool_calls: RemoteToolCallBlock[];
  approval_requests?: ApprovalRequestBlock[];
}

/** Data of `usage`: tokens one model call used. */
export interface UsageData {
  node: string;
  input_tokens: number;
  output_tokens: number;
}

/** Data of `tool_handler_started`: the client began running a handler. */
export interface ToolHandlerStartedData {
  thread_id: string;
  /** The call id. */
  id: string;
  name: string;
  arguments: JsonValue;
}

/** Data of `tool_handler_finished`: a handler settled; `result` is what will be sent. */
export interface ToolHandlerFinishedData {
  thread_id: string;
  /** The call id. */
  id: string;
  name: string;
  result: ToolResultBlock;
  duration_ms: number;
}

/**
 * One event of {@link Client.stream}: the server's SSE events (named by
 * `type`, their JSON in `data`) and the client's own `tool_handler_started`
 * and `tool_handler_finished`. Each round of the loop ends with an `end`
 * event; the last one has `status: "completed"`. A server `error` event is
 * thrown as a {@link TenxgraphError}, not yielded. Events a newer server adds
 * are passed through unchanged.
 */
export type StreamEvent =
  | { type: "run_started"; data: RunStartedData }
  | { type: "node_started" | "node_finished"; data: NodeData }
  | { type: "text_delta"; data: TextDeltaData }
  | { type: "message"; data: Message }
  | { type: "tool_started" | "tool_finished"; data: ToolData }
  | { type: "tool_progress"; data: ToolProgressData }
  | { type: "tool_ignored"; data: ToolIgnoredData }
  | { type: "config_ignored"; data: ConfigIgnoredData }
  | { type: "interrupted"; data: InterruptedData }
  | { type: "usage"; data: UsageData }
  | { type: "end"; data: RunResponse }
  | { type: "tool_handler_started"; data: ToolHandlerStartedData }
  | { type: "tool_handler_finished"; data: ToolHandlerFinishedData };

// ---------------------------------------------------------------------------
// Errors

/**
 * An HTTP failure: the server's error body (`{"error": {"code", "message",
 * "call_ids"}}`) with the status. `status` is 0 when no response arrived
 * (`code: "network_error"`) or when the server reported the error inside a
 * stream that had already started.
 */
export class TenxgraphError extends Error {
  override readonly name = "TenxgraphError";
  /** The HTTP status (401, 404, 409, ...), or 0; see the class docs. */
  readonly status: number;
  /** The server's stable error code, such as `unauthorized` or `pending_calls`. */
  readonly code: ErrorCode;
  /** The tool call ids a conflict is about (the pending ones for `pending_calls`). */
  readonly callIds: string[];

  constructor(status: number, code: ErrorCode, message: string, callIds: string[] = [], options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.code = code;
    this.callIds = callIds;
  }
}

/**
 * The stable error codes of the server (docs/api.md), and the client's own
 * `network_error`. `expired`: a tool result came after its call's
 * `expires_at`; the server answered the call with an error result instead.
 * `media_refused` (422) and `media_too_large` (413): an image, file or sound
 * the server does not take, the message naming it
 * (`messages[0].content[1]: media refused: declared image/png, but the
 * bytes are application/pdf`). Any other string is a code of a newer server.
 */
export type ErrorCode =
  | "malformed_request" | "invalid_input" | "body_too_large" | "unsupported_media_type" | "unauthorized"
  | "host_not_allowed" | "origin_not_allowed" | "method_not_allowed" | "not_found" | "thread_not_found"
  | "not_paused" | "unknown_call" | "result_conflict" | "pending_calls" | "thread_busy" | "expired" | "conflict"
  | "run_cancelled" | "run_failed" | "step_limit" | "store_unavailable" | "internal" | "network_error"
  | "media_refused" | "media_too_large" | "blob_not_found"
  | (string & {});

/**
 * The loop paused more than `maxRounds` times in one call: a model that
 * keeps calling remote tools. The thread stays paused on `pendingCalls`.
 */
export class MaxRoundsError extends Error {
  override readonly name = "MaxRoundsError";
  readonly threadId: string;
  readonly maxRounds: number;
  /** The calls the thread still waits for. */
  readonly pendingCalls: RemoteToolCallBlock[];

  constructor(threadId: string, maxRounds: number, pendingCalls: RemoteToolCallBlock[]) {
    const names = pendingCalls.map((c) => c.name).join(", ");
    super(
      `thread "${threadId}": the run paused for remote tools more than maxRounds (${maxRounds}) times; ` +
        `stopped before running ${names} again. The thread still waits for them: raise maxRounds or ` +
        `call resume("${threadId}") to go on.`,
    );
    this.threadId = threadId;
    this.maxRounds = maxRounds;
    this.pendingCalls = pendingCalls;
  }
}

/**
 * A remote call named a tool with no registered handler, and the client was
 * built with `onMissingHandler: "throw"`. No handler of that round ran; the
 * thread stays paused.
 */
export class MissingHandlerError extends Error {
  override readonly name = "MissingHandlerError";
  readonly threadId: string;
  /** The tool that has no handler. */
  readonly toolName: string;
  readonly callId: string;

  constructor(threadId: string, call: RemoteToolCallBlock) {
    super(
      `thread "${threadId}": no handler for remote tool "${call.name}" (call ${call.id}); ` +
        `register one with client.registerToolHandler("${call.name}", handler)`,
    );
    this.threadId = threadId;
    this.toolName = call.name;
    this.callId = call.id;
  }
}

// ---------------------------------------------------------------------------
// Client

/** What a handler gets besides the arguments. */
export interface ToolContext {
  /** The tool call id the result answers. */
  callId: string;
  threadId: string;
  /** The tool's name (one handler may serve several). */
  name: string;
  /** Aborted when the caller aborts the run (or stops iterating a stream). */
  signal: AbortSignal;
}

/**
 * Runs one remote tool call. Return (or resolve to) a JSON-serialisable
 * value: it becomes the tool result. Return a `File` or `Blob` (or an array
 * of them) to hand the model a file: the result's content says what it is
 * (`{filename, mime_type, size}`) and the bytes go as an attachment. Return
 * `{ content, attachments }` to choose the content yourself
 * ({@link ToolOutput}). Throw to report a failure: the model gets an
 * `is_error` result with the message.
 */
export type ToolHandler<A = Record<string, any>> = (args: A, ctx: ToolContext) => unknown;

/**
 * A handler's result with attachments: `content` is the JSON the model
 * reads (absent: a description of each attachment), `attachments` the
 * images and files it receives beside it. An object whose keys are only
 * `content` and `attachments`, with `attachments` an array, is read this
 * way.
 */
export interface ToolOutput {
  content?: unknown;
  attachments: Array<Blob | MediaBlock | MediaInput>;
}

/** What an approval handler decides: `true` approves, `false` denies, or say why. */
export type ApprovalDecision = boolean | { approved: boolean; reason?: string };

/**
 * Decides whether a call that needs approval may run (ask the person, apply a
 * policy). The call runs on the server, once, with the arguments shown, only
 * when approved. A handler that throws denies the call, with the error as the
 * reason.
 */
export type ApprovalHandler = (
  request: ApprovalRequestBlock,
  ctx: { threadId: string; signal: AbortSignal },
) => ApprovalDecision | Promise<ApprovalDecision>;

/** Options of {@link Client}. */
export interface ClientOptions {
  /** The server's origin, e.g. `http://127.0.0.1:8123` (a trailing slash is fine). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when the server requires a token. */
  apiKey?: string;
  /** A fetch to use instead of the global one (tests, proxies, custom agents). */
  fetch?: typeof globalThis.fetch;
  /** How many times one invoke or stream may pause for remote tools (default 25). */
  maxRounds?: number;
  /**
   * A call to a tool with no handler: send the model an `is_error` result
   * naming the missing handler (`"error-result"`, the default), or throw a
   * {@link MissingHandlerError} (`"throw"`).
   */
  onMissingHandler?: "error-result" | "throw";
  /**
   * Answers approval requests. Without one, every call that needs approval is
   * denied, with a reason saying the client has no approval handler.
   */
  onApproval?: ApprovalHandler;
}

/** Options of one run. */
export interface RunOptions {
  /** The thread to run on; a new random id when absent (read it from the response). */
  threadId?: string;
  /** Aborts the run: fetches are cancelled, handlers' signals fire, and the call rejects with the signal's reason (an `AbortError`). */
  signal?: AbortSignal;
  /**
   * `"full"` (the default): each response carries the whole thread.
   * `"delta"`: each carries only what its round added, with its `offset`,
   * and the call resolves to every message added over all its rounds, at
   * the first round's offset; append them with {@link appendDelta}. A long
   * conversation then costs the same to answer at every turn.
   */
  response?: "full" | "delta";
  /**
   * When the server writes this run's checkpoints: `"sync"` after every
   * step; `"async"` after every step too, but while the next step runs, so
   * a round does not wait for them (a server crash mid-round may lose the
   * last step or two, and retrying runs them again); `"exit"` only where
   * each round stops (a pause, the end, a failure): fewer writes, but a
   * server crash mid-round loses the round's steps. Absent: the server's
   * `checkpointer.durability` (`"sync"` unless configured).
   */
  durability?: Durability;
  /**
   * A W3C trace context to continue (`"00-<trace id>-<span id>-01"`): every
   * request of the run (the first and each resume) carries it as the
   * `traceparent` header, so the server's spans for the run, its model
   * calls and its tools join the caller's trace. `tracestate` goes with it
   * when given. Checked before anything is sent.
   */
  traceparent?: string;
  /** The W3C `tracestate` sent with {@link RunOptions.traceparent}. */
  tracestate?: string;
}

/** When the server writes a run's checkpoints (see {@link RunOptions.durability}). */
export type Durability = "sync" | "async" | "exit";

// What every request of a run says in its config.
interface RoundConfig {
  response: "full" | "delta";
  durability?: Durability;
  headers?: Record<string, string>; // the trace context
}

// A W3C traceparent: version 00, a 32-hex trace id and a 16-hex parent id,
// neither all zeros, and the flags.
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The default of {@link ClientOptions.maxRounds}. */
export const DEFAULT_MAX_ROUNDS = 25;

/**
 * A tenxgraph API client that runs remote tools with registered handlers.
 * One client can serve many threads and concurrent runs.
 */
export class Client {
  /** The server's origin, without a trailing slash. */
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof globalThis.fetch;
  readonly #maxRounds: number;
  readonly #onMissing: "error-result" | "throw";
  readonly #handlers = new Map<string, ToolHandler<any>>();
  readonly #onApproval: ApprovalHandler | undefined;

  constructor(options: ClientOptions) {
    if (typeof options?.baseUrl !== "string") {
      throw new TypeError("new Client({ baseUrl }): baseUrl must be the server's URL, such as http://127.0.0.1:8123");
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey || undefined;
    const f = options.fetch;
    this.#fetch = f ?? ((input, init) => globalThis.fetch(input, init));
    const max = options.maxRounds ?? DEFAULT_MAX_ROUNDS;
    if (!Number.isInteger(max) || max < 0) {
      throw new TypeError(`new Client: maxRounds must be a whole number >= 0, got ${String(options.maxRounds)}`);
    }
    this.#maxRounds = max;
    const missing = options.onMissingHandler ?? "error-result";
    if (missing !== "error-result" && missing !== "throw") {
      throw new TypeError(`new Client: onMissingHandler must be "error-result" or "throw", got ${String(missing)}`);
    }
    this.#onMissing = missing;
    if (options.onApproval !== undefined && typeof options.onApproval !== "function") {
      throw new TypeError("new Client: onApproval must be a function");
    }
    this.#onApproval = options.onApproval;
  }

  /**
   * Registers the handler that runs remote tool `name` (the name the server
   * declares). Returns a function that unregisters it. Registering a name
   * twice throws: unregister the first handler before replacing it.
   */
  registerToolHandler<A = Record<string, any>>(name: string, handler: ToolHandler<A>): () => void {
    if (typeof name !== "string" || name === "") throw new TypeError("registerToolHandler: name must be a non-empty string");
    if (typeof handler !== "function") throw new TypeError(`registerToolHandler("${name}"): handler must be a function`);
    if (this.#handlers.has(name)) {
      throw new Error(`registerToolHandler("${name}"): a handler is already registered; call the function the first registration returned to remove it`);
    }
    this.#handlers.set(name, handler);
    return () => {
      if (this.#handlers.get(name) === handler) this.#handlers.delete(name);
    };
  }

  /** The names of the tools that have a handler. */
  toolHandlerNames(): string[] {
    return [...this.#handlers.keys()];
  }

  /**
   * Runs `messages` on a thread and answers remote tools until the run
   * completes: each time the run pauses, the pending calls' handlers run
   * concurrently and their results go back as one tool message, one result
   * per call in call order. Resolves to the last response (`status:
   * "completed"`). A bare string is one user message; a message's content
   * may list `File`s and `Blob`s beside its text (see {@link ContentInput}),
   * which the client reads and sends as base64.
   *
   * @throws {TenxgraphError} the server refused a request.
   * @throws {MaxRoundsError} the run paused more than `maxRounds` times.
   * @throws {MissingHandlerError} with `onMissingHandler: "throw"`.
   * @throws the signal's reason (an `AbortError`) when aborted.
   */
  invoke(messages: string | MessageInput[], options: RunOptions = {}): Promise<RunResponse> {
    return drain(this.#loop(toMessages(messages), options, false));
  }

  /**
   * Like {@link Client.invoke}, streamed: yields every server event as it
   * arrives and the client's `tool_handler_started` / `tool_handler_finished`
   * around each handler. Each round ends with an `end` event; the loop goes
   * on until an `end` with `status: "completed"`, which is the generator's
   * return value too. Breaking out of the loop cancels the request and the
   * handlers' signals.
   */
  stream(messages: string | MessageInput[], options: RunOptions = {}): AsyncGenerator<StreamEvent, RunResponse, undefined> {
    return this.#loop(toMessages(messages), options, true);
  }

  /**
   * Continues a paused thread: runs the handlers of the calls it waits for
   * and loops like {@link Client.invoke}. For a thread left paused by an
   * abort, a `MaxRoundsError` or a page reload. A thread that is not paused
   * resolves at once (with an empty `run_id`).
   */
  resume(threadId: string, options: Omit<RunOptions, "threadId"> = {}): Promise<RunResponse> {
    return drain(this.#loop(null, { ...options, threadId }, false));
  }

  /**
   * Reads a thread: its status, messages and pending remote calls. With
   * `after` or `limit`, one page of its messages, with `offset`, `total`
   * and `has_more`.
   */
  async getThread(threadId: string, options: GetThreadOptions = {}): Promise<Thread> {
    const q = new URLSearchParams();
    if (options.after !== undefined) q.set("after", options.after);
    if (options.limit !== undefined) q.set("limit", String(options.limit));
    const query = q.size > 0 ? "?" + q.toString() : "";
    const res = await this.#request("GET", threadPath(threadId) + query, undefined, options.signal, "application/json");
    return (await readJSON(res)) as Thread;
  }

  /** Deletes a thread and its checkpoints. */
  async deleteThread(threadId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    const res = await this.#request("DELETE", threadPath(threadId), undefined, options.signal, "application/json");
    await res.body?.cancel();
  }

  /**
   * Reads the bytes of an image, file or sound the thread holds
   * (`GET /v1/threads/{id}/blobs/sha256:<hex>`), with this client's token:
   * `ref` is a block's `blob` or the block itself. Resolves to a `Blob`
   * whose `type` is the one the server checked the bytes to be. In a page,
   * show it with `URL.createObjectURL(blob)` (an `<img src>` cannot carry
   * the token).
   *
   * @throws {TenxgraphError} `blob_not_found` (404) when the thread does not
   * hold it, or is not this token's.
   */
  async getBlob(threadId: string, ref: string | MediaBlock, options: { signal?: AbortSignal } = {}): Promise<Blob> {
    const r = typeof ref === "string" ? ref : ref?.blob;
    if (typeof r !== "string" || r === "") {
      throw new TypeError('getBlob: ref must be a blob reference ("sha256:<hex>") or a block that has one');
    }
    const path = `${threadPath(threadId)}/blobs/${encodeURIComponent(r).replace(/%3A/gi, ":")}`;
    const res = await this.#request("GET", path, undefined, options.signal, "*/*");
    try {
      return await res.blob();
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw new TenxgraphError(0, "network_error", `GET ${path}: reading the body: ${describe(err)}`, [], { cause: err });
    }
  }

  // The loop behind invoke, stream and resume. input null resumes the
  // thread as it is.
  async *#loop(input: MessageInput[] | null, options: RunOptions, streaming: boolean): AsyncGenerator<StreamEvent, RunResponse, undefined> {
    const user = options.signal;
    user?.throwIfAborted();
    const threadId = options.threadId ?? newThreadId();
    const response = options.response ?? "full";
    if (response !== "full" && response !== "delta") {
      throw new TypeError(`response must be "full" or "delta", got ${String(options.response)}`);
    }
    const durability = options.durability;
    if (durability !== undefined && durability !== "sync" && durability !== "async" && durability !== "exit") {
      throw new TypeError(`durability must be "sync", "async" or "exit", got ${String(durability)}`);
    }
    const rc: RoundConfig = { response, durability };
    if (options.traceparent !== undefined) {
      if (typeof options.traceparent !== "string" || !TRACEPARENT.test(options.traceparent)) {
        throw new TypeError(`traceparent must be a W3C trace context ("00-" then 32 and 16 lowercase hex digits and the flags, joined by "-"), got ${JSON.stringify(options.traceparent)}`);
      }
      rc.headers = { traceparent: options.traceparent };
      if (options.tracestate !== undefined) rc.headers["tracestate"] = String(options.tracestate);
    } else if (options.tracestate !== undefined) {
      throw new TypeError("tracestate is sent only with a traceparent: set traceparent too");
    }
    // One controller per run, so ending the run early (an abort, an error,
    // a consumer that stops iterating) cancels everything it started.
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(user?.reason);
    user?.addEventListener("abort", onAbort, { once: true });
    let done = false;
    try {
      let res: RunResponse;
      // added collects a delta call's messages over its rounds.
      let added: { offset: number; messages: Message[] } | undefined;
      const collect = (r: RunResponse): RunResponse => {
        if (response !== "delta") return r;
        if (typeof r.offset !== "number") throw new TenxgraphError(0, "bad_response", `thread "${threadId}": a delta response without offset`);
        added ??= { offset: r.offset, messages: [] };
        if (r.offset !== added.offset + added.messages.length) {
          throw new TenxgraphError(0, "thread_changed", `thread "${threadId}": another client added messages between this call's rounds; read the thread again`);
        }
        added.messages.push(...r.messages);
        return r;
      };
      if (input === null) {
        // A delta resume needs the pending calls and the thread's length,
        // not its messages: one message's page carries both.
        if (response === "delta") {
          const t = await this.getThread(threadId, { signal: ctl.signal, limit: 1 });
          res = collect({
            thread_id: t.thread_id,
            run_id: "",
            status: t.status,
            messages: [],
            remote_tool_calls: t.remote_tool_calls,
            ...(t.approval_requests ? { approval_requests: t.approval_requests } : {}),
            offset: t.total ?? 0,
          });
        } else {
          const t = await this.getThread(threadId, { signal: ctl.signal });
          res = { ...t, run_id: "" };
        }
      } else {
        const messages = await abortable(encodeMessages(input), ctl.signal);
        res = collect(yield* this.#round(messages, threadId, ctl.signal, streaming, rc));
      }
      for (let round = 1; res.status === "interrupted"; round++) {
        const calls = res.remote_tool_calls ?? [];
        const approvals = res.approval_requests ?? [];
        if (calls.length === 0 && approvals.length === 0) {
          throw new TenxgraphError(0, "bad_response", `thread "${threadId}": the run paused without naming a remote call`);
        }
        if (round > this.#maxRounds) throw new MaxRoundsError(threadId, this.#maxRounds, calls);
        const decided = await abortable(Promise.all(approvals.map((a) => this.#approve(a, threadId, ctl.signal))), ctl.signal);
        const results = yield* this.#answer(calls, threadId, ctl.signal);
        res = collect(yield* this.#sendResults([...decided, ...results], calls, threadId, ctl.signal, streaming, rc));
      }
      done = true;
      return added ? { ...res, offset: added.offset, messages: added.messages } : res;
    } catch (err) {
      if (user?.aborted) throw user.reason;
      throw err;
    } finally {
      user?.removeEventListener("abort", onAbort);
      if (!done && !ctl.signal.aborted) ctl.abort(new DOMException("the run ended before it completed", "AbortError"));
    }
  }

  // One request: invoke returns the response; stream yields its events and
  // returns the data of its end event.
  async *#round(messages: MessageInput[], threadId: string, signal: AbortSignal, streaming: boolean, rc: RoundConfig): AsyncGenerator<StreamEvent, RunResponse, undefined> {
    const config: { thread_id: string; response?: "delta"; durability?: Durability } = { thread_id: threadId };
    if (rc.response === "delta") config.response = "delta";
    if (rc.durability) config.durability = rc.durability;
    const body = { input: { messages }, config };
    if (!streaming) {
      const res = await this.#request("POST", "/v1/graph/invoke", body, signal, "application/json", rc.headers);
      return (await readJSON(res)) as RunResponse;
    }
    const res = await this.#request("POST", "/v1/graph/stream", body, signal, "text/event-stream", rc.headers);
    if (!res.body) throw new TenxgraphError(0, "bad_response", "POST /v1/graph/stream: the response has no body");
    let end: RunResponse | undefined;
    for await (const raw of sseEvents(res.body)) {
      let data: unknown;
      try {
        data = JSON.parse(raw.data);
      } catch {
        throw new TenxgraphError(0, "bad_response", `stream event "${raw.event}": data is not JSON: ${raw.data.slice(0, 200)}`);
      }
      if (raw.event === "error") throw errorFromBody(0, data, "the run failed");
      if (raw.event === "end") end = data as RunResponse;
      yield { type: raw.event, data } as StreamEvent;
    }
    if (!end) throw new TenxgraphError(0, "stream_incomplete", "POST /v1/graph/stream: the stream closed before its end event");
    return end;
  }

  // Sends one round's results. When the server refuses a result's
  // attachments (a file that is not what it claims, too large, bad base64),
  // that result becomes an is_error result saying why and the round is sent
  // again, as the server does with a plugin's refused attachments: a
  // handler's file never leaves the thread stuck. A refused request changes
  // nothing on the server, so sending again is safe; each retry drops the
  // attachments of at least one result, so it ends.
  async *#sendResults(content: Block[], calls: RemoteToolCallBlock[], threadId: string, signal: AbortSignal, streaming: boolean, rc: RoundConfig): AsyncGenerator<StreamEvent, RunResponse, undefined> {
    for (;;) {
      try {
        return yield* this.#round([{ role: "tool", content }], threadId, signal, streaming, rc);
      } catch (err) {
        const refused = refusedAttachments(err, content);
        if (refused.length === 0) throw err;
        content = content.slice();
        for (const i of refused) {
          const r = content[i] as ToolResultBlock;
          const name = calls.find((c) => c.id === r.tool_call_id)?.name ?? r.tool_call_id;
          content[i] = {
            type: "tool_result",
            tool_call_id: r.tool_call_id,
            content: `tool "${name}" returned attachments the server refused: ${(err as TenxgraphError).message}`,
            is_error: true,
          };
        }
      }
    }
  }

  // Runs the handlers of one pause concurrently and returns their results
  // in call order, yielding handler events as they start and finish.
  async *#answer(calls: RemoteToolCallBlock[], threadId: string, signal: AbortSignal): AsyncGenerator<StreamEvent, ToolResultBlock[], undefined> {
    if (this.#onMissing === "throw") {
      const missing = calls.find((c) => !this.#handlers.has(c.name));
      if (missing) throw new MissingHandlerError(threadId, missing);
    }
    const results: ToolResultBlock[] = new Array(calls.length);
    const running = new Map<number, Promise<{ i: number; result: ToolResultBlock; ms: number }>>();
    calls.forEach((call, i) => {
      const start = now();
      running.set(i, this.#runHandler(call, threadId, signal).then((result) => ({ i, result, ms: now() - start })));
    });
    for (const call of calls) {
      yield { type: "tool_handler_started", data: { thread_id: threadId, id: call.id, name: call.name, arguments: call.arguments } };
    }
    while (running.size > 0) {
      const { i, result, ms } = await abortable(Promise.race(running.values()), signal);
      running.delete(i);
      results[i] = result;
      const call = calls[i]!;
      yield { type: "tool_handler_finished", data: { thread_id: threadId, id: call.id, name: call.name, result, duration_ms: ms } };
    }
    return results;
  }

  // Asks the approval handler about one call; never rejects: no handler, or
  // one that fails, denies the call with the reason.
  async #approve(req: ApprovalRequestBlock, threadId: string, signal: AbortSignal): Promise<ApprovalBlock> {
    const deny = (reason: string): ApprovalBlock => ({ type: "approval", tool_call_id: req.id, approved: false, reason });
    if (!this.#onApproval) {
      return deny(`this client has no approval handler (new Client({ onApproval })), so the call to "${req.name}" was denied`);
    }
    let d: ApprovalDecision;
    try {
      d = await this.#onApproval(req, { threadId, signal });
    } catch (err) {
      return deny(`the approval handler failed: ${describe(err)}`);
    }
    if (typeof d === "boolean") return { type: "approval", tool_call_id: req.id, approved: d };
    if (d === null || typeof d !== "object" || typeof d.approved !== "boolean") {
      return deny(`the approval handler returned ${JSON.stringify(d) ?? String(d)}, not true, false or { approved, reason }`);
    }
    const out: ApprovalBlock = { type: "approval", tool_call_id: req.id, approved: d.approved };
    if (typeof d.reason === "string" && d.reason !== "") out.reason = d.reason;
    return out;
  }

  // Runs one handler; never rejects: every failure becomes an is_error result.
  async #runHandler(call: RemoteToolCallBlock, threadId: string, signal: AbortSignal): Promise<ToolResultBlock> {
    const fail = (text: string): ToolResultBlock => ({ type: "tool_result", tool_call_id: call.id, content: text, is_error: true });
    const handler = this.#handlers.get(call.name);
    if (!handler) {
      return fail(`no handler for remote tool "${call.name}" in this client: register one with registerToolHandler("${call.name}", handler)`);
    }
    let value: unknown;
    try {
      value = await handler(call.arguments ?? {}, { callId: call.id, threadId, name: call.name, signal });
    } catch (err) {
      return fail(`tool "${call.name}" failed: ${describe(err)}`);
    }
    const out = toolOutput(value);
    if (!out) {
      const problem = jsonProblem(value, "result");
      if (problem) return fail(`tool "${call.name}" returned a result that is not JSON-serialisable: ${problem}`);
      return { type: "tool_result", tool_call_id: call.id, content: value as JsonValue, is_error: false };
    }
    let attachments: MediaBlock[];
    try {
      attachments = await Promise.all(out.attachments.map((a, i) => toMediaBlock(a, out.paths[i]!)));
    } catch (err) {
      return fail(`tool "${call.name}" returned an attachment the client cannot send: ${describe(err)}`);
    }
    const content = out.content === undefined ? describeMedia(attachments, out.attachments) : out.content;
    const problem = jsonProblem(content, "result.content");
    if (problem) return fail(`tool "${call.name}" returned a result that is not JSON-serialisable: ${problem}`);
    return { type: "tool_result", tool_call_id: call.id, content: content as JsonValue, is_error: false, attachments };
  }

  async #request(method: string, path: string, body: unknown, signal: AbortSignal | undefined, accept: string, extra?: Record<string, string>): Promise<Response> {
    const url = this.baseUrl + path;
    const headers: Record<string, string> = { ...extra, Accept: accept };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (this.#apiKey) headers["Authorization"] = `Bearer ${this.#apiKey}`;
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = JSON.stringify(body);
    if (signal) init.signal = signal;
    let res: Response;
    try {
      res = await this.#fetch(url, init);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new TenxgraphError(0, "network_error", `${method} ${url}: ${describe(err)}`, [], { cause: err });
    }
    if (!res.ok) {
      let text = "";
      try {
        text = await res.text();
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const fallback = `${method} ${path}: HTTP ${res.status}${res.statusText ? " " + res.statusText : ""}${text ? ": " + text.slice(0, 200) : ""}`;
      throw errorFromBody(res.status, parsed, fallback);
    }
    return res;
  }
}

// ---------------------------------------------------------------------------
// Media: images, files and sounds

/** Options of {@link image}, {@link file} and {@link audio}. */
export interface MediaOptions {
  /** The bytes' media type; default: a `Blob`'s own `type`. Required for bytes that have none. */
  mimeType?: string;
  /** Default: a `File`'s `name`. */
  filename?: string;
}

/**
 * Reads bytes into an image block with base64 `data`, for a message's
 * content: `{ role: "user", content: ["what is this?", await image(file)] }`.
 * A `File` or `Blob` may also be put in the content as it is; this helper
 * is for bytes without a type (`image(bytes, { mimeType: "image/png" })`)
 * and for a block to keep or inspect.
 */
export function image(data: Bytes, options: MediaOptions = {}): Promise<MediaBlock> {
  return toMediaBlock({ ...options, type: "image", data }, "image()");
}

/** Reads bytes into a file block (a PDF, a text): see {@link image}. `file(blob, { filename: "notes.txt" })`. */
export function file(data: Bytes, options: MediaOptions = {}): Promise<MediaBlock> {
  return toMediaBlock({ ...options, type: "file", data }, "file()");
}

/** Reads bytes into an audio block: see {@link image}. */
export function audio(data: Bytes, options: MediaOptions = {}): Promise<MediaBlock> {
  return toMediaBlock({ ...options, type: "audio", data }, "audio()");
}

// isBlob tells a Blob or File by its shape, so that one from another realm
// (an iframe, a polyfill, undici in Node) counts too.
function isBlob(x: unknown): x is Blob {
  if (x === null || typeof x !== "object") return false;
  const b = x as { arrayBuffer?: unknown; size?: unknown; type?: unknown; slice?: unknown };
  return typeof b.arrayBuffer === "function" && typeof b.slice === "function" && typeof b.size === "number" && typeof b.type === "string";
}

function isFile(x: unknown): x is File {
  return isBlob(x) && typeof (x as { name?: unknown }).name === "string";
}

function isBytes(x: unknown): x is ArrayBuffer | ArrayBufferView {
  return ArrayBuffer.isView(x) || Object.prototype.toString.call(x) === "[object ArrayBuffer]";
}

const mediaTypes: readonly string[] = ["image", "file", "audio"];

// toMediaBlock reads a File, Blob or MediaInput (or a MediaBlock, passed on
// with its source) into the block the server takes; path names it in a
// TypeError. The server checks everything again: this only shapes it.
async function toMediaBlock(x: unknown, path: string): Promise<MediaBlock> {
  if (isBytes(x)) throw new TypeError(`${path} is bytes without a type: use image(bytes, { mimeType }) or { mimeType, data: bytes }`);
  if (!isBlob(x) && (x === null || typeof x !== "object" || Array.isArray(x))) {
    throw new TypeError(`${path} is ${describeValue(x)}, not a File, a Blob or { mimeType, data | url | blob }`);
  }
  const m = (isBlob(x) ? { data: x } : x) as Record<string, unknown>;
  const sources = (["data", "url", "blob"] as const).filter((k) => m[k] !== undefined && m[k] !== null);
  if (sources.length === 0 && m.mimeType === undefined && m.mime_type === undefined) {
    throw new TypeError(`${path} is ${describeValue(x)}: neither a block (it has no type) nor media (it has no data, url or blob)`);
  }
  if (sources.length !== 1) {
    throw new TypeError(`${path}: give exactly one of data, url or blob${sources.length ? ` (it has ${sources.join(" and ")})` : ""}`);
  }
  const data = m.data;
  let mimeType = m.mime_type ?? m.mimeType;
  if (mimeType === undefined && isBlob(data) && data.type !== "") mimeType = data.type;
  if (mimeType !== undefined && (typeof mimeType !== "string" || mimeType === "")) {
    throw new TypeError(`${path}.mimeType must be a media type such as "image/png", got ${describeValue(mimeType)}`);
  }
  if (mimeType === undefined && sources[0] === "data") {
    const what = isFile(data) ? `the file ${JSON.stringify(data.name)} has no type (the browser did not recognise it)` : "the bytes have no type";
    throw new TypeError(`${path}: ${what}: name it with mimeType, e.g. file(blob, { mimeType: "application/pdf" })`);
  }
  const filename = m.filename ?? (isFile(data) && data.name !== "" ? data.name : undefined);
  if (filename !== undefined && typeof filename !== "string") throw new TypeError(`${path}.filename must be a string`);
  const type = m.type ?? (typeof mimeType === "string" && mimeType.startsWith("image/") ? "image" : typeof mimeType === "string" && mimeType.startsWith("audio/") ? "audio" : "file");
  if (typeof type !== "string" || !mediaTypes.includes(type)) {
    throw new TypeError(`${path}.type must be "image", "file" or "audio", got ${describeValue(type)}`);
  }
  // A url or blob source may leave mime_type out: the server says whether it must be there.
  const out = { type, ...(mimeType !== undefined && { mime_type: mimeType }) } as MediaBlock;
  if (filename !== undefined) out.filename = filename;
  switch (sources[0]) {
    case "data":
      if (typeof data === "string") out.data = data;
      else if (isBlob(data)) out.data = base64(new Uint8Array(await data.arrayBuffer()));
      else if (ArrayBuffer.isView(data)) out.data = base64(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      else if (isBytes(data)) out.data = base64(new Uint8Array(data as ArrayBuffer));
      else throw new TypeError(`${path}.data must be a File, Blob, bytes or a base64 string, got ${describeValue(data)}`);
      break;
    case "url":
    case "blob": {
      const v = m[sources[0]];
      if (typeof v !== "string") throw new TypeError(`${path}.${sources[0]} must be a string, got ${describeValue(v)}`);
      out[sources[0]] = v;
      break;
    }
  }
  return out;
}

// base64 encodes bytes a slice at a time: String.fromCharCode(...bytes) on
// a whole file would overflow the stack past a few hundred KB. Each slice
// is a multiple of 3 bytes, so the pieces join without padding between.
function base64(bytes: Uint8Array): string {
  const native = (bytes as Uint8Array & { toBase64?: () => string }).toBase64;
  if (typeof native === "function") return native.call(bytes);
  const slice = 3 * 8192;
  const parts: string[] = [];
  for (let i = 0; i < bytes.length; i += slice) {
    parts.push(btoa(String.fromCharCode.apply(null, bytes.subarray(i, i + slice) as unknown as number[])));
  }
  return parts.join("");
}

function describeValue(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return "an array";
  if (typeof x === "string") return `the string ${JSON.stringify(x.length > 40 ? x.slice(0, 39) + "…" : x)}`;
  if (typeof x === "object") return `an object with keys ${Object.keys(x).join(", ") || "(none)"}`;
  return `${typeof x} ${String(x)}`;
}

// encodeMessages reads the media of the messages a run sends: strings in
// a content list become text blocks, Files, Blobs and MediaInputs become
// media blocks, and so do a tool result's attachments. Other blocks pass
// as they are.
async function encodeMessages(messages: MessageInput[]): Promise<MessageInput[]> {
  return Promise.all(
    messages.map(async (m, i) => {
      if (m === null || typeof m !== "object" || !Array.isArray(m.content)) return m;
      const content = await Promise.all(
        m.content.map(async (part, j): Promise<Block> => {
          const path = `messages[${i}].content[${j}]`;
          if (typeof part === "string") return { type: "text", text: part };
          if (part === null || typeof part !== "object") throw new TypeError(`${path} is ${describeValue(part)}, not a block, a string or a File`);
          const type = (part as { type?: unknown }).type;
          if (isBlob(part) || type === undefined || (typeof type === "string" && mediaTypes.includes(type))) return toMediaBlock(part, path);
          const tr = part as ToolResultBlock;
          if (type === "tool_result" && Array.isArray(tr.attachments)) {
            return { ...tr, attachments: await Promise.all(tr.attachments.map((a, k) => toMediaBlock(a, `${path}.attachments[${k}]`))) };
          }
          return part as Block;
        }),
      );
      return { ...m, content };
    }),
  );
}

// toolOutput reads a handler's result that carries media: a File or Blob,
// an array of them, or { content, attachments }. Anything else is plain
// JSON (undefined).
function toolOutput(value: unknown): { content: unknown; attachments: unknown[]; paths: string[] } | undefined {
  if (isBlob(value)) return { content: undefined, attachments: [value], paths: ["result"] };
  if (Array.isArray(value) && value.length > 0 && value.every(isBlob)) {
    return { content: undefined, attachments: value, paths: value.map((_, i) => `result[${i}]`) };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const o = value as { content?: unknown; attachments?: unknown };
  if (!Array.isArray(o.attachments) || !Object.keys(o).every((k) => k === "content" || k === "attachments")) return undefined;
  return { content: o.content, attachments: o.attachments, paths: o.attachments.map((_, i) => `result.attachments[${i}]`) };
}

// describeMedia is a result's content when the handler gave none: what
// each attachment is, one object for one attachment.
function describeMedia(blocks: MediaBlock[], given: unknown[]): JsonValue {
  const each = blocks.map((b, i) => {
    const d: { [key: string]: JsonValue } = {};
    if (b.filename !== undefined) d.filename = b.filename;
    d.mime_type = b.mime_type;
    const g = given[i];
    const bytes = isBlob(g) ? g : (g as { data?: unknown } | null)?.data;
    if (isBlob(bytes)) d.size = bytes.size;
    else if (isBytes(bytes)) d.size = bytes.byteLength;
    if (b.url !== undefined) d.url = b.url;
    if (b.blob !== undefined) d.blob = b.blob;
    return d;
  });
  return each.length === 1 ? each[0]! : each;
}

// refusedAttachments returns which results of a tool message the server's
// refusal is about: the one its message names (messages[0].content[N]),
// or, for a refusal of the whole body, every result with attachments.
// Empty when the error is not about attachments.
function refusedAttachments(err: unknown, content: Block[]): number[] {
  if (!(err instanceof TenxgraphError)) return [];
  const withMedia = content.flatMap((b, i) => (b.type === "tool_result" && (b.attachments?.length ?? 0) > 0 ? [i] : []));
  if (withMedia.length === 0) return [];
  const about = (err.status === 422 && err.code === "media_refused") || (err.status === 413 && (err.code === "media_too_large" || err.code === "body_too_large")) || (err.status === 400 && err.code === "malformed_request");
  if (!about) return [];
  const named = /messages\[0\]\.content\[(\d+)\]/.exec(err.message);
  if (named) {
    const i = Number(named[1]);
    return withMedia.includes(i) && (err.code !== "malformed_request" || /\.attachments\[/.test(err.message)) ? [i] : [];
  }
  return err.code === "malformed_request" ? [] : withMedia;
}

// ---------------------------------------------------------------------------
// Helpers

function toMessages(messages: string | MessageInput[]): MessageInput[] {
  if (typeof messages === "string") return [{ role: "user", content: messages }];
  if (!Array.isArray(messages)) throw new TypeError("messages must be a string or an array of messages");
  return messages;
}

function threadPath(threadId: string): string {
  if (typeof threadId !== "string" || threadId === "") throw new TypeError("threadId must be a non-empty string");
  return `/v1/threads/${encodeURIComponent(threadId)}`;
}

function newThreadId(): string {
  const bytes = new Uint8Array(12);
  globalThis.crypto.getRandomValues(bytes);
  return "t-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function now(): number {
  return globalThis.performance?.now() ?? Date.now();
}

async function drain<R>(gen: AsyncGenerator<unknown, R, undefined>): Promise<R> {
  for (;;) {
    const step = await gen.next();
    if (step.done) return step.value;
  }
}

async function readJSON(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new TenxgraphError(res.status, "bad_response", `${res.url || "response"}: the body is not JSON: ${text.slice(0, 200)}`);
  }
}

function errorFromBody(status: number, body: unknown, fallback: string): TenxgraphError {
  const e = (body as { error?: { code?: unknown; message?: unknown; call_ids?: unknown } } | undefined)?.error;
  if (e && typeof e.code === "string" && typeof e.message === "string") {
    const ids = Array.isArray(e.call_ids) ? e.call_ids.filter((x): x is string => typeof x === "string") : [];
    return new TenxgraphError(status, e.code, e.message, ids);
  }
  return new TenxgraphError(status, status ? `http_${status}` : "run_failed", fallback);
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === "string") return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

// abortable settles like p, or rejects with the signal's reason as soon as
// it aborts, so a handler that ignores its signal cannot hold the run.
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Says why `value` is not faithfully JSON-serialisable, naming the path
 * (`result.items[2]`), or returns undefined when it is. Rejects what
 * `JSON.stringify` would throw on (BigInt, cycles) and what it would drop or
 * mangle silently (functions, symbols, undefined at the top, NaN and
 * Infinity, Map and Set). `toJSON` is honoured, as JSON.stringify does.
 */
function jsonProblem(value: unknown, root: string): string | undefined {
  const ancestors: object[] = [];
  const walk = (v: unknown, path: string, key: string): string | undefined => {
    if (v !== null && (typeof v === "object" || typeof v === "bigint") && typeof (v as { toJSON?: unknown }).toJSON === "function") {
      try {
        v = (v as { toJSON(k: string): unknown }).toJSON(key);
      } catch (err) {
        return `${path}.toJSON() threw: ${describe(err)}`;
      }
    }
    switch (typeof v) {
      case "string":
      case "boolean":
        return undefined;
      case "number":
        return Number.isFinite(v) ? undefined : `${path} is ${v}, which JSON cannot hold`;
      case "bigint":
        return `${path} is a BigInt (${v}n); convert it to a number or a string`;
      case "function":
        return `${path} is a function`;
      case "symbol":
        return `${path} is a symbol`;
      case "undefined":
        return `${path} is undefined (return null when there is nothing to report)`;
    }
    if (v === null) return undefined;
    const obj = v as object;
    if (ancestors.includes(obj)) return `${path} is a cycle: it contains itself`;
    if (obj instanceof Map) return `${path} is a Map, which JSON drops; convert it with Object.fromEntries(map)`;
    if (obj instanceof Set) return `${path} is a Set, which JSON drops; convert it with Array.from(set)`;
    if (isBlob(obj)) return `${path} is a ${isFile(obj) ? "File" : "Blob"}, which JSON drops; return it as the result, or as { content, attachments: [it] }, to send it as an attachment`;
    if (isBytes(obj)) return `${path} is binary data, which JSON mangles; send it as an attachment: { content, attachments: [{ mimeType, data }] }`;
    ancestors.push(obj);
    try {
      if (Array.isArray(obj)) {
        for (let i = 0; i < obj.length; i++) {
          const item: unknown = obj[i];
          if (item === undefined) continue; // JSON writes null, as it should
          const p = walk(item, `${path}[${i}]`, String(i));
          if (p) return p;
        }
        return undefined;
      }
      for (const k of Object.keys(obj)) {
        const item: unknown = (obj as Record<string, unknown>)[k];
        if (item === undefined) continue; // an absent key, as JSON writes it
        const p = walk(item, /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`, k);
        if (p) return p;
      }
      return undefined;
    } finally {
      ancestors.pop();
    }
  };
  return walk(value, root, "");
}

/** One raw server-sent event. */
interface RawEvent {
  event: string;
  data: string;
}

// sseEvents parses a text/event-stream body (the WHATWG rules: LF, CRLF or
// CR line ends; "event:" and "data:" fields; comments; blank line
// dispatches). Stopping early cancels the body.
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<RawEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let event = "";
  let data: string[] = [];
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const lf = buf.indexOf("\n");
        const cr = buf.indexOf("\r");
        let end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
        if (end < 0) break;
        // A CR at the end of the buffer may be the first half of a CRLF.
        if (end === cr && end === buf.length - 1 && !done) break;
        const line = buf.slice(0, end);
        buf = buf.slice(end + (buf[end] === "\r" && buf[end + 1] === "\n" ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "event") event = val;
        else if (field === "data") data.push(val);
      }
      if (done) {
        finished = true;
        return;
      }
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
